"""``roofline --concurrency N / --request-rate R --osl O``: TTFT and TPOT under a workload, the same load
model as ``deploy`` (``symcost.serving.workload`` through ``CalibratedLatency.under_load``)."""
import json
import math

import pytest

from symcost.cli import main
from symcost.hardware.gpus import gpu as find_gpu
from symcost.serving import workload
from symcost.serving.plan import Layout, ServeSetup
from symcost.serving.roofline import CalibratedLatency

BASE = ["roofline", "llama-3.1-8b", "--phase", "decode", "--T", "1024", "--gpu", "H100", "--batch", "4"]


def _run(argv, capsys):
    code = main(argv + ["--json"])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def _cal(dp=1, engine=None):
    """The calibrated latency the CLI builds, its kernels measured under ``engine`` (default vLLM)."""
    from symcost.cli.commands.common import read_model
    m, raw = read_model("llama-3.1-8b")
    setup = ServeSetup(layout=Layout.vllm(m, dp=dp), gpu=find_gpu("H100"))
    return CalibratedLatency(m, setup.checkpoint(m, raw), setup, engine=engine), setup.layout


@pytest.mark.parametrize("dp", [1, 2])
def test_closed_loop_matches_the_workload_model_and_sets_the_batch(dp, capsys):
    code, r = _run(BASE + ["--concurrency", "30", "--osl", "256", "--dp", str(dp)], capsys)
    assert code == 0
    load = r["load"]
    assert load["batch_per_replica"] == math.ceil(30 / dp) and r["batch"] == 4  # the step stays --batch's
    cal, lay = _cal(dp)
    step = cal.load_step(lay, max_batched_tokens=load["max_batched_tokens"])
    want = workload.closed_loop(step, B=math.ceil(30 / dp), isl=1024, osl=256, M=load["max_batched_tokens"])
    assert load["ttft_s"] == pytest.approx(float(want["ttft"]), rel=1e-12)
    assert load["tpot_s"] == pytest.approx(float(want["tpot"]), rel=1e-12)
    # under load a request waits for the others' prefill: never faster than its own prompt alone, nor than a
    # decode step of the (larger) batch in flight
    _, at = _run(BASE[:-1] + [str(math.ceil(30 / dp)), "--dp", str(dp)], capsys)
    assert load["ttft_s"] >= at["ttft_s"] and load["tpot_s"] >= at["tpot_s"] * (1 - 1e-12)


def test_open_loop_grows_with_the_rate_and_says_when_it_cannot_keep_up(capsys):
    got = []
    for rate in ("1", "4", "16"):
        code, r = _run(BASE + ["--request-rate", rate, "--osl", "256"], capsys)
        assert code == 0 and r["load"]["stable"]
        got.append(r["load"])
    assert got[0]["ttft_s"] < got[1]["ttft_s"] < got[2]["ttft_s"]
    assert got[0]["batch_per_replica"] < got[1]["batch_per_replica"] < got[2]["batch_per_replica"]
    code, r = _run(BASE + ["--request-rate", "1000", "--osl", "256"], capsys)
    assert code == 0 and not r["load"]["stable"] and r["load"]["ttft_s"] is None and r["load"]["utilisation"] >= 1


def test_ideal_load_is_below_the_calibrated_one(capsys):
    _, cal = _run(BASE + ["--concurrency", "16", "--osl", "128"], capsys)
    _, ideal = _run(BASE + ["--concurrency", "16", "--osl", "128", "--ideal"], capsys)
    assert ideal["load"]["ttft_s"] < cal["load"]["ttft_s"] and ideal["load"]["tpot_s"] < cal["load"]["tpot_s"]


def test_osl_alone_is_the_closed_loop_of_the_batch(capsys):
    _, by_batch = _run(BASE[:-1] + ["6", "--osl", "64", "--dp", "2"], capsys)
    _, by_conc = _run(BASE[:-1] + ["6", "--concurrency", "12", "--osl", "64", "--dp", "2"], capsys)
    assert by_batch == by_conc and by_batch["load"]["concurrency"] == 12 and by_batch["load"]["batch_per_replica"] == 6


