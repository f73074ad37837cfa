"""Kimi Linear: Kimi Delta Attention (KDA) layers with periodic MLA layers, DeepSeek-V3-style MoE.

Each layer (transformers ``KimiLinearDecoderLayer``): RMSNorm → mixer → RMSNorm → FFN. The mixer
follows ``layer_types``: ``linear_attention`` is KDA (``components/kda.py``), ``full_attention``
is MLA without any rotary embedding (``KimiLinearAttention``: ``components/mla.py`` with
``rope=False``; the D_rope part of the key stays shared, its cache is the latent as in DeepSeek).
The FFN follows ``mlp_layer_types``: ``sparse`` is ``KimiLinearMoE`` (DeepSeek-V3's: sigmoid
router d·E in fp32 with the ``e_score_correction_bias`` [E] buffer and group-limited top-k, E
routed SwiGLU experts of ``moe_intermediate_size``, shared experts fused into one MLP of
E_s·d_moe), ``dense`` a SwiGLU of ``intermediate_size``.

The config, as ``KimiLinearConfig`` derives it:
* the checkpoint's names are read first where the class maps them (``attribute_map``):
  ``num_experts`` (else ``num_local_experts``), ``num_experts_per_token`` (``num_experts_per_tok``),
  ``num_shared_experts`` (``n_shared_experts``), ``num_expert_group`` (``n_group``),
  ``moe_renormalize`` (``norm_topk_prob``);
* ``linear_attn_config`` (the checkpoint's sub-dict) overrides ``linear_head_dim`` (its
  ``head_dim``), ``linear_num_heads`` (``num_heads``) and ``linear_conv_kernel_dim``
  (``short_conv_kernel_size``); without ``layer_types``, its 1-indexed ``full_attn_layers`` and
  ``kda_layers`` (both needed) give the layer types, else every 4th layer from layer 4 (0-indexed)
  is full attention;
* without ``mlp_layer_types``, the first ``first_k_dense_replace`` (default 1) layers are dense;
* the LM head is never tied (``KimiLinearForCausalLM`` declares no tied weights), whatever
  ``tie_word_embeddings`` says; MTP layers are not built.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.kda import KDA
from ..components.mla import MLA
from ..components.moe import MoE
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import Model, kind_order
from . import register
from .base import Adapter, Int, LayerCount, NonNegInt, PosInt, quote, values
from .deepseek import LAYER_NORMS, check_mla_heads
from .qwen3_next import CHUNK
from .qwen_moe import group_layers

LAYER_TYPES = ("full_attention", "linear_attention")
MLP_TYPES = ("dense", "sparse")


def _alias(default, *names: str):
    return Field(default, validation_alias=AliasChoices(*names))


@register("kimi_linear")
class KimiLinearAdapter(Adapter):
    reference: ClassVar[str] = "KimiLinearForCausalLM"

    hidden_size: PosInt
    vocab_size: PosInt
    num_hidden_layers: LayerCount
    num_attention_heads: PosInt
    num_key_value_heads: PosInt | None = 32
    intermediate_size: PosInt = 9216
    moe_intermediate_size: PosInt = 1024
    q_lora_rank: PosInt | None = None
    kv_lora_rank: PosInt = 512
    qk_nope_head_dim: PosInt = 128
    qk_rope_head_dim: PosInt = 64
    v_head_dim: PosInt = 128
    attention_bias: bool = False
    tie_word_embeddings: bool = False
    num_experts: PosInt = _alias(256, "num_experts", "num_local_experts")
    num_experts_per_token: PosInt = _alias(8, "num_experts_per_token", "num_experts_per_tok")
    num_shared_experts: NonNegInt = _alias(1, "num_shared_experts", "n_shared_experts")
    num_expert_group: PosInt = _alias(1, "num_expert_group", "n_group")
    topk_group: PosInt = 1
    moe_renormalize: bool = _alias(True, "moe_renormalize", "norm_topk_prob")
    first_k_dense_replace: Int = 1
    mlp_layer_types: list[str] | None = None
    layer_types: list[str] | None = None
    linear_head_dim: PosInt = 128
    linear_num_heads: PosInt = 32
    linear_conv_kernel_dim: PosInt = 4
    linear_attn_config: dict | None = None

    @model_validator(mode="after")
    def _consistent(self):
        check_mla_heads(self)
        for field in ("head_dim", "num_heads", "short_conv_kernel_size"):
            value = self.linear_config.get(field)
            if value is not None and (type(value) is not int or value < 1):
                self.fail(f"linear_attn_config.{field}", f"must be a positive integer (got {quote(value)})")
        self.check_list("layer_types", self.layer_types, LAYER_TYPES)
        self.check_list("mlp_layer_types", self.mlp_layer_types, MLP_TYPES)
        self.resolved_layer_types()  # checks linear_attn_config's layer lists
        if "sparse" in self.resolved_mlp_types():
            E, g = self.num_experts, self.num_expert_group
            self.check_top_k("num_experts", "num_experts_per_token")
            if E % g or E // g < 2:
                self.fail("num_expert_group", f"num_experts={E} must split into num_expert_group={g} "
                          "groups of >= 2 (the router sums each group's top 2)")
            if self.topk_group > g:
                self.fail("topk_group", f"topk_group={self.topk_group} exceeds num_expert_group={g}")
        return self

    def check_list(self, field: str, entries: list | None, allowed: tuple[str, ...]) -> None:
        if entries is None:
            return
        self.check_count(field, len(entries), self.num_hidden_layers)
        unknown = sorted({str(e) for e in entries} - set(allowed))
        if unknown:
            self.fail(field, f"unknown entries {quote(unknown)}: each must be one of {', '.join(allowed)}")

    # -- derived as KimiLinearConfig.__post_init__ derives them ----------------------------------------
    @property
    def linear_config(self) -> dict:
        return self.linear_attn_config or {}

    @property
    def H_kda(self) -> int:
        return self.linear_config.get("num_heads", self.linear_num_heads)

    @property
    def D_kda(self) -> int:
        return self.linear_config.get("head_dim", self.linear_head_dim)

    @property
    def K_c(self) -> int:
        return self.linear_config.get("short_conv_kernel_size", self.linear_conv_kernel_dim)

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        lac, L = self.linear_config, self.num_hidden_layers
        if "full_attn_layers" in lac and "kda_layers" in lac:
            types: list[str | None] = [None] * L
            for key, kind in (("full_attn_layers", "full_attention"), ("kda_layers", "linear_attention")):
                listed = lac[key]
                if not isinstance(listed, list):
                    self.fail(f"linear_attn_config.{key}", f"must be a list of 1-indexed layers (got {quote(listed)})")
                for i in listed:
                    if type(i) is not int or not 1 <= i <= L:
                        self.fail(f"linear_attn_config.{key}", f"layer {quote(i)} is not in 1..num_hidden_layers={L} "
                                  "(the checkpoint's layers are 1-indexed)")
                    types[i - 1] = kind
            missing = [i + 1 for i, t in enumerate(types) if t is None]
            if missing:
                self.fail("linear_attn_config", f"layers {quote(missing)} are in neither full_attn_layers nor "
                          "kda_layers")
            return types
        return ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(L)]

    def resolved_mlp_types(self) -> list[str]:
        if self.mlp_layer_types is not None:
            return list(self.mlp_layer_types)
        return ["dense" if i < self.first_k_dense_replace else "sparse" for i in range(self.num_hidden_layers)]

    # -- the model ------------------------------------------------------------------------------------
    def layer(self, mixer: str, ffn: str):
        mix = KDA() if mixer == "lin" else MLA(d_q=None if self.q_lora_rank is None else sym.d_q,
                                                bias=self.attention_bias, rope=False)
        if ffn == "moe":
            mlp = MoE(d_sh=sym.E_s * sym.d_moe if self.num_shared_experts else None, correction_bias=True,
                      router="sigmoid_group", norm_topk=self.moe_renormalize)
        else:
            mlp = FFN()
        return (Norms(LAYER_NORMS), mix, mlp)

    def to_model(self) -> Model:
        mixers = ["lin" if t == "linear_attention" else "full" for t in self.resolved_layer_types()]
        ffns = ["moe" if t == "sparse" else "dense" for t in self.resolved_mlp_types()]
        groups, counts = group_layers(list(zip(mixers, ffns)), self.layer)
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers)
        vals.update(counts)
        if "full" in mixers:
            vals.update(values(H_q=self.num_attention_heads, d_q=self.q_lora_rank, d_kv=self.kv_lora_rank,
                               D_nope=self.qk_nope_head_dim, D_rope=self.qk_rope_head_dim, D_v=self.v_head_dim))
        if "lin" in mixers:
            vals.update(values(H_kda=self.H_kda, D_kda=self.D_kda, K_c=self.K_c, C_dn=CHUNK))
        if "dense" in ffns:
            vals.update(values(d_ff=self.intermediate_size))
        if "moe" in ffns:
            vals.update(values(E=self.num_experts, k=self.num_experts_per_token,
                               E_s=self.num_shared_experts or None, d_moe=self.moe_intermediate_size))
        notes = [f"KDA prefill FLOPs under impl=reference follow the torch chunked scan: T padded to a multiple "
                 f"of C_dn = {CHUNK}; its intra-chunk products and the decode recurrence are elementwise "
                 "(0 matmul FLOPs)."]
        if self.tie_word_embeddings:
            notes.append("tie_word_embeddings is not read: KimiLinearForCausalLM never ties its lm_head")
        return Model(self.name, self.model_type, (Embedding(),), groups,
                     (Norms(("norm",)), LMHead(tied=False)), vals,
                     notes=notes, state_dtype={"recurrent_state": "fp32"},
                     layer_order=kind_order(list(zip(mixers, ffns)), groups))
