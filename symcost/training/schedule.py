"""Pipeline schedules: which micro-batches' activations a pipeline rank holds at its peak.

Megatron-LM's ``megatron/core/pipeline_parallel/schedules.py``, replayed step by step on one rank
r of p (v model chunks per rank, m micro-batches, m·v virtual micro-batches):

  1F1B (``forward_backward_pipelining_without_interleaving``, v = 1):
      warmup = min(p − r − 1, m) forwards, then one forward and one backward per step, then the
      remaining backwards: the rank holds min(p − r, m) micro-batches at its peak.
  interleaved 1F1B (``forward_backward_pipelining_with_interleaving``, v > 1):
      warmup = (p − r − 1)·2 + (v − 1)·p virtual micro-batches (all m·v if that is more);
      the k-th forward runs local chunk ⌊(k mod p·v)/p⌋, the k-th backward chunk
      v − 1 − ⌊(k mod p·v)/p⌋ (``get_model_chunk_id``, micro-batch groups of p); one forward then
      one backward per steady step. Rank 0 then holds 2(p − 1) + (v − 1)·p + 1 chunk activations,
      each 1/v of the stage's layers: p·(1 + (p − 1)/(p·v)) micro-batches' worth (Korthikanti et
      al. 2022 §4.2.3; Narayanan et al. 2021 §2.2).
Megatron's interleaved schedule needs m to be a multiple of p (micro-batch groups of p) and the
layers to split evenly into p·v chunks; both are checked where the layout is.

``peak(...)`` returns the number of in-flight activations of each local chunk at the moment the
rank's held bytes peak (the bytes of each chunk given), so the caller can write the peak as a sum
of per-chunk formulas.
"""
from __future__ import annotations

from fractions import Fraction


def forward_chunk(k: int, p: int, v: int) -> int:
    return (k % (p * v)) // p


def warmup(p: int, r: int, v: int, m: int) -> int:
    total = m * v
    w = (p - r - 1) if v == 1 else (p - r - 1) * 2 + (v - 1) * p
    return min(w, total)


def in_flight(p, r, m):
    """1F1B (v = 1): micro-batches rank r of p holds at its peak, min(p − r, m) (numbers or arrays:
    ``train --search`` calls it with NumPy arrays of m)."""
    if hasattr(m, "shape"):
        import numpy  # lazy: only train --search passes arrays (numpy is optional)
        return numpy.minimum(m, p - r)
    return min(m, p - r)


def held_states(p: int, r: int, v: int, m: int) -> list[tuple[int, ...]]:
    """In-flight count of each of rank r's v local chunks after each forward, in schedule order:
    the warmup's forwards, then one forward and one backward per steady step (the backwards of the
    cooldown only free). The steady states repeat with period p·v (each chunk runs p forwards and
    p backwards per period), so p·v steady steps give them all, each first where it first occurs."""
    w = warmup(p, r, v, m)
    held = [0] * v
    out = []
    for k in range(w):
        held[forward_chunk(k, p, v)] += 1
        out.append(tuple(held))
    for i in range(min(m * v - w, p * v)):
        held[forward_chunk(w + i, p, v)] += 1
        out.append(tuple(held))
        held[v - 1 - forward_chunk(i, p, v)] -= 1
    return out


def peak(p: int, r: int, v: int, m: int, chunk_bytes) -> list[int]:
    """In-flight count of each of rank r's v local chunks when its activation bytes peak (the first
    such moment of ``held_states``)."""
    best, best_held = -1, [0] * v
    for held in held_states(p, r, v, m):
        now = sum(h * b for h, b in zip(held, chunk_bytes))
        if now > best:
            best, best_held = now, list(held)
    return best_held


def first_stage_microbatches(p: int, v: int):
    """Korthikanti et al. 2022 §4.2.3: micro-batches' worth of activations the first stage holds
    under interleaved 1F1B, p·(1 + (p − 1)/(p·v)), as a fraction."""
    return p * (1 + Fraction(p - 1, p * v))
