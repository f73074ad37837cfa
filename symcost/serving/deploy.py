"""Deployment planner: every valid TP×EP×PP×DP layout on N GPUs, evaluated at once.

The serving formulas (``formulas``) are built once per model and compiled once into NumPy
functions of the layout symbols; all layouts are then evaluated as arrays (float64 — ``memory`` and
``roofline`` give the exact integers for one layout). A layout is valid when its sizes pass
``plan.check_layout`` (heads, KV heads, experts and layers divide). Expert parallelism is off
(N_ep = 1) or on with vLLM's rule N_ep = N_dp (the expert-parallel group spans a stage's TP and DP
ranks, N_tp·N_dp of them).
Per layout: fits (the KV pages hold --batch requests of T tokens on every rank), KV capacity in
tokens, max concurrency at T, TTFT of one prompt of T, TPOT at --batch, tokens/s per GPU.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import SymcostError
from ..core.notation import sym
from .formulas import compile_exprs, compute_dtype, gpu_values, serve_formulas
from .plan import NOTE as SERVE_NOTE
from .plan import Layout, ServeSetup, check_layout
from .quant import checkpoint
from .roofline import NOTE as ROOF_NOTE
from .roofline import Latency

#: what ``deploy`` states with every answer
NOTE = (SERVE_NOTE + "; " + ROOF_NOTE + "; layouts evaluated in float64 from formulas compiled once (symcost "
        "memory/roofline give one layout exactly)")
#: the GPU counts tried when none is given: the smallest that fits is the answer
POWERS = (1, 2, 4, 8, 16, 32, 64)

SYMS = (sym.N_tp, sym.N_ep, sym.N_pp, sym.N_dp, sym.T, sym.B, sym.M, sym.M_gpu, sym.F_gpu, sym.BW_hbm, sym.BW_link)


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def layouts(model, gpus: int, max_tp: int = 64) -> list[Layout]:
    out = []
    has_experts = sym.E in model.values
    for tp in _divisors(gpus):
        if tp > max_tp:
            continue
        for pp in _divisors(gpus // tp):
            dp = gpus // (tp * pp)
            for ep in ((1, tp * dp) if has_experts and tp * dp > 1 else (1,)):
                lay = Layout.vllm(tp=tp, pp=pp, dp=dp, ep=ep)
                try:
                    check_layout(model, lay)
                except SymcostError:
                    continue
                out.append(lay)
    return out


@dataclass
class Compiled:
    """The model's serving formulas compiled once into NumPy functions of SYMS."""

    fn: object  # SYMS -> {name: array}
    dtype: str
    peak_used: str


def compile_model(model, raw, *, kv_dtype="bf16", weights_dtype=None, experts_dtype=None, quant_fallback=False,
                  overhead_bytes=2**30, mla="auto", compute=None, gpu=None) -> Compiled:
    ck = checkpoint(model, raw, weights_dtype, quant_fallback, experts_dtype)
    f = serve_formulas(model, ck, kv_dtype=kv_dtype, overhead_bytes=overhead_bytes, lazy=True)
    lat = Latency(model, ck, kv_dtype=kv_dtype, mla=mla, weights=f.weights)
    exprs = {"weights": f.weights.total, "activation": f.activation, "fixed": f.fixed,
             "num_blocks": f.num_blocks, "groups": f.kv.groups, "block": f.kv.block, "need": f.kv.need,
             "decode_step": lat.decode.step_time, "prefill_step": lat.prefill.step_time}
    numpy()  # the compiled functions need it: a clear error instead of an ImportError
    fn = compile_exprs(exprs, SYMS)
    cdt = compute_dtype(ck, compute)
    return Compiled(fn, cdt, gpu.peak(cdt)[1] if gpu is not None else cdt)


def numpy():
    """NumPy, which vectorised layout searches need (a core dependency, imported only here: the
    commands that do not sweep never load it)."""
    try:
        import numpy  # lazy: only layout searches need it
    except ImportError:
        raise SymcostError("searching layouts evaluates them with NumPy, which is not installed: "
                           "pip install numpy (a dependency of symcost)") from None
    return numpy


