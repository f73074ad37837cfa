"""Apertus (``apertus``): Llama wiring with per-head q/k norm and an ungated xIELU MLP.

Each layer (transformers ``ApertusDecoderLayer``): attention_layernorm → GQA (``attention_bias``
on q/k/v/o; per-head RMSNorm on q and k, D_h each) → feedforward_layernorm → MLP ``up_proj``
d→d_ff, activation, ``down_proj`` d_ff→d, no biases. With ``hidden_act`` "xielu" (the default)
the activation is an ``XIELUActivation`` per layer: two learned scalars (alpha_p, alpha_n) and two
scalar buffers (beta, eps).
"""
from __future__ import annotations

from typing import ClassVar

from ..components.attention import Attention
from ..components.ffn import FFN
from . import register
from .base import LayerCount, PosInt
from .llama import LlamaAdapter


@register("apertus")
class ApertusAdapter(LlamaAdapter):
    reference: ClassVar[str] = "ApertusForCausalLM"
    layer_norms: ClassVar[tuple[str, ...]] = ("attention_layernorm", "feedforward_layernorm")

    vocab_size: PosInt = 131_072
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 14_336
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32
    hidden_act: str = "xielu"

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def attention(self, window) -> Attention:
        return Attention(qkv_bias=self.attention_bias, o_bias=self.attention_bias, qk_norm=True)

    def ffn(self) -> FFN:
        xielu = self.hidden_act == "xielu"
        return FFN(gated=False, act=self.hidden_act, act_params=xielu)
