"""Documents: ``sheet`` (a LaTeX derivation) and ``plot`` (cost vs T)."""
from __future__ import annotations

from pathlib import Path

from ...architectures import loader
from ...core.conventions import Phase
from ...core.errors import SymcostError
from ...documents.report import write_sheet
from .. import options as o

OPTIONS = {
    "sheet": (o.MODEL, o.OUTPUT, o.PDF, o.T_PREFILL, o.T_DECODE, o.BATCH,
              o.DTYPE.but(help="cache dtype of the memory section (default bf16)"), *o.CONVENTIONS),
    "plot": (o.MODELS, o.PLOT_METRIC, o.PHASE.but(help="with --metric flops: decode or prefill"), o.OUTPUT.but(help="the .png or .pdf file to write"), o.T_MIN, o.T_MAX,
             o.BATCH, o.DTYPE.but(help="cache dtype (cache_bytes)"), o.MLA),
}


def cmd_sheet(args, out):
    m = loader.build(args.model)
    _, source = loader.resolve(args.model)
    path = Path(args.output)
    if source is not None and path.exists() and path.resolve() == source.resolve():
        raise SymcostError(f"-o {args.output}: that is the model's config.json; choose another file")
    if path.suffix != ".tex":
        raise SymcostError(f"-o {args.output}: the sheet is LaTeX; give a path ending in .tex")
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
                                        T_decode=args.T_decode, batch=args.batch, dtype=args.dtype,
                                        prefill_phase=phase)
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
    out.emit({"model": m.name, "tex": str(tex), "pdf": str(pdf) if pdf else None, "message": message,
              "mla": args.mla}, message)


#: the largest T a plot's axis takes: the curves are drawn in float64, exact for integers up to 2^53
PLOT_T_MAX = 2**53


def cmd_plot(args, out):
    for flag, v in (("--T-min", args.T_min), ("--T-max", args.T_max)):
        if v > PLOT_T_MAX:
            raise SymcostError(f"{flag} {v:,}: a plot's axis is drawn in float64, so T is at most 2^53 "
                               f"({PLOT_T_MAX:,}); the exact figures at any T come from flops/cache --T")
    metric = args.metric
    if metric == "flops":
        if args.phase is None:
            raise SymcostError("--metric flops: give --phase decode (FLOPs of one step) or prefill (FLOPs per token)")
        metric = o.PLOT_CURVES[("flops", args.phase)]
    elif args.phase is not None and (args.metric, args.phase) not in (("decode_flops", "decode"),
                                                                      ("flops_per_token", "prefill")):
        raise SymcostError(f"--phase {args.phase}: --metric {args.metric} has no phase to choose")
    models = [loader.build(name) for name in args.model]
    try:
        from ...documents.plot import plot_vs_T  # lazy: needs numpy/matplotlib, which `sheet` does not
        plot = plot_vs_T(models, metric, args.output, T_min=args.T_min, T_max=args.T_max,
                         batch=args.batch, dtype=args.dtype, mla=args.mla)
    except OSError as e:
        raise SymcostError(f"plot: cannot write {args.output}: {e.strerror or e}") from None
    out.emit({"path": str(plot.path), "models": plot.models, "metric": plot.metric, "mla": args.mla},
             f"wrote {plot.path} ({plot.metric} vs T for {', '.join(plot.models)})")
