"""Cache bytes (per leaf dtype) and the simple inference-memory estimate the seed audit uses.

``symcost memory`` prices serving as vLLM accounts for it (``serving.plan``: checkpoint weights,
chunked-prefill activations, KV pages); ``inference_memory`` below is the simpler estimate the
seeds' claims are checked against (``audit``, ``scenario``): uniform weight dtype, the whole
context's activations at once, the transformers cache.

    weights    = Σ params · b_w            (routed experts may use their own dtype)
    cache      = Σ cache elements · b_kv   (per-leaf dtype overrides, e.g. Mamba state in fp32)
    activations ≈ B·n·(2·d + w_max)·b_act + 4·B·r·V
        — an ESTIMATE of the peak live activations of one forward: the residual stream and one
        layer input (2·d), the widest intermediate (w_max) for n = T new tokens (prefill) or 1
        (decode), and fp32 logits for r rows (all new tokens, or 1 with logits "last").
Per GPU, tensor and pipeline parallelism split weights, cache and activations over tp·pp
(expert parallelism redistributes the routed experts within those GPUs; it changes traffic,
not bytes). A GPU is usable up to ``mem_util`` of its memory (vLLM's default 0.9).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import ceil

import sympy

from ..core.errors import SymcostError
from ..core.notation import sym
from ..core.primitives import Linear
from ..core.terms import Terms, exact
from ..core.units import dtype_bytes
from ..hardware.gpus import GPU
from ..model.parallel import Layout


def _rational(f: Fraction) -> sympy.Rational:
    return sympy.Rational(f.numerator, f.denominator)


def leaf_bytes(model, leaf: str, kv_dtype: str) -> Fraction:
    """Bytes of one element of the cache leaf ``leaf``: its own dtype (``Model.state_dtype``,
    e.g. fp32 Mamba state) or the KV dtype."""
    dt = model.state_dtype.get(leaf.rsplit("/", 1)[-1])
    return dtype_bytes(dt) if dt else dtype_bytes(kv_dtype, "--kv-dtype")


def cache_bytes_terms(model, kv_dtype: str = "bf16", terms: Terms | None = None) -> Terms:
    """The cache tree (default ``model.cache()``) in bytes: every leaf × its dtype (paths kept)."""
    out = Terms()
    for path, expr in (terms if terms is not None else model.cache()).flatten().items():
        out.add(path, expr * _rational(leaf_bytes(model, path, kv_dtype)))
    return out


def cache_bytes(model, kv_dtype: str = "bf16", terms: Terms | None = None) -> sympy.Expr:
    """Cache bytes as one expression."""
    return cache_bytes_terms(model, kv_dtype, terms).total


def cache_bytes_total(model, kv_dtype: str, values: dict,
                      terms: Terms | None = None) -> tuple[int, dict[str, int]]:
    """(total bytes, bytes per depth-2 component) at ``values`` (of ``terms``, default the cache)."""
    by_comp: dict[str, int] = {}
    for path, expr in (terms if terms is not None else model.cache()).flatten().items():
        nbytes = exact(expr, values) * leaf_bytes(model, path, kv_dtype)
        if nbytes.denominator != 1:
            raise SymcostError(f"cache of {path} is not a whole number of bytes")
        comp = "/".join(path.split("/")[:2])
        by_comp[comp] = by_comp.get(comp, 0) + int(nbytes)
    return sum(by_comp.values()), by_comp


def weight_bytes(model, weights_dtype: str = "bf16", experts_dtype: str | None = None) -> int:
    vals = model.values
    total = model.params().total_at(vals)
    routed = model.routed_params().total_at(vals)
    bw = dtype_bytes(weights_dtype, "--weights-dtype")
    be = dtype_bytes(experts_dtype, "--experts-dtype") if experts_dtype else bw
    return ceil((total - routed) * bw + routed * be)


def widest_intermediate(model) -> int:
    """w_max: the widest activation a GEMM writes inside a layer (per token, one expert)."""
    widest = 0
    for c in model.components():
        for p in c.primitives(None):
            if isinstance(p, Linear) and p.name != "lm_head":
                widest = max(widest, exact(p.out, model.values))
    return widest


def activation_bytes(model, phase: str, T: int, B: int, act_dtype: str = "bf16",
                     logits: str = "last") -> int:
    new = T if phase == "prefill" else 1
    rows = B * new if logits == "all" else B
    d = exact(sym.d, model.values)
    V = exact(sym.V, model.values)
    b = dtype_bytes(act_dtype)
    return int(ceil(B * new * (2 * d + widest_intermediate(model)) * b + 4 * rows * V))


def check_parallel(model, tp: int, pp: int, ep: int) -> None:
    """Parallel sizes must divide what they split (``parallel.Layout.check``, the one set of
    constraints): heads and KV heads under ``tp``, layers under ``pp``, and the routed experts
    spread whole over ``ep`` ranks."""
    Layout(tp=tp, pp=pp).check(model)
    if ep > 1:  # E over ep ranks: the expert-parallel constraints of an ep-wide group
        Layout(dp=ep, ep=ep, whole_experts=True).check(model)


@dataclass
class Fit:
    weights_bytes: int
    cache_bytes: int
    activation_bytes: int
    total_bytes: int
    per_gpu_bytes: int
    gpus: int
    gpus_needed: int | None
    max_batch: int | None
    fits: bool | None
    usable_bytes: int | None


def cache_bytes_per_gpu(model, kv_dtype: str, values: dict, tp: int) -> int:
    """Cache bytes one tensor-parallel rank holds: each component's share (``cache_tp_share``).

    GQA keeps ⌈H_kv/tp⌉ KV heads per rank (heads are replicated once tp exceeds them); MLA's
    latent and single-head index caches are replicated on every rank; Mamba-2 and Gated DeltaNet
    state is split by heads. This is how vLLM shards the cache.
    """
    total = Fraction(0)
    for g in model.groups:
        count = exact(g.count, values)
        for c in g.components:
            share = c.cache_tp_share(tp, values)
            for leaf, expr in c.cache().flatten().items():
                total += count * exact(expr, values) * leaf_bytes(model, leaf, kv_dtype) * share
    return ceil(total)


def _per_gpu(model, w, T, B, kv_dtype, phase, tp, pp) -> int:
    cache = cache_bytes_per_gpu(model, kv_dtype, model.values_with(T=T, B=B), tp)
    return ceil(w / (tp * pp)) + ceil(cache / pp) + ceil(activation_bytes(model, phase, T, B) / (tp * pp))


def inference_memory(model, *, T: int, B: int, weights_dtype="bf16", kv_dtype="bf16",
                     experts_dtype=None, phase="prefill", tp=1, pp=1, ep=1,
                     gpu: GPU | None = None, mem_util: float = 0.9) -> Fit:
    """Memory of serving ``B`` sequences of ``T`` tokens on tp·pp GPUs.

    Per GPU: weights / (tp·pp) + the rank's cache share / pp + activations / (tp·pp).
    ``gpus_needed``: the smallest power-of-two tensor-parallel size whose per-GPU memory fits;
    ``max_batch``: the largest B that fits at this T on the given tp·pp GPUs.
    """
    check_parallel(model, tp, pp, ep)
    w = weight_bytes(model, weights_dtype, experts_dtype)
    c, _ = cache_bytes_total(model, kv_dtype, model.values_with(T=T, B=B))
    a = activation_bytes(model, phase, T, B)
    total = w + c + a
    gpus = tp * pp
    per_gpu = _per_gpu(model, w, T, B, kv_dtype, phase, tp, pp)
    if gpu is None:
        return Fit(w, c, a, total, per_gpu, gpus, None, None, None, None)
    usable = int(gpu.memory_bytes * mem_util)
    needed = 1
    while _per_gpu(model, w, T, B, kv_dtype, phase, needed, 1) > usable:
        needed *= 2
        if needed > 1 << 12:
            needed = None
            break
    fixed = ceil(w / (tp * pp))
    one = _per_gpu(model, w, T, 1, kv_dtype, phase, tp, pp) - fixed  # per sequence, per GPU
    max_batch = 0
    if usable > fixed and one > 0:
        max_batch = (usable - fixed) // one
        while max_batch > 0 and _per_gpu(model, w, T, max_batch, kv_dtype, phase, tp, pp) > usable:
            max_batch -= 1  # ceilings can make B sequences cost more than B × one
    return Fit(w, c, a, total, per_gpu, gpus, needed, int(max_batch), per_gpu <= usable, usable)
