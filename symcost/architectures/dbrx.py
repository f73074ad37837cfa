"""DBRX (``dbrx``): GQA with a fused Wqkv, bias-free LayerNorms, and a Mixtral-like MoE.

Each block (transformers ``DbrxBlock``): norm_1 → attention → norm_2 → ``DbrxFFN``. The norms are
``nn.LayerNorm(bias=False)``: a weight of d each (counted like an RMSNorm's). Attention: ``Wqkv``
d → d + 2·H_kv·D_h (the same weights as q/k/v_proj), ``out_proj`` d→d, no biases, D_h = d/H_q,
H_kv = ``attn_config.kv_n_heads``. FFN: router d·E (no bias) and E gated experts ``w1``/``v1``
(gate, up) and ``w2`` (down) of ``ffn_config.ffn_hidden_size`` (d_moe), k = ``moe_top_k`` per
token. Final ``norm_f``; the head is never tied (``DbrxConfig`` refuses it). Field names follow
``DbrxConfig`` (``d_model``, ``n_heads``, ``n_layers``; nested ``attn_config``, ``ffn_config``).
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from ..components.attention import Attention, AttentionSaves
from ..components.embedding import Embedding, LMHead
from ..components.moe import MoE, MoESaves
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model
from . import register
from .base import Adapter, LayerCount, PosInt, values


class DbrxAttentionConfig(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    kv_n_heads: PosInt = 1
    clip_qkv: float | None = None  # Wqkv's output clamped (training activations only: the clamp keeps it)


class DbrxFFNConfig(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    unused: ClassVar[dict[str, str]] = {"ffn_act_fn": "the activation: elementwise only",
                                        "hidden_size": "= d_model, which the model reads"}
    ffn_hidden_size: PosInt = 3584
    moe_num_experts: PosInt = 4
    moe_top_k: PosInt = 1
    # training activations only: the router's in-place input noise and the top-k renormalisation
    moe_jitter_eps: float | None = None
    moe_normalize_expert_weights: float | None = 1.0


def _alias(default, *names: str):
    # transformers sets attribute_map names (num_hidden_layers → n_layers) after the init arguments,
    # so when a config holds both spellings the mapped one wins; the first alias found is read
    return Field(default, validation_alias=AliasChoices(*names))


@register("dbrx")
class DbrxAdapter(Adapter):
    reference: ClassVar[str] = "DbrxForCausalLM"

    d_model: PosInt = _alias(2048, "hidden_size", "d_model")
    n_heads: PosInt = _alias(16, "num_attention_heads", "n_heads")
    n_layers: LayerCount = _alias(24, "num_hidden_layers", "n_layers")
    vocab_size: PosInt = 32_000
    attn_config: DbrxAttentionConfig = Field(default_factory=DbrxAttentionConfig)
    ffn_config: DbrxFFNConfig = Field(default_factory=DbrxFFNConfig)
    tie_word_embeddings: bool = False

    @model_validator(mode="after")
    def _consistent(self):
        self.require_divisible("d_model", "n_heads")
        kv = self.attn_config.kv_n_heads
        if self.n_heads % kv:
            self.fail("attn_config.kv_n_heads", f"n_heads={self.n_heads} is not divisible by kv_n_heads={kv}")
        f = self.ffn_config
        if f.moe_top_k > f.moe_num_experts:
            self.fail("ffn_config.moe_top_k", f"moe_top_k={f.moe_top_k} exceeds moe_num_experts={f.moe_num_experts}")
        if self.tie_word_embeddings:
            self.fail("tie_word_embeddings", "DBRX does not support a tied head (DbrxConfig refuses it)")
        return self

    def to_model(self) -> Model:
        f = self.ffn_config
        # saved tensors: LayerNorm statistics, q/k/v views of one Wqkv output (clamped with clip_qkv),
        # DbrxFFN's router softmax in the compute dtype, renormalised by a p-norm unless None
        layer = (Norms(("norm_1", "norm_2"), kind="layer_stats"),
                 Attention(saves=AttentionSaves(fused_qkv=True, clip_qkv=self.attn_config.clip_qkv is not None)),
                 MoE(norm_topk=f.moe_normalize_expert_weights is not None,
                     saves=MoESaves(router_fp32=False, weights_fp32=False,
                                    input_jitter=1 if f.moe_jitter_eps is not None else 0)))
        vals = values(d=self.d_model, V=self.vocab_size, L=self.n_layers, H_q=self.n_heads,
                      H_kv=self.attn_config.kv_n_heads, D_h=self.d_model // self.n_heads,
                      E=f.moe_num_experts, k=f.moe_top_k, d_moe=f.ffn_hidden_size)
        return Model(self.name, self.model_type, (Embedding(name="wte"),),
                     (LayerGroup("layers", sym.L, layer),),
                     (Norms(("norm_f",), kind="layer_stats"), LMHead()), vals,
                     notes=["LayerNorms without bias: d weights each"])
