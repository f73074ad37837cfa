"""Serving and training metrics as term trees, for the symbolic commands (``check``, ``scale``,
``crossover``, ``export``).

Every metric is a ``Terms`` tree in the notation, bound to the config's values and to what the
options fix; the parallel sizes (N_tp, N_pp, N_dp, N_ep, N_cp) stay symbols unless an option
gives them, so ``scale --wrt N_dp`` differentiates in a layout size like it does in ``T``.

    serve_memory     bytes on the most-loaded serving rank for B requests of T tokens
                     (``serving.formulas.ServeFormulas.terms``: weights, activations of one
                     chunked-prefill step of M tokens, overhead, KV pages); in N_tp, N_ep, N_pp, T, B, M
    kv_capacity      tokens the KV pages of one rank hold (vLLM's "GPU KV cache size"); in M_gpu, N_*, M
    max_concurrency  requests of T tokens those pages hold at once (vLLM's "Maximum concurrency")
    ttft             time of the prefill of one prompt of T tokens, N_pp stages in turn, from the
                     calibrated kernel model ``roofline`` uses (``serving.roofline.step_formula``: per kernel
                     class max(F/(P·η_c), Q/(BW·η_m)) + floors, collectives α + volume/(link·η)); with
                     ``--gpu`` the η, floors and α are Piecewise in the step's regime (rows per GEMM call,
                     rows per expert, message bytes: ``calibration_piecewise``), so the formula stays one of
                     B and T; without it they stay symbols; ``--ideal``: η = 1, floors and α 0 (the bound)
    tpot             the same for one decode step of B sequences at context T
    train_memory     per-GPU training bytes of the heaviest pipeline stage (``training.memory``:
                     weights, gradients, optimizer state, 1F1B activations); in N_dp, N_tp, N_cp,
                     N_ep, B (micro-batch), T; the stage composition is that of ``--pp``

The serving metrics read the checkpoint's bytes (``quantization_config``) unless
``--weights-dtype`` says otherwise; ``--gpu`` binds M_gpu (usable memory × ``--mem-util``),
F_gpu (the dense peak of the checkpoint's compute dtype), BW_hbm and BW_link; without it they
stay symbols. Serving ``--ep`` is vLLM's expert-parallel group (N_tp·N_ep), training ``--ep`` is
N_ep (``parallel``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from ..core.errors import SymcostError
from ..core.notation import by_name, sym
from ..core.terms import Terms
from ..model.parallel import Layout

SERVING = {"serve_memory": "serving bytes per GPU (most-loaded rank, vLLM accounting)",
           "kv_capacity": "KV capacity per GPU in tokens (vLLM pages)",
           "max_concurrency": "requests of T tokens the KV pages hold at once",
           "ttft": "time to first token, seconds (calibrated kernels, one prompt of T; --ideal: the bound)",
           "tpot": "time per output token, seconds (calibrated kernels, one decode step of B at T; --ideal: the bound)"}
TRAINING = {"train_memory": "training bytes per GPU (heaviest pipeline stage, ZeRO --zero)"}
METRICS = {**SERVING, **TRAINING}

LAYOUT = (("dp", sym.N_dp), ("tp", sym.N_tp), ("pp", sym.N_pp), ("ep", sym.N_ep), ("cp", sym.N_cp))
#: --wrt names: the notation's N_* and the flag spellings
WRT_ALIASES = {**{k: s.name for k, s in LAYOUT}, **{s.name: s.name for _, s in LAYOUT}}


@dataclass
class Options:
    """What fixes a metric's symbols; ``None`` leaves that symbol free."""

    dp: int | None = None
    tp: int | None = None
    pp: int | None = None
    ep: int | None = None
    cp: int | None = None
    gpu: str | None = None
    kv_dtype: str = "bf16"
    weights_dtype: str | None = None
    mem_util: float = 0.9
    max_batched_tokens: int = 8192
    overhead_gib: float | None = None  # None: the engine's non-torch memory, modelled (serving.profile)
    mla: str = "auto"
    zero: int = 0
    recompute: str = "none"
    optimizer: str = "adamw"
    T: int | None = None
    ideal: bool = False  # ttft/tpot: the pure roofline bound instead of the calibrated kernels
    extra: dict = field(default_factory=dict)


