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

BASE = ["roofline", "llama-3.1-8b", "--phase", "decode", "--T", "1024", "--gpu", "H100"]


def _run(argv, capsys):
    code = main(argv + ["--json"])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def _cal(dp=1):
    from symcost.cli.commands.common import read_model
    m, raw = read_model("llama-3.1-8b")
    setup = ServeSetup(layout=Layout.vllm(m, dp=dp), gpu=find_gpu("H100"))
    return CalibratedLatency(m, setup.checkpoint(m, raw), setup), setup.layout


@pytest.mark.parametrize("dp", [1, 2])
def test_closed_loop_matches_the_workload_model_and_sets_the_batch(dp, capsys):
    code, r = _run(BASE + ["--concurrency", "30", "--osl", "256", "--dp", str(dp)], capsys)
    assert code == 0
    load = r["load"]
    assert r["batch"] == math.ceil(30 / dp) == load["batch_per_replica"]  # the step is the replica's batch
    cal, lay = _cal(dp)
    step = cal.load_step(lay, max_batched_tokens=load["max_batched_tokens"])
    want = workload.closed_loop(step, B=math.ceil(30 / dp), isl=1024, osl=256, M=load["max_batched_tokens"])
    assert load["ttft_s"] == pytest.approx(float(want["ttft"]), rel=1e-12)
    assert load["tpot_s"] == pytest.approx(float(want["tpot"]), rel=1e-12)
    # under load a request waits for the others' prefill: never faster than its own prompt alone or one decode step
    assert load["ttft_s"] >= r["ttft_s"] and load["tpot_s"] >= r["tpot_s"] * (1 - 1e-12)


def test_open_loop_grows_with_the_rate_and_says_when_it_cannot_keep_up(capsys):
    got = []
    for rate in ("1", "4", "16"):
        code, r = _run(BASE + ["--request-rate", rate, "--osl", "256"], capsys)
        assert code == 0 and r["load"]["stable"]
        got.append(r["load"])
        # the step is taken at the Little's-law batch the rate keeps in flight, rounded up
        assert r["batch"] == max(1, math.ceil(r["load"]["batch_per_replica"] - 1e-9))
    assert got[0]["ttft_s"] < got[1]["ttft_s"] < got[2]["ttft_s"]
    assert got[0]["batch_per_replica"] < got[1]["batch_per_replica"] < got[2]["batch_per_replica"]
    code, r = _run(BASE + ["--request-rate", "1000", "--osl", "256"], capsys)
    assert code == 0 and not r["load"]["stable"] and r["load"]["ttft_s"] is None and r["load"]["utilisation"] >= 1
    assert r["batch"] == 1


def test_ideal_load_is_below_the_calibrated_one(capsys):
    _, cal = _run(BASE + ["--concurrency", "16", "--osl", "128"], capsys)
    _, ideal = _run(BASE + ["--concurrency", "16", "--osl", "128", "--ideal"], capsys)
    assert ideal["load"]["ttft_s"] < cal["load"]["ttft_s"] and ideal["load"]["tpot_s"] < cal["load"]["tpot_s"]


def test_without_a_workload_the_payload_is_unchanged(capsys):
    _, r = _run(BASE + ["--batch", "4"], capsys)
    assert "load" not in r and r["batch"] == 4


@pytest.mark.parametrize("extra, needle", [
    ([], "give --batch"),
    (["--batch", "2", "--concurrency", "4", "--osl", "8"], "--batch and --concurrency both given"),
    (["--concurrency", "4", "--request-rate", "2", "--osl", "8"], "--concurrency and --request-rate both given"),
    (["--concurrency", "4"], "--concurrency needs --osl"),
    (["--request-rate", "2"], "--request-rate needs --osl"),
    (["--batch", "2", "--osl", "8"], "--osl needs --concurrency or --request-rate"),
    (["--request-rate", "0", "--osl", "8"], "--request-rate"),
    (["--concurrency", "0", "--osl", "8"], "--concurrency"),
])
def test_bad_workloads_exit_2_in_one_line(extra, needle, capsys):
    code = main(BASE + extra + ["--json"])
    out, err = capsys.readouterr()
    assert code == 2 and needle in json.loads(out)["error"] and err.count("\n") == 1


def test_the_prompt_and_its_output_must_fit_learned_positions(capsys):
    code = main(["roofline", "gpt2", "--phase", "decode", "--T", "800", "--concurrency", "2", "--osl", "300",
                 "--gpu", "H100", "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and "--T + --osl" in json.loads(out)["error"] and err.count("\n") == 1
