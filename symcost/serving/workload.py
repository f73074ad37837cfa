"""TTFT and TPOT under load: the steps of ``roofline.step_formula`` scheduled as the engines schedule them.

A benchmark does not measure one prompt alone. Two workloads are modelled, per data-parallel replica
(B = ceil(C / N_dp) requests in flight, or a rate λ_r = λ / N_dp), with fixed input and output
lengths S_in, S_out and a token budget of M per engine step (vLLM V1's ``max_num_batched_tokens``
with chunked prefill; SGLang's ``chunked_prefill_size``; TensorRT-LLM's ``max_num_tokens``).

**Closed loop** (``--concurrency``: benchmark_serving ``--max-concurrency``, aiperf/genai-perf
``--concurrency``; a client sends its next request when the last one ends). vLLM V1's scheduler
(``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``) first gives every running request its
decode token, then fills the rest of the budget with waiting prompts, chunking the last. With fixed
lengths the requests that were prefilled in one step finish in one step, come back together, and are
prefilled together again: in steady state the B requests form groups of

    G = min(B, max(1, ⌊M / S_in⌋))       prompts per prefill step
    n_p = ⌈B · S_in / M⌉                 prefill steps per cycle (one per group)

and a group's prefill step also carries the D = B − G other requests' decode rows. In that mixed step
the weights are read once (they are in t_pf); the riding rows add their GEMM rows at the step's
marginal cost per token and their own decode attention::

    t_mix = t_pf + k · (t_pf / (G · S_in) · D + t_ad(D))           k = ⌈G · S_in / M⌉ chunks

A returning request misses the step already in flight (the engine starts the next step the moment the
previous one ends; the client's next request arrives during it), which with n_p ≥ 2 is another
group's mixed step, with n_p = 1 nothing (the whole batch finished together, the engine is idle)::

    TTFT = [n_p ≥ 2] · t_mix + t_mix
    TPOT = t_dc(B) + min(n_p − 1, S_out − 1) / (S_out − 1) · max(t_mix − t_dc(B), 0)

TPOT is what the benchmarks report, (E2E − TTFT) / (S_out − 1): the mean step over a request's decode,
n_p − 1 of whose S_out − 1 steps carry another group's prefill.

**Open loop** (``--request-rate``: Poisson arrivals, benchmark_serving ``--request-rate``). The
prefill work is a single server fed at λ_r with a deterministic service s = t_p1 per prompt, so its
utilisation is ρ = λ_r · s and the mean wait is Pollaczek–Khinchine's for M/D/1 (Kleinrock, *Queueing
Systems* vol. 1, 1975, eq. 5.105 with C_b² = 0); an arrival first waits for the residual of the step in
flight, t_dc / 2 for deterministic steps; the decodes run in the (1 − ρ) of the time prefill leaves
them; the requests in flight follow from Little's law::

    TTFT = t_dc(B) / 2 + ρ · s / (2 (1 − ρ)) + s + ⌈S_in / M⌉ · t_ad(B)
    TPOT = t_dc(B) / (1 − ρ)
    B    = λ_r · (TTFT + (S_out − 1) · TPOT)           (solved by fixed-point iteration)

ρ ≥ 1: the replica cannot keep up with the rate (no steady state); reported as such.

Both are formulas (``closed_loop_terms``, ``open_loop_terms``) in S_in, S_out, B (or λ_r), M and the
step times t_pf, t_dc, t_ad, t_p1, each of which is ``step_formula`` of its phase at the stated B and T
(layout and calibration symbols). The numeric paths below compute the same expressions for floats and
NumPy arrays (one layout or all of deploy's at once); a test holds the two equal.
"""
from __future__ import annotations

import math

import sympy

from ..core.errors import SymcostError
from ..core.notation import sym
from ..core.terms import Terms

#: fixed-point iterations of Little's law in the open loop (B converges geometrically when ρ < 1)
ITERATIONS = 40


# -- the formulas -----------------------------------------------------------------------------------
def groups():
    """(G, D, n_p, k): prompts per prefill step, decode rows riding along it, prefill steps per cycle,
    chunks of one group's prefill."""
    I, B, M = sym.S_in, sym.B, sym.M
    G = sympy.Min(B, sympy.Max(1, sympy.floor(M / I)))
    return G, B - G, sympy.ceiling(B * I / M), sympy.ceiling(G * I / M)


def mixed_step() -> sympy.Expr:
    """t_mix: one group's prefill step with the other requests' decode rows riding along."""
    G, D, _, k = groups()
    return sym.t_pf + k * (sym.t_pf / (G * sym.S_in) * D + sym.t_ad)


def closed_loop_terms() -> Terms:
    """TTFT and TPOT of a closed loop of B requests per replica (module docstring) as named terms."""
    _, _, n_p, _ = groups()
    t_mix = mixed_step()
    O = sym.S_out
    t = Terms()
    ttft = Terms()
    ttft.add("wait", sympy.Piecewise((t_mix, sympy.Ge(n_p, 2)), (0, True)),
             "the step in flight when the request returns: another group's mixed step (n_p >= 2), else none")
    ttft.add("prefill_step", t_mix, "its group's prefill step, the other requests' decode rows riding along")
    t.add("ttft", ttft)
    tpot = Terms()
    tpot.add("decode_step", sym.t_dc, "a decode step of the B requests")
    tpot.add("prefill_interference",
             sympy.Min(sympy.Max(n_p - 1, 0), O - 1) / (O - 1) * sympy.Max(t_mix - sym.t_dc, 0),
             "the other groups' prefill steps among a request's S_out - 1 decode steps")
    t.add("tpot", tpot)
    return t


