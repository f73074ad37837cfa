"""Issue 28: the host's kernel-issue floor of eager execution (``training.host_launch``): kernels counted
per layer by mechanism, CUDA-graph scopes, the floor in ``train``'s step, its formula and the search."""
import json

import pytest

import symcost
from symcost.cli.main import main
from symcost.core.errors import SymcostError
from symcost.training import host_launch
from symcost.training.compute import forward_leaves
from symcost.training.setup import TrainSetup


def _layer(name, precision="bf16", ep=1, graphs=()):
    m = symcost.build(name)
    setup = TrainSetup.of(seq=128, micro_batch=1, dp=ep, ep=ep)
    g = m.groups[-1]
    leaves = [p for p in forward_leaves(m, setup) if p.split("/", 1)[0] == g.name]
    return host_launch.layer_kernels(m, g, leaves, precision=precision, ep=ep, graphs=graphs)


def test_dense_layer_kernels_by_mechanism():
    """Llama: 2 norms; q, k, v, o and gate, up, down GEMMs (1 forward, 2 backward each); one fused
    attention kernel each way; rotary 2 + 2; the activation; two residual adds."""
    f, b = _layer("llama-3.1-8b")
    assert (f, b) == (2 + 7 + 1 + 2 + 1 + 2, 2 + 14 + 1 + 2 + 1 + 2)
    # FP8: one quantize kernel per GEMM each way
    f8, b8 = _layer("llama-3.1-8b", precision="fp8")
    assert (f8 - f, b8 - b) == (7, 7)


def test_moe_layer_kernels_follow_the_local_experts():
    """Qwen3-30B-A3B (E = 128): one GEMM per local expert per grouped leaf (2 leaves: gate_up, down),
    E_loc forward and 2·E_loc backward; the all-to-alls and the chunk sort only under EP."""
    f1, b1 = _layer("qwen3-30b-a3b", ep=1)
    f8, b8 = _layer("qwen3-30b-a3b", ep=8)
    # attention block: 2 norms + 4 GEMMs + attention + qk-norm 2 + rotary 2 + residual
    attn_f, attn_b = 2 + 4 + 1 + 2 + 2 + 1, 2 + 8 + 1 + 2 + 2 + 1
    # MoE block at EP 1: router GEMM 1/2 + softmax 1/1 + permute/unpermute 2/2 + 2·128 / 4·128 expert GEMMs
    # + activation + residual
    assert (f1, b1) == (attn_f + 1 + 1 + 2 + 256 + 2, attn_b + 2 + 1 + 2 + 512 + 2)
    # EP 8: 16 local experts, the chunk sorts (2 more each way) and the two all-to-alls each way
    assert (f8, b8) == (attn_f + 1 + 1 + 4 + 2 + 32 + 2, attn_b + 2 + 1 + 4 + 2 + 64 + 2)


def test_graph_scopes_replace_their_kernels_by_one_launch():
    f, b = _layer("qwen3-30b-a3b", ep=8)
    fr, br = _layer("qwen3-30b-a3b", ep=8, graphs=("moe_router", "moe_preprocess"))
    assert (f - fr, b - br) == (1, 2)  # router GEMM + softmax -> one launch (forward 2 -> 1, backward 3 -> 1)
    fa, ba = _layer("qwen3-30b-a3b", ep=8, graphs=("attn",))
    # the attention block (4 GEMMs, attention, qk-norm 2, rotary 2, residual) with its input norm -> one launch
    assert (f - fa, b - ba) == (11 - 1, 15 - 1)
    assert host_launch.parse_graphs("none") == ()
    with pytest.raises(SymcostError, match="moe_preprocess needs moe_router"):
        host_launch.parse_graphs("moe_preprocess")
    with pytest.raises(SymcostError, match="unknown scope 'graph'"):
        host_launch.parse_graphs("attn,graph")


def _step(argv, capsys):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)["step"]


def test_a_short_micro_batch_is_host_bound(capsys):
    """GPT-2 at 128 tokens on a B200: the GPU's kernels are shorter than their issue, so the rank's
    micro-batch takes the host's time (the step's compute = m·t_host + t_opt); captured whole
    (full_iteration) it is device-bound again and faster."""
    base = ["train", "gpt2", "--seq", "128", "--micro-batch", "1", "--global-batch", "16", "--dp", "8",
            "--gpu", "B200"]
    s = _step(base, capsys)
    t_k, _ = host_launch.launch_seconds()
    n = s["kernels_per_micro_batch"]
    assert s["host_bound"] and s["host_issue_s"] == pytest.approx(2 * t_k * (n["forward"] + n["backward"]))
    assert s["compute_s"] == pytest.approx(s["host_issue_s"] + s["kernel_s"]["optimizer"])
    assert s["formula"]["value_s"] == pytest.approx(s["step_time_s"], rel=1e-9)
    assert "Max(" in s["formula"]["formula"]
    g = _step(base + ["--cuda-graphs", "full_iteration"], capsys)
    assert not g["host_bound"] and g["step_time_s"] < s["step_time_s"]
    assert g["cuda_graphs"] == ["full_iteration"]


def test_a_long_micro_batch_is_device_bound(capsys):
    s = _step(["train", "llama-3.1-8b", "--seq", "8192", "--micro-batch", "1", "--dp", "8", "--gpu", "H100"], capsys)
    assert not s["host_bound"] and s["host_issue_s"] < s["compute_s"]


def test_bad_cuda_graphs_is_one_line(capsys):
    base = ["train", "gpt2", "--seq", "128", "--micro-batch", "1", "--dp", "8", "--gpu", "B200"]
    assert main(base + ["--cuda-graphs", "everything"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--cuda-graphs" in err[0]
    assert main(base + ["--cuda-graphs", "attn", "--mfu", "0.4"]) == 2
    assert "--cuda-graphs" in capsys.readouterr().err


def test_search_applies_the_host_floor_as_train_does(capsys):
    """A host-bound sweep (GPT-2 at 128 tokens on 8 B200s): candidates without a pipeline at
    micro-batch 1, run alone through train, are host-bound and cost what the search costs them."""
    from symcost.hardware.gpus import gpu
    from symcost.training.search import candidates, evaluate
    m = symcost.build("gpt2")
    space = candidates(m, 8, 128, 64)
    r = evaluate(m, space, TrainSetup.of(seq=128, global_batch=64), gpu=gpu("B200"))
    picks = [i for i in range(len(space)) if space[i]["pp"] == 1 and space[i]["micro_batch"] == 1
             and space[i]["offload"] == "none" and space[i]["hsdp_shard"] is None][:4]
    assert picks
    base = ["train", "gpt2", "--seq", "128", "--global-batch", "64", "--gpu", "B200", "--json"]
    for i in picks:
        b = space[i]
        argv = base + ["--micro-batch", "1", "--zero", str(b["zero"]), "--recompute", b["recompute"],
                       "--sp" if b["sp"] else "--no-sp"]
        argv += [x for k in ("dp", "tp", "pp", "ep", "cp") for x in (f"--{k}", str(b[k]))]
        assert main(argv) == 0
        t = json.loads(capsys.readouterr().out)["step"]
        assert t["host_bound"], b
        assert t["step_time_s"] == pytest.approx(float(r.step_time_s[i]), rel=1e-6), b
