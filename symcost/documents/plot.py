"""Cost against the context ``T`` on log-log axes, for one model or several (``symcost plot``).

Metrics (batch ``B``, everything else the config's values):

* ``flops_per_token``: prefill FLOPs of ``T`` new tokens divided by the ``B·T`` tokens processed;
* ``decode_flops``: FLOPs of one decode step (``B`` new tokens) after ``T`` cached;
* ``cache_bytes``: the cache held after ``T`` tokens, in bytes (``Model.state_dtype`` respected).

The symbolic total is substituted and compiled once (``analysis.lambdify_by_name``) and evaluated
in float64 over a log grid of integer ``T`` (8 points per octave, plus every breakpoint); no sympy
substitution per point. Markers show where the slope changes: a sliding window filling (a
breakpoint of a ``Min``) and the crossover where the fastest-growing term in ``T`` overtakes the
next one (e.g. attention overtaking the weight GEMMs in FLOPs per token).

matplotlib is optional (``pip install symcost[plot]``); it is imported only when drawing.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import sympy

from ..analysis.symbolic import breakpoints, lambdify_by_name, regime
from ..core.conventions import Phase
from ..core.errors import SymcostError
from ..model.assembly import Model

try:
    import numpy as np
except ImportError:  # numpy comes with matplotlib
    raise SymcostError("plotting needs matplotlib, which is not installed: "
                       "pip install 'symcost[plot]' (or pip install matplotlib)") from None
from ..core.notation import sym
from ..serving.memory import cache_bytes

METRICS = ("flops_per_token", "prefill_flops", "decode_flops", "cache_bytes", "cache")
YLABEL = {"flops_per_token": "prefill FLOP per token (FLOP / (B·T))", "prefill_flops": "FLOP of a prefill of T tokens",
          "decode_flops": "FLOP per decode step",
          "cache_bytes": "cache (bytes)", "cache": "cache (elements)"}
TITLE = {"flops_per_token": "Prefill FLOPs per token", "prefill_flops": "Prefill FLOPs", "decode_flops": "Decode FLOPs per step",
         "cache_bytes": "Cache held after T tokens", "cache": "Cache elements held after T tokens"}
FORMATS = (".png", ".pdf")
#: grid points per doubling of T
PER_OCTAVE = 8
#: inches of a sheet figure (drawn at half the text width, so small enough to keep the fonts legible)
SHEET_SIZE = (4.4, 3.3)


def _figure(**kw):
    """A matplotlib ``Figure`` drawn off screen, or a one-line SymcostError when matplotlib is missing.

    The figure is made without ``pyplot``: ``pyplot`` is matplotlib's interactive state machine
    (current figure, GUI backends, event loop), which a file written once does not need, and its
    import is a third of matplotlib's (0.3 s of CPU on the sheet's machine). ``Figure.savefig``
    picks the canvas of the file's format (Agg for .png, the PDF backend for .pdf), as pyplot's
    Agg figures do, so the files are the same."""
    try:
        import matplotlib  # noqa: F401 - lazy: optional; missing, it is the one-line error below
        from matplotlib.figure import Figure  # lazy: as matplotlib
    except ImportError:
        raise SymcostError("plotting needs matplotlib, which is not installed: "
                           "pip install 'symcost[plot]' (or pip install matplotlib)") from None
    return Figure(**kw)


# -- the numbers ---------------------------------------------------------------------------------
def metric_expr(model: Model, metric: str, *, batch: int = 1, dtype: str = "bf16",
                mla: str = "auto", phase: Phase | None = None) -> sympy.Expr:
    """The metric as an expression in ``T`` alone (config values and ``B = batch`` substituted).
    FLOPs under ``phase``'s conventions (its kind set by the metric), else the defaults with ``mla``."""
    phase = phase or Phase(mla=mla)
    if metric == "flops_per_token":
        e = model.flops(phase.model_copy(update={"kind": "prefill"})).total / (sym.B * sym.T)
    elif metric == "prefill_flops":
        e = model.flops(phase.model_copy(update={"kind": "prefill"})).total
    elif metric == "decode_flops":
        e = model.flops(phase.model_copy(update={"kind": "decode"})).total
    elif metric == "cache_bytes":
        e = cache_bytes(model, dtype)
    elif metric == "cache":
        e = model.cache().total
    else:
        raise SymcostError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    vals = {k: v for k, v in model.values.items() if k is not sym.T}
    vals[sym.B] = sympy.Integer(batch)
    e = e.xreplace(vals)
    left = e.free_symbols - {sym.T}
    if left:
        raise SymcostError(f"{model.name}: {metric} still depends on "
                           f"{', '.join(sorted(s.name for s in left))} after substituting the config")
    return e


