"""ERNIE 4.5 dense (``ernie4_5``) and MoE (``ernie4_5_moe``).

Dense layer (transformers ``Ernie4_5DecoderLayer``): Llama wiring, ``use_bias`` on q/k/v/o and on
the SwiGLU projections, head_dim 128 by default, the head tied by default (no bias).
MoE (``Ernie4_5_MoeDecoderLayer``): layer i is MoE when (i + 1) % ``moe_layer_interval`` = 0 and
``moe_layer_start_index`` ≤ i ≤ ``moe_layer_end_index`` (−1: the last layer), else a dense SwiGLU
of ``intermediate_size``. The MoE block: router d·E (no bias), ``moe_statics`` — an
``e_score_correction_bias`` of E held as a frozen *parameter* (counted in the parameters) —, E
SwiGLU experts of ``moe_intermediate_size`` (no bias), k = ``moe_k`` per token, and, when
``moe_num_shared_experts`` > 0, one shared SwiGLU of ``moe_num_shared_experts``·d_moe (d_sh)
with ``use_bias``. D_h defaults to d/H_q; the LM head has a bias when ``use_bias`` (kept when tied).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention, AttentionSaves, RopeTable
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.moe import MoE, MoESaves
from ..components.norm import Norms
from ..core.conventions import Phase
from ..core.notation import sym
from ..core.primitives import Param
from ..model.assembly import Model, kind_order
from . import register
from .base import LayerCount, NonNegInt, PosInt, values
from .llama import LAYER_NORMS, LlamaAdapter
from .qwen_moe import group_layers

#: Ernie4_5's rotary embedding: fp32 cos/sin interleaved again in every layer (saved tensors only)
ERNIE_SAVES = AttentionSaves(rope=RopeTable(fp32=True, per_layer=True))
#: Ernie4_5_MoeTopKRouter: an fp32 router (F.linear of fp32 copies), a clamped renormalisation,
#: weights cast back to the compute dtype; without shared experts the block input is only read
#: through its fp32 copy (saved tensors only)
ERNIE_MOE_SAVES = MoESaves(router_upcast=True, norm_clamp=True, weights_fp32=False)


@dataclass(frozen=True)
class ErnieMoE(MoE):
    """``Ernie4_5_MoeSparseMoeBlock``: the correction bias is a frozen parameter, ``moe_statics``
    [E] (E parameters, not a buffer), added to the scores before top-k."""

    def primitives(self, ph: Phase | None = None):
        prims = super().primitives(ph)
        prims.insert(1, Param("e_score_correction_bias", self.E, doc="[E] parameter (not trained), "
                              "added to the scores before top-k"))
        return prims


@register("ernie4_5")
class Ernie45Adapter(LlamaAdapter):
    reference: ClassVar[str] = "Ernie4_5ForCausalLM"

    vocab_size: PosInt = 103_424
    hidden_size: PosInt = 1024
    intermediate_size: PosInt = 3072
    num_hidden_layers: LayerCount = 18
    num_attention_heads: PosInt = 16
    num_key_value_heads: PosInt | None = 2
    head_dim: PosInt | None = 128
    tie_word_embeddings: bool = True
    use_bias: bool = False

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def attention(self, window) -> Attention:
        # Ernie4_5's RoPE: fp32 cos/sin interleaved inside every layer (training activations only)
        return Attention(qkv_bias=self.use_bias, o_bias=self.use_bias, saves=ERNIE_SAVES)

    def ffn(self) -> FFN:
        return FFN(bias=self.use_bias)


@register("ernie4_5_moe")
class Ernie45MoeAdapter(Ernie45Adapter):
    reference: ClassVar[str] = "Ernie4_5_MoeForCausalLM"

    hidden_size: PosInt = 2560
    intermediate_size: PosInt = 12_288
    num_hidden_layers: LayerCount = 28
    num_attention_heads: PosInt = 20
    num_key_value_heads: PosInt | None = 4
    head_dim: PosInt | None = None
    moe_intermediate_size: PosInt = 1536
    moe_k: PosInt = Field(6, validation_alias=AliasChoices("num_experts_per_tok", "moe_k"))
    moe_num_experts: PosInt = Field(64, validation_alias=AliasChoices("num_experts", "moe_num_experts"))
    moe_num_shared_experts: NonNegInt = 2
    moe_layer_start_index: int = 1
    moe_layer_end_index: int = -1
    moe_layer_interval: PosInt = 1

    @model_validator(mode="after")
    def _moe_consistent(self):
        if self.moe_k > self.moe_num_experts:
            self.fail("moe_k", f"moe_k={self.moe_k} exceeds moe_num_experts={self.moe_num_experts}")
        return self

    def ffn_kind(self, i: int) -> str:
        end = self.num_hidden_layers - 1 if self.moe_layer_end_index == -1 else self.moe_layer_end_index
        moe = (i + 1) % self.moe_layer_interval == 0 and self.moe_layer_start_index <= i <= end
        return "moe" if moe else "dense"

    def layer(self, mixer: str, ffn: str):
        mlp = FFN(bias=self.use_bias) if ffn == "dense" else ErnieMoE(
            d_sh=sym.d_sh if self.moe_num_shared_experts else None, proj_bias=self.use_bias,
            saves=dataclasses.replace(ERNIE_MOE_SAVES, input_copied=not self.moe_num_shared_experts))
        return (Norms(LAYER_NORMS), self.attention(None), mlp)

    def to_model(self) -> Model:
        kinds = [("full", self.ffn_kind(i)) for i in range(self.num_hidden_layers)]
        groups, vals = group_layers(kinds, self.layer)
        vals.update(values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                           H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h))
        if any(f == "dense" for _, f in kinds):
            vals.update(values(d_ff=self.intermediate_size))
        if any(f == "moe" for _, f in kinds):
            vals.update(values(E=self.moe_num_experts, k=self.moe_k, d_moe=self.moe_intermediate_size))
            if self.moe_num_shared_experts:
                vals.update(values(d_sh=self.moe_num_shared_experts * self.moe_intermediate_size))
        return Model(self.name, self.model_type, (Embedding(),), groups,
                     (Norms(("norm",)), LMHead(tied=self.tie_word_embeddings, bias=self.use_bias)), vals,
                     layer_order=kind_order(kinds, groups))
