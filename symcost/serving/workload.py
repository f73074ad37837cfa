"""TTFT and TPOT under load: the steps of ``roofline.step_formula`` scheduled as the engines schedule them.

A benchmark does not measure one prompt alone. Two workloads are modelled, per data-parallel replica
(B = ceil(C / N_dp) requests in flight, or a rate λ_r = λ / N_dp), with fixed input and output
lengths S_in, S_out and a token budget of M per engine step (vLLM V1's ``max_num_batched_tokens``
with chunked prefill; SGLang's ``max_prefill_tokens``; TensorRT-LLM's ``max_num_tokens``).

**Closed loop** (``--concurrency``: benchmark_serving ``--max-concurrency``, aiperf/genai-perf
``--concurrency``; a client sends its next request when the last one ends, just after the step that ended
it). With fixed lengths the schedule settles into a cycle that repeats; what the cycle is depends on the
engine's scheduler, so there is one mechanism per engine (``closed_loop_terms(engine)``, ``closed_loop(...,
engine=)``; ``--engine`` of ``roofline`` and ``deploy``).

*vLLM V1* (``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``) first gives every running request
its decode token, then fills the rest of the budget with waiting prompts, chunking the last. The requests
prefilled in one step finish in one step, come back together, and are prefilled together again: in steady
state the B requests form groups of

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

*SGLang* without ``--enable-mixed-chunk`` (its default, ``server_args.ServerArgs``):
``Scheduler.get_next_batch_to_run`` (``python/sglang/srt/managers/scheduler.py``) runs a prefill batch
whenever ``get_new_batch_prefill`` finds prompts waiting ("run prefill first if possible") and a decode
step of every running request only when none wait; the prefill batch carries no decode rows
(``mix_with_running`` only under mixed chunk). ``PrefillAdder.add_one_req``
(``schedule_policy.py``) takes the first waiting prompt always and the next while its tokens are below
the prefill budget left (``rem_input_tokens``, from ``--max-prefill-tokens``; here M, the prompts
assumed within ``--chunked-prefill-size``), so a prefill batch holds

    G = max(1, ⌈M / S_in⌉ − 1)           prompts

No request decodes while another is being prefilled, so all B of a cycle finish in the same decode step
and return together; the engine is idle, the first to arrive is prefilled alone (t_p1) and the other
B − 1 arrive during that step and are prefilled in n_q = ⌈(B − 1) / G⌉ steps, m = n_q − 1 of G prompts
(t_pf) and the last of r = B − 1 − m·G (t_pr); then the S_out − 1 decode steps of all B. The cohort
stays synchronised. Over the B requests::

    TTFT = t_p1 + [G · t_pf · m(m + 1)/2 + r · (m · t_pf + t_pr)] / B
    TPOT = t_dc(B) + [m · t_pf + t_pr + G · (m(m − 1)/2 · t_pf + m · t_pr)] / (B · (S_out − 1))

(B = 1: TTFT = t_p1, TPOT = t_dc.) The second TPOT term is the later groups' prefill steps between a
request's first token and the cohort's first decode step.

*TensorRT-LLM* (PyTorch backend, ``enable_chunked_prefill`` False, its default and what aiconfigurator's
generator writes): the PyExecutor keeps its active requests in arrival order (``_fetch_new_requests``
appends), the capacity scheduler (``GUARANTEED_NO_EVICT``) passes them all while their KV fits, and the
micro-batch scheduler (``cpp/tensorrt_llm/batch_manager/microBatchScheduler.cpp``,
``MicroBatchScheduler::operator()``) walks them in that order: a generation request takes one token, a
context request its whole prompt, and the first that does not fit in ``max_num_tokens`` M ends the batch.
The requests decoding arrived first, so a step carries all D of them and as many whole prompts as the
rest of M holds, never a chunk::

    G = min(B, max(1, ⌊(M − B) / (S_in − 1)⌋))    (G · S_in + (B − G) <= M)
    n_p = ⌈B / G⌉,   t_mix = t_pf + t_pf / (G · S_in) · (B − G) + t_ad(B − G)

The groups' mixed steps form a block of n_p consecutive steps and the block keeps its shape. The
PyExecutor's default loop (``_executor_loop_overlap``, ``disable_overlap_scheduler`` False; the generator
writes False for agg) schedules step k+1 when step k starts, after step k−1's responses
(``_process_previous_batch``): a request finishing in step k is still scheduled in k+1 (its row computed,
then discarded) and its client's next request, arriving during k+1, is fetched for k+3. A returning
group misses two steps: for the block's first group two decode steps, for its second a decode and a
mixed step, for the others two mixed steps; the cycle is S_out + 2 steps, and a request's S_out − 1
decode steps hold n_p − 1, n_p − 2 or n_p − 3 other groups' mixed steps. With g_2 = min(G, B − G)::

    TTFT = [n_p ≥ 2] · (2G · t_dc + g_2 · (t_dc + t_mix) + 2(B − G − g_2) · t_mix) / B + [n_p = 1] · t_dc + t_mix
    TPOT = t_dc(B) + min(m, S_out − 1) / (S_out − 1) · max(t_mix − t_dc, 0)
    m    = [n_p ≥ 2] · (G(n_p − 1) + g_2 (n_p − 2) + (B − G − g_2)(n_p − 3)) / B

(one group: the whole batch returns during the step of its discarded rows, t_dc). Without the overlap
executor (``trtllm_terms(overlap=False)``) a group misses one step, the previous group's mixed step or,
for the block's first, a decode step, and its decode holds n_p − 1 or n_p − 2 mixed steps::

    TTFT = [n_p ≥ 2] · (G · t_dc + (B − G) · t_mix) / B + t_mix
    TPOT = t_dc(B) + min([n_p ≥ 2] · (n_p − 2 + G / B), S_out − 1) / (S_out − 1) · max(t_mix − t_dc, 0)

The mixed step is taken at D = B − G riding rows throughout (the block's steps carry B − 2G to B − r,
plus the discarded rows under overlap); without overlap and with n_p = 1 the whole batch finishes
together and the first to return would be prefilled alone (not modelled: the formula keeps one group).

TPOT is what the benchmarks report, (E2E − TTFT) / (S_out − 1). Each engine's closed form is checked
against a step-by-step simulation of its scheduler (``tests/test_workload.py``): SGLang's equals it,
TensorRT-LLM's agrees within 1 %, vLLM's within 10 % (TPOT) and 30 % (TTFT). The benchmark itself
(aiperf, as aiconfigurator's generator runs it: ``--concurrency C --num-requests 20·C
--warmup-request-count 2·C``) starts its measured phase after every warm-up response has returned, with
C requests at once; the first of the 20 rounds is such a burst, the formulas are the steady state.

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
step times t_pf, t_pr, t_dc, t_ad, t_p1, each of which is ``step_formula`` of its phase at the stated B and T
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
#: the engines whose closed-loop schedule is modelled (``closed_loop_terms`` / ``closed_loop`` by engine)
ENGINES = ("vllm", "sglang", "trtllm")


def check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise SymcostError(f"no closed-loop schedule for engine {engine!r}: one of {', '.join(ENGINES)}")
    return engine


def groups():
    """vLLM V1: (G, D, n_p, k): prompts per prefill step, decode rows riding along it, prefill steps per
    cycle, chunks of one group's prefill."""
    I, B, M = sym.S_in, sym.B, sym.M
    G = sympy.Min(B, sympy.Max(1, sympy.floor(M / I)))
    return G, B - G, sympy.ceiling(B * I / M), sympy.ceiling(G * I / M)