def _serving_layout(model, o: Options) -> dict:
    """The layout symbols the options fix (checked as a serving layout)."""
    if o.cp not in (None, 1):
        raise SymcostError(f"--cp {o.cp}: serving has no context parallelism (N_cp = 1)")
    given = {k: getattr(o, k) for k in ("tp", "pp", "dp", "ep") if getattr(o, k) is not None}
    if not given:
        return {}
    lay = Layout.vllm(model, tp=o.tp or 1, pp=o.pp or 1, dp=o.dp or 1, ep=o.ep or 1)
    lay.check(model)
    v = lay.values()
    out = {sym.N_tp: v[sym.N_tp]} if o.tp is not None else {}
    if o.pp is not None:
        out[sym.N_pp] = v[sym.N_pp]
    if o.dp is not None:
        out[sym.N_dp] = v[sym.N_dp]
    if o.ep is not None or o.tp is not None or o.dp is not None:
        # --tp alone: no expert parallelism, N_ep = 1; --dp without --ep: the experts sliced over the DP ranks
        out[sym.N_ep] = v[sym.N_ep]
        out[sym.x_ep] = sympy.Integer(lay.x_ep)  # the experts' placement
    return out


def _checkpoint(model, raw, o: Options):
    from ..serving.quant import checkpoint  # lazy: check/scale on params|flops|cache load no serving/training
    return checkpoint(model, raw, o.weights_dtype, False, None)


def serving_terms(model, raw: dict, name: str, o: Options) -> Terms:
    from ..serving.formulas import (  # lazy: check/scale on params|flops|cache load no serving/training
        compute_dtype,
        gpu_values,
    )
    from ..serving.roofline import Latency  # lazy: check/scale on params|flops|cache load no serving/training
    ck = _checkpoint(model, raw, o)
    bound = dict(model.values)
    bound[sym.M] = sympy.Integer(o.max_batched_tokens)
    bound.update(_serving_layout(model, o))
    if o.T is not None:
        bound[sym.T] = sympy.Integer(o.T)
    if o.gpu is not None:
        from ..hardware.gpus import gpu as find_gpu  # lazy: check/scale on params|flops|cache load no serving/training
        gv, _ = gpu_values(find_gpu(o.gpu), compute_dtype(ck), o.mem_util)
        bound.update(gv)
    if name in Latency.STEPS:
        t = _latency_terms(model, ck, name, o)
        return Terms(dict(t.items()), t.docs, bound=bound)
    # the engine's formulas, as ``memory`` evaluates them (one implementation: ``plan.engine_formulas``)
    from ..hardware.gpus import gpu as find_gpu  # lazy: check/scale on params|flops|cache load no serving/training
    from ..serving.plan import ServeSetup, engine_formulas  # lazy: as above
    # a stated --pp > 1: vLLM's stages, each by its own layers (the block count the fewest over them);
    # without it the formulas keep N_pp, each stage bounded by ceil(count/N_pp) layers of every group
    setup = ServeSetup(layout=Layout(pp=o.pp) if o.pp is not None and o.pp > 1 else Layout(),
                       gpu=find_gpu(o.gpu) if o.gpu is not None else None, kv_dtype=o.kv_dtype,
                       weights_dtype=o.weights_dtype, mem_util=o.mem_util, max_batched_tokens=o.max_batched_tokens,
                       overhead_gib=o.overhead_gib, mla=o.mla)
    f, chunk = engine_formulas(model, raw, setup, T=o.T or 1)
    bound[sym.M] = sympy.Integer(chunk)
    if name == "serve_memory":
        return f.terms().bind(bound)
    expr = f.kv_tokens if name == "kv_capacity" else f.max_concurrency
    return Terms({name: expr}, bound=bound)


