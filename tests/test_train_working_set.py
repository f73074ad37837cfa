"""ZeRO-3 / FSDP's gathered working set, the loss peak, the framework conventions and the fits
(issue 24), checked against the formulas' own definitions and the model's parameter counts."""
from __future__ import annotations

import json

import pytest

from symcost.architectures import loader
from symcost.cli.main import main
from symcost.core.notation import sym
from symcost.hardware.gpus import gpu
from symcost.training import TrainSetup, train_memory
from symcost.training.framework import FRAMEWORKS, GENERIC, budget_bytes
from symcost.training.plan import stages


@pytest.fixture(scope="module")
def llama():
    return loader.build("llama-3.1-8b")


def _tm(m, **kw):
    return train_memory(m, TrainSetup.of(seq=4096, micro_batch=1, **kw))


def test_gathered_is_the_largest_unit_times_the_framework_bytes(llama):
    v = llama.values
    V, d = int(v[sym.V]), int(v[sym.d])
    layer = stages(llama, 32)[1]  # one decoder layer: (split, whole) parameters
    head = V * d + d  # final norm + untied head, torchtitan's [norm, output] unit
    assert head > layer["split"] + layer["whole"]
    for fw, ub in (("fsdp2", 8), ("torchtitan", 8), (None, 6)):
        for tp in (1, 2, 8):
            tm = _tm(llama, dp=8, tp=tp, zero=3, framework=fw)
            assert tm.gathered == ub * (V * d // tp + d)
    assert _tm(llama, dp=8, zero=2).gathered == 0  # parameters are whole below ZeRO-3


def test_gathered_stays_on_the_gpu_under_every_offload(llama):
    for off in ("none", "optimizer", "params"):
        tm = _tm(llama, dp=8, zero=3, offload=off, framework="fsdp2")
        assert tm.gathered == 8 * (int(llama.values[sym.V] * llama.values[sym.d]) + 4096)
    tm = _tm(llama, dp=8, zero=3, offload="params")
    assert tm.weights == tm.gradients == tm.optimizer == 0 and tm.per_gpu > tm.gathered > 0


def test_no_reshard_keeps_the_rank_unsharded(llama):
    """reshard_after_forward off: every parameter of the rank in bf16 (2 B); under PP the gradients
    accumulate unsharded in the reduce dtype (torchtitan: fp32) over the micro-batches."""
    psi = sum(s["split"] + s["whole"] for s in stages(llama, 2)[:1])  # pipeline rank 0's parameters
    tt = train_memory(llama, TrainSetup.of(seq=4096, micro_batch=1, global_batch=32, dp=8, pp=2, zero=3,
                                           framework="torchtitan"))
    assert tt.stages[0]["gathered"] == (2 + 4) * psi
    on = train_memory(llama, TrainSetup.of(seq=4096, micro_batch=1, global_batch=32, dp=8, pp=2, zero=3,
                                           framework="torchtitan", reshard="on"))
    assert on.stages[0]["gathered"] < tt.stages[0]["gathered"]
    off = _tm(llama, dp=8, zero=3, framework="fsdp2", reshard="off")  # no PP: one unit's gradients at a time
    psi1 = sum(s["split"] + s["whole"] for s in stages(llama, 1))
    assert off.gathered == 2 * psi1 + 4 * (int(llama.values[sym.V] * llama.values[sym.d]) + 4096)


def test_framework_state_bytes(llama):
    psi = sum(s["split"] + s["whole"] for s in stages(llama, 1))
    n = 8
    per = {fw: _tm(llama, dp=n, zero=3, framework=fw) for fw in ("fsdp2", "deepspeed")}
    assert per["fsdp2"].weights + per["fsdp2"].gradients + per["fsdp2"].optimizer == 16 * psi // n
    assert per["deepspeed"].weights + per["deepspeed"].gradients + per["deepspeed"].optimizer == 18 * psi // n
    z2 = _tm(llama, dp=n, zero=2, framework="deepspeed")  # the fp32 copy of the gradient partition
    assert (z2.weights, z2.gradients, z2.optimizer) == (2 * psi, 6 * psi // n, 12 * psi // n)
    mg = _tm(llama, dp=n, zero=1, framework="megatron")  # distributed optimizer, fp32 main grads
    assert (mg.weights, mg.gradients, mg.optimizer) == (2 * psi, 4 * psi, 12 * psi // n)
    explicit = _tm(llama, dp=n, zero=1, framework="megatron", grad_dtype="bf16")  # an explicit option wins
    assert explicit.gradients == 2 * psi


def test_loss_peak_formula_and_chunks(llama):
    V = int(llama.values[sym.V])
    rows = 2 * 4096
    # torchtitan frees the logits before backward; their bf16 segment stays cached by the allocator
    # (``allocator.cached_logits``: b_a per element, one chunk only)
    for fw, per, cached in ((None, 2 + 8, 0), ("torchtitan", 8, 2)):
        one = train_memory(llama, TrainSetup.of(seq=4096, micro_batch=2, framework=fw))
        assert one.loss_peak == rows * V * (per + cached) and one.allocator_cached == rows * V * cached
        four = train_memory(llama, TrainSetup.of(seq=4096, micro_batch=2, framework=fw, loss_chunks=4))
        assert four.loss_peak == rows * V * (per + 4) // 4  # a chunk's fp32 log-softmax joins the transient
        assert one.activations - four.activations == rows * V * 4  # ... and leaves the saved set
    tp = train_memory(llama, TrainSetup.of(seq=4096, micro_batch=1, tp=4, cp=2))  # vocab over tp, tokens over cp
    assert tp.loss_peak == 4096 // 2 * V * 10 // 4
    tm = train_memory(llama, TrainSetup.of(seq=4096, micro_batch=1))
    assert tm.per_gpu == (tm.weights + tm.gradients + tm.optimizer + tm.gathered + tm.activations
                          + max(tm.loss_peak, tm.recompute_working))


def test_json_breakdown_and_formula(capsys, llama):
    assert main(["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", "--dp", "8", "--zero", "3",
                 "--framework", "fsdp2", "--gpu", "H100", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert {"gathered", "loss_peak"} <= set(r["breakdown"]) and r["framework"] == "fsdp2"
    from symcost.core.exprparse import parse
    g = parse(r["formula"]["gathered"]).xreplace({sym.N_tp: 1, sym.N_ep: 1})
    assert int(g) == r["breakdown"]["gathered"]
    assert r["budget_bytes"] == gpu("H100").usable_bytes - 2 * 2**30
    assert r["fits"] == (r["per_gpu_bytes"] <= r["budget_bytes"])


def test_every_framework_is_named_and_its_stages_hold():
    assert set(FRAMEWORKS) == {"megatron", "deepspeed", "fsdp2", "torchtitan", "hf"} and GENERIC.name is None
    assert budget_bytes(gpu("H100"), 0) == gpu("H100").usable_bytes < gpu("H100").memory_bytes


@pytest.mark.parametrize("argv,needle", [
    (["--framework", "fsdp2", "--zero", "1"], "--framework fsdp2 with --zero 1"),
    (["--framework", "torchtitan", "--zero", "2"], "--reshard-after-forward off"),
    (["--gpu", "H100", "--headroom-gib", "80"], "--headroom-gib 80"),
    (["--reshard-after-forward", "off", "--zero", "2"], "needs --zero 3"),
    (["--framework", "ray"], "--framework"),
    (["--framework", "deepspeed", "--zero", "3", "--pp", "2"], "pipeline engine runs ZeRO 0 or 1"),
    (["--framework", "hf", "--pp", "2"], "no pipeline parallelism"),
])
def test_bad_combinations_exit_2(argv, needle, capsys):
    assert main(["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", "--dp", "8", *argv, "--json"]) == 2
    cap = capsys.readouterr()
    assert needle in json.loads(cap.out)["error"] and "Traceback" not in cap.err
    assert len(cap.err.strip().splitlines()) == 1


@pytest.mark.parametrize("fw,chunks", [("torchtitan", 1), ("deepspeed", 4), (None, 2)])
def test_search_prints_what_train_costs(fw, chunks, llama):
    """Every setup ``train --search`` prints, run alone through ``train_memory``, gives the same bytes
    (the gathered unit at ZeRO-3, reshard off under PP for torchtitan, the loss peak, the framework's bytes)."""
    from symcost.training.search import search
    base = TrainSetup.of(seq=4096, global_batch=256, framework=fw, loss_chunks=chunks)
    r = search(llama, base, gpus=32, gpu=gpu("H100"), zero=3)
    assert r["best"]
    for b in r["best"]:
        keys = ("dp", "tp", "pp", "ep", "cp", "micro_batch", "zero", "recompute", "sp", "offload")
        s = base.replace(**{k: b[k] for k in keys}, virtual=b["virtual_stages"], hsdp_shard=b["hsdp_shard"])
        assert train_memory(llama, s).per_gpu == b["per_gpu_bytes"], b


def test_every_nth_layer_checkpointing(llama):
    """torchtitan's selective layer AC (every N-th block checkpointed): on a stack of identical layers
    it holds what Megatron's block method holds with the same number of recomputed layers, and
    recomputes exactly L/N layers' forward."""
    from symcost.training.recompute import Recompute
    assert Recompute("full", "every", 3).recomputed(7) == [False, False, True, False, False, True, False]
    for n in (2, 4):
        every = _tm(llama, recompute="full", recompute_method="every", recompute_layers=n)
        block = _tm(llama, recompute="full", recompute_method="block", recompute_layers=32 // n)
        assert (every.activations, every.flops_per_step) == (block.activations, block.flops_per_step)
    none, full = _tm(llama), _tm(llama, recompute="full")
    assert full.activations < _tm(llama, recompute="full", recompute_method="every", recompute_layers=2).activations \
        < none.activations


def test_op_level_checkpointing_keeps_odd_matmuls_and_attention_output(llama):
    """``--recompute op`` per Llama layer and token: the block input d, q_proj (H_q·D_h), v_proj
    (H_kv·D_h), gate_proj (d_ff) and down_proj (d) outputs — mm #1, #3, #5, #7 —, the attention output
    (H_q·D_h) in bf16 and its fp32 lse (H_q)."""
    from symcost.core.conventions import Backward
    from symcost.training.activations import activations
    v = llama.values
    d, Hq, Hkv, Dh, dff = (int(v[s]) for s in (sym.d, sym.H_q, sym.H_kv, sym.D_h, sym.d_ff))
    tree = activations(llama, Backward(), op=True)
    g = llama.groups[0]
    per_token = tree[g.name].total.xreplace({**v, sym.B: 1, sym.T: 1, sym.b_a: 2, sym.N_tp: 1, sym.N_cp: 1})
    assert per_token == int(v[g.count]) * (2 * (d + Hq * Dh + Hkv * Dh + dff + d + Hq * Dh) + 4 * Hq)


def test_vocab_pad_is_megatrons_padding(capsys):
    """Megatron's _vocab_size_with_padding: GPT-2's 50,257 tokens become 50,304 at
    --make-vocab-size-divisible-by 128 and tp 1, 50,688 at tp 4 (a multiple of 512); the padded rows
    are weights like the others."""
    sizes = {}
    for tp in (1, 4):
        assert main(["train", "gpt2", "--seq", "1024", "--micro-batch", "1", "--tp", str(tp), "--vocab-pad", "128",
                     "--json"]) == 0
        sizes[tp] = json.loads(capsys.readouterr().out)["vocab_size"]
    assert sizes == {1: 50304, 4: 50688}
    assert main(["train", "gpt2", "--seq", "1024", "--micro-batch", "1", "--tp", "4", "--json"]) == 2  # unpadded
    capsys.readouterr()


def test_megatron_recompute_modules(llama, capsys):
    """--recompute-modules: core_attn alone is the selective default; mlp keeps only each FFN's input
    (b_a·d per token) in place of its saved set, whose bytes come back as the backward's working set."""
    from symcost.core.conventions import Backward
    from symcost.training.activations import _bytes, _records
    sel = _tm(llama, recompute="selective")
    core = _tm(llama, recompute="selective", recompute_modules=("core_attn",))
    assert (core.activations, core.per_gpu) == (sel.activations, sel.per_gpu)
    both = _tm(llama, recompute="selective", recompute_modules=("core_attn", "mlp"))
    v = {**llama.values, sym.B: 1, sym.T: 4096, sym.b_a: 2, sym.N_tp: 1, sym.N_cp: 1}
    ffn = next(c for c in llama.groups[0].components if c.key == "mlp")
    mlp = sum(int(_bytes(r, sp=False).xreplace(v)) for r in _records(ffn, Backward(recompute="selective")))
    L, d = int(llama.values[llama.groups[0].count]), int(llama.values[sym.d])
    assert sel.activations - both.activations == L * (mlp - 2 * 4096 * d)
    assert both.recompute_working >= mlp
    for bad, needle in ((["--recompute-modules", "shared_experts", "--recompute", "selective"], "shared_experts not modelled"),
                        (["--recompute-modules", "mlp"], "applies to --recompute selective")):
        assert main(["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", *bad, "--json"]) == 2
        assert needle in json.loads(capsys.readouterr().out)["error"]


def test_search_shows_distinct_layouts_and_no_unmodelled_offload():
    """The five setups shown differ in layout or schedule (each the fastest of its ZeRO / HSDP / offload
    settings), fit the driver-reported memory minus the headroom, and propose CPU offload only when
    --offload pins it (the host optimizer's time is not modelled)."""
    from symcost.training.search import search
    m = loader.build("llama-3.1-70b")
    r = search(m, TrainSetup.of(seq=4096, global_batch=256), gpus=64, gpu=gpu("H100"))
    keys = [(b["dp"], b["tp"], b["pp"], b["ep"], b["cp"], b["virtual_stages"], b["micro_batch"], b["recompute"],
             b["sp"]) for b in r["best"]]
    assert len(keys) == 5 == len(set(keys))
    assert all(b["offload"] == "none" and b["per_gpu_bytes"] <= budget_bytes(gpu("H100")) for b in r["best"])
    steps = [b["step_time_s"] for b in r["best"]]
    assert steps == sorted(steps)
    pinned = search(m, TrainSetup.of(seq=4096, global_batch=256), gpus=64, gpu=gpu("H100"), offload="optimizer")
    assert pinned["best"] and all(b["offload"] == "optimizer" for b in pinned["best"])


@pytest.mark.parametrize("fw", ["deepspeed", "hf"])
def test_search_proposes_only_what_the_engine_runs(fw):
    from symcost.training.search import search
    r = search(loader.build("llama-3.1-8b"), TrainSetup.of(seq=4096, global_batch=256, framework=fw), gpus=32,
               gpu=gpu("A100-40GB"))
    for b in r["best"]:
        assert not (b["pp"] > 1 and (fw == "hf" or b["zero"] >= 2)), b
        keys = ("dp", "tp", "pp", "ep", "cp", "micro_batch", "zero", "recompute", "sp", "offload")
        s = TrainSetup.of(seq=4096, global_batch=256, framework=fw, **{k: b[k] for k in keys},
                          virtual=b["virtual_stages"], hsdp_shard=b["hsdp_shard"])
        assert train_memory(loader.build("llama-3.1-8b"), s).per_gpu == b["per_gpu_bytes"]
