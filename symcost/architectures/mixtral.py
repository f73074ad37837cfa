"""Mixtral (and Phi-3.5-MoE, ``phimoe``): Mistral attention (no biases, optional sliding window on every layer) with an MoE FFN.

Each layer (transformers ``MixtralDecoderLayer``): RMSNorm → GQA attention → RMSNorm →
``MixtralSparseMoeBlock``: router d·E and E gated SwiGLU experts of width ``intermediate_size``
(written d_ff, as the seeds do), k of them run per token. No shared expert, no dense layers:
per layer 3·E·d·d_ff + E·d expert and router weights.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention
from ..components.embedding import LMHead
from ..components.moe import MoE, MoESaves
from ..core.notation import sym
from . import register
from .base import Int, LayerCount, PosInt, values
from .llama import MistralAdapter


@register("mixtral")
class MixtralAdapter(MistralAdapter):
    reference: ClassVar[str] = "MixtralForCausalLM"

    num_key_value_heads: PosInt | None = 8
    sliding_window: Int | None = None  # MixtralConfig's default (Mistral's is 4096)
    num_local_experts: PosInt = Field(validation_alias=AliasChoices("num_experts", "num_local_experts"))
    num_experts_per_tok: PosInt

    @model_validator(mode="after")
    def _router(self):
        self.check_top_k("num_local_experts")
        return self

    def attention(self, window) -> Attention:
        return Attention(W=window)

    def ffn(self) -> MoE:
        return MoE(d_moe=sym.d_ff)

    def to_model(self):
        model = super().to_model()
        model.values.update(values(E=self.num_local_experts, k=self.num_experts_per_tok))
        return model


@register("phimoe")
class PhimoeAdapter(MixtralAdapter):
    """Phi-3.5-MoE (transformers ``PhimoeDecoderLayer``): Mixtral wiring with LayerNorms (weight and
    bias) before attention and MoE and at the end, ``attention_bias`` on q/k/v/o, a router d·E
    without bias, E = 16 SwiGLU experts of d_ff by default, and a head bias when ``lm_head_bias``;
    ``sliding_window`` (if set) applies to every layer. Routing is ``sparsemixer``, which picks
    exactly two experts per token whatever ``num_experts_per_tok`` says: k = 2."""

    reference: ClassVar[str] = "PhimoeForCausalLM"
    norm_bias: ClassVar[bool] = True

    vocab_size: PosInt = 32_064
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 6400
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32
    num_local_experts: PosInt = 16  # PhimoeConfig has no attribute_map: num_experts is not read
    num_experts_per_tok: PosInt = 2
    lm_head_bias: bool = False
    input_jitter_noise: float = 0.0  # training activations only (the noise tensors the products keep)

    def attention(self, window) -> Attention:
        return Attention(W=window, qkv_bias=self.attention_bias, o_bias=self.attention_bias)

    def ffn(self) -> MoE:
        # sparsemixer's saved tensors; its multipliers stay in the compute dtype (training activations only)
        return MoE(d_moe=sym.d_ff, router="sparsemixer", norm_topk=False,
                   saves=MoESaves(weights_fp32=False, input_jitter=2 if self.input_jitter_noise > 0 else 0))

    def head(self) -> LMHead:
        return LMHead(tied=self.tie_word_embeddings, bias=self.lm_head_bias)

    @model_validator(mode="after")
    def _phimoe_consistent(self):
        if self.num_local_experts < 2:
            self.fail("num_local_experts", f"num_local_experts={self.num_local_experts}: sparsemixer "
                      "routes every token to two experts")
        return self

    def to_model(self):
        model = super().to_model()
        model.values.update(values(k=2))
        if self.num_experts_per_tok != 2:
            model.notes.append(f"num_experts_per_tok={self.num_experts_per_tok} is not read: "
                               "sparsemixer routes every token to two experts (k = 2)")
        return model