def _latency_terms(model, ck, name: str, o: Options) -> Terms:
    """TTFT or TPOT as the calibrated step's terms (kernels, collectives) times N_pp: the calibration
    Piecewise in the regime with ``--gpu`` (``CalibratedLatency.symbolic``), symbols without; ``--ideal``
    the bound (η = 1, floors and α 0), as ``roofline --ideal``."""
    from ..serving.roofline import (  # lazy: check/scale on params|flops|cache load no serving/training
        CalibratedLatency,
        Latency,
        ideal_values,
        step_formula,
    )
    phase, b = Latency.STEPS[name]
    if o.gpu is not None:
        from ..hardware.gpus import gpu as find_gpu  # lazy: as above
        from ..serving.plan import Layout as ServeLayout  # lazy: as above
        from ..serving.plan import ServeSetup
        setup = ServeSetup(layout=ServeLayout(), gpu=find_gpu(o.gpu), kv_dtype=o.kv_dtype,
                           weights_dtype=o.weights_dtype, mem_util=o.mem_util, mla=o.mla)
        t = CalibratedLatency(model, ck, setup, kv_dtype=o.kv_dtype, mla=o.mla).symbolic(phase, ideal=o.ideal)
    else:
        t = step_formula(model, ck, phase, kv_dtype=o.kv_dtype, mla=o.mla).terms
        if o.ideal:
            t = t.subs(ideal_values())
    if b is not None:
        t = t.map(lambda e: sympy.sympify(e).xreplace({sym.B: sympy.Integer(b)}))
    return t.map(lambda e: Latency.pipelined(e, sym.N_pp))


def training_terms(model, name: str, o: Options) -> Terms:
    from ..training.memory import train_memory  # lazy: check/scale on params|flops|cache load no serving/training
    from ..training.setup import (  # lazy: check/scale on params|flops|cache load no serving/training
        ACT_BYTES,
        TrainSetup,
    )
    ep = o.ep or 1
    cp = o.cp or 1
    # a layout that passes the constraints for the sizes not given (they stay symbols in the formula)
    dp = o.dp if o.dp is not None else max(1, ep // cp)
    seq = o.T or 4096 * cp  # the heaviest stage is chosen at this T; the formula keeps T unless --T
    tm = train_memory(model, TrainSetup.of(seq=seq, micro_batch=1, dp=dp, tp=o.tp or 1, pp=o.pp or 1, ep=ep,
                                           cp=cp, zero=o.zero, recompute=o.recompute, optimizer=o.optimizer))
    bound = {**model.values, sym.b_a: sympy.Integer(ACT_BYTES["bf16"])}
    if o.T is not None:
        bound[sym.T] = sympy.Integer(o.T)
    for k, s in LAYOUT:
        if getattr(o, k) is not None and s is not sym.N_pp:
            bound[s] = sympy.Integer(getattr(o, k))
    t = Terms(bound=bound)
    docs = {"weights": "bf16 weights of the stage's parameters, / N_g under ZeRO-3",
            "gradients": "gradients, / N_g under ZeRO >= 2",
            "optimizer": "optimizer state (AdamW: 12 bytes per parameter), / N_g under ZeRO >= 1",
            "activations": "1F1B micro-batches in flight x the bytes one micro-batch's backward keeps",
            "gathered": "ZeRO-3/FSDP's unsharded working set (the largest wrapping unit, prefetch, its gradients)",
            "loss_peak": "logits and cross-entropy gradients of one micro-batch on the last stage"}
    for key in ("weights", "gradients", "optimizer", "gathered", "activations", "loss_peak"):
        if key in tm.formula:
            f = tm.formula[key]
            t.add(key, sympy.sympify(f.total if isinstance(f, Terms) else f), docs[key])
    return t


def metric_terms(model, raw: dict, name: str, o: Options) -> Terms:
    if name in SERVING:
        return serving_terms(model, raw, name, o)
    if name in TRAINING:
        return training_terms(model, name, o)
    raise SymcostError(f"--metric: unknown metric {name!r}")


def wrt_symbol(name: str):
    """The symbol ``--wrt`` names: T, E, B, N_dp/N_tp/N_pp/N_ep/N_cp or their flag aliases."""
    return by_name(WRT_ALIASES.get(name, name))