def evaluate(expr: sympy.Expr, T: np.ndarray) -> np.ndarray:
    """``expr`` (in ``T`` only) at every ``T``, float64, through one compiled callable."""
    _, fn = lambdify_by_name(expr)
    out = np.asarray(fn(T=np.asarray(T, dtype=np.float64)), dtype=np.float64)
    return np.broadcast_to(out, np.shape(T)).copy()


def _breaks(expr: sympy.Expr, lo: float, hi: float) -> list[int]:
    """Integer ``T`` in [lo, hi] where a window fills (a Min/Max/Piecewise switches branch)."""
    out = set()
    for b in breakpoints(expr, sym.T):
        if b.is_number and b.is_real:
            t = int(sympy.floor(b))
            if lo <= t <= hi:
                out.add(t)
    return sorted(out)


def _crossover(expr: sympy.Expr, lo: float, hi: float, bps: list[int]) -> int | None:
    """First ``T`` where the leading power of ``T`` overtakes the next one, on the regime in force there."""
    candidates = [(regime(expr, sym.T, True), lambda t: not bps or t >= bps[-1])]
    if bps:
        candidates.append((regime(expr, sym.T, False), lambda t: t <= bps[0]))
    for part, valid in candidates:
        part = sympy.expand(sympy.together(part))
        num, den = sympy.fraction(sympy.together(part))
        num = sympy.expand(num)
        if not num.is_polynomial(sym.T) or not den.is_polynomial(sym.T):
            continue
        terms = [(m[0], c) for m, c in sympy.Poly(num, sym.T).terms() if c != 0]
        if len(terms) < 2:
            continue
        (n, a_n), (m, a_m) = terms[0], terms[1]
        ratio = a_m / a_n
        if not ratio.is_positive:
            continue
        t = float(ratio) ** (1.0 / (n - m))
        if lo <= t <= hi and valid(t):
            return int(math.ceil(t))
    return None


def grid(T_min: int, T_max: int, extra: list[int] = ()) -> np.ndarray:
    """Integer ``T`` from ``T_min`` to ``T_max``: ``PER_OCTAVE`` points per doubling, plus ``extra``."""
    if T_min < 1 or T_max <= T_min:
        raise SymcostError(f"need 1 <= T_min < T_max, got T_min={T_min}, T_max={T_max}")
    n = max(2, int(round(math.log2(T_max / T_min) * PER_OCTAVE)) + 1)
    pts = np.unique(np.round(np.geomspace(T_min, T_max, n)))
    return np.unique(np.concatenate([pts, np.asarray(list(extra), dtype=np.float64)]))


@dataclasses.dataclass
class Series:
    label: str
    T: np.ndarray
    y: np.ndarray
    windows: list[int]          # T where a sliding window fills
    crossover: int | None       # T where the leading T-term overtakes the next


@dataclasses.dataclass
class Plot:
    """What was drawn: the file, the metric, and every curve's exact grid and values."""
    path: Path
    metric: str
    series: list[Series]

    @property
    def models(self) -> list[str]:
        return [s.label for s in self.series]


