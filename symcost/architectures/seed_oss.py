"""Seed-OSS (``seed_oss``): Llama wiring with separate q/k/v and o biases.

Each layer (transformers ``SeedOssDecoderLayer``): input/post_attention RMSNorm; GQA with a bias
on q/k/v when ``attention_bias`` (default true) and on o when ``attention_out_bias`` (default
false); head_dim 128 by default; SwiGLU with ``mlp_bias``. Untied head.
"""
from __future__ import annotations

from typing import ClassVar

from ..components.attention import Attention
from . import register
from .base import LayerCount, PosInt
from .llama import LlamaAdapter


@register("seed_oss")
class SeedOssAdapter(LlamaAdapter):
    reference: ClassVar[str] = "SeedOssForCausalLM"

    vocab_size: PosInt = 155_136
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 27_648
    num_hidden_layers: LayerCount = 64
    num_attention_heads: PosInt = 80
    num_key_value_heads: PosInt | None = 8
    head_dim: PosInt | None = 128
    attention_bias: bool = True
    attention_out_bias: bool = False

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def attention(self, window) -> Attention:
        return Attention(qkv_bias=self.attention_bias, o_bias=self.attention_out_bias)
