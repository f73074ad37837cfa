"""Phi-1/Phi-2 (``phi``): one LayerNorm per layer feeding attention and MLP in parallel.

Each layer (transformers ``PhiDecoderLayer``): h = x + attn(LN(x)) + mlp(LN(x)), one LayerNorm
(weight and bias, 2·d). Attention: q/k/v and ``dense`` (o) projections all with biases, MHA by
default (``num_key_value_heads`` defaults to H_q), D_h = d/H_q, rotary on a part
(``partial_rotary_factor``, 0.5 by default) of each head: 0 parameters, 0 matmul FLOPs. With
``qk_layernorm`` a per-head LayerNorm on q and on k (2·(d/H_q) each). MLP: fc1 d→d_ff and fc2
d_ff→d with biases (gelu_new). Final LayerNorm; the LM head has a bias V (not tied by default).
The parallel block is only a wiring difference: the same weights and the same GEMMs as a serial
block with one shared input norm, so it changes no count.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import model_validator

from ..components.attention import Attention, AttentionSaves
from ..components.embedding import LMHead
from ..components.ffn import FFN
from . import register
from .base import LayerCount, PartialRotary, PosInt
from .llama import LlamaAdapter


@register("phi")
class PhiAdapter(PartialRotary, LlamaAdapter):
    reference: ClassVar[str] = "PhiForCausalLM"
    layer_norms: ClassVar[tuple[str, ...]] = ("input_layernorm",)
    final_norm: ClassVar[str] = "final_layernorm"
    norm_bias: ClassVar[bool] = True

    vocab_size: PosInt = 51_200
    hidden_size: PosInt = 2048
    intermediate_size: PosInt = 8192
    num_hidden_layers: LayerCount = 24
    num_attention_heads: PosInt = 32
    qk_layernorm: bool = False
    rotary_default: ClassVar[float] = 0.5

    @model_validator(mode="after")
    def _phi_consistent(self):
        if self.qk_layernorm and self.D_h != self.hidden_size // self.num_attention_heads:
            self.fail("head_dim", f"head_dim={self.D_h} with qk_layernorm: PhiAttention normalises "
                      f"hidden_size // num_attention_heads = {self.hidden_size // self.num_attention_heads}")
        return self

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def attention(self, window) -> Attention:
        return Attention(qkv_bias=True, o_bias=True, qk_norm=self.qk_layernorm, qk_norm_bias=True,
                         saves=AttentionSaves().with_rope(D_rot=self.D_rot(self.D_h)))

    def ffn(self) -> FFN:  # parallel block: the MLP reads the tensor attention keeps
        return FFN(gated=False, bias=True, act="gelu_tanh", shared_input=True)  # gelu_new

    def head(self) -> LMHead:
        return LMHead(tied=self.tie_word_embeddings, bias=True)
