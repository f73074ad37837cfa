"""The calibrated latency model against measured serving results (``tests/data/serving_measured.json``).

Each row is a real deployment (engine, card, layout, batch, ISL/OSL) with its measured TTFT and TPOT,
measured by a closed-loop benchmark (the row's ``benchmark_mode``). symcost predicts, with its default
(calibrated) model and with ``--ideal``:

    aggregated rows:    TTFT, TPOT = symcost.serving.workload.closed_loop(batch_per_replica requests in
                        flight per replica, isl, osl, M = the row's token_budget, engine = the row's engine)  --
                        the steady state of that engine's schedule: vLLM's chunked mixed steps, SGLang's
                        prefill-only steps of the synchronised cohort, TensorRT-LLM's whole-prompt mixed steps
    disaggregated rows: TPOT = N_pp · step(decode of batch_per_replica sequences at isl + osl/2) (the
                        decode pool does no prefill); TTFT not compared (the prefill pool's queue is not
                        stated)

The ideal bound may never exceed a measurement; the targets for the calibrated model are 25 % at the
median and 2× at worst.
"""
import json
import pathlib
import statistics

import pytest

from symcost.hardware.gpus import gpu as find_gpu
from symcost.serving.plan import Layout, ServeSetup
from symcost.serving.roofline import CalibratedLatency

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "serving_measured.json").read_text())
ROWS = [r for r in DATA["rows"] if r["use"]["tpot"]]
ROOT = pathlib.Path(__file__).parent.parent


def budget(row) -> int:
    """The row's token budget per engine step (``token_budget``: the value aiconfigurator's config generator
    writes for that engine and mode, an assumption the row states -- the silicon rows do not log their engine
    arguments)."""
    return row["token_budget"]["M"]


def _model(name):
    from symcost.cli.commands.common import read_model
    return read_model(str(ROOT / name) if name.endswith(".json") else name)


_CACHE = {}


def predict(row) -> dict:
    """Calibrated and ideal TTFT / TPOT (seconds) for one measured row."""
    key = (row["model"], row["gpu"], row["engine"])
    if key not in _CACHE:
        m, raw = _model(row["model"])
        setup = ServeSetup(layout=Layout(), gpu=find_gpu(row["gpu"]))
        _CACHE[key] = (m, CalibratedLatency(m, setup.checkpoint(m, raw), setup, engine=row["engine"]))
    m, cal = _CACHE[key]
    ep = row["moe_ep"] if row["moe_ep"] and row["moe_ep"] > 1 else 1
    lay = Layout.vllm(m, tp=row["tp"], pp=row["pp"], dp=row["attention_dp"], ep=ep)
    B = row["batch_per_replica"]
    T = row["isl"] + row["osl"] // 2
    M = budget(row)
    out = {}
    for ideal in (False, True):
        tag = "ideal" if ideal else "cal"
        load = cal.under_load(lay, isl=row["isl"], osl=row["osl"], max_batched_tokens=M, concurrency=B * lay.dp,
                              ideal=ideal, engine=row["engine"])
        if row["mode"] == "agg":
            out[f"tpot_{tag}"], out[f"ttft_{tag}"] = load["tpot"], load["ttft"]
        else:
            out[f"tpot_{tag}"] = cal.seconds("tpot", lay, T=T, batch=B, max_batched_tokens=M, ideal=ideal)
            out[f"ttft_{tag}"] = float("nan")
    # the schedule-free bound: the request's own work alone at the pure roofline (one prompt's prefill; one
    # decode step of the batch) -- whatever the engine's token budget and schedule, no request is faster
    out["ttft_bound"] = cal.seconds("ttft", lay, T=row["isl"], batch=1, max_batched_tokens=M, ideal=True)
    out["tpot_bound"] = cal.seconds("tpot", lay, T=T, batch=B, max_batched_tokens=M, ideal=True)
    return out


def table():
    res = []
    for r in ROWS:
        p = predict(r)
        res.append((r, p))
    return res


@pytest.fixture(scope="module")
def results():
    return table()


def test_enough_measured_points():
    assert len(ROWS) >= 25
    for r in DATA["rows"]:
        assert r["source"] and r["assumed"] and "measured_tpot_ms" in r
        assert r["token_budget"]["M"] >= 1 and r["token_budget"]["basis"], r["id"]


