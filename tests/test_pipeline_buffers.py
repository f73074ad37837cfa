"""``torch.distributed.pipelining``'s buffers (``symcost.training.pipeline_buffers``) against the stage's
own code: a ``PipelineStage`` built on a fake process group (one rank of three, no communication)
allocates its receive buffers for m micro-batches, then runs the forward of the c micro-batches in
flight (``forward_one_chunk`` keeps each output in ``fwd_cache``). The bytes it holds beyond the
in-flight stage inputs (a layer's saved input, counted with the activations) must be
``pipeline_buffers.count`` boundary tensors X."""
from __future__ import annotations

import pytest

from symcost.training import pipeline_buffers as pipe

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")


def _held_by_stage(rank: int, m: int, c: int, shape=(2, 16, 8)) -> tuple[int, int]:
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.stage import InferenceMode
    from torch.testing._internal.distributed.fake_pg import FakeStore
    if dist.is_initialized():  # another module's fake group
        dist.destroy_process_group()
    dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=3)
    try:
        torch.manual_seed(0)
        mod = torch.nn.Linear(shape[-1], shape[-1])
        x = torch.randn(*shape)
        stage = PipelineStage(mod, rank, 3, torch.device("cpu"), input_args=(x,), output_args=(mod(x),))
        stage._inference_mode = InferenceMode.STATIC  # the shapes are given: no metadata exchange
        stage._prepare_forward_infra(m, (x,), None, has_backward=True)
        stage._prepare_backward_infra(m)
        for i in range(c):
            stage.forward_one_chunk(i, () if rank else (x.clone().requires_grad_(),))
        storages = {}
        for recv in list(stage.args_recv_info.values()) + list(stage.grad_recv_info.values()):
            for a in recv:
                if a.buffer is not None:
                    storages[a.buffer.untyped_storage().data_ptr()] = a.buffer.untyped_storage().nbytes()
        if rank != 2:  # the last stage's output is the loss's input (the logits, ``loss_peak``)
            for out, _ in stage.fwd_cache.values():
                for t in out:
                    storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        inputs = sum(t.untyped_storage().nbytes() for _, ins in stage.fwd_cache.values() for t in ins) if rank else 0
        return sum(storages.values()) - inputs, x.numel() * x.element_size()
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("rank,m,c", [(0, 4, 3), (1, 4, 2), (1, 6, 2), (2, 4, 1)],
                         ids=["first", "middle", "middle-m6", "last"])
def test_stage_buffers_are_the_count(rank, m, c):
    held, X = _held_by_stage(rank, m, c)
    assert held == pipe.count(3, rank, m, [c]) * X


def test_search_counts_the_buffers_as_train_does():
    """``train --search --framework torchtitan``: sampled candidates under PP (interleaved among them)
    have exactly ``train_memory``'s per-GPU bytes, the pipelining buffers included."""
    import random

    import symcost
    from symcost.hardware.gpus import gpu
    from symcost.training.memory import train_memory
    from symcost.training.search import candidates, evaluate
    from symcost.training.setup import TrainSetup
    m = symcost.build("llama-3.1-8b")
    space = candidates(m, 16, 4096, 64, zeros=(0, 3))
    setup = TrainSetup.of(seq=4096, global_batch=64, framework="torchtitan")
    r = evaluate(m, space, setup, gpu=gpu("H100"), mfu=0.4)
    pp = [i for i in range(len(space)) if space[i]["pp"] > 1 and space[i]["offload"] == "none"]
    picks = random.Random(3).sample(pp, 24) + [i for i in pp if space[i]["virtual_stages"] > 1][:6]
    seen_buffers = False
    for i in picks:
        c = space[i]
        tm = train_memory(m, TrainSetup.of(
            seq=4096, global_batch=64, framework="torchtitan", recompute=c["recompute"], micro_batch=c["micro_batch"],
            dp=c["dp"], tp=c["tp"], pp=c["pp"], ep=c["ep"], cp=c["cp"], zero=c["zero"], sp=c["sp"],
            hsdp_shard=c["hsdp_shard"], offload=c["offload"], virtual=c["virtual_stages"],
            account_embedding=c["account_embedding"], account_loss=c["account_loss"]))
        seen_buffers |= tm.pipeline_buffers > 0
        assert int(r.per_gpu_bytes[i]) == tm.per_gpu, c
    assert seen_buffers
