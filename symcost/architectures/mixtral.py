"""Mixtral: Mistral attention (no biases, optional sliding window on every layer) with an MoE FFN.

Each layer (transformers ``MixtralDecoderLayer``): RMSNorm → GQA attention → RMSNorm →
``MixtralSparseMoeBlock``: router d·E and E gated SwiGLU experts of width ``intermediate_size``
(written d_ff, as the seeds do), k of them run per token. No shared expert, no dense layers:
per layer 3·E·d·d_ff + E·d expert and router weights.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention
from ..components.moe import MoE
from ..notation import sym
from . import register
from .base import Int, PosInt, values
from .llama import MistralAdapter


@register("mixtral")
class MixtralAdapter(MistralAdapter):
    reference: ClassVar[str] = "MixtralForCausalLM"

    num_key_value_heads: PosInt | None = 8
    sliding_window: Int | None = None  # MixtralConfig's default (Mistral's is 4096)
    num_local_experts: PosInt = Field(validation_alias=AliasChoices("num_local_experts", "num_experts"))
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
