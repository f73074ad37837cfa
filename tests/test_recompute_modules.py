"""Megatron's output-discarding recompute modules (``--recompute-modules layernorm``, ``moe_act``),
measured on the transformers classes with Megatron's mechanism re-enacted.

Megatron-LM's ``tensor_parallel.CheckpointWithoutOutput`` (``megatron/core/tensor_parallel/random.py``)
runs a function under ``no_grad``, saves its inputs for the recomputation, and once the consumer of
its output has saved that output for its own backward, frees the output's storage
(``discard_output_and_register_recompute``: ``untyped_storage().resize_(0)``) and recomputes it in
backward. ``transformer_layer.py`` applies it to ``input_layernorm`` and ``pre_mlp_layernorm``
("layernorm"), ``moe/experts.py`` to the grouped experts' activation ("moe_act"). The test does the
same to transformers' decoder layers: each pre-norm (or each expert's SwiGLU) runs inside an
autograd Function that saves its input and returns an output without a graph, whose storage is
resized to 0 after the layer's forward — the consumers' saved references then hold nothing — and
counts what autograd keeps (``tests/saved.py``), against the engine's ``module_records``.
"""
from __future__ import annotations

import types

import pytest

from symcost.core.conventions import Backward
from symcost.core.notation import sym
from symcost.training.activations import activations

torch = pytest.importorskip("torch")
saved = pytest.importorskip("tests.saved")
from tests.test_activations import BYTES, built, engine_kernel, measure, tiny  # noqa: E402


class _WithoutOutput(torch.autograd.Function):
    """CheckpointWithoutOutputFunction's forward: the function under no_grad, its input saved."""

    @staticmethod
    def forward(ctx, fn, x):
        with torch.no_grad():
            y = fn(x)
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, grad):  # recomputation, not exercised by a saved-bytes count
        raise NotImplementedError


def _discard_after(layer, outputs: list):
    def hook(module, args, out):
        for y in outputs:
            y.untyped_storage().resize_(0)  # discard_output_and_register_recompute
        outputs.clear()
    layer.register_forward_hook(hook)


def _layernorm(model):
    """input_layernorm and post_attention_layernorm of every decoder layer, output-discarding."""
    for layer in model.model.layers:
        outs: list = []
        for name in ("input_layernorm", "post_attention_layernorm"):
            norm = getattr(layer, name)

            def forward(x, norm=norm, outs=outs):
                y = _WithoutOutput.apply(norm, x)
                outs.append(y)
                return y
            wrapper = torch.nn.Module()
            wrapper.forward = forward
            setattr(layer, name, wrapper)
        _discard_after(layer, outs)


def _moe_act(model):
    """Each routed expert's activation act(gate)·up output-discarding: fc1's output saved, the
    activation's output (fc2's input) freed after fc2 has saved it. The expert loop is transformers'
    eager one (``Qwen3MoeExperts.forward``), rewritten here around that activation."""
    for layer in model.model.layers:
        experts = getattr(layer.mlp, "experts", None)
        if experts is None:
            continue
        outs: list = []

        def forward(self, hidden_states, top_k_index, top_k_weights, outs=outs):
            final = torch.zeros_like(hidden_states)
            with torch.no_grad():
                mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts + 1).permute(2, 1, 0)
                hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
            for e in hit:
                e = e[0]
                if e == self.num_experts:
                    continue
                pos, tok = torch.where(mask[e])
                fc1 = torch.nn.functional.linear(hidden_states[tok], self.gate_up_proj[e])

                def glu(t):
                    gate, up = t.chunk(2, dim=-1)
                    return self.act_fn(gate) * up
                h = _WithoutOutput.apply(glu, fc1)
                outs.append(h)
                out = torch.nn.functional.linear(h, self.down_proj[e]) * top_k_weights[tok, pos, None]
                final.index_add_(0, tok, out.to(final.dtype))
            return final
        experts.forward = types.MethodType(forward, experts)
        _discard_after(layer, outs)


CASES = [("llama", "llama", "layernorm", "eager", "fp32"), ("llama", "llama", "layernorm", "eager", "bf16"),
         ("qwen_moe", "qwen3_moe", "layernorm", "eager", "fp32"), ("deepseek", "deepseek_v3", "layernorm", "eager", "fp32"),
         ("qwen_moe", "qwen3_moe", "moe_act", "eager", "fp32"), ("qwen_moe", "qwen3_moe", "moe_act", "eager", "bf16")]


@pytest.mark.parametrize("module,model_type,which,kernel,dtype", CASES)
def test_output_discarding_modules_equal_measured(module, model_type, which, kernel, dtype):
    raw = tiny(module, model_type, 0)
    model = saved.build(raw, kernel, "none", dtype)
    {"layernorm": _layernorm, "moe_act": _moe_act}[which](model)
    m = built(raw)
    tree = activations(m, Backward(kernel=engine_kernel(m, kernel), recompute="selective", act_dtype=dtype,
                                   scan="reference"), modules=(which,))
    plain = activations(m, Backward(kernel=engine_kernel(m, kernel), recompute="none", act_dtype=dtype,
                                    scan="reference"))
    for B, T in ((1, 5), (2, 7)):
        v = m.values_with(T=T, B=B)
        v.update({sym.b_a: BYTES[dtype], sym.N_tp: 1, sym.N_cp: 1})
        got = tree.total.xreplace(v)
        assert got == measure(model, model_type, B, T), (which, B, T)
        assert got < plain.total.xreplace(v)
