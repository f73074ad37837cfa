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
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
#: points kept free between what is drawn and the figure's edge
EDGE = 4.0


def _pow10(v: float) -> str:
    """``v`` in plain text with a Unicode superscript exponent: 1000 → ``10³``, 2.5e11 → ``2.5×10¹¹``."""
    e = math.floor(math.log10(v) + 1e-9)
    c = v / 10.0**e
    c = round(c) if abs(c - round(c)) < 1e-6 else c
    power = "10" + str(e).translate(_SUPERSCRIPT)
    return power if c == 1 else f"{c:g}×{power}"


def _log10_formatter(**kw):
    """Labels of a log10 axis: which ticks get one is matplotlib's rule (``LogFormatter``: the decades,
    and the minor ticks too when the axis spans less than a decade or so), the text ``_pow10``'s plain
    text. matplotlib's default, ``LogFormatterSciNotation``, writes mathtext ($10^{12}$), whose parser
    took about a quarter of the figures' drawing time (profiled) for a few superscripts Unicode has."""
    from matplotlib.ticker import LogFormatter  # lazy: matplotlib is optional (_figure checks it)

    class Pow10(LogFormatter):
        def __call__(self, x, pos=None):
            return _pow10(x) if x > 0 and super().__call__(x, pos) else ""
    return Pow10(10, **kw)


def _text_size(s: str, prop) -> tuple[float, float]:
    """(width, height) in points of ``s`` in the font ``prop`` (a ``FontProperties``): the widest
    line's advance (the font's metrics, as the PDF and Agg backends measure it) and 1.2 font sizes a
    line (a little above matplotlib's line height, the font's ascent + descent). No renderer, no
    layout pass: a few microseconds a string."""
    from matplotlib.textpath import text_to_path  # lazy: as _figure
    if not s:
        return 0.0, 0.0
    lines = s.split("\n")
    w = max(text_to_path.get_text_width_height_descent(line, prop, ismath=False)[0] for line in lines)
    return w, 1.2 * prop.get_size_in_points() * len(lines)


def _tick_labels(axis) -> list[tuple[float, str]]:
    """(position, label) of every tick label the axis will draw: its locators' ticks inside the view
    through its formatters, the position the fraction of the axis' length from its start."""
    scale = axis.get_transform()
    lo, hi = scale.transform(np.sort(axis.get_view_interval()))
    out = []
    for locator, formatter in ((axis.get_major_locator(), axis.get_major_formatter()),
                               (axis.get_minor_locator(), axis.get_minor_formatter())):
        locs = np.asarray(locator(), dtype=np.float64)
        at = (scale.transform(locs) - lo) / (hi - lo)
        keep = (at >= -1e-9) & (at <= 1 + 1e-9)  # a tick on the edge is drawn
        out += [(f, t) for f, t in zip(at[keep], formatter.format_ticks(list(locs[keep]))) if t]
    return out


def _place_axes(fig, ax, footer) -> None:
    """Margins just wide enough for what is drawn outside the axes, set once: no layout engine.

    ``layout="constrained"`` (or ``tight_layout``, ``bbox_inches="tight"``) lays every text out with
    a renderer to find the margins, then draws again: about 40% of the figures' drawing time. Here the
    margins are summed from the label texts' sizes (``_text_size``) and matplotlib's tick and label
    spacing: left, the y tick labels and the y label; below, the x tick labels, the x label and the
    footer; above, the title; and where a tick label centred on a tick near an edge overhangs the
    axes' end (the top y label, the last x label), that overhang. The tick labels and their places
    depend on the axes' size (``LogLocator`` thins them on a short axis), so they are measured again
    once the axes is placed, until the margins settle."""
    from matplotlib import rcParams as rc  # lazy: as _figure
    from matplotlib.font_manager import FontProperties  # lazy: as _figure
    W, H = fig.get_size_inches() * 72.0

    def labels(axis):  # (fraction along the axis, width, height) of each label
        prop = FontProperties(size=rc["xtick.labelsize"] if axis is ax.xaxis else rc["ytick.labelsize"])
        return [(f, *_text_size(t, prop)) for f, t in _tick_labels(axis)] or [(0.5, 0.0, 0.0)]

    def height(text):
        return _text_size(text.get_text(), text.get_fontproperties())[1] if text else 0.0

    ylabel_w = height(ax.yaxis.label)  # drawn turned a quarter: its lines' height is a width
    xlabel_h, title_h, footer_h = height(ax.xaxis.label), height(ax.title), height(footer)
    tick_x = rc["xtick.major.size"] + rc["xtick.major.pad"]
    tick_y = rc["ytick.major.size"] + rc["ytick.major.pad"]
    pos = ax.get_position()
    aw, ah = pos.width * W, pos.height * H  # the axes' size in points, from the default place at first
    margins = None
    for _ in range(4):
        xt, yt = labels(ax.xaxis), labels(ax.yaxis)
        new = (EDGE + max(ylabel_w + rc["axes.labelpad"] + max(w for _, w, _ in yt) + tick_y,
                          max(w / 2 - f * aw for f, w, _ in xt)),
               EDGE + max(footer_h + (EDGE if footer else 0.0) + xlabel_h + rc["axes.labelpad"]
                          + max(h for _, _, h in xt) + tick_x, max(h / 2 - f * ah for f, _, h in yt)),
               EDGE + max(0.0, max(w / 2 - (1 - f) * aw for f, w, _ in xt)),
               EDGE + max(title_h + rc["axes.titlepad"] if title_h else 0.0,
                          max(h / 2 - (1 - f) * ah for f, _, h in yt)))
        if margins is not None and max(abs(a - b) for a, b in zip(new, margins)) < 0.1:
            break
        margins = new
        left, bottom, right, top = margins
        aw, ah = W - left - right, H - bottom - top
        ax.set_position([left / W, bottom / H, aw / W, ah / H])


