"""Plots of cost against T (``symcost plot``, the sheet's figures): files written, values exact.

matplotlib is in the ``test`` extra, so these run (never skip) in CI.
"""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from symcost.architectures import loader
from symcost.cli import main
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from symcost.core.notation import sym
from symcost.documents import report
from symcost.documents.plot import METRICS, plot_vs_T, series
from symcost.serving.memory import cache_bytes_total
from tests.tex import need_tex

# on one xdist worker: the documents are rendered once per worker (tests/generated.py)
pytestmark = pytest.mark.xdist_group("generated")

MODELS = ["llama-3.1-8b", "gemma-2-9b-it"]  # dense GQA; alternating sliding window (a breakpoint)


def _cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("ext", ["png", "pdf"])
@pytest.mark.parametrize("models", [MODELS[:1], MODELS])
def test_cli_writes_png_and_pdf(tmp_path, capsys, ext, models):
    out = tmp_path / f"plot.{ext}"
    code, text, err = _cli(["plot", *models, "--metric", "cache_bytes", "-o", str(out),
                            "--T-max", "65536", "--json"], capsys)
    assert code == 0, err
    assert json.loads(text) == {"path": str(out), "models": models, "metric": "cache_bytes",
                                 "mla": "auto"}
    head = out.read_bytes()[:8]
    assert out.stat().st_size > 2000
    assert head.startswith(b"\x89PNG") if ext == "png" else head.startswith(b"%PDF")


@pytest.mark.parametrize("metric", ["flops_per_token", "decode_flops"])
def test_cli_flops_metrics(tmp_path, capsys, metric):
    out = tmp_path / "f.png"
    code, text, _ = _cli(["plot", *MODELS, "--metric", metric, "-o", str(out), "--batch", "2"], capsys)
    assert code == 0 and "wrote" in text and out.stat().st_size > 2000


def _exact(model, metric, T, B):
    vals = model.values_with(T=T, B=B)
    if metric == "flops_per_token":
        return model.flops(Phase(kind="prefill")).total_at(vals) / (B * T)
    if metric == "prefill_flops":  # --metric flops --phase prefill: the prompt's FLOPs, as check/export count them
        return model.flops(Phase(kind="prefill")).total_at(vals)
    if metric == "decode_flops":
        return model.flops(Phase(kind="decode")).total_at(vals)
    if metric == "cache":
        return model.cache().total_at(vals)
    return cache_bytes_total(model, "bf16", vals)[0]


