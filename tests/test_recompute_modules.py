"""Megatron's output-discarding recompute modules (``--recompute-modules layernorm``, ``moe_act``,
``mla_up_proj``),
measured on the transformers classes with Megatron's mechanism re-enacted.

Megatron-LM's ``tensor_parallel.CheckpointWithoutOutput`` (``megatron/core/tensor_parallel/random.py``)
runs a function under ``no_grad``, saves its inputs for the recomputation, and once the consumer of
its output has saved that output for its own backward, frees the output's storage
(``discard_output_and_register_recompute``: ``untyped_storage().resize_(0)``) and recomputes it in
backward. ``transformer_layer.py`` applies it to ``input_layernorm`` and ``pre_mlp_layernorm``
("layernorm"), ``moe/experts.py`` to the grouped experts' activation ("moe_act"),
``multi_latent_attention.py`` to MLA's up projections and RoPE ("mla_up_proj"). The test does the
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


class _WithoutOutputs(torch.autograd.Function):
    """The same with several tensor inputs and outputs (MLA's qkv_up_proj_and_rope_apply)."""

    @staticmethod
    def forward(ctx, fn, *xs):
        with torch.no_grad():
            ys = fn(*xs)
        ctx.save_for_backward(*xs)
        return ys

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError


def _mla_up_proj(model):
    """Each MLA layer's up projections and RoPE output-discarding (Megatron's ``mla_up_proj``): the
    latents, the rotary key slice and the rotary table saved; q, k, v freed once the core has saved
    them. transformers' ``DeepseekV3Attention.forward`` rewritten around that part."""
    import sys
    for layer in model.model.layers:
        attn = layer.self_attn
        mod = sys.modules[type(attn).__module__]

        def forward(self, hidden_states, position_embeddings, attention_mask, cache=None, mod=mod, **kwargs):
            B, T = hidden_states.shape[:-1]
            if self.q_lora_rank is None:
                q_lat, q_up = hidden_states, self.q_proj
            else:
                q_lat, q_up = self.q_a_layernorm(self.q_a_proj(hidden_states)), self.q_b_proj
            kv_nope, k_rot = torch.split(self.kv_a_proj_with_mqa(hidden_states),
                                         [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
            kv_nope = self.kv_a_layernorm(kv_nope)
            rope = mod.apply_rotary_pos_emb_interleave if self.config.rope_interleave else mod.apply_rotary_pos_emb

            def up(q_lat, kv_nope, k_rot, cos, sin):
                q = q_up(q_lat).view(B, T, -1, self.qk_head_dim).transpose(1, 2)
                q_pass, q_rot = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
                q_rot, k_r = rope(q_rot, k_rot.view(B, 1, T, self.qk_rope_head_dim), cos, sin)
                key, value = self.expand_kv(kv_nope.view(B, 1, T, self.kv_lora_rank), k_r)
                return torch.cat((q_pass, q_rot), dim=-1), key, value
            q, k, v = _WithoutOutputs.apply(up, q_lat, kv_nope, k_rot, *position_embeddings)
            out, weights = mod.eager_attention_forward(self, q, k, v, attention_mask, dropout=0.0,
                                                       scaling=self.scaling, **kwargs)
            for t in (q, k, v):
                t.untyped_storage().resize_(0)
            return self.o_proj(out.reshape(B, T, -1).contiguous()), weights
        attn.forward = types.MethodType(forward, attn)


CASES = [("llama", "llama", "layernorm", "eager", "fp32"), ("llama", "llama", "layernorm", "eager", "bf16"),
         ("qwen_moe", "qwen3_moe", "layernorm", "eager", "fp32"), ("deepseek", "deepseek_v3", "layernorm", "eager", "fp32"),
         ("qwen_moe", "qwen3_moe", "moe_act", "eager", "fp32"), ("qwen_moe", "qwen3_moe", "moe_act", "eager", "bf16"),
         ("deepseek", "deepseek_v3", "mla_up_proj", "eager", "fp32"), ("deepseek", "deepseek_v3", "mla_up_proj", "eager", "bf16")]


@pytest.mark.parametrize("module,model_type,which,kernel,dtype", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_output_discarding_modules_equal_measured(module, model_type, which, kernel, dtype, seed):
    raw = tiny(module, model_type, seed)
    model = saved.build(raw, kernel, "none", dtype)
    {"layernorm": _layernorm, "moe_act": _moe_act, "mla_up_proj": _mla_up_proj}[which](model)
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
