"""Hunyuan dense (``hunyuan_v1_dense``) and MoE (``hunyuan_v1_moe``).

Each layer (transformers ``HunYuanDenseV1DecoderLayer``): Llama wiring, GQA with
``attention_bias`` on q/k/v/o and a per-head RMSNorm on q and k (``query_layernorm``,
``key_layernorm``, D_h each), SwiGLU of ``intermediate_size``. ``head_dim`` is required (the
config class defaults it to None, which the attention cannot use).
MoE (``HunYuanMoEV1Moe``): router ``wg`` d·E (no bias), E SwiGLU experts of ``intermediate_size``
and one shared SwiGLU MLP of the same width on every token (d_moe = d_sh = d_ff); k = ``moe_topk``,
an int or one per layer (layers with different k become separate groups).
"""
from __future__ import annotations

from typing import ClassVar

import sympy
from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding
from ..components.moe import WEIGHTS_CAST, MoE
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, kind_order
from . import register
from .base import LayerCount, PosInt, values
from .llama import LAYER_NORMS, LlamaAdapter


@register("hunyuan_v1_dense")
class HunYuanDenseAdapter(LlamaAdapter):
    reference: ClassVar[str] = "HunYuanDenseV1ForCausalLM"
    qk_norm: ClassVar[bool] = True

    vocab_size: PosInt = 290_943
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 11_008
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32

    @model_validator(mode="after")
    def _head_dim_given(self):
        if self.head_dim is None:  # the config class stores None and the attention reads it as is
            self.fail("head_dim", "required: HunYuan's attention reads config.head_dim (None by default)")
        return self

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers


@register("hunyuan_v1_moe")
class HunYuanMoeAdapter(HunYuanDenseAdapter):
    reference: ClassVar[str] = "HunYuanMoEV1ForCausalLM"

    num_experts: PosInt = Field(1, validation_alias=AliasChoices("num_local_experts", "num_experts"))
    moe_topk: PosInt | list[PosInt] = Field(1, validation_alias=AliasChoices("num_experts_per_tok", "moe_topk"))

    @model_validator(mode="after")
    def _moe_consistent(self):
        ks = self.topks()
        if isinstance(self.moe_topk, list) and len(self.moe_topk) < self.num_hidden_layers:
            self.fail("moe_topk", f"has {len(self.moe_topk)} entries for num_hidden_layers={self.num_hidden_layers}")
        if max(ks) > self.num_experts:
            self.fail("moe_topk", f"moe_topk={max(ks)} exceeds num_experts={self.num_experts}")
        return self

    def topks(self) -> list[int]:
        if isinstance(self.moe_topk, int):
            return [self.moe_topk] * self.num_hidden_layers
        return list(self.moe_topk[:self.num_hidden_layers])

    def to_model(self) -> Model:
        ks = self.topks()
        distinct = list(dict.fromkeys(ks))
        attn = Attention(qkv_bias=self.attention_bias, o_bias=self.attention_bias, qk_norm=True)
        # HunYuanMoEV1Gate casts its renormalised fp32 weights back to the router logits' dtype (the
        # compute dtype: wg is cast with the model), so the experts read them in b_a (saved tensors only)
        if len(distinct) == 1:
            groups = (LayerGroup("layers", sym.L, (Norms(LAYER_NORMS), attn,
                                                   MoE(d_moe=sym.d_ff, d_sh=sym.d_ff, saves=WEIGHTS_CAST))),)
        else:  # per-layer top-k: one group per k, its k an integer
            groups = tuple(LayerGroup(f"k{k}_layers", sympy.Integer(ks.count(k)),
                                      (Norms(LAYER_NORMS), attn,
                                       MoE(d_moe=sym.d_ff, d_sh=sym.d_ff, k=sympy.Integer(k), saves=WEIGHTS_CAST)))
                           for k in distinct)
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                      H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h,
                      d_ff=self.intermediate_size, E=self.num_experts)
        if len(distinct) == 1:
            vals.update(values(k=distinct[0]))
        return Model(self.name, self.model_type, (Embedding(),), groups,
                     (Norms(("norm",)), self.head()), vals, layer_order=kind_order(ks, groups))