def mixed_step() -> sympy.Expr:
    """t_mix: one group's prefill step with the other requests' decode rows riding along (vLLM V1)."""
    G, D, _, k = groups()
    return sym.t_pf + k * (sym.t_pf / (G * sym.S_in) * D + sym.t_ad)


def closed_loop_terms(engine: str = "vllm") -> Terms:
    """TTFT and TPOT of a closed loop of B requests per replica under ``engine``'s schedule (module
    docstring) as named terms."""
    return {"vllm": vllm_terms, "sglang": sglang_terms, "trtllm": trtllm_terms}[check_engine(engine)]()


def vllm_terms() -> Terms:
    """vLLM V1 (``Scheduler.schedule``): decode rows first, waiting prompts chunked into the rest of M."""
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


def sglang_groups():
    """SGLang (prefill-only steps): (G, n_q, m, r): prompts ``PrefillAdder`` admits to one prefill batch,
    prefill steps after the first (lone) prompt's, of which m = n_q - 1 full, and the last group's r prompts."""
    I, B, M = sym.S_in, sym.B, sym.M
    G = sympy.Max(1, sympy.ceiling(M / I) - 1)
    n_q = sympy.ceiling((B - 1) / G)
    m = n_q - 1
    return G, n_q, m, B - 1 - m * G


