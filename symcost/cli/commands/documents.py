"""Documents: ``sheet`` (a LaTeX derivation), ``html`` (the page with live inputs) and ``plot`` (cost vs T)."""
from __future__ import annotations

from pathlib import Path

from ...architectures import loader
from ...core.conventions import Phase
from ...core.errors import SymcostError
from ...documents.html import DPS, EPS, PPS, TPS, WEIGHT_DTYPES, write_html
from ...documents.html import KV_DTYPES as HTML_KV
from ...documents.report import write_sheet
from ...documents.summary import Inputs
from ...hardware.gpus import gpu as find_gpu
from .. import options as o
from .common import read_model

HTML_W = tuple(w for w in WEIGHT_DTYPES if w != "ckpt")

OPTIONS = {
    "sheet": (o.MODEL, o.OUTPUT, o.PDF, o.HTML, o.T_PREFILL, o.T_DECODE, o.BATCH,
              o.SHEET_KV_DTYPE,
              o.WEIGHTS_DTYPE.but(help="cost every weight in this dtype in the serving section, as memory "
                                       "--weights-dtype (default: the checkpoint's quantization_config)"),
              o.GPU.but(default="H100", help="the card serving (memory) and training (train --search) are "
                                              "sized on (default H100)"), *o.CONVENTIONS),
    "html": (o.MODEL, o.HTML_OUTPUT, o.T.but(default=4096, help="the page's initial context T (the reader moves it)"),
             o.BATCH, o.KV_DTYPE.but(choices=HTML_KV), o.WEIGHTS_DTYPE.but(choices=HTML_W),
             o.GPU.but(default="H100", help="the page's initial card (symcost gpus)"),
             *(row.but(choices=c) for row, c in ((o.TP, TPS), (o.PP, PPS), (o.DP, DPS), (o.EP, EPS)))),
    "plot": (o.MODELS, o.PLOT_METRIC, o.PHASE.but(help="with --metric flops: decode (one step at context T) or prefill (a prompt of T tokens)"),
             o.OUTPUT.but(help="the .png or .pdf file to write"), o.T_MIN, o.T_MAX,
             o.BATCH, o.DTYPE.but(help="cache dtype (cache_bytes)"), o.MLA),
}


def _output(args, suffix: str, what: str) -> Path:
    _, source = loader.resolve(args.model)
    path = Path(args.output)
    if source is not None and path.exists() and path.resolve() == source.resolve():
        raise SymcostError(f"-o {args.output}: that is the model's config.json; choose another file")
    if path.suffix != suffix:
        raise SymcostError(f"-o {args.output}: the {what}; give a path ending in {suffix}")
    return path


def _page(m, args, path: Path, **inputs) -> str:
    """Write the HTML page (``documents.html``); its message."""
    try:
        return write_html(m, loader.read_json(args.model)[1], path, Inputs(**inputs))[1]
    except OSError as e:
        raise SymcostError(f"html: cannot write {path}: {e.strerror or e}") from None


def cmd_html(args, out):
    m = loader.build(args.model)
    path = _output(args, ".html", "page is HTML")
    message = _page(m, args, path, T_prefill=args.T, T_decode=args.T, batch=args.batch, kv_dtype=args.kv_dtype,
                    weights_dtype=args.weights_dtype, gpu=args.gpu, tp=args.tp, pp=args.pp, dp=args.dp, ep=args.ep)
    out.emit({"model": m.name, "html": str(path), "message": message}, message)


def cmd_sheet(args, out):
    m, raw = read_model(args.model)
    find_gpu(args.gpu)  # an unknown card: one line, before anything is written
    path = _output(args, ".tex", "sheet is LaTeX")
    for p in (path, path.with_name(path.stem + "-flops.pdf"), path.with_name(path.stem + "-cache.pdf")):
        if p.is_symlink():
            raise SymcostError(f"-o {args.output}: {p} is a symbolic link; symcost writes no file through a "
                               "link (give the path it points to, or another one)")
        if p.exists() and not p.is_file():
            raise SymcostError(f"-o {args.output}: {p} exists and is not a regular file")
    replaced = path.exists()
    phase = Phase(attention=args.attention, logits=args.logits, mla=args.mla, impl=args.impl)
    try:
        tex, pdf, message = write_sheet(m, args.output, pdf=args.pdf, T_prefill=args.T_prefill,
                                        T_decode=args.T_decode, batch=args.batch, dtype=args.kv_dtype,
                                        prefill_phase=phase, raw=raw, weights_dtype=args.weights_dtype,
                                        gpu=args.gpu)
    except (RuntimeError, OSError) as e:
        lines = str(e).splitlines()
        why = lines[0].rstrip(":") if lines else type(e).__name__
        tex_error = next((ln for ln in lines if ln.startswith("! ")), None)  # TeX's own error line
        if tex_error:
            why += f" ({tex_error[2:].strip()[:120]})"
        kept = f"; the .tex is kept at {path}" if args.pdf and path.is_file() else ""
        raise SymcostError(f"sheet: {why}{kept}") from None
    if replaced:
        message += f" (replaced the existing {path})"
    payload = {"model": m.name, "tex": str(tex), "pdf": str(pdf) if pdf else None, "message": message,
               "mla": args.mla}
    if args.html:  # the page at the sheet's decode context, batch and cache dtype
        page = Path(args.output).with_suffix(".html")
        payload["html"] = str(page)
        payload["message"] = message = message + "; " + _page(m, args, page, T_prefill=args.T_decode,
                                                              T_decode=args.T_decode, batch=args.batch,
                                                              kv_dtype=args.kv_dtype if args.kv_dtype in HTML_KV else "bf16")
    out.emit(payload, message)


#: the largest T a plot's axis takes: the curves are drawn in float64, exact for integers up to 2^53
PLOT_T_MAX = 2**53


def cmd_plot(args, out):
    for flag, v in (("--T-min", args.T_min), ("--T-max", args.T_max)):
        if v > PLOT_T_MAX:
            raise SymcostError(f"{flag} {v:,}: a plot's axis is drawn in float64, so T is at most 2^53 "
                               f"({PLOT_T_MAX:,}); the exact figures at any T come from flops/cache --T")
    from ...analysis.vocabulary import curve, resolve
    metric = curve(*resolve(args.metric, args.phase, "plot"))  # the shared names (check/scale/export/crossover)
    models = [loader.build(name) for name in args.model]
    try:
        from ...documents.plot import plot_vs_T  # lazy: needs numpy/matplotlib, which `sheet` does not
        plot = plot_vs_T(models, metric, args.output, T_min=args.T_min, T_max=args.T_max,
                         batch=args.batch, dtype=args.dtype, mla=args.mla)
    except OSError as e:
        raise SymcostError(f"plot: cannot write {args.output}: {e.strerror or e}") from None
    out.emit({"path": str(plot.path), "models": plot.models, "metric": plot.metric, "mla": args.mla},
             f"wrote {plot.path} ({plot.metric} vs T for {', '.join(plot.models)})")
