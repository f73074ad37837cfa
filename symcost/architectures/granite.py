"""Granite 3.x dense (``granite``) and MoE (``granitemoe``, ``granitemoeshared``).

Llama wiring (transformers ``GraniteDecoderLayer``): input/post_attention RMSNorm, GQA with
``attention_bias`` on q/k/v/o, SwiGLU with ``mlp_bias``; plus Granite's scalar multipliers
(``components.multipliers``: ``embedding_multiplier``, ``residual_multiplier`` on both sublayers,
``logits_scaling``; ``attention_multiplier`` replaces the 1/√D_h scale): 0 parameters, 0 matmul
FLOPs. GraniteMoE (``GraniteMoeDecoderLayer``): the MLP is ``GraniteMoeMoE``, a router d·E without
bias and E SwiGLU experts of ``intermediate_size`` (d_ff), k per token; no mlp_bias.
GraniteMoeShared adds, beside the experts, a shared SwiGLU MLP of ``shared_intermediate_size``
(d_sh; none when 0), run on every token.
"""
from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from pydantic import model_validator

from ..components.moe import WEIGHTS_CAST, MoE
from ..components.multipliers import Multipliers
from ..core.notation import sym
from ..model.assembly import Model
from . import register
from .base import LayerCount, NonNegInt, PosInt, values
from .llama import LlamaAdapter

EMBEDDING, RESIDUAL, LOGITS = (Multipliers(k) for k in ("embedding", "granite_residual", "granite_logits"))


@register("granite")
class GraniteAdapter(LlamaAdapter):
    reference: ClassVar[str] = "GraniteForCausalLM"

    vocab_size: PosInt = 32_000
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 11_008
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def to_model(self) -> Model:
        m = super().to_model()
        m.pre = m.pre + (EMBEDDING,)
        m.groups = tuple(replace(g, components=g.components + (RESIDUAL,)) for g in m.groups)
        m.post = m.post + (LOGITS,)
        return m


@register("granitemoe")
class GraniteMoeAdapter(GraniteAdapter):
    reference: ClassVar[str] = "GraniteMoeForCausalLM"

    num_local_experts: PosInt = 8  # GraniteMoeConfig has no attribute_map: num_experts is not read
    num_experts_per_tok: PosInt = 2

    @model_validator(mode="after")
    def _moe_consistent(self):
        if self.num_experts_per_tok > self.num_local_experts:
            self.fail("num_experts_per_tok", f"num_experts_per_tok={self.num_experts_per_tok} exceeds "
                      f"num_local_experts={self.num_local_experts}")
        return self

    def ffn(self) -> MoE:
        # GraniteMoeTopKRouter: softmax over the top-k fp32 logits, cast back (training activations only)
        return MoE(d_moe=sym.d_ff, router="topk_softmax", saves=WEIGHTS_CAST)

    def to_model(self) -> Model:
        m = super().to_model()
        m.values.update(values(E=self.num_local_experts, k=self.num_experts_per_tok))
        return m


@register("granitemoeshared")
class GraniteMoeSharedAdapter(GraniteMoeAdapter):
    reference: ClassVar[str] = "GraniteMoeSharedForCausalLM"

    shared_intermediate_size: NonNegInt = 0

    def ffn(self) -> MoE:
        return MoE(d_moe=sym.d_ff, d_sh=sym.d_sh if self.shared_intermediate_size else None,
                   router="topk_softmax", saves=WEIGHTS_CAST)

    def to_model(self) -> Model:
        m = super().to_model()
        if self.shared_intermediate_size:
            m.values.update(values(d_sh=self.shared_intermediate_size))
        return m
