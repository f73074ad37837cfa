"""Cohere Command-R (``cohere``) and Command-R7B / Command-A (``cohere2``).

Each layer (transformers ``CohereDecoderLayer``): h = x + attn(LN(x)) + mlp(LN(x)) — one norm
feeding attention and SwiGLU MLP in parallel (the same weights and GEMMs as a serial block).
``CohereLayerNorm`` subtracts the mean but has a weight only (no bias): d parameters, like an
RMSNorm (its elementwise cost is counted as an RMSNorm's). Attention: GQA with ``attention_bias``
on q/k/v/o; with ``use_qk_norm`` a norm of shape [H_q, D_h] on q and [H_kv, D_h] on k (H_q·D_h and
H_kv·D_h weights). The head is tied by default; ``logit_scale`` multiplies the logits
(elementwise, not counted).
Cohere2 (``Cohere2DecoderLayer``): the same parallel layer without q/k norm, D_h = d/H_q always
(``Cohere2Config`` overwrites head_dim), and ``layer_types`` (default: three sliding-window
layers then one full, ``sliding_window`` 4096).
"""
from __future__ import annotations

from typing import ClassVar

from ..components.attention import Attention, AttentionSaves
from ..components.ffn import FFN
from . import register
from .base import LayerCount, PosInt
from .llama import LlamaAdapter

#: CohereLayerNorm q/k norms over [heads, D_h], written out in fp32 (saved tensors only)
COHERE_SAVES = AttentionSaves(qk_norm="centred_fp32")


@register("cohere")
class CohereAdapter(LlamaAdapter):
    reference: ClassVar[str] = "CohereForCausalLM"
    layer_norms: ClassVar[tuple[str, ...]] = ("input_layernorm",)
    norm_kw: ClassVar[dict] = {"kind": "centred_fp32"}  # CohereLayerNorm, written out in fp32

    vocab_size: PosInt = 256_000
    hidden_size: PosInt = 8192
    intermediate_size: PosInt = 22_528
    num_hidden_layers: LayerCount = 40
    num_attention_heads: PosInt = 64
    tie_word_embeddings: bool = True
    use_qk_norm: bool = False

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def ffn(self) -> FFN:  # parallel block: the MLP reads the tensor attention keeps
        return FFN(bias=self.mlp_bias, shared_input=True)

    def attention(self, window) -> Attention:
        return Attention(W=window, qkv_bias=self.attention_bias, o_bias=self.attention_bias,
                         qk_norm_full=self.use_qk_norm, saves=COHERE_SAVES)


@register("cohere2")
class Cohere2Adapter(CohereAdapter):
    reference: ClassVar[str] = "Cohere2ForCausalLM"

    sliding_window: PosInt | None = 4096
    sliding_window_pattern: PosInt = 4

    @property
    def D_h(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        return ["sliding_attention" if (i + 1) % self.sliding_window_pattern else "full_attention"
                for i in range(self.num_hidden_layers)]

    def attention(self, window) -> Attention:
        return Attention(W=window, qkv_bias=self.attention_bias, o_bias=self.attention_bias)