def test_without_a_workload_the_payload_is_unchanged(capsys):
    _, r = _run(BASE, capsys)
    assert "load" not in r and r["batch"] == 4


@pytest.mark.parametrize("extra, needle", [
    (["--concurrency", "4", "--request-rate", "2", "--osl", "8"], "--concurrency (closed loop) and --request-rate"),
    (["--concurrency", "4"], "--concurrency needs --osl"),
    (["--request-rate", "2"], "--request-rate needs --osl"),
    (["--request-rate", "0", "--osl", "8"], "--request-rate"),
    (["--concurrency", "0", "--osl", "8"], "--concurrency"),
])
def test_bad_workloads_exit_2_in_one_line(extra, needle, capsys):
    code = main(BASE + extra + ["--json"])
    out, err = capsys.readouterr()
    assert code == 2 and needle in json.loads(out)["error"] and err.count("\n") == 1


def test_the_prompt_and_its_output_must_fit_learned_positions(capsys):
    code = main(["roofline", "gpt2", "--phase", "decode", "--T", "800", "--batch", "2", "--osl", "300",
                 "--gpu", "H100", "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and "--T + --osl" in json.loads(out)["error"] and err.count("\n") == 1


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_the_engine_chooses_the_schedule_of_the_load(engine, capsys):
    """--engine: the closed loop is timed under that engine's scheduler (``workload.closed_loop(engine=)``);
    trtllm is a schedule only, the memory stays vLLM's."""
    argv = BASE + ["--concurrency", "32", "--osl", "128", "--max-batched-tokens", "2048"]
    _, vl = _run(argv, capsys)
    code, r = _run(argv + ["--engine", engine], capsys)
    assert code == 0 and r["load"]["schedule"] == engine and vl["load"]["schedule"] == "vllm"
    cal, lay = _cal(engine=engine)
    step = cal.load_step(lay, max_batched_tokens=2048)
    want = workload.closed_loop(step, B=32, isl=1024, osl=128, M=2048, engine=engine)
    assert r["load"]["ttft_s"] == pytest.approx(float(want["ttft"]), rel=1e-12)
    assert r["load"]["tpot_s"] == pytest.approx(float(want["tpot"]), rel=1e-12)
    assert r["load"]["ttft_s"] != pytest.approx(vl["load"]["ttft_s"], rel=1e-3)
    if engine == "trtllm":  # its memory is accounted as vLLM's
        assert r["kv_capacity_tokens"] == vl["kv_capacity_tokens"]
    got = cal.under_load(lay, isl=1024, osl=128, max_batched_tokens=2048, concurrency=32, engine=engine)
    assert got["ttft"] == pytest.approx(float(want["ttft"]), rel=1e-12)


def test_an_unknown_schedule_is_refused(capsys):
    cal, lay = _cal()
    from symcost.core.errors import SymcostError
    with pytest.raises(SymcostError, match="no closed-loop schedule"):
        cal.under_load(lay, isl=1024, osl=128, max_batched_tokens=2048, concurrency=32, engine="tgi")
    assert main(BASE + ["--osl", "64", "--engine", "tgi"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_closed_loop_batch_per_replica_is_an_exact_count(capsys):
    """The closed loop's requests per replica are a count, ⌈C/N_dp⌉, an exact integer at any size (the
    fuzz campaign found it printed as a float past 2^53); the open loop's is a mean (a float)."""
    c = 2**64 + 1
    code, d = _run(["roofline", "llama-3.1-8b", "--phase", "decode", "--T", "1024", "--batch", "1", "--gpu", "H100",
                    "--osl", "2", "--concurrency", str(c), "--dp", "2"], capsys)
    b = d["load"]["batch_per_replica"]
    assert isinstance(b, int) and b == 2**63 + 1
    code, d = _run(["roofline", "llama-3.1-8b", "--phase", "decode", "--T", "1024", "--batch", "1", "--gpu", "H100",
                    "--osl", "64", "--request-rate", "2"], capsys)
    assert code == 0 and isinstance(d["load"]["batch_per_replica"], float)
