"""Issue 28: torch's ring attention's bandwidth-bound passes (``training.ring_attention``) in the step
time of torchtitan / FSDP2 context parallelism, in ``train`` and in ``train --search``."""
import json

import pytest

import symcost
from symcost.cli.main import main
from symcost.training import ring_attention
from symcost.training.setup import TrainSetup


def test_bytes_per_layer_follow_the_ring_steps():
    """Llama-3.1-8B at 128K over CP 4: E = 32,768 local tokens x 32 heads x 128, E_kv a quarter."""
    E, Ekv = 32768 * 32 * 128, 32768 * 8 * 128
    f, b = ring_attention.per_layer_bytes(32 * 128, 8 * 128, 131072, 4, 1)
    assert f == pytest.approx(3 * (0.75 * 38 * E + 8 * Ekv) + 6 * E)
    assert b == pytest.approx(3 * (10 * E + 44 * Ekv) + 6 * E + 12 * Ekv)
    assert ring_attention.per_layer_bytes(32 * 128, 8 * 128, 131072, 1, 1) == (0, 0)  # no ring
    m = symcost.build("llama-3.1-8b")
    kw = dict(seq=131072, micro_batch=1, dp=2, cp=4, zero=3)
    tt = TrainSetup.of(framework="torchtitan", **kw)
    layers = {g.name: 32 for g in m.groups}
    assert ring_attention.rank_bytes(m, tt, layers) == pytest.approx((32 * f, 32 * b))
    assert ring_attention.rank_bytes(m, TrainSetup.of(framework="megatron", **kw), layers) == (0.0, 0.0)


def test_the_search_costs_the_ring_as_train_does(capsys):
    base = ["train", "llama-3.1-8b", "--seq", "131072", "--micro-batch", "1", "--global-batch", "2",
            "--gpu", "H100-96GB-500W", "--framework", "torchtitan", "--json"]
    assert main(base + ["--search", "--gpus", "8"]) == 0
    r = json.loads(capsys.readouterr().out)
    cps = 0
    for b in r["best"][:3]:
        argv = base + ["--zero", str(b["zero"]), "--recompute", b["recompute"], "--offload", b["offload"],
                       "--sp" if b["sp"] else "--no-sp"]
        argv += [x for k in ("dp", "tp", "pp", "ep", "cp") for x in (f"--{k}", str(b[k]))]
        argv += ["--hsdp-shard", str(b["hsdp_shard"])] if b["hsdp_shard"] is not None else []
        argv += ["--schedule", b["schedule"]] if b["schedule"] != "none" else []
        assert main(argv) == 0
        t = json.loads(capsys.readouterr().out)["step"]
        assert t["step_time_s"] == pytest.approx(b["step_time_s"], rel=1e-4), b
        cps += b["cp"] > 1
    assert cps


def test_the_power_limited_h100_is_the_h100_silicon_at_its_own_peak():
    """torchtitan's 500 W HBM2e H100: the peak interpolated in power between NVIDIA's 400 W NVL and
    700 W SXM ratings of the 132-SM part, 2.4 TB/s, and the H100's measured kernel shares."""
    from symcost.hardware.calibration import efficiency
    from symcost.hardware.gpus import gpu
    g, base = gpu("H100-96GB-500W"), gpu("H100")
    assert g.bf16_tflops == round(835 + (989 - 835) * (500 - 400) / (700 - 400))
    assert g.peak("fp8")[0] == 2 * g.peak("bf16")[0] and g.bandwidth_bytes_per_s == 2.4e12
    for op, m in (("gemm", 8192), ("attn_prefill", 8192), ("attn_backward", 8192)):
        assert efficiency(g.name, op, m=m) == efficiency(base.name, op, m=m)
    assert efficiency("H100-NVL", "gemm", m=8192) != efficiency("H100", "gemm", m=8192)  # no base: its own rows