@pytest.mark.parametrize("metric", METRICS)
def test_plotted_values_are_the_engine_values(tmp_path, metric):
    models = [loader.build(n) for n in MODELS]
    plot = plot_vs_T(models, metric, tmp_path / "v.png", T_min=2**8, T_max=2**17, batch=2)
    assert plot.models == MODELS and plot.metric == metric
    for model, s in zip(models, plot.series):
        assert s.T[0] == 2**8 and s.T[-1] == 2**17 and np.all(np.diff(s.T) > 0)
        picks = {0, len(s.T) // 3, len(s.T) // 2, len(s.T) - 1}
        picks |= {int(np.searchsorted(s.T, w)) for w in s.windows}  # on both sides of a kink
        picks |= {int(np.searchsorted(s.T, w)) + 1 for w in s.windows}
        for i in sorted(picks):
            T = int(s.T[i])
            assert s.T[i] == T  # the grid is integer T
            assert s.y[i] == pytest.approx(float(_exact(model, metric, T, 2)), rel=1e-12)


def test_window_and_crossover_markers():
    gemma = loader.build("gemma-2-9b-it")
    s = series(gemma, "cache_bytes", 2**8, 2**16)
    assert s.windows == [int(gemma.values[sym.W]) - 1]  # the window is full after W - 1 cached tokens
    assert s.crossover is None  # 1:1 local/global: the crossover falls on the window marker
    llama = series(loader.build("llama-3.1-8b"), "flops_per_token", 2**8, 2**21)
    assert llama.windows == [] and 2**14 < llama.crossover < 2**16  # attention overtakes the GEMMs


def test_bad_inputs_are_one_line_errors(tmp_path, capsys):
    code, _, err = _cli(["plot", "llama-3.1-8b", "--metric", "cache_bytes", "-o", str(tmp_path / "x.svg")],
                        capsys)
    assert code == 2 and ".png or .pdf" in err and err.count("\n") == 1
    code, _, err = _cli(["plot", "llama-3.1-8b", "--metric", "cache_bytes", "-o", str(tmp_path / "x.png"),
                         "--T-min", "4096", "--T-max", "1024"], capsys)
    assert code == 2 and "T_min" in err


def test_missing_matplotlib_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(SymcostError, match="matplotlib"):
        plot_vs_T([loader.build("llama-2-7b")], "cache_bytes", tmp_path / "x.png", T_max=2**12)


def _need_tex():
    need_tex()


def test_sheet_with_plots_compiles(tmp_path, capsys):
    _need_tex()
    tex = tmp_path / "gemma.2.tex"
    code, text, err = _cli(["sheet", "gemma-2-9b-it", "-o", str(tex), "--pdf", "--json"], capsys)
    assert code == 0, err
    data = json.loads(text)
    flops, cache = tmp_path / "gemma-2-flops.pdf", tmp_path / "gemma-2-cache.pdf"
    assert flops.stat().st_size > 2000 and cache.stat().st_size > 2000
    body = tex.read_text()
    assert r"\includegraphics[width=0.72\linewidth]{gemma-2-flops.pdf}" in body
    assert r"\includegraphics[width=0.72\linewidth]{gemma-2-cache.pdf}" in body
    assert data["pdf"] and (tmp_path / "gemma.2.pdf").stat().st_size > 20000


def test_sheet_without_matplotlib_keeps_tables(tmp_path, monkeypatch):
    _need_tex()
    monkeypatch.setattr(report, "have_matplotlib", lambda: False)
    tex, pdf, msg = report.write_sheet(loader.build("llama-2-7b"), tmp_path / "x.tex", pdf=True)
    body = tex.read_text()
    assert "includegraphics" not in body and "graphicx" not in body
    assert "matplotlib is not installed" in body
    assert pdf is not None and pdf.is_file() and not list(tmp_path.glob("x-*.pdf"))


def test_generated_reports_have_no_plots():
    from tests.generated import rendered
    texts = rendered()
    assert not any("includegraphics" in t or "matplotlib" in t
                   for p, t in texts.items() if p.startswith("reports/"))


def test_coinciding_sheet_curves_are_drawn_once():
    """Under full attention a dense model's prefill per token and decode per step both see T keys:
    one curve, one legend entry. Under causal attention prefill sees (T+1)/2 keys on average: two."""
    from symcost.documents.plot import merge_close
    m = loader.build("llama-3.1-8b")
    for attention, n in (("full", 1), ("causal", 2)):
        ph = Phase(attention=attention)
        curves = [series(m, "flops_per_token", 256, 2**17, phase=ph, label="prefill"),
                  series(m, "decode_flops", 256, 2**17, phase=ph, label="decode")]
        assert len(merge_close(curves, "both")) == n


def _drawn_texts(fig, ax):
    """(kind, Text) of every text the figure draws: tick labels inside the view (the locators give
    ticks beyond it too, which are not drawn), axis labels, annotations, the legend's, the footer."""
    from matplotlib.text import Text
    ticks, out = set(), []
    for axis in (ax.xaxis, ax.yaxis):
        lo, hi = sorted(axis.get_view_interval())
        for tick in axis.get_major_ticks() + axis.get_minor_ticks():
            ticks.add(tick.label1)
            ticks.add(tick.label2)
            drawn = lo * (1 - 1e-9) <= tick.get_loc() <= hi * (1 + 1e-9)  # log axes: positive
            if drawn and tick.label1.get_visible() and tick.label1.get_text():
                out.append(("xtick" if axis is ax.xaxis else "ytick", tick.label1))
    for t in fig.findobj(Text):
        if t not in ticks and t.get_visible() and t.get_text():
            out.append(("text", t))
    return out


@pytest.mark.parametrize("name", ["deepseek-v3", "gemma-2-9b-it", "gpt2", "mimo-v2-flash",
                                  "qwen3-next-80b-a3b-thinking"])
def test_sheet_figures_keep_every_text_inside(tmp_path, monkeypatch, name):
    """The sheet's figures have fixed margins, summed from the label texts (no layout pass): every
    text drawn (tick and axis labels, annotations, legend) lies inside the figure, annotations inside
    the axes, and no two tick or axis labels overlap, measured by the Agg renderer. The edges: gemma-2's
    window label at the bottom of the axes, mimo-v2-flash's crossover label at the left end, gpt2's
    short range (a log y axis spanning less than a decade, labelled at non-decades)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from symcost.documents import plot
    figures = []
    make = plot._figure
    monkeypatch.setattr(plot, "_figure", lambda **kw: figures.append(make(**kw)) or figures[-1])
    files = plot.sheet_plots(loader.build(name), tmp_path / "s")
    assert len(figures) == len(files) == 2
    for fig in figures:
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
        frame = fig.bbox
        (ax,) = fig.axes
        inner = ax.get_window_extent(renderer)
        boxes = []
        for kind, t in _drawn_texts(fig, ax):
            box = t.get_window_extent(renderer)
            where = f"{name}: {t.get_text()!r}"
            assert (frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1), \
                f"{where} at {box.bounds} sticks out of the figure {frame.bounds}"
            if t in ax.texts:  # annotations
                assert (inner.x0 <= box.x0 and box.x1 <= inner.x1 and inner.y0 <= box.y0 and box.y1 <= inner.y1), \
                    f"{where} at {box.bounds} sticks out of the axes {inner.bounds}"
            if kind != "text" or t in (ax.xaxis.label, ax.yaxis.label):
                boxes.append((where, box))
        assert sum(k == "ytick" for k, _ in _drawn_texts(fig, ax)) >= 2, f"{name}: fewer than 2 y tick labels"
        for i, (a, p) in enumerate(boxes):
            for b, q in boxes[i + 1:]:
                assert not p.overlaps(q), f"{a} overlaps {b}"