def test_each_measurement_counted_once():
    """A run the source lists under two ids (the same TTFT and TPOT to the last digit) is compared once: the other
    row says so in its ``use.skip``."""
    seen = {}
    for r in ROWS:
        key = (r["measured_tpot_ms"], r.get("measured_ttft_ms"))
        assert key not in seen, (r["id"], seen.get(key))
        seen[key] = r["id"]


def test_ideal_never_above_a_measurement(results):
    for r, p in results:
        assert p["tpot_bound"] * 1e3 <= r["measured_tpot_ms"], r["id"]
        if r["use"]["ttft"]:
            assert p["ttft_bound"] * 1e3 <= r["measured_ttft_ms"], r["id"]


def _errors(results, q):
    errs = []
    for r, p in results:
        if q == "ttft" and not r["use"]["ttft"]:
            continue
        meas = r[f"measured_{q}_ms"] * 1e-3
        errs.append(max(p[f"{q}_cal"] / meas, meas / p[f"{q}_cal"]))
    return errs


@pytest.mark.xfail(strict=True, reason=(
    "targets not met yet (measured 2026-12-03 on these 25 TPOT / 17 TTFT points, closed-loop load model of each row's "
    "engine at its token_budget -- TensorRT-LLM's max_num_tokens as aiconfigurator's generator wrote it when the row "
    "was measured, batch + isl + 1500 -- the fused-MoE and GEMM rows of the row's engine (vLLM's, SGLang's; TensorRT-LLM's "
    "database for trtllm and for block-FP8 GEMMs) at aiconfigurator's default power_law_1.01 routing, a rank's experts "
    "touched by its expert-parallel group's rows, a quantised checkpoint's unquantised dense linears at bf16 rows, the "
    "input embedding's rows read, not its table): "
    "TPOT median ratio 1.18 (met), worst 2.18 -- qwen3-32b H100 SGLang disagg (under-predicted 2.18: 52 ms against "
    "113 at a decode batch of 424; its concurrency is not stated) and the DeepSeek-R1 TensorRT-LLM agg rows "
    "over-predicted 1.49-1.90 while the same card's 1024x1024 row is within 4 %; TPOT by engine median "
    "cal/meas vLLM 1.04, SGLang 1.18, TRT-LLM 1.31 (its database's "
    "fused MoE at expert TP 8: 220 us per DeepSeek layer at 16 tokens on B200, SGLang's 102). TTFT median ratio "
    "1.48 (not met), worst 1.94 (met): the TensorRT-LLM rows prefill two whole prompts per step at the generator's "
    "budget of the day, so their cohorts return in pairs (DeepSeek-R1 H200 1024x8192 c16: 341 ms against 617, was 201 "
    "at the + 500 budget); the rest spreads both ways per row (vLLM MiniMax-M2.5 H200 0.52, Qwen3-235B H200 1.53; "
    "SGLang DeepSeek-R1 B200 0.54, H200 1.62; TTFT cal/meas by engine vLLM 0.91, SGLang 0.76, TRT-LLM 0.79), no one mechanism left. "
    "strict: the test fails as soon as the targets are met, so the mark must then go"))
@pytest.mark.parametrize("q", ["tpot", "ttft"])
def test_calibrated_within_targets(results, q):
    errs = _errors(results, q)
    assert statistics.median(errs) - 1 <= 0.25, (q, statistics.median(errs))
    assert max(errs) <= 2.0, (q, max(errs))


if __name__ == "__main__":
    res = table()
    print(f"{'id':<72} {'TPOT ms meas':>12} {'cal':>7} {'ideal':>7} {'TTFT ms meas':>12} {'cal':>8} {'ideal':>8}")
    for r, p in res:
        print(f"{r['id'][:72]:<72} {r['measured_tpot_ms']:>12.2f} {p['tpot_cal']*1e3:>7.2f} {p['tpot_ideal']*1e3:>7.2f} "
              f"{r['measured_ttft_ms'] if r['use']['ttft'] else float('nan'):>12.1f} {p['ttft_cal']*1e3:>8.1f} {p['ttft_ideal']*1e3:>8.1f}")
    for q in ("tpot", "ttft"):
        e = _errors(res, q)
        print(q, "n", len(e), "median ratio", round(statistics.median(e), 3), "worst", round(max(e), 3))
