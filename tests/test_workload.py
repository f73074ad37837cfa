"""TTFT and TPOT under load (``symcost.serving.workload``): the formulas equal the numbers, the closed
loop agrees with a simulation of the scheduling policy it is derived from, the open loop obeys Little's
law and refuses an overloaded replica."""
import math
import random
import statistics

import numpy as np
import pytest
import sympy

from symcost.core.errors import SymcostError
from symcost.core.notation import sym
from symcost.serving import workload

#: a linear step-time model (seconds): a fixed part, per decode row, per prefill token
A, PER_ROW, PER_TOKEN = 0.0125, 0.0002, 0.000051


def linear_step(phase, T, B):
    B = np.asarray(B, dtype=float)
    if phase == "prefill":
        return A + PER_TOKEN * B * T, 0.0 * B
    return A + PER_ROW * B, PER_ROW * B


def simulate(B, isl, osl, M, *, rounds=6, seed=0):
    """vLLM V1's policy (``Scheduler.schedule``): every running request's decode token first, then the
    waiting prompts FCFS in the rest of the token budget M, the last one chunked; a client sends its next
    request when its last token arrives, during the step the engine has already started. Mean TTFT and
    TPOT after 2·B warm-up requests, as aiperf measures them."""
    rnd = random.Random(seed)
    t, arrivals, waiting, running = 0.0, [(0.0, i) for i in range(B)], [], {}
    ttft, tpot, done, issued = [], [], 0, B
    total = B * (rounds + 2)
    while done < total:
        arrivals.sort()
        while arrivals and arrivals[0][0] <= t:
            arrived, client = arrivals.pop(0)
            waiting.append([client, isl, arrived])
        if not running and not waiting:
            t = arrivals[0][0]
            continue
        budget, P, complete = M - len(running), 0, []
        for w in waiting:
            if budget <= 0:
                break
            take = min(budget, w[1])
            w[1] -= take
            budget -= take
            P += take
            if w[1] == 0:
                complete.append(w)
        D = len(running)
        t += (A + PER_ROW * D if D else A) + PER_TOKEN * P
        for c in list(running):
            running[c][0] -= 1
            if running[c][0] == 0:
                left, arrived, first = running.pop(c)[:3]
                done += 1
                if done > 2 * B:
                    ttft.append(first - arrived)
                    tpot.append((t - first) / (osl - 1))
                if issued < total:
                    arrivals.append((t + 1e-4 * rnd.random(), c))
                    issued += 1
        for w in complete:
            waiting.remove(w)
            running[w[0]] = [osl - 1, w[2], t]
    return statistics.mean(ttft), statistics.mean(tpot)


@pytest.mark.parametrize("B,isl,osl,M", [(32, 1024, 256, 8192), (64, 1024, 128, 8192), (16, 4096, 256, 8192),
                                         (32, 1024, 256, 2048), (4, 1024, 256, 8192)])
def test_closed_loop_agrees_with_the_schedule_it_models(B, isl, osl, M):
    got = workload.closed_loop(linear_step, B=B, isl=isl, osl=osl, M=M)
    ttft, tpot = simulate(B, isl, osl, M)
    assert abs(float(got["tpot"]) / tpot - 1) < 0.1, (float(got["tpot"]), tpot)
    assert abs(float(got["ttft"]) / ttft - 1) < 0.3, (float(got["ttft"]), ttft)


def test_one_group_needs_no_wait_and_no_interference():
    """B·ISL <= M: the whole batch is one group, finishes together, finds the engine idle."""
    got = workload.closed_loop(linear_step, B=4, isl=1024, osl=256, M=8192)
    pf, _ = linear_step("prefill", 1024, 4)
    assert float(got["prefill_steps"]) == 1 and float(got["ttft"]) == pytest.approx(float(pf))
    dc, _ = linear_step("decode", 1024 + 128, 4)
    assert float(got["tpot"]) == pytest.approx(float(dc))


