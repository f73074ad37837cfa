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
