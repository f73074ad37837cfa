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


def dualpipe_held(p: int, a_own, a_mirror):
    """Activations one DualPipe rank holds at its peak: PP + 1 micro-batches' worth of a stage
    (DeepSeek-V3 report Table 2; deepseek-ai/DualPipe README, "Activation: PP+1"), its own stage r
    and the mirrored stage p − 1 − r taking turns: (p + 1)·(A_r + A_{p−1−r})/2, rounded up (equal
    to (p + 1)·A for alike stages). DualPipe's parameters: each rank holds both stages (the
    README's "Parameter 2×"), their weights, gradients and optimizer states each by the ZeRO rule
    (``memory``: the mirrored stage's states added to the rank's)."""
    return -(-(p + 1) * (a_own + a_mirror) // 2)


# -- the bubble of each schedule ----------------------------------------------------------------------
#: schedules ``--schedule`` names (``interleaved`` is 1F1B with ``--virtual-stages`` v > 1)
SCHEDULES = ("1f1b", "interleaved", "zb-h1", "dualpipe")


def bubble_seconds(schedule: str, p: int, F: float, B: float, W: float, virtual: int = 1) -> float:
    """Idle time of a pipeline rank per step, in the time of one micro-batch's stage work: F its
    forward, B its full backward (input and weight gradients), W the weight-gradient part of B.

      1F1B         (p − 1)·(F + B)                       Narayanan et al. 2021 §2.2
      interleaved  (p − 1)·(F + B)/v                     (v model chunks per rank, each 1/v of the work)
      zb-h1        (p − 1)·(F + B − 2W)                  Qi et al. 2023, "Zero Bubble Pipeline
                                                         Parallelism" (ZB-H1; the DeepSeek-V3
                                                         report's Table 2 "ZB1P")
      dualpipe     (p/2 − 1)·(F&B + B − 3W)              DeepSeek-V3 report Table 2, F&B = F + B
                                                         (the overlapped pair's compute; its
                                                         all-to-alls hidden)
    0 without a pipeline."""
    if p == 1:
        return 0.0
    if schedule in ("1f1b", "interleaved"):
        return (p - 1) * (F + B) / virtual
    if schedule == "zb-h1":
        return (p - 1) * (F + B - 2 * W)
    if schedule == "dualpipe":
        return (p // 2 - 1) * ((F + B) + B - 3 * W)
    raise ValueError(schedule)


def check_schedule(schedule: str, p: int, m: int, virtual: int) -> None:
    """Each schedule's constraints, as its implementation asserts them: interleaving needs v > 1
    (``setup.check_pipeline`` the rest); zero-bubble and DualPipe run one chunk per rank (v = 1,
    DualPipe's two directions hold two); DualPipe needs an even number of ranks and an even number
    of micro-batches, at least 2·p (``dualpipe/dualpipe.py``, ``DualPipe.step``'s assertions)."""
    from ..core.errors import SymcostError
    if schedule not in SCHEDULES:
        raise SymcostError(f"--schedule: unknown {schedule!r} ({', '.join(SCHEDULES)})")
    if schedule == "interleaved" and virtual == 1:
        raise SymcostError("--schedule interleaved needs --virtual-stages > 1")
    if schedule in ("zb-h1", "dualpipe", "1f1b") and virtual > 1:
        raise SymcostError(f"--schedule {schedule} runs one model chunk per rank: drop --virtual-stages "
                           f"{virtual} (or use --schedule interleaved)")
    if schedule in ("zb-h1", "dualpipe") and p == 1:
        raise SymcostError(f"--schedule {schedule} needs --pp > 1")
    if schedule == "dualpipe":
        if p % 2:
            raise SymcostError(f"--schedule dualpipe needs an even --pp (its two directions pair rank r "
                               f"with p − 1 − r), got {p}")
        if m % 2 or m < 2 * p:
            raise SymcostError(f"--schedule dualpipe needs an even number of micro-batches, at least 2 × pp = "
                               f"{2 * p}, got {m} (DualPipe.step's assertion)")
