"""Communication per training step under DP/TP/PP/EP/CP (bytes each GPU sends), and step time.

Ring collectives over n ranks move 2·(n−1)/n of the buffer per GPU for an all-reduce and
(n−1)/n for an all-gather or reduce-scatter. Per step, with m = global / (micro · dp)
micro-batches, s = seq / cp tokens per GPU per micro-batch, b = micro-batch, bf16 (2 bytes):

    dp: gradient all-reduce 2·(dp−1)/dp · 2Ψ (ZeRO-3: + parameter all-gathers, 3·(dp−1)/dp · 2Ψ)
    tp: 4 all-reduces of s·b·d per layer per micro-batch (2 forward, 2 backward; Megatron TP)
    pp: one activation forward and one gradient backward of s·b·d per micro-batch per boundary
    ep: all-to-all dispatch + combine of s·b·k·d, forward and backward, per MoE layer, ·(ep−1)/ep
    cp: K and V of the other cp−1 chunks per attention layer, forward and backward (ring attention)

Step time (``--gpu``): compute at the GPU's dense BF16 peak plus communication at its scale-up
link bandwidth with no overlap — a simple upper-bound estimate, stated as such.
"""
from __future__ import annotations

from fractions import Fraction
from math import ceil

from .errors import SymcostError
from .gpus import GPU
from .notation import sym
from .terms import exact


def params_per_gpu(model, tp: int = 1, pp: int = 1, ep: int = 1) -> int:
    """Ψ, the parameters one GPU holds: non-expert / (tp·pp), routed experts / (ep·tp·pp)."""
    total = model.params().total_at(model.values)
    routed = model.routed_params().total_at(model.values)
    return ceil(Fraction(total - routed, tp * pp) + Fraction(routed, ep * tp * pp))


def comm_bytes(model, *, seq: int, micro_batch: int, global_batch: int | None = None,
               dp=1, tp=1, pp=1, ep=1, cp=1, zero=0) -> dict[str, int]:
    vals = model.values
    gb = global_batch or micro_batch * dp
    if gb % (micro_batch * dp):
        raise SymcostError(f"--global-batch {gb} is not a multiple of micro-batch × dp "
                           f"({micro_batch} × {dp})")
    m = gb // (micro_batch * dp)
    s, b = seq // cp, micro_batch
    d = exact(sym.d, vals)
    psi = params_per_gpu(model, tp, pp, ep)
    out = {"dp": 0, "tp": 0, "pp": 0, "ep": 0, "cp": 0}
    if dp > 1:
        out["dp"] = ceil(2 * (dp - 1) / dp * 2 * psi)
        if zero >= 3:
            out["dp"] += ceil(3 * (dp - 1) / dp * 2 * psi)
    layers = sum(exact(g.count, vals) for g in model.groups)
    layers_here = ceil(layers / pp)
    if tp > 1:
        out["tp"] = ceil(4 * 2 * (tp - 1) / tp * s * b * d * 2) * layers_here * m
    if pp > 1:
        out["pp"] = 2 * s * b * d * 2 * m
    if ep > 1:
        moe_layers = sum(exact(g.count, vals) for g in model.groups
                         if any(c.key == "mlp" and hasattr(c, "E") for c in g.components))
        k = exact(sym.k, vals)
        out["ep"] = ceil(4 * s * b * k * d * 2 * (ep - 1) / ep) * ceil(moe_layers / pp) * m
    if cp > 1:
        attn_layers = sum(exact(g.count, vals) for g in model.groups
                          if any(c.key == "self_attn" for c in g.components))
        kv = exact(sym.H_kv * sym.D_h, vals) if sym.H_kv in vals else d
        out["cp"] = 2 * 2 * s * b * kv * 2 * (cp - 1) * ceil(attn_layers / pp) * m
    return out


def step_time(flops_per_gpu: int, bytes_per_gpu: int, gpu: GPU) -> float:
    return flops_per_gpu / (gpu.bf16_tflops * 1e12) + bytes_per_gpu / (gpu.link_gbs * 1e9)
