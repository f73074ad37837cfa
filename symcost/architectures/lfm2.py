"""LFM2 and LFM2-MoE: short-convolution layers and GQA attention layers by ``layer_types``.

transformers ``Lfm2ForCausalLM`` / ``Lfm2MoeForCausalLM``: ``model.embed_tokens``,
L × (``operator_norm`` → mixer → ``ffn_norm`` → ``feed_forward``), the final norm (named
``embedding_norm``, applied after the last layer), ``lm_head`` tied with ``tie_word_embeddings``
(default True; ``tie_embedding`` is the older spelling the config classes read first). A layer is
a short convolution (``components.short_conv``, ``Lfm2ShortConv``: K_c = ``conv_L_cache``, biases
``conv_bias``) where ``layer_types`` says ``"conv"`` and GQA attention with RoPE and per-head
q/k RMSNorms (``q_layernorm``/``k_layernorm``; no biases; head_dim = ``head_dim`` when the config
has one, else d // H_q) where it says ``"full_attention"``.

LFM2: ``layer_types`` written out wins; without it the config class derives it from
``full_attn_idxs`` (indices of the attention layers; absent: every layer is attention). The MLP
is SwiGLU (w1, w3, w2) whose width transformers derives from ``intermediate_size``
(``block_ff_dim``) when ``block_auto_adjust_ff_dim``: f = int(2·ff/3), then with
``block_ffn_dim_multiplier`` (a number; the config class refuses None) f = int(multiplier·f) rounded up to a multiple of
``block_multiple_of`` — computed here with the same Python arithmetic.
LFM2-MoE: ``layer_types`` is required (the config class derives none). The first
``num_dense_layers`` layers have a SwiGLU MLP of ``intermediate_size``; the others a sigmoid-routed
top-k MoE (router d → E, no bias; E SwiGLU experts of ``moe_intermediate_size``) with, under
``use_expert_bias``, an ``expert_bias`` [E] buffer (a checkpoint tensor, reported as a buffer).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.moe import WEIGHTS_CAST, MoE
from ..components.norm import Norms
from ..components.short_conv import ShortConv
from ..core.notation import sym
from ..core.terms import Terms
from ..model.assembly import Model, kind_order
from . import register
from .base import Adapter, GQAHeads, LayerCount, NonNegInt, PosInt, values
from .jamba import kind_groups

CONV, ATTN, DENSE, SPARSE = "conv", "full_attention", "mlp", "moe"


@dataclass(frozen=True)
class Lfm2MoE(MoE):
    """``Lfm2MoeSparseMoeBlock``: the correction bias buffer is named ``expert_bias``."""

    def buffers(self) -> Terms:
        return Terms({"expert_bias": self.E}, {"expert_bias": "[E] buffer"}) if self.correction_bias else Terms()

@register("lfm2")
class Lfm2Adapter(GQAHeads, Adapter):
    reference: ClassVar[str] = "Lfm2ForCausalLM"

    vocab_size: PosInt = 65536
    hidden_size: PosInt = 2560
    intermediate_size: PosInt = Field(12288, validation_alias=AliasChoices("block_ff_dim", "intermediate_size"))
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32
    num_key_value_heads: PosInt | None = 8
    head_dim: PosInt | None = None
    tie_word_embeddings: bool = Field(True, validation_alias=AliasChoices("tie_embedding", "tie_word_embeddings"))
    conv_bias: bool = False
    conv_L_cache: PosInt = 3
    block_multiple_of: PosInt = 256
    block_ffn_dim_multiplier: float = 1.0  # Lfm2Config refuses None (float | int)
    block_auto_adjust_ff_dim: bool = True
    full_attn_idxs: list[int] | None = None
    layer_types: list[str] | None = None

    @model_validator(mode="after")
    def _consistent(self):
        kinds = self.mixer_kinds()
        if ATTN in kinds and self.num_attention_heads % self.H_kv:
            self.fail("num_key_value_heads", f"num_attention_heads={self.num_attention_heads} is not "
                      f"divisible by num_key_value_heads={self.H_kv}")
        self._check_ffn()
        return self

    def _check_ffn(self):
        if self.ffn_width() <= 0:
            self.fail("intermediate_size", f"the derived MLP width {self.ffn_width()} is not positive")


    def mixer_kinds(self) -> list[str]:
        L = self.num_hidden_layers
        if self.layer_types is not None:
            bad = sorted({repr(k) for k in self.layer_types if k not in (CONV, ATTN)})
            if bad:
                self.fail("layer_types", f"unknown layer type(s) {', '.join(bad)} (expected conv, full_attention)")
            if len(self.layer_types) != L:
                self.fail("layer_types", f"has {len(self.layer_types)} entries for num_hidden_layers={L}")
            return list(self.layer_types)
        idx = list(range(L)) if self.full_attn_idxs is None else self.full_attn_idxs
        out = sorted({i for i in idx if not 0 <= i < L})
        if out:
            self.fail("full_attn_idxs", f"{out} out of range for num_hidden_layers={L} (0..{L - 1})")
        return [ATTN if i in idx else CONV for i in range(L)]

    def ffn_kinds(self) -> list[str]:
        return [DENSE] * self.num_hidden_layers

    def ffn_width(self) -> int:
        """The MLP width as ``Lfm2MLP`` derives it."""
        f = self.intermediate_size
        if self.block_auto_adjust_ff_dim:
            f = int(2 * f / 3)
            f = int(self.block_ffn_dim_multiplier * f)
            m = self.block_multiple_of
            f = m * ((f + m - 1) // m)
        return f

    # -- the model -----------------------------------------------------------------------------------
    def moe(self) -> MoE:
        raise NotImplementedError

    def layer(self, mixer: str, ffn: str) -> tuple:
        mix = ShortConv(bias=self.conv_bias) if mixer == CONV else Attention(qk_norm=True)
        return (Norms(("operator_norm", "ffn_norm")), mix, self.moe() if ffn == SPARSE else FFN())

    def to_model(self) -> Model:
        per_layer = list(zip(self.mixer_kinds(), self.ffn_kinds()))
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers)
        count_sym = {CONV: sym.L_conv, ATTN: sym.L_A, DENSE: sym.L_dense, SPARSE: sym.L_moe}
        groups, combos = kind_groups(per_layer, count_sym, self.layer, vals)
        kinds = {k for c in combos for k in c}
        if CONV in kinds:
            vals.update(values(K_c=self.conv_L_cache))
        if ATTN in kinds:
            vals.update(values(H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h))
        if DENSE in kinds:
            vals.update(values(d_ff=self.ffn_width()))
        if SPARSE in kinds:
            vals.update(values(E=self.num_experts, k=self.num_experts_per_tok, d_moe=self.moe_intermediate_size))
        model = Model(self.name, self.model_type, (Embedding(),), groups,
                      (Norms(("embedding_norm",)), LMHead(tied=self.tie_word_embeddings)), vals,
                      layer_order=kind_order(per_layer, groups))
        model.notes.append("layers: " + ", ".join(
            f"{per_layer.count(c)} × {'short conv' if c[0] == CONV else 'attention'} + "
            f"{'MoE' if c[1] == SPARSE else 'MLP'}" for c in combos))
        return model


@register("lfm2_moe")
class Lfm2MoeAdapter(Lfm2Adapter):
    reference: ClassVar[str] = "Lfm2MoeForCausalLM"

    hidden_size: PosInt = 2048
    intermediate_size: PosInt = 7168
    moe_intermediate_size: PosInt = 1792
    num_dense_layers: NonNegInt = 2
    num_experts_per_tok: PosInt = 4
    num_experts: PosInt = 32  # Lfm2MoeConfig has no attribute_map: num_local_experts is not read
    use_expert_bias: bool = True
    norm_topk_prob: bool = True

    def _check_ffn(self):
        if SPARSE in self.ffn_kinds() and self.num_experts_per_tok > self.num_experts:
            self.fail("num_experts_per_tok", f"{self.num_experts_per_tok} exceeds num_experts={self.num_experts}")

    def mixer_kinds(self) -> list[str]:
        if self.layer_types is None:
            self.fail("layer_types", "is required: Lfm2MoeConfig derives no layer pattern (conv / full_attention)")
        return super().mixer_kinds()

    def ffn_kinds(self) -> list[str]:
        return [DENSE if i < self.num_dense_layers else SPARSE for i in range(self.num_hidden_layers)]

    def ffn_width(self) -> int:
        return self.intermediate_size  # Lfm2MoeMLP takes intermediate_size as it is

    def moe(self) -> MoE:
        return Lfm2MoE(correction_bias=self.use_expert_bias, router="sigmoid",
                       norm_topk=self.norm_topk_prob, saves=WEIGHTS_CAST)
