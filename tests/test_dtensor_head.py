"""The LM head under DTensor tensor parallelism saves its all-gathered input (``activations``'
``gathered_head``, torchtitan's ``Framework.dtensor_tp``): torchtitan's TP plan (``parallelize_llama.py``
apply_tp: ``"norm": SequenceParallel()``, ``"output": ColwiseParallel(input_layouts=Shard(1),
output_layouts=Shard(-1), use_local_output=False)`` under loss parallel) applied to a final norm and a
head over 4 fake ranks; the tensors autograd saves are read with ``saved_tensors_hooks``.
"""
from __future__ import annotations

import sympy

import pytest

from symcost.core.notation import sym

torch = pytest.importorskip("torch")

B, T_LOCAL, D, V, N = 2, 8, 48, 512, 4  # T_LOCAL: each rank's sequence shard (Shard(1)) of T = 32


def _saved_bf16():
    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, SequenceParallel, parallelize_module
    from torch.testing._internal.distributed.fake_pg import FakeStore

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm, self.output = nn.RMSNorm(D), nn.Linear(D, V, bias=False)

        def forward(self, x):
            return self.output(self.norm(x))

    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=N)
    try:
        mesh = init_device_mesh("cpu", (N,))
        m = Head().to(torch.bfloat16)
        parallelize_module(m, mesh, {"norm": SequenceParallel(),
                                     "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1),
                                                               use_local_output=False)})
        x = DTensor.from_local(torch.randn(B, T_LOCAL, D, dtype=torch.bfloat16, requires_grad=True), mesh, [Shard(1)])
        saved = []

        def pack(t):
            local = t._local_tensor if isinstance(t, DTensor) else t
            if local.dtype == torch.bfloat16 and local.dim() == 2:
                saved.append(tuple(local.shape))
            return t
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            m(x)
    finally:
        dist.destroy_process_group()
    return saved


def test_head_saves_the_gathered_input():
    from symcost.architectures import loader
    from symcost.core.conventions import Backward
    from symcost.training.activations import activations
    saved = _saved_bf16()
    rows = B * T_LOCAL * N  # the whole sequence: Shard(1) redistributed to Replicate before the matmul
    assert (rows, D) in saved and (D, V // N) in saved  # the input and the (transposed) weight shard
    assert (B * T_LOCAL, D) not in saved  # not the sequence shard (Megatron's SP saves that one)
    m = loader.build("llama-3.1-8b")
    vals = {**m.values, sym.B: B, sym.T: B * T_LOCAL * N // B, sym.b_a: 2, sym.d: D, sym.N_tp: N, sym.N_cp: 1}
    for gathered, want in ((True, rows * D * 2), (False, rows * D * 2 // N)):
        tree = activations(m, Backward(), sp=True, gathered_head=gathered)
        assert int(sympy.sympify(tree["lm_head"]["input"]).xreplace(vals)) == want