def open_loop_terms() -> Terms:
    """TTFT and TPOT of Poisson arrivals at λ_r per replica (module docstring), B from Little's law."""
    s = sym.t_p1
    rho = sym.lambda_r * s
    t = Terms()
    ttft = Terms()
    ttft.add("residual_step", sym.t_dc / 2, "the step in flight when the prompt arrives (deterministic steps)")
    ttft.add("queue", rho * s / (2 * (1 - rho)), "M/D/1 wait behind the prompts ahead (Pollaczek-Khinchine)")
    ttft.add("prefill", s + sympy.ceiling(sym.S_in / sym.M) * sym.t_ad, "its own prefill, the decodes riding along")
    t.add("ttft", ttft)
    tpot = Terms()
    tpot.add("decode_step", sym.t_dc, "a decode step of the B requests in flight")
    tpot.add("prefill_share", sym.t_dc * rho / (1 - rho), "the share rho of the time prefill takes from the decodes")
    t.add("tpot", tpot)
    return t


# -- the numbers (floats or NumPy arrays) -----------------------------------------------------------
def _np(x):
    import numpy  # lazy: deploy passes arrays; one layout passes floats (numpy handles both)
    return numpy


def closed_loop(step, *, B, isl: int, osl: int, M: int) -> dict:
    """Closed-loop TTFT and TPOT (seconds) for ``B`` requests per replica (float or array).

    ``step(phase, T, B) -> (total, attention)`` seconds of one step (all pipeline stages), for B a float
    or an array: ``CalibratedLatency.load_step`` or deploy's array evaluator."""
    np = _np(B)
    B = np.maximum(np.asarray(B, dtype=float), 1.0)
    G = np.minimum(B, max(1, M // isl))
    D = B - G
    k = np.ceil(G * isl / M)
    n_p = np.ceil(B * isl / M)
    t_pf, _ = step("prefill", isl, G)
    ctx = isl + osl // 2
    _, t_ad = step("decode", ctx, np.maximum(D, 1.0))
    t_ad = np.where(D > 0, t_ad, 0.0)
    t_mix = t_pf + k * (t_pf / (G * isl) * D + t_ad)
    t_dc, _ = step("decode", ctx, B)
    ttft = np.where(n_p >= 2, t_mix, 0.0) + t_mix
    if osl >= 2:
        inter = np.minimum(np.maximum(n_p - 1, 0), osl - 1) / (osl - 1) * np.maximum(t_mix - t_dc, 0)
    else:
        inter = 0.0 * t_dc
    return {"ttft": ttft, "tpot": t_dc + inter, "groups": G, "prefill_steps": n_p, "mixed_step": t_mix,
            "decode_step": t_dc, "batch": B}


def open_loop(step, *, rate, isl: int, osl: int, M: int, cap=None) -> dict:
    """Open-loop (Poisson at ``rate`` requests/s per replica) TTFT and TPOT; ``stable`` False where the
    prefill utilisation ρ ≥ 1 or the requests in flight pass ``cap`` (float or array)."""
    np = _np(rate)
    lam = np.asarray(rate, dtype=float)
    s, _ = step("prefill", isl, np.ones_like(lam))
    rho = lam * s
    stable = rho < 1
    r = np.where(stable, rho, 0.0)
    ctx = isl + osl // 2
    chunks = math.ceil(isl / M)
    B = np.maximum(lam * s, 1.0)
    limit = 1e7 if cap is None else np.maximum(np.asarray(cap, dtype=float), 1.0)
    for _ in range(ITERATIONS):
        t_dc, t_ad = step("decode", ctx, B)
        tpot = t_dc / (1 - r)
        ttft = t_dc / 2 + r * s / (2 * (1 - r)) + s + chunks * t_ad
        B = np.minimum(np.maximum(lam * (ttft + max(osl - 1, 0) * tpot), 1.0), limit)
    t_dc, t_ad = step("decode", ctx, B)
    tpot = t_dc / (1 - r)
    ttft = t_dc / 2 + r * s / (2 * (1 - r)) + s + chunks * t_ad
    ok = stable & (lam * (ttft + max(osl - 1, 0) * tpot) <= limit * (1 + 1e-9))
    inf = float("inf")
    return {"ttft": np.where(ok, ttft, inf), "tpot": np.where(ok, tpot, inf), "batch": B, "utilisation": rho,
            "stable": ok}


def check_workload(*, concurrency=None, rate=None, osl=None) -> None:
    """Workload options that cannot hold together: exit-2 errors naming them."""
    if concurrency is not None and rate is not None:
        raise SymcostError("--concurrency (closed loop) and --request-rate (open loop) are two workloads: give one")
    if rate is not None and not (rate > 0 and math.isfinite(rate)):
        raise SymcostError(f"--request-rate must be a positive number of requests per second, not {rate}")
    if rate is not None and not osl:
        raise SymcostError("--request-rate needs --osl (the requests in flight follow from how long each decodes)")
