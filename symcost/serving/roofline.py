"""Roofline time of one forward pass: max(FLOPs / peak, bytes / bandwidth).

bytes = weights read + cache read + cache written (+ activations are not counted: they stay on
chip in a fused kernel, an optimistic assumption stated in every result).
Weights read in decode with batch B touch, for routed experts, the expected number of distinct
experts E·(1 − (1 − k/E)^B) per MoE layer (uniform routing); in prefill every expert is read.
"""
from __future__ import annotations

from fractions import Fraction
from math import ceil

from ..conventions import Phase
from .gpus import GPU
from .memory import cache_bytes_total
from ..notation import sym
from ..terms import exact
from ..units import dtype_bytes


def roofline(model, *, phase: str, T: int, B: int, gpu: GPU, weights_dtype="bf16",
             kv_dtype="bf16", mla: str = "auto") -> dict:
    vals = model.values_with(T=T, B=B)
    ph = Phase(kind=phase, mla=mla)
    flops = model.flops(ph).total_at(vals)
    bw = dtype_bytes(weights_dtype)
    total = model.params().total_at(model.values)
    routed = model.routed_params().total_at(model.values)
    touched = Fraction(routed)
    if routed and phase == "decode":
        E, k = exact(sym.E, model.values), exact(sym.k, model.values)
        touched = Fraction(routed) * (1 - (1 - Fraction(k, E)) ** B)
    weight_bytes = ceil((total - routed + touched) * bw)
    cache_T = T if phase == "decode" else 0
    read = cache_bytes_total(model, kv_dtype, model.values_with(T=cache_T, B=B))[0] if cache_T else 0
    after = cache_bytes_total(model, kv_dtype, model.values_with(T=T + (1 if phase == "decode" else 0), B=B))[0]
    written = max(after - read, 0)
    nbytes = weight_bytes + read + written
    peak = gpu.bf16_tflops * 1e12
    bandwidth = gpu.bandwidth_tbs * 1e12
    t_compute, t_memory = flops / peak, nbytes / bandwidth
    return {"flops": flops, "bytes": nbytes, "weight_bytes": weight_bytes, "cache_read_bytes": read,
            "cache_write_bytes": written, "intensity": flops / nbytes if nbytes else None,
            "ridge_intensity": peak / bandwidth,
            "bound": "compute" if t_compute >= t_memory else "memory",
            "time_s": max(t_compute, t_memory), "compute_time_s": t_compute,
            "memory_time_s": t_memory, "gpu": gpu.name,
            "convention": ph.describe(),
            "note": "single GPU, BF16 dense peak, activations assumed on chip"}
