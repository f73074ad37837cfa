"""GPT-2 (transformers ``GPT2LMHeadModel``): learned positions, LayerNorm, MHA with biases, GELU MLP.

Each block: ln_1 → attention (fused ``c_attn`` Conv1D d→3d + bias, ``c_proj`` d→d + bias) →
ln_2 → MLP (``c_fc`` d→d_ff + bias, GELU, ``c_proj`` d_ff→d + bias), with d_ff = ``n_inner``
(default 4·d). Embeddings: ``wte`` [V, d] and ``wpe`` [P, d] (P = ``n_positions``); final
``ln_f``; the head is tied to ``wte`` unless ``tie_word_embeddings`` is false. Heads are plain
MHA with D_h = d/H_q, so the fused c_attn is the same weights (and GEMM FLOPs) as q/k/v_proj.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention, AttentionSaves
from ..components.embedding import Embedding, LMHead, PositionEmbedding
from ..components.ffn import FFN
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model
from . import register
from .base import Adapter, LayerCount, PosInt, values


def _alias(*names: str):
    return Field(validation_alias=AliasChoices(*names))


@register("gpt2")
class GPT2Adapter(Adapter):
    reference: ClassVar[str] = "GPT2LMHeadModel"

    n_embd: PosInt = _alias("hidden_size", "n_embd")
    n_layer: LayerCount = _alias("num_hidden_layers", "n_layer")
    n_head: PosInt = _alias("num_attention_heads", "n_head")
    n_positions: PosInt = _alias("max_position_embeddings", "n_positions")
    vocab_size: PosInt
    n_inner: PosInt | None = None
    tie_word_embeddings: bool = True
    add_cross_attention: bool = False

    @model_validator(mode="after")
    def _consistent(self):
        self.require_divisible("n_embd", "n_head")
        if self.add_cross_attention:
            self.fail("add_cross_attention", "GPT-2 with encoder cross-attention is not modelled")
        return self

    def to_model(self) -> Model:
        # MHA: H_kv = H_q and D_h = d/H_q, so every attention term reads in d alone.
        attn = Attention(H_kv=sym.H_q, D_h=sym.d / sym.H_q, qkv_bias=True, o_bias=True, rope=False,
                         saves=AttentionSaves(softmax_fp32=False))
        layer = (Norms(("ln_1", "ln_2"), bias=True), attn, FFN(gated=False, bias=True))
        vals = values(d=self.n_embd, V=self.vocab_size, L=self.n_layer, H_q=self.n_head,
                      P=self.n_positions, d_ff=self.n_inner or 4 * self.n_embd)
        model = Model(self.name, self.model_type,
                      (Embedding(name="wte"), PositionEmbedding()),
                      (LayerGroup("layers", sym.L, layer),),
                      (Norms(("ln_f",), bias=True), LMHead(tied=self.tie_word_embeddings)), vals)
        if self.n_inner is None:
            model.notes.append("n_inner absent: d_ff = 4·d (transformers' default)")
        return model
