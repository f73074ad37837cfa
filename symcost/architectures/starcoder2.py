"""StarCoder2 (``starcoder2``): Mistral-style GQA with biases, LayerNorms and a plain GELU MLP.

Each layer (transformers ``Starcoder2DecoderLayer``): input_layernorm and post_attention_layernorm
(LayerNorms, 2·d each); q/k/v/o projections with a bias when ``use_bias`` (default true); MLP
``c_fc`` d→d_ff and ``c_proj`` d_ff→d (gelu_pytorch_tanh), biased when ``use_bias``. With
``sliding_window`` set every layer uses the window. Final LayerNorm; the head is tied by default.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import model_validator

from ..components.attention import Attention
from ..components.ffn import FFN
from ..core.elementwise import ACT_ALIASES
from . import register
from .base import LayerCount, PosInt
from .llama import MistralAdapter


@register("starcoder2")
class Starcoder2Adapter(MistralAdapter):
    reference: ClassVar[str] = "Starcoder2ForCausalLM"
    norm_bias: ClassVar[bool] = True

    vocab_size: PosInt = 49_152
    hidden_size: PosInt = 3072
    intermediate_size: PosInt = 12_288
    num_hidden_layers: LayerCount = 30
    num_attention_heads: PosInt = 24
    num_key_value_heads: PosInt | None = 2
    tie_word_embeddings: bool = True
    use_bias: bool = True
    hidden_act: str = "gelu_pytorch_tanh"  # one fused tanh-GELU op (its backward keeps its input only)

    @model_validator(mode="after")
    def _act_known(self):
        if self.hidden_act not in ACT_ALIASES:
            self.fail("hidden_act", f"unknown activation {self.hidden_act!r}")
        return self

    def attention(self, window) -> Attention:
        return Attention(W=window, qkv_bias=self.use_bias, o_bias=self.use_bias)

    def ffn(self) -> FFN:
        return FFN(gated=False, bias=self.use_bias, act=self.hidden_act)
