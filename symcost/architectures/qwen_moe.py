"""Qwen MoE decoders: qwen2_moe (shared expert + sigmoid gate, qkv bias) and qwen3_moe (q/k norm).

Each layer: RMSNorm → GQA attention → RMSNorm → FFN (transformers ``Qwen2MoeDecoderLayer``,
``Qwen3MoeDecoderLayer``). Layer ``i`` is MoE when ``i ∉ mlp_only_layers``, ``num_experts > 0``
and ``(i + 1) % decoder_sparse_step == 0``; otherwise a dense SwiGLU of ``intermediate_size``.
Qwen2-MoE: E routed experts of ``moe_intermediate_size`` plus one shared expert of
``shared_expert_intermediate_size`` scaled by sigmoid(x·w), w: [d, 1]; q/k/v bias (``qkv_bias``);
with ``use_sliding_window`` the even layers below ``max_window_layers`` use the window.
Qwen3-MoE: no shared expert, per-head q/k RMSNorm, ``attention_bias`` on q/k/v/o, head_dim
default d/H_q; with ``use_sliding_window`` every layer uses the window.
"""
from __future__ import annotations

from collections import Counter
from typing import ClassVar

import sympy
from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.moe import WEIGHTS_CAST, MoE
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, kind_order
from . import register
from .base import Int, NonNegInt, PosInt, values
from .llama import LAYER_NORMS, LlamaAdapter

#: count symbol of a layer kind, used when only one axis (mixer or FFN) varies
KIND_COUNT = {"full": sym.L_full, "swa": sym.L_swa, "lin": sym.L_lin,
              "dense": sym.L_dense, "moe": sym.L_moe}


def group_layers(kinds: list[tuple[str, str]], build) -> tuple[tuple[LayerGroup, ...], dict]:
    """Per-layer ``(mixer kind, ffn kind)`` → a few ``LayerGroup``s and their count values.

    One kind of layer: count ``L``. Layers differing in one axis only: that axis' count symbols
    (``L_lin``/``L_full``, ``L_dense``/``L_moe``). Differing in both: integer counts per pair.
    ``build(mixer, ffn)`` returns the components of one layer.
    """
    counts = Counter(kinds)  # ordered by first occurrence
    varying = [a for a in (0, 1) if len({k[a] for k in counts}) > 1]
    groups, vals = [], {}
    for kind, n in counts.items():
        if not varying:
            name, count = "layers", sym.L
        elif len(varying) == 1:
            name, count = f"{kind[varying[0]]}_layers", KIND_COUNT[kind[varying[0]]]
        else:
            name, count = f"{kind[0]}_{kind[1]}_layers", sympy.Integer(n)
        if isinstance(count, sympy.Symbol):
            vals[count] = sympy.Integer(n)
        groups.append(LayerGroup(name, count, build(*kind)))
    return tuple(groups), vals


class QwenMoeBase(LlamaAdapter):
    """Fields and layer layout shared by qwen2_moe and qwen3_moe."""

    switches: ClassVar[dict] = {"use_sliding_window": ("sliding_window",)}

    intermediate_size: PosInt = 5632  # dense layers only (transformers default)
    num_experts: NonNegInt
    num_experts_per_tok: PosInt
    moe_intermediate_size: PosInt
    decoder_sparse_step: PosInt = 1
    mlp_only_layers: list[Int] | None = None
    use_sliding_window: bool = False
    norm_topk_prob: bool = False  # renormalise the top-k routing weights (training activations only)
    sliding_window: Int | None = 4096

    @model_validator(mode="after")
    def _router(self):
        if self.num_experts:
            self.check_top_k("num_experts")
        return self

    def ffn_kind(self, i: int) -> str:
        moe = (i not in (self.mlp_only_layers or []) and self.num_experts > 0
               and (i + 1) % self.decoder_sparse_step == 0)
        return "moe" if moe else "dense"

    def moe(self) -> MoE:
        return MoE(norm_topk=self.norm_topk_prob, saves=WEIGHTS_CAST)

    def layer(self, mixer: str, ffn: str):
        window = sym.W if mixer == "swa" else None
        return (Norms(LAYER_NORMS), self.attention(window), self.moe() if ffn == "moe" else FFN())

    def to_model(self) -> Model:
        mixers = ["swa" if t == "sliding_attention" else "full" for t in self.resolved_layer_types()]
        kinds = [(m, self.ffn_kind(i)) for i, m in enumerate(mixers)]
        groups, counts = group_layers(kinds, self.layer)
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                      H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h)
        vals.update(counts)
        if "swa" in mixers:
            vals.update(values(W=self.sliding_window))
        if any(f == "dense" for _, f in kinds):
            vals.update(values(d_ff=self.intermediate_size))
        if any(f == "moe" for _, f in kinds):
            vals.update(self.moe_values())
        return Model(self.name, self.model_type, (Embedding(),), groups,
                     (Norms(("norm",)), LMHead(tied=self.tie_word_embeddings)), vals,
                     layer_order=kind_order(kinds, groups))

    def moe_values(self) -> dict:
        return values(E=self.num_experts, k=self.num_experts_per_tok, d_moe=self.moe_intermediate_size)


@register("qwen2_moe")
class Qwen2MoeAdapter(QwenMoeBase):
    reference: ClassVar[str] = "Qwen2MoeForCausalLM"

    num_key_value_heads: PosInt | None = 16
    shared_expert_intermediate_size: PosInt
    qkv_bias: bool = True
    max_window_layers: Int = 28

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        return ["sliding_attention" if i % 2 == 0 and i < self.max_window_layers
                and self.use_sliding_window else "full_attention"
                for i in range(self.num_hidden_layers)]

    def attention(self, window) -> Attention:
        return Attention(W=window, qkv_bias=self.qkv_bias)

    def moe(self) -> MoE:
        return MoE(d_sh=sym.d_sh, shared_gate=True, norm_topk=self.norm_topk_prob, saves=WEIGHTS_CAST)

    def moe_values(self) -> dict:
        return {**super().moe_values(), **values(d_sh=self.shared_expert_intermediate_size)}


@register("qwen3_moe")
class Qwen3MoeAdapter(QwenMoeBase):
    reference: ClassVar[str] = "Qwen3MoeForCausalLM"

    num_key_value_heads: PosInt | None = 4
    intermediate_size: PosInt = 6144
    # Qwen3MoeConfig maps num_experts to num_local_experts (its attribute_map); Qwen2MoeConfig does not
    num_experts: NonNegInt = Field(validation_alias=AliasChoices("num_local_experts", "num_experts"))

    def resolved_layer_types(self) -> list[str]:
        swa = self.use_sliding_window and self.sliding_window is not None
        return ["sliding_attention" if swa else "full_attention"] * self.num_hidden_layers

    def attention(self, window) -> Attention:
        return Attention(W=window, qkv_bias=self.attention_bias, o_bias=self.attention_bias,
                         qk_norm=True)