def series(model: Model, metric: str, T_min: int, T_max: int, *, batch: int = 1, dtype: str = "bf16",
           label: str | None = None, mla: str = "auto", phase: Phase | None = None) -> Series:
    expr = metric_expr(model, metric, batch=batch, dtype=dtype, mla=mla, phase=phase)
    bps = _breaks(expr, T_min, T_max)
    T = grid(T_min, T_max, bps + [b + 1 for b in bps if b + 1 <= T_max])
    y = evaluate(expr, T)
    cross = _crossover(expr, T_min, T_max, bps)
    if cross is not None and any(abs(cross - w) <= 0.05 * w for w in bps):
        cross = None  # the same point as a window marker: one marker is enough
    return Series(label or model.name, T, y, bps, cross)


# -- drawing -------------------------------------------------------------------------------------
def _binary(v: float, units: tuple[str, ...]) -> str:
    """``v`` (a power of two) with a binary prefix: 4096 → ``4K``; 2**30 bytes → ``1 GiB``."""
    i = 0
    while v >= 1024 and i < len(units) - 1:
        v /= 1024
        i += 1
    return f"{v:g}{units[i]}"


def _plain(text: str) -> str:
    """Config text shown literally (a ``$`` would start matplotlib's mathtext)."""
    return text.replace("$", r"\$")


LINESTYLES = ("-", "--", ":", "-.")
#: two curves closer than this everywhere on the grid are drawn as one, with one legend entry
SAME_CURVE = 0.01


def _draw(curves: list[Series], metric: str, path: Path, *, title: str | None,
          ylabel: str | None = None, figsize=(6.4, 4.4), footer: str = ""):
    fig = _figure(figsize=figsize, layout="constrained")
    from matplotlib.lines import Line2D  # lazy: matplotlib is optional (_figure checks it)
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # lazy: as Line2D

    ax = fig.subplots()
    any_window = any_cross = False
    for i, s in enumerate(curves):
        colour = f"C{i % 10}"
        # line styles as well as colours: curves that run close together stay visible
        ax.plot(s.T, s.y, color=colour, lw=1.8, ls=LINESTYLES[i % len(LINESTYLES)], label=_plain(s.label))
        for w in s.windows:
            y = np.interp(w, s.T, s.y)
            ax.plot([w], [y], marker="v", ms=8, color=colour, mec="black", mew=0.6, ls="none", zorder=5)
            ax.annotate(f"window fills: T = {int(round(w)):,}", (w, y), xytext=(6, -12 if i % 2 else 6),
                        textcoords="offset points", fontsize=8, color=colour)
            any_window = True
        if s.crossover is not None:
            y = np.interp(s.crossover, s.T, s.y)
            ax.plot([s.crossover], [y], marker="o", ms=7, mfc="white", mec=colour, mew=1.6, ls="none",
                    zorder=5)
            above = i % 2 == 0  # neighbouring curves' labels on opposite sides, so they never overlap
            ax.annotate(f"T = {int(round(s.crossover)):,}", (s.crossover, y), xytext=(-8, 8) if above else (8, -12),
                        textcoords="offset points", fontsize=8, color=colour, ha="right" if above else "left")
            any_cross = True
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2 if metric == "cache_bytes" else 10)
    ax.xaxis.set_major_locator(LogLocator(base=2, numticks=8))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _binary(v, ("", "K", "M", "G"))))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("context T (tokens; K = 2¹⁰, M = 2²⁰)")
    if metric == "cache_bytes":
        ax.yaxis.set_major_locator(LogLocator(base=2, numticks=9))
        ax.yaxis.set_major_formatter(FuncFormatter(
            lambda v, _: _binary(v, (" B", " KiB", " MiB", " GiB", " TiB", " PiB"))))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel(ylabel or YLABEL[metric])
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)
    if title:
        ax.set_title(_plain(title), fontsize=11)
    handles, labels = ax.get_legend_handles_labels()
    if any_window:
        handles.append(Line2D([], [], marker="v", color="grey", mec="black", ls="none", ms=8))
        labels.append("sliding window fills")
    if any_cross:
        handles.append(Line2D([], [], marker="o", mfc="white", mec="grey", ls="none", ms=7, mew=1.6))
        labels.append("crossover: highest power of T takes over")
    ax.legend(handles, labels, fontsize=8, loc="best", framealpha=0.9)
    if footer:
        fig.supxlabel(footer, fontsize=7, color="0.35")
    ext = path.suffix.lower()
    meta = {"CreationDate": None} if ext == ".pdf" else {}
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150 if ext == ".png" else None, metadata=meta)