def _annotate(ax, text: str, xy, offset, ha: str, colour, box) -> None:
    """``text`` at ``offset`` points from the data point ``xy``, moved the least that keeps it inside
    the axes (``box``: its size in points): a label at a point near an edge slides in along it.
    matplotlib's layout pass used to widen the margins for a label sticking out of the axes; the
    margins are fixed now, so the label moves instead (and no longer crosses the axes' frame)."""
    from matplotlib.font_manager import FontProperties  # lazy: as _figure
    w, h = _text_size(text, FontProperties(size=8))
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    px = box[0] * math.log(xy[0] / x0) / math.log(x1 / x0)  # the point, in points from the corner
    py = box[1] * math.log(xy[1] / y0) / math.log(y1 / y0)
    dx, dy = offset
    left = dx - w if ha == "right" else dx  # the text's extent from the point
    dx += max(0.0, 2 - (px + left)) - max(0.0, px + left + w - (box[0] - 2))
    # the baseline at dy: the ascent (0.93 em) above it, the descent (0.24 em) below, of h = 1.2 em
    dy += max(0.0, 2 - (py + dy - 0.2 * h)) - max(0.0, py + dy + 0.8 * h - (box[1] - 2))
    ax.annotate(text, xy, xytext=(dx, dy), textcoords="offset points", fontsize=8, color=colour, ha=ha)


def _draw(curves: list[Series], metric: str, path: Path, *, title: str | None,
          ylabel: str | None = None, figsize=(6.4, 4.4), footer: str = ""):
    fig = _figure(figsize=figsize)
    from matplotlib.lines import Line2D  # lazy: matplotlib is optional (_figure checks it)
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # lazy: as Line2D

    ax = fig.subplots()
    notes = []  # (text, xy, offset, ha, colour): placed once the axes' size is known
    any_window = any_cross = False
    for i, s in enumerate(curves):
        colour = f"C{i % 10}"
        # line styles as well as colours: curves that run close together stay visible
        ax.plot(s.T, s.y, color=colour, lw=1.8, ls=LINESTYLES[i % len(LINESTYLES)], label=_plain(s.label))
        for w in s.windows:
            y = np.interp(w, s.T, s.y)
            ax.plot([w], [y], marker="v", ms=8, color=colour, mec="black", mew=0.6, ls="none", zorder=5)
            notes.append((f"window fills: T = {int(round(w)):,}", (w, y), (6, -12 if i % 2 else 6), "left", colour))
            any_window = True
        if s.crossover is not None:
            y = np.interp(s.crossover, s.T, s.y)
            ax.plot([s.crossover], [y], marker="o", ms=7, mfc="white", mec=colour, mew=1.6, ls="none",
                    zorder=5)
            above = i % 2 == 0  # neighbouring curves' labels on opposite sides, so they never overlap
            notes.append((f"T = {int(round(s.crossover)):,}", (s.crossover, y), (-8, 8) if above else (8, -12),
                          "right" if above else "left", colour))
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
    else:
        ax.yaxis.set_major_formatter(_log10_formatter())
        ax.yaxis.set_minor_formatter(_log10_formatter(labelOnlyBase=False))
    ax.set_ylabel(ylabel or YLABEL[metric])
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)
    if title:
        ax.set_title(_plain(title), fontsize=11)
    _place_axes(fig, ax, fig.supxlabel(footer, fontsize=7, color="0.35") if footer else None)
    box = ax.get_position().size * fig.get_size_inches() * 72.0
    for note in notes:
        _annotate(ax, *note, box)
    handles, labels = ax.get_legend_handles_labels()
    if any_window:
        handles.append(Line2D([], [], marker="v", color="grey", mec="black", ls="none", ms=8))
        labels.append("sliding window fills")
    if any_cross:
        handles.append(Line2D([], [], marker="o", mfc="white", mec="grey", ls="none", ms=7, mew=1.6))
        labels.append("crossover: highest power of T takes over")
    ax.legend(handles, labels, fontsize=8, loc="best", framealpha=0.9)
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