def evaluate(comp: Compiled, lays: list[Layout], *, gpu, T: int, batch: int, max_batched_tokens=8192,
             mem_util=0.9) -> list[dict]:
    if not lays:
        return []
    gv, _ = gpu_values(gpu, comp.dtype, mem_util)
    np = numpy()
    tp = np.array([l.tp for l in lays], dtype=float)
    pp = np.array([l.pp for l in lays], dtype=float)
    dp = np.array([l.dp for l in lays], dtype=float)
    ee = np.array([l.ep for l in lays], dtype=float)
    ones = np.ones_like(tp)
    args = (tp, ee, pp, dp, T * ones, batch * ones, max_batched_tokens * ones, float(gv[sym.M_gpu]) * ones,
            float(gv[sym.F_gpu]) * ones, float(gv[sym.BW_hbm]) * ones, float(gv[sym.BW_link]) * ones)
    ev = {k: np.broadcast_to(np.asarray(v, dtype=float), tp.shape) for k, v in comp.fn(*args).items()}
    one = (tp, ee, pp, dp, T * ones, ones, max_batched_tokens * ones) + args[7:]  # B = 1: TTFT's one prompt
    ttft = Latency.pipelined(np.asarray(comp.fn(*one)["prefill_step"], dtype=float), pp)
    tpot = Latency.pipelined(ev["decode_step"], pp)
    blocks = np.maximum(ev["num_blocks"], 0)
    conc = blocks / np.maximum(ev["need"], 1)
    tokens = np.floor(blocks / ev["groups"]) * ev["block"]
    fits = conc >= batch
    rows = []
    for i, lay in enumerate(lays):
        rows.append({"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "ep": lay.ep_group, "gpus": lay.gpus,
                     "fits": bool(fits[i]), "kv_capacity_tokens": int(tokens[i]),
                     "max_concurrency": float(conc[i]), "ttft_s": float(ttft[i]), "tpot_s": float(tpot[i]),
                     "tokens_per_s_per_gpu": float(batch / tpot[i] / (lay.tp * lay.pp)) if fits[i] else 0.0,
                     "weights_per_gpu_bytes": int(np.ceil(ev["weights"][i]))})
    rows.sort(key=lambda x: (not x["fits"], -x["tokens_per_s_per_gpu"], x["ttft_s"]))
    return rows


def deploy(model, raw, setup: ServeSetup, *, gpus: list[int] | None, T: int, batch: int) -> dict:
    """Every valid layout on each GPU count of ``gpus`` for ``setup`` (its GPU, dtypes and engine
    settings; the layouts are swept, ``setup.layout`` is not used); ``gpus`` None: the smallest power of
    two (up to 64) with a layout that fits. The formulas are built and compiled once, whatever the counts."""
    smallest = gpus is None
    # float GiB, as deploy has always summed them; plan sums their decimal texts exactly (the two can
    # differ by a byte when the float sum falls just under a whole byte)
    over = int((setup.overhead_gib + setup.cudagraph_gib) * 2**30)
    comp = compile_model(model, raw, gpu=setup.gpu, kv_dtype=setup.kv_dtype, weights_dtype=setup.weights_dtype,
                         experts_dtype=setup.experts_dtype, quant_fallback=setup.quant_fallback,
                         overhead_bytes=over, mla=setup.mla)
    rows = []
    for n in POWERS if smallest else gpus:
        got = evaluate(comp, layouts(model, n), gpu=setup.gpu, T=T, batch=batch,
                       max_batched_tokens=setup.max_batched_tokens, mem_util=setup.mem_util)
        if smallest:
            rows = got
            if any(r["fits"] for r in got):
                break
        else:
            rows += got
    rows.sort(key=lambda x: (not x["fits"], -x["tokens_per_s_per_gpu"], x["ttft_s"]))
    return {"layouts": rows, "compute_dtype": comp.dtype, "peak_dtype_used": comp.peak_used}