def _check_path(path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise SymcostError(f"plot file must end in .png or .pdf, got {str(path)!r}")
    return path


def plot_vs_T(models: list[Model], metric: str, path, *, T_min: int = 2**8, T_max: int = 2**21,
              batch: int = 1, dtype: str = "bf16", mla: str = "auto") -> Plot:
    """Draw ``metric`` against ``T`` (log-log) for every model and write PNG or PDF by extension.

    Returns the ``Plot`` with each curve's grid and float64 values (what was drawn).
    """
    if metric not in METRICS:
        raise SymcostError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    path = _check_path(path)
    if not models:
        raise SymcostError("plot: give at least one model")
    curves = [series(m, metric, T_min, T_max, batch=batch, dtype=dtype, mla=mla) for m in models]
    for s in curves:
        if not np.all(s.y > 0):
            raise SymcostError(f"{s.label}: {metric} is not positive over the range (no cache?); "
                               "cannot draw it on log axes")
    title = TITLE[metric] + f", B = {batch}" + (f", {dtype}" if metric == "cache_bytes" else "")
    footer = ("" if metric in ("cache_bytes", "cache") else
              Phase(kind="decode" if metric == "decode_flops" else "prefill", mla=mla).describe())
    _draw(curves, metric, path, title=title, footer=footer)
    return Plot(path, metric, curves)


def merge_close(curves: list[Series], label: str) -> list[Series]:
    """Two curves within ``SAME_CURVE`` of each other at every ``T`` as one curve called ``label``
    (e.g. prefill per token and decode per step under full attention, where both see T keys)."""
    a, b = curves
    gap = float(np.max(np.abs(a.y / np.interp(a.T, b.T, b.y) - 1)))
    return [dataclasses.replace(b, label=f"{label} (within {SAME_CURVE:.0%})")] if gap < SAME_CURVE else curves


def sheet_plots(model: Model, stem: Path, *, batch: int = 1, dtype: str = "bf16",
                mla: str = "auto", prefill_phase: Phase | None = None,
                decode_phase: Phase | None = None) -> dict[str, Path]:
    """The sheet's figures next to ``stem``: ``<stem>-flops.pdf`` (prefill per token and decode per
    step on one axes, under the sheet's own conventions) and ``<stem>-cache.pdf`` (when the model
    caches anything). Curves within ``SAME_CURVE`` of each other everywhere are drawn as one."""
    P = model.values.get(sym.P)
    T_max = int(P) if P is not None and int(P) > 2**9 else 2**21
    T_min = min(2**8, T_max // 4)
    out = {}
    pre = prefill_phase or Phase(mla=mla)
    dec = decode_phase or pre
    flops = [series(model, "flops_per_token", T_min, T_max, batch=batch, phase=pre,
                    label=f"prefill, per token ({pre.attention} attention)"),
             series(model, "decode_flops", T_min, T_max, batch=batch, phase=dec, label="decode, per step")]
    flops = merge_close(flops, "prefill per token = decode per step")
    out["flops"] = stem.with_name(stem.name + "-flops.pdf")
    _draw(flops, "flops_per_token", out["flops"], title=None,
          ylabel="FLOP\n(prefill per token, decode per step)", figsize=SHEET_SIZE)
    cache = series(model, "cache_bytes", T_min, T_max, batch=batch, dtype=dtype, label=f"cache, {dtype}")
    if np.all(cache.y > 0):
        out["cache"] = stem.with_name(stem.name + "-cache.pdf")
        _draw([cache], "cache_bytes", out["cache"], title=None, figsize=SHEET_SIZE)
    return out