def _values(step, B, isl, osl, M):
    G = min(B, max(1, M // isl))
    ctx = isl + osl // 2
    return {sym.B: B, sym.S_in: isl, sym.S_out: osl, sym.M: M,
            sym.t_pf: float(step("prefill", isl, G)[0]), sym.t_dc: float(step("decode", ctx, B)[0]),
            sym.t_ad: float(step("decode", ctx, max(B - G, 1))[1]) if B > G else 0.0}


@pytest.mark.parametrize("B,isl,osl,M", [(32, 1024, 256, 8192), (4, 1024, 256, 8192), (48, 3000, 500, 8192)])
def test_closed_loop_formula_equals_the_numbers(B, isl, osl, M):
    terms = workload.closed_loop_terms()
    v = {k: sympy.nsimplify(x) if isinstance(x, int) else sympy.Float(x) for k, x in _values(linear_step, B, isl, osl, M).items()}
    flat = {k: float(sympy.sympify(e).xreplace(v)) for k, e in terms.flatten().items()}
    got = workload.closed_loop(linear_step, B=B, isl=isl, osl=osl, M=M)
    assert flat["ttft/wait"] + flat["ttft/prefill_step"] == pytest.approx(float(got["ttft"]), rel=1e-9)
    assert flat["tpot/decode_step"] + flat["tpot/prefill_interference"] == pytest.approx(float(got["tpot"]), rel=1e-9)
    # a formula: it differentiates in B (the mixed step grows with the rows riding along)
    assert sympy.diff(workload.mixed_step(), sym.t_pf) != 0


def test_open_loop_obeys_littles_law_and_pollaczek_khinchine():
    got = workload.open_loop(linear_step, rate=2.0, isl=1024, osl=256, M=8192)
    assert bool(got["stable"])
    s = float(linear_step("prefill", 1024, 1)[0])
    rho = 2.0 * s
    dc, ad = (float(x) for x in linear_step("decode", 1024 + 128, float(got["batch"])))
    assert float(got["tpot"]) == pytest.approx(dc / (1 - rho), rel=1e-6)
    assert float(got["ttft"]) == pytest.approx(dc / 2 + rho * s / (2 * (1 - rho)) + s + ad, rel=1e-6)
    # Little: requests in flight = rate x time in the system
    assert float(got["batch"]) == pytest.approx(2.0 * (float(got["ttft"]) + 255 * float(got["tpot"])), rel=1e-3)
    # the formula terms are the same numbers
    terms = workload.open_loop_terms().flatten()
    v = {sym.t_p1: s, sym.t_dc: dc, sym.t_ad: ad, sym.lambda_r: 2.0, sym.S_in: 1024, sym.M: 8192}
    assert sum(float(sympy.sympify(terms[k]).xreplace(v)) for k in terms if k.startswith("ttft/")) == \
        pytest.approx(float(got["ttft"]), rel=1e-6)


def test_open_loop_latency_grows_with_the_rate_and_refuses_overload():
    rates = np.array([0.5, 2.0, 8.0, 1 / float(linear_step("prefill", 1024, 1)[0]) * 1.01])
    got = workload.open_loop(linear_step, rate=rates, isl=1024, osl=256, M=8192)
    assert list(got["stable"]) == [True, True, True, False]
    assert np.all(np.diff(got["ttft"][:3]) > 0) and np.all(np.diff(got["tpot"][:3]) > 0)
    assert math.isinf(got["ttft"][3])


@pytest.mark.parametrize("kw,needle", [({"concurrency": 4, "rate": 1.0}, "give one"), ({"rate": 0.0, "osl": 8}, "positive"),
                                       ({"rate": 1.0}, "needs --osl")])
def test_bad_workloads_are_refused(kw, needle):
    with pytest.raises(SymcostError, match=needle):
        workload.check_workload(**kw)


# -- the schedules of SGLang and TensorRT-LLM against step-by-step simulations of their schedulers --------
def _pf(P):
    return A + PER_TOKEN * P


def _mixed_cost(P, D):
    """One step of P prompt tokens and D decode rows, as the formulas account for it: the prompts' prefill
    step, the riding rows' GEMM rows at its marginal cost per token, their decode attention."""
    if P == 0:
        return A + PER_ROW * D
    return _pf(P) * (1 + D / P) + PER_ROW * D


def _measure(B, rounds, log):
    """Mean TTFT and TPOT of the requests finished after 2·B warm-up ones (aiperf's count) over ``rounds``."""
    kept = log[2 * B: 2 * B + rounds * B]
    return statistics.mean(a for a, _ in kept), statistics.mean(b for _, b in kept)


def simulate_sglang(B, isl, osl, M, *, rounds=6, seed=0):
    """SGLang's default loop (``Scheduler.get_next_batch_to_run``, no mixed chunk): a prefill batch whenever
    prompts wait (``get_new_batch_prefill``; ``PrefillAdder.add_one_req`` takes the first prompt always and
    the next while its tokens are below the prefill budget left), else a decode step of every running
    request; a client sends its next request just after its last token (jitter 1e-4 s)."""
    rnd = random.Random(seed)
    t, arrivals, waiting, running, log = 0.0, [(0.0, i) for i in range(B)], [], {}, []
    total = B * (rounds + 3)
    while len(log) < total:
        arrivals.sort()
        while arrivals and arrivals[0][0] <= t:
            waiting.append(arrivals.pop(0))
        if not waiting and not running:
            t = arrivals[0][0]
            continue
        if waiting:
            batch, rem = [], M
            for w in waiting:
                if batch and isl >= rem:
                    break
                batch.append(w)
                rem -= isl
            t += _pf(isl * len(batch))
            for w in batch:
                waiting.remove(w)
                running[w[1]] = [osl - 1, w[0], t]
            continue
        t += A + PER_ROW * len(running)
        for c in list(running):
            running[c][0] -= 1
            if running[c][0] == 0:
                _, arrived, first = running.pop(c)
                log.append((first - arrived, (t - first) / (osl - 1)))
                arrivals.append((t + 1e-4 * rnd.random(), c))
    return _measure(B, rounds, log)


def simulate_trtllm(B, isl, osl, M, *, overlap=True, rounds=6, seed=0):
    """TensorRT-LLM's PyExecutor without chunked context: the active requests in arrival order
    (``_fetch_new_requests`` appends), the micro-batch scheduler (``MicroBatchScheduler::operator()``)
    walks them, a generation request takes one token, a context request its whole prompt, and the first
    that does not fit in max_num_tokens M ends the batch; a client sends its next request just after its
    last token is returned (jitter 1e-4 s). ``overlap`` (``_executor_loop_overlap``): the batch of step k+1
    is scheduled when step k starts, after step k-1's responses: a request finishing in step k is still
    scheduled (its row computed, discarded) in k+1 and a returning one is seen only for step k+2; without
    overlap each step is scheduled when the last one ends."""
    rnd = random.Random(seed)
    t, arrivals, active, log = 0.0, [(0.0, i) for i in range(B)], [], []
    total = B * (rounds + 3)

    def fetch(now):
        arrivals.sort()
        while arrivals and arrivals[0][0] <= now:
            arrived, c = arrivals.pop(0)
            active.append({"c": c, "ctx": True, "left": osl - 1, "arrived": arrived, "first": None, "done": False})

    def decide():
        tokens, ctx, gen = 0, [], []
        for r in active:
            need = isl if r["ctx"] else 1
            if tokens + need > M:
                break
            (ctx if r["ctx"] else gen).append(r)
            tokens += need
        return ctx, gen

    def finish(ctx, gen, end):
        for r in gen:
            if r["done"]:
                continue  # a row scheduled before its request was known finished: computed, discarded
            r["left"] -= 1
            if r["left"] == 0:
                r["done"] = True
                active.remove(r)
                log.append((r["first"] - r["arrived"], (end - r["first"]) / (osl - 1)))
                arrivals.append((end + 1e-4 * rnd.random(), r["c"]))
        for r in ctx:
            r["first"] = end

    pending, last = None, None
    while len(log) < total:
        if pending is None or not (pending[0] or pending[1]):
            fetch(t)
            pending = decide()
            if not (pending[0] or pending[1]):
                t = min(arrivals)[0]
                continue
        ctx, gen = pending
        for r in ctx:
            r["ctx"] = False  # _update_request_states: context done, generation from the next step
        start, end = t, t + _mixed_cost(isl * len(ctx), len(gen))
        if overlap:
            if last is not None:
                finish(*last)  # step k-1's responses, at the start of step k
            fetch(start)
            pending, last = decide(), (ctx, gen, end)
            t = end
        else:
            t = end
            finish(ctx, gen, end)
            pending = None
    return _measure(B, rounds, log)


@pytest.mark.parametrize("B,isl,osl,M", [(16, 1024, 128, 2524), (64, 1024, 128, 2524), (7, 1000, 64, 2600),
                                         (5, 1024, 32, 8192), (1, 1024, 32, 2524), (33, 1024, 256, 1024)])
def test_sglang_schedule_equals_its_simulation(B, isl, osl, M):
    """The cohort returns together, the first prompt alone, the others in prefill-only groups of G, then
    decodes together: the closed form is the simulated steady state exactly."""
    got = workload.closed_loop(linear_step, B=B, isl=isl, osl=osl, M=M, engine="sglang")
    ttft, tpot = simulate_sglang(B, isl, osl, M)
    assert float(got["ttft"]) == pytest.approx(ttft, rel=1e-3)
    assert float(got["tpot"]) == pytest.approx(tpot, rel=1e-3)


_TRT = [(16, 1024, 128, 1568), (32, 1024, 128, 1568), (8, 1000, 64, 2100), (12, 512, 200, 1600), (16, 1024, 1024, 1568)]


# one group (B·S_in <= M) only with overlap: without it the first to return is prefilled alone (not modelled)
@pytest.mark.parametrize("B,isl,osl,M,overlap", [c + (o,) for c in _TRT for o in (True, False)]
                         + [(4, 1024, 64, 8192, True)])
def test_trtllm_schedule_agrees_with_its_simulation(B, isl, osl, M, overlap):
    """Whole prompts in arrival order, G per step: the block of n_p mixed steps keeps its shape; the
    formula takes every mixed step at D = B - G riding rows (the block's steps carry B - 2G to B - r), so
    it agrees with the simulated steady state within 1 %."""
    got = workload.closed_loop_trtllm(linear_step, B=B, isl=isl, osl=osl, M=M, overlap=overlap)
    ttft, tpot = simulate_trtllm(B, isl, osl, M, overlap=overlap)
    assert float(got["ttft"]) == pytest.approx(ttft, rel=0.01)
    assert float(got["tpot"]) == pytest.approx(tpot, rel=0.01)


def test_the_engines_schedules_differ_where_their_sources_do():
    """At the same load SGLang's prefill-only steps queue the whole cohort (TTFT grows with B / G) and
    pause its decode; TensorRT-LLM's whole prompts ride with the decodes, as vLLM's chunks do."""
    kw = dict(B=64, isl=1024, osl=128, M=2524)
    sg, trt, vl = (workload.closed_loop(linear_step, engine=e, **kw) for e in ("sglang", "trtllm", "vllm"))
    assert float(sg["ttft"]) > 5 * float(vl["ttft"]) and float(sg["ttft"]) > 4 * float(trt["ttft"])
    with pytest.raises(SymcostError, match="no closed-loop schedule"):
        workload.closed_loop(linear_step, engine="tgi", **kw)


def _engine_values(engine, B, isl, osl, M):
    ctx = isl + osl // 2
    v = {sym.B: B, sym.S_in: isl, sym.S_out: osl, sym.M: M, sym.t_dc: float(linear_step("decode", ctx, B)[0]),
         sym.t_p1: float(linear_step("prefill", isl, 1)[0])}
    if engine == "sglang":
        G = min(max(1, -(-M // isl) - 1), max(B - 1, 1))
        m = -(-(B - 1) // G) - 1 if B > 1 else 0
        r = max(B - 1 - m * G, 1)
        v.update({sym.t_pf: float(linear_step("prefill", isl, G)[0]), sym.t_pr: float(linear_step("prefill", isl, r)[0])})
    else:
        G = min(B, max(1, (M - B) // (isl - 1)))
        v.update({sym.t_pf: float(linear_step("prefill", isl, G)[0]),
                  sym.t_ad: float(linear_step("decode", ctx, max(B - G, 1))[1]) if B > G else 0.0})
    return v


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
@pytest.mark.parametrize("B,isl,osl,M", [(64, 1024, 128, 2524), (7, 1000, 64, 2600), (1, 1024, 32, 2524),
                                         (16, 1024, 1024, 1568)])
def test_engine_formula_equals_the_numbers(engine, B, isl, osl, M):
    terms = workload.closed_loop_terms(engine).flatten()
    v = {k: sympy.Integer(x) if isinstance(x, int) else sympy.Float(x) for k, x in _engine_values(engine, B, isl, osl, M).items()}
    flat = {k: float(sympy.sympify(e).xreplace(v)) for k, e in terms.items()}
    got = workload.closed_loop(linear_step, B=B, isl=isl, osl=osl, M=M, engine=engine)
    assert sum(x for k, x in flat.items() if k.startswith("ttft/")) == pytest.approx(float(got["ttft"]), rel=1e-9)
    assert sum(x for k, x in flat.items() if k.startswith("tpot/")) == pytest.approx(float(got["tpot"]), rel=1e-9)


@pytest.mark.parametrize("B,isl,osl,M", [(16, 1024, 128, 1568), (8, 1000, 64, 2100), (4, 1024, 64, 8192)])
def test_trtllm_formula_without_overlap_equals_the_numbers(B, isl, osl, M):
    terms = workload.trtllm_terms(overlap=False).flatten()
    v = {k: sympy.Integer(x) if isinstance(x, int) else sympy.Float(x)
         for k, x in _engine_values("trtllm", B, isl, osl, M).items()}
    flat = {k: float(sympy.sympify(e).xreplace(v)) for k, e in terms.items()}
    got = workload.closed_loop_trtllm(linear_step, B=B, isl=isl, osl=osl, M=M, overlap=False)
    assert flat["ttft/wait"] + flat["ttft/prefill_step"] == pytest.approx(float(got["ttft"]), rel=1e-9)
    assert flat["tpot/decode_step"] + flat["tpot/prefill_interference"] == pytest.approx(float(got["tpot"]), rel=1e-9)
