"""Collectives measured on CPU with the fake process group, against the engine's formulas.

A dispatch mode records every c10d / functional collective a tiny model issues under
tensor parallelism (DTensor ``ColwiseParallel``/``RowwiseParallel``, with and without
``SequenceParallel``) and under FSDP2 ``fully_shard`` (with and without gradient accumulation,
gradients synchronised on every micro-batch or only the last; on a 1-D mesh and, HSDP, on a
(replicate, shard) mesh). Counts per kind and buffer bytes
must equal ``symcost.training.comm.tp_collectives`` / ``dp_collectives``, which ``comm`` sums per
layer and micro-batch. (CommDebugMode counts the same ops; it does not report sizes, hence the
recorder.) Bytes sent per GPU follow the ring factors (n−1)/n and 2·(n−1)/n of the buffer.
"""
import collections
from fractions import Fraction

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from symcost.training.comm import dp_collectives, tp_collectives  # noqa: E402

N = 4
D, F, B, T = 16, 32, 2, 8
KIND = {"all_reduce": "all_reduce", "all_gather_into_tensor": "all_gather", "_allgather_base_": "all_gather",
        "reduce_scatter_tensor": "reduce_scatter", "_reduce_scatter_base_": "reduce_scatter"}


@pytest.fixture(scope="module")
def mesh():
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore
    if not dist.is_initialized():
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=N)
    yield init_device_mesh("cpu", (N,))
    dist.destroy_process_group()


class Recorder(TorchDispatchMode):
    """Counts collectives by kind and sums each one's full buffer bytes (the gathered / reduced
    tensor, not the shard)."""

    def __init__(self):
        super().__init__()
        self.ops, self.full = collections.Counter(), collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket).split(".")[-1]
        if name in KIND:
            kind = KIND[name]
            t = args[0][0] if isinstance(args[0], (list, tuple)) else args[0]
            nbytes = t.numel() * t.element_size()
            # functional all_gather passes the shard, c10d _allgather_base_ the output; RS the reverse
            if name == "all_gather_into_tensor":
                nbytes *= N
            if name == "_reduce_scatter_base_":
                nbytes *= N
            self.ops[kind] += 1
            self.full[kind] += nbytes
        return func(*args, **(kwargs or {}))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.up, self.down = nn.LayerNorm(D), nn.Linear(D, F, bias=False), nn.Linear(F, D, bias=False)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(self.norm(x))))


def sent(rec: Recorder) -> Fraction:
    r = Fraction(N - 1, N)
    return sum((2 * r if k == "all_reduce" else r) * v for k, v in rec.full.items())


@pytest.mark.parametrize("sp", [False, True])
def test_tensor_parallel(mesh, sp):
    """Two TP blocks (``plan.tp_blocks``: a Llama layer's attention and MLP); the toy has 2 MLP blocks."""
    from torch.distributed.tensor import Shard, distribute_tensor
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module
    model = nn.Sequential(Block(), Block())
    for blk in model:
        plan = ({"norm": SequenceParallel(), "up": ColwiseParallel(input_layouts=Shard(1)),
                 "down": RowwiseParallel(output_layouts=Shard(1), use_local_output=False)} if sp else
                {"up": ColwiseParallel(), "down": RowwiseParallel()})
        parallelize_module(blk, mesh, plan)
    x = torch.randn(B, T, D, requires_grad=True)
    if sp:
        x = distribute_tensor(torch.randn(B, T, D), mesh, [Shard(1)]).requires_grad_()
    rec = Recorder()
    with rec:
        y = model(x)
        (y.to_local() if sp else y).sum().backward()
    block = B * T * D * 4
    # DTensor keeps the gathered input for backward: no Megatron-style re-gather
    nbytes, ops = tp_collectives(2, block, N, sp, regather=False)
    assert dict(rec.ops) == ops
    assert sent(rec) == nbytes


@pytest.mark.parametrize("micro,sync", [(1, "every"), (3, "every"), (3, "last")])
def test_fsdp2(mesh, micro, sync):
    from torch.distributed.fsdp import fully_shard
    model = nn.Sequential(Block(), Block(), Block())
    for blk in model:
        fully_shard(blk, mesh=mesh)
    fully_shard(model, mesh=mesh)
    psi = sum(p.numel() for p in model.parameters())
    rec = Recorder()
    with rec:
        for i in range(micro):
            model.set_requires_gradient_sync(sync == "every" or i == micro - 1)
            model(torch.randn(B, T, D)).sum().backward()
    # per FSDP unit (3 blocks): forward and backward all-gathers, a reduce-scatter per sync
    nbytes, ops = dp_collectives(psi, N, 3, micro, 4, 4, sync)
    assert dict(rec.ops) == {k: 3 * v for k, v in ops.items()}
    assert sent(rec) == nbytes


class GroupRecorder(TorchDispatchMode):
    """Like ``Recorder`` for a 2-D mesh: each collective's full buffer bytes and the bytes one GPU
    sends, with the group size of the mesh dimension it runs on (``sizes`` by kind)."""

    def __init__(self, sizes):
        super().__init__()
        self.sizes, self.ops, self.sent = sizes, collections.Counter(), Fraction(0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket).split(".")[-1]
        kind = {"_allgather_base_": "all_gather", "_reduce_scatter_base_": "reduce_scatter",
                "allreduce_": "all_reduce"}.get(name)
        if kind:
            n = self.sizes[kind]
            t = args[0][0] if isinstance(args[0], (list, tuple)) else args[0]
            full = t.numel() * t.element_size() * (n if kind == "reduce_scatter" else 1)  # RS: args[0] is the shard
            self.ops[kind] += 1
            self.sent += (2 if kind == "all_reduce" else 1) * Fraction(n - 1, n) * full
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("micro,sync", [(1, "every"), (3, "every"), (3, "last")])
def test_fsdp2_hsdp(mesh, micro, sync):
    """HSDP: ``fully_shard`` on a (replicate = 2, shard = 2) mesh reduce-scatters and gathers inside
    the shard group (ZeRO-3 over n = 2) and all-reduces the gradient shard across the 2 replicas
    after every reduce-scatter: ``dp_collectives`` over n plus ``replicate_collectives`` over r."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from symcost.training.comm import replicate_collectives
    mesh2 = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
    model = nn.Sequential(Block(), Block(), Block())
    for blk in model:
        fully_shard(blk, mesh=mesh2)
    fully_shard(model, mesh=mesh2)
    psi = sum(p.numel() for p in model.parameters())
    rec = GroupRecorder({"all_gather": 2, "reduce_scatter": 2, "all_reduce": 2})
    with rec:
        for i in range(micro):
            model.set_requires_gradient_sync(sync == "every" or i == micro - 1)
            model(torch.randn(B, T, D)).sum().backward()
    shard_bytes, shard_ops = dp_collectives(psi, 2, 3, micro, 4, 4, sync)
    rep_bytes, rep_ops = replicate_collectives(Fraction(psi, 2), 2, 3, micro, 4, sync)
    assert dict(rec.ops) == {k: 3 * v for k, v in {**shard_ops, **rep_ops}.items()}
    assert rec.sent == shard_bytes + rep_bytes