def sglang_terms() -> Terms:
    """SGLang's default schedule (``Scheduler.get_next_batch_to_run``, no mixed chunk): the cohort of B
    returns together, the first prompt alone, the others in n_q prefill-only steps, then S_out - 1 decode
    steps of all B (module docstring)."""
    G, _, m, r = sglang_groups()
    B, O = sym.B, sym.S_out
    many = sympy.Ge(B, 2)
    t = Terms()
    ttft = Terms()
    ttft.add("lone_prompt", sym.t_p1, "the first returning prompt's prefill step (the engine was idle; "
                                      "the others arrive during it)")
    ttft.add("prefill_queue",
             sympy.Piecewise(((G * sym.t_pf * (m + 1) * m / 2 + r * (m * sym.t_pf + sym.t_pr)) / B, many), (0, True)),
             "the others' prefill-only steps up to and including their own group's, G prompts each (the last r)")
    t.add("ttft", ttft)
    tpot = Terms()
    tpot.add("decode_step", sym.t_dc, "a decode step of the B requests (decode runs only once no prompt waits)")
    tpot.add("prefill_pause",
             sympy.Piecewise(((m * sym.t_pf + sym.t_pr + G * (m * (m - 1) / 2 * sym.t_pf + m * sym.t_pr))
                              / (B * (O - 1)), many), (0, True)),
             "the later groups' prefill steps after a request's first token, before the cohort decodes")
    t.add("tpot", tpot)
    return t


def trtllm_groups():
    """TensorRT-LLM (no chunked context): (G, D, n_p): whole prompts per step besides the D = B - G
    generation rows (G·S_in + D <= M), prefill steps per cycle."""
    I, B, M = sym.S_in, sym.B, sym.M
    G = sympy.Min(B, sympy.Max(1, sympy.floor((M - B) / (I - 1))))
    return G, B - G, sympy.ceiling(B / G)


def trtllm_mixed_step() -> sympy.Expr:
    """t_mix of TensorRT-LLM: G whole prompts (one chunk) with the D generation rows riding along."""
    G, D, _ = trtllm_groups()
    return sym.t_pf + sym.t_pf / (G * sym.S_in) * D + sym.t_ad


def trtllm_terms(overlap: bool = True) -> Terms:
    """TensorRT-LLM's micro-batch scheduler without chunked context: the block of n_p mixed steps, one
    group of G whole prompts each; ``overlap`` (the PyExecutor's default overlap executor) a returning
    request misses two steps, else one (module docstring)."""
    G, _, n_p = trtllm_groups()
    t_mix = trtllm_mixed_step()
    B, O, t_dc = sym.B, sym.S_out, sym.t_dc
    many = sympy.Ge(n_p, 2)
    if overlap:
        g2 = sympy.Min(G, B - G)
        wait = sympy.Piecewise(((2 * G * t_dc + g2 * (t_dc + t_mix) + 2 * (B - G - g2) * t_mix) / B, many), (t_dc, True))
        mixed = sympy.Piecewise(((G * (n_p - 1) + g2 * (n_p - 2) + (B - G - g2) * (n_p - 3)) / B, many), (0, True))
        said = ("the two steps a returning request misses (the one in flight, the one already scheduled): two "
                "decode steps for the block's first group, a decode and a mixed step for its second, two other "
                "groups' mixed steps for the rest; one group: the discarded step of the finished rows")
        said_m = ("the other groups' mixed steps among a request's S_out - 1 decode steps: n_p - 1, n_p - 2 for the "
                  "block's first two groups, n_p - 3 for the others (the cycle is S_out + 2 steps)")
    else:
        wait = sympy.Piecewise(((G * t_dc + (B - G) * t_mix) / B, many), (0, True))
        mixed = sympy.Piecewise((n_p - 2 + G / B, many), (0, True))
        said = ("the step in flight when a group returns: the previous group's mixed step, for the block's first "
                "group a decode step (n_p >= 2; one group: the engine is idle)")
        said_m = ("the other groups' mixed steps among a request's S_out - 1 decode steps: n_p - 1 for the block's "
                  "first group, n_p - 2 for the others (the cycle is S_out + 1 steps)")
    t = Terms()
    ttft = Terms()
    ttft.add("wait", wait, said)
    ttft.add("prefill_step", t_mix, "its group's step: G whole prompts, the generation rows riding along")
    t.add("ttft", ttft)
    tpot = Terms()
    tpot.add("decode_step", t_dc, "a decode step of the B requests")
    tpot.add("prefill_interference", sympy.Min(mixed, O - 1) / (O - 1) * sympy.Max(t_mix - t_dc, 0), said_m)
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


