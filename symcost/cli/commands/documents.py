"""Documents: ``sheet`` (a LaTeX derivation) and ``plot`` (cost vs T)."""
from __future__ import annotations

from pathlib import Path

from ...architectures import loader
from ...core.conventions import Phase
from ...core.errors import SymcostError
from ...documents.report import write_sheet
from ...hardware.gpus import gpu as find_gpu
from .. import options as o
from .common import read_model

OPTIONS = {
    "sheet": (o.MODEL, o.OUTPUT, o.PDF, o.T_PREFILL, o.T_DECODE, o.BATCH,
              o.KV_DTYPE.but(help="KV-cache element dtype of the cache and serving sections, as memory "
                                  "--kv-dtype (default bf16)"),
              o.WEIGHTS_DTYPE.but(help="cost every weight in this dtype in the serving section, as memory "
                                       "--weights-dtype (default: the checkpoint's quantization_config)"),
              o.GPU.but(default="H100", help="the card serving (memory) and training (train --search) are "
                                              "sized on (default H100)"), *o.CONVENTIONS),
    "plot": (o.MODELS, o.PLOT_METRIC, o.OUTPUT.but(help="the .png or .pdf file to write"), o.T_MIN, o.T_MAX,
             o.BATCH, o.DTYPE.but(help="cache dtype (cache_bytes)"), o.MLA),
}


def cmd_sheet(args, out):
    m, raw = read_model(args.model)
    find_gpu(args.gpu)  # an unknown card: one line, before anything is written
    _, source = loader.resolve(args.model)
    path = Path(args.output)
    if source is not None and path.exists() and path.resolve() == source.resolve():
        raise SymcostError(f"-o {args.output}: that is the model's config.json; choose another file")
    if path.suffix != ".tex":
        raise SymcostError(f"-o {args.output}: the sheet is LaTeX; give a path ending in .tex")
    phase = Phase(attention=args.attention, logits=args.logits, mla=args.mla, impl=args.impl)
    try:
        tex, pdf, message = write_sheet(m, args.output, pdf=args.pdf, T_prefill=args.T_prefill,
                                        T_decode=args.T_decode, batch=args.batch, dtype=args.kv_dtype,
                                        prefill_phase=phase, raw=raw, weights_dtype=args.weights_dtype,
                                        gpu=args.gpu)
    except (RuntimeError, OSError) as e:
        raise SymcostError(f"sheet: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    out.emit({"model": m.name, "tex": str(tex), "pdf": str(pdf) if pdf else None, "message": message,
              "mla": args.mla}, message)


def cmd_plot(args, out):
    models = [loader.build(name) for name in args.model]
    try:
        from ...documents.plot import plot_vs_T  # lazy: needs numpy/matplotlib, which `sheet` does not
        plot = plot_vs_T(models, args.metric, args.output, T_min=args.T_min, T_max=args.T_max,
                         batch=args.batch, dtype=args.dtype, mla=args.mla)
    except OSError as e:
        raise SymcostError(f"plot: cannot write {args.output}: {e.strerror or e}") from None
    out.emit({"path": str(plot.path), "models": plot.models, "metric": plot.metric, "mla": args.mla},
             f"wrote {plot.path} ({plot.metric} vs T for {', '.join(plot.models)})")
