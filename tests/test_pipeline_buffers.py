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