def closed_loop(step, *, B, isl: int, osl: int, M: int, engine: str = "vllm") -> dict:
    """Closed-loop TTFT and TPOT (seconds) for ``B`` requests per replica (float or array) under
    ``engine``'s schedule (``closed_loop_terms(engine)``, the same expressions).

    ``step(phase, T, B) -> (total, attention)`` seconds of one step (all pipeline stages), for B a float
    or an array: ``CalibratedLatency.load_step`` or deploy's array evaluator."""
    fn = {"vllm": closed_loop_vllm, "sglang": closed_loop_sglang, "trtllm": closed_loop_trtllm}[check_engine(engine)]
    return fn(step, B=B, isl=isl, osl=osl, M=M)


def closed_loop_vllm(step, *, B, isl: int, osl: int, M: int) -> dict:
    """vLLM V1's closed loop (``vllm_terms``)."""
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


def closed_loop_sglang(step, *, B, isl: int, osl: int, M: int) -> dict:
    """SGLang's closed loop without mixed chunk (``sglang_terms``)."""
    np = _np(B)
    B = np.maximum(np.asarray(B, dtype=float), 1.0)
    many = B >= 2
    G = np.minimum(max(1, -(-M // isl) - 1), np.maximum(B - 1, 1.0))
    n_q = np.ceil(np.maximum(B - 1, 1.0) / G)
    m = n_q - 1
    r = np.maximum(B - 1 - m * G, 1.0)
    t_p1, _ = step("prefill", isl, np.ones_like(B))
    t_G, _ = step("prefill", isl, G)
    t_r, _ = step("prefill", isl, r)
    t_dc, _ = step("decode", isl + osl // 2, B)
    ttft = t_p1 + np.where(many, (G * t_G * (m + 1) * m / 2 + r * (m * t_G + t_r)) / B, 0.0)
    if osl >= 2:
        inter = np.where(many, (m * t_G + t_r + G * (m * (m - 1) / 2 * t_G + m * t_r)) / (B * (osl - 1)), 0.0)
    else:
        inter = 0.0 * t_dc
    return {"ttft": ttft, "tpot": t_dc + inter, "groups": G, "prefill_steps": np.where(many, n_q + 1, 1.0),
            "mixed_step": t_G, "decode_step": t_dc, "batch": B}


def closed_loop_trtllm(step, *, B, isl: int, osl: int, M: int, overlap: bool = True) -> dict:
    """TensorRT-LLM's closed loop without chunked context (``trtllm_terms(overlap)``)."""
    np = _np(B)
    B = np.maximum(np.asarray(B, dtype=float), 1.0)
    G = np.minimum(B, np.maximum(1.0, np.floor((M - B) / max(isl - 1, 1))))
    D = B - G
    n_p = np.ceil(B / G)
    t_pf, _ = step("prefill", isl, G)
    ctx = isl + osl // 2
    _, t_ad = step("decode", ctx, np.maximum(D, 1.0))
    t_ad = np.where(D > 0, t_ad, 0.0)
    t_mix = t_pf + t_pf / (G * isl) * D + t_ad
    t_dc, _ = step("decode", ctx, B)
    many = n_p >= 2
    if overlap:
        g2 = np.minimum(G, B - G)
        wait = np.where(many, (2 * G * t_dc + g2 * (t_dc + t_mix) + 2 * (B - G - g2) * t_mix) / B, t_dc)
        mixed = np.where(many, (G * (n_p - 1) + g2 * (n_p - 2) + (B - G - g2) * (n_p - 3)) / B, 0.0)
    else:
        wait = np.where(many, (G * t_dc + (B - G) * t_mix) / B, 0.0)
        mixed = np.where(many, n_p - 2 + G / B, 0.0)
    ttft = wait + t_mix
    if osl >= 2:
        inter = np.minimum(mixed, osl - 1) / (osl - 1) * np.maximum(t_mix - t_dc, 0)
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
