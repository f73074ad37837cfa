"""Megatron's full-recomputation methods (symcost/training/recompute.py): the ``block`` method
measured on the real classes, both methods' sums, FLOPs and collectives, and the CLI's checks."""
from __future__ import annotations

import pytest

import symcost
from symcost.cli import main
from symcost.training.comm import comm
from symcost.training.flops import train_flops
from symcost.training.memory import train_memory
from symcost.training.recompute import Recompute
from symcost.training.setup import Batch, TrainSetup  # noqa: F401

saved = pytest.importorskip("tests.saved")
from tests.test_activations import built, engine_kernel, measure, tiny  # noqa: E402

#: families without CPU-kernel artefacts in these cases; Jamba interleaves attention / Mamba and
#: MoE / dense layers, so which layers are "the first N" matters
FAMILIES = [("llama", "llama", "eager", "fp32"), ("llama", "qwen3", "sdpa", "bf16"),
            ("qwen_moe", "qwen3_moe", "eager", "fp32"), ("deepseek", "deepseek_v3", "eager", "fp32"),
            ("jamba", "jamba", "eager", "fp32"), ("longcat_flash", "longcat_flash", "eager", "fp32"),
            ("gemma4", "gemma4_text", "eager", "bf16"), ("nemotron_h", "nemotron_h", "eager", "fp32")]


@pytest.mark.parametrize("module,model_type,kernel,dtype", FAMILIES)
def test_block_method_equals_measured(module, model_type, kernel, dtype):
    """Megatron's ``--recompute-method block --recompute-num-layers N``: the first N decoder layers
    checkpointed, the rest not — transformers' gradient checkpointing switched on for exactly
    those layers (``GradientCheckpointingLayer.gradient_checkpointing``), bytes saved for backward
    equal to the engine's activations of that one-stage chunk."""
    raw = tiny(module, model_type, 0)
    model = saved.build(raw, kernel, "full", dtype)
    m = built(raw)
    L = m.n_layers()
    layers = next(x for x in model.modules() if type(x).__name__ == "ModuleList" and len(x) == L)
    for n in range(1, L):
        for i, layer in enumerate(layers):
            layer.gradient_checkpointing = i < n
        for B, T in ((1, 5), (2, 7)):
            tm = train_memory(m, TrainSetup.of(seq=T, micro_batch=B, recompute="full", recompute_method="block",
                              recompute_layers=n, kernel=engine_kernel(m, kernel), act_dtype=dtype,
                              scan="reference"))
            assert tm.stages[0]["activations_per_micro_batch"] == measure(model, model_type, B, T), (n, B, T)


def test_block_of_every_layer_is_full_and_uniform_sums():
    """block with N ≥ the chunk's layers is plain full recomputation; uniform N keeps one input per
    group of N layers and recomputes a whole group at once (its saved sets alive together)."""
    m = symcost.build("llama-3.1-8b")
    kw = dict(seq=4096, micro_batch=1, pp=2)
    full = train_memory(m, TrainSetup.of(recompute="full", **kw))
    for n in (16, 40):
        blk = train_memory(m, TrainSetup.of(recompute="full", recompute_method="block", recompute_layers=n, **kw))
        assert (blk.activations, blk.recompute_working, blk.flops_per_step) == \
            (full.activations, full.recompute_working, full.flops_per_step)
    rc = Recompute("full", "uniform", 3)
    held, work = rc.chunk([1, 10, 100, 1000, 10000], [2, 20, 200, 2000, 20000], [0, 5, 0, 7, 0])
    assert held == 1 + 1000 and work == max(2 + 20 + 200 + 5, 2000 + 20000 + 7)
    held, work = Recompute("full", "block", 2).chunk([1, 10, 100], [2, 20, 200], [0, 5, 3])
    assert held == 1 + 10 + 200 and work == max(2 + 0, 20 + 5, 3)


def test_block_flops_and_collectives_count_the_recomputed_layers_once_more():
    """Recomputed layers run their forward again: FLOPs add their forward (the embedding and head
    are never recomputed), TP collectives add one forward collective per TP block of those layers."""
    m = symcost.build("llama-3.1-8b")
    v = m.values_with(T=4096, B=1)
    per_layer = train_flops(m)["forward/layers"].total_at(v) // 32
    none = train_flops(m).total_at(v)
    assert train_flops(m, recompute="full").total_at(v) == none + 32 * per_layer
    kw = dict(seq=4096, micro_batch=1, pp=2, tp=2, global_batch=16)
    tm = train_memory(m, TrainSetup.of(recompute="full", recompute_method="block", recompute_layers=4, **kw))
    assert tm.flops_per_step == 16 * (none + 8 * per_layer)  # 4 layers on each of the 2 stages
    base = comm(m, TrainSetup.of(**kw))["collectives"]["tp"]
    blk = comm(m, TrainSetup.of(recompute="full", recompute_method="block", recompute_layers=4, **kw))["collectives"]["tp"]
    assert blk - base == 16 * 4 * 2  # per micro-batch: 4 recomputed layers × 2 TP blocks


@pytest.mark.parametrize("argv,message", [
    (["--recompute-layers", "4"], "apply to --recompute full only"),
    (["--recompute", "selective", "--recompute-method", "block"], "apply to --recompute full only"),
    (["--recompute", "full", "--recompute-layers", "0"], "--recompute-layers"),
    (["--recompute", "full", "--recompute-method", "block", "--activations", "korthikanti"], "engine"),
])
def test_bad_recompute_options_exit_2(argv, message, capsys):
    assert main(["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
