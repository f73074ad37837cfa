"""GLM MoE family (Z.ai): glm4_moe (GLM-4.5/4.6/4.7), glm4_moe_lite (GLM-4.7-Flash), glm_moe_dsa (GLM-5).

All three are the DeepSeek-V3 stack (``deepseek.py``): RMSNorm → attention → RMSNorm → dense
SwiGLU FFN or MoE (sigmoid router [E, d] with the ``e_score_correction_bias`` [E] buffer,
group-limited top-k, E routed experts of width d_moe, shared experts fused into one MLP of
width d_sh = E_s·d_moe, none when ``n_shared_experts`` is 0). What differs, read from transformers 5.24:

* ``glm4_moe`` (``Glm4MoeForCausalLM``): GQA attention (``components/attention.py``) instead of
  MLA — q/k/v projections with ``attention_bias``, o_proj without, per-head q/k RMSNorm [D_h] when
  ``use_qk_norm``, D_h = ``head_dim`` (default d // H_q); RoPE on the first
  int(D_h·``partial_rotary_factor``) dims (default 0.5; in ``rope_parameters`` once transformers has
  written the config). Dense FFN for layers below ``first_k_dense_replace`` (default 1), MoE after.
* ``glm4_moe_lite`` (``Glm4MoeLiteForCausalLM``): DeepSeek-V3 MLA (``DeepseekV3Attention``) with the
  same MoE; the stack comes from ``mlp_layer_types`` (default one dense layer, then MoE) —
  ``first_k_dense_replace`` is not read. ``head_dim`` is an alias of ``qk_rope_head_dim`` (and wins).
* ``glm_moe_dsa`` (``GlmMoeDsaForCausalLM``): MLA plus the DeepSeek-V3.2 lightning indexer
  (``components/sparse_index.py``, same shapes), but only on layers whose ``indexer_types`` entry is
  ``"full"``; ``"shared"`` layers build no indexer, cache no indexer keys and reuse the previous
  full layer's top-k (derived, when absent, from ``index_topk_pattern`` or ``index_topk_freq`` /
  ``index_skip_topk_offset``). The stack comes from ``mlp_layer_types`` (default
  ``first_k_dense_replace`` = 3 dense layers). ``num_experts`` overrides ``n_routed_experts``.
  When some layers share, their indexers form their own group of L_I layers. ``layer_types`` may
  only say ``indexed_attention`` per layer, or a legacy spelling transformers remaps to it
  (``deepseek_sparse_attention``, as GLM-5.2-NVFP4 writes it; ``qwen_sparse_attention``).

MLA adapters accept any ``num_key_value_heads`` with H_q // H_kv = 1: MLA expands keys to every
head and transformers repeats them H_q // H_kv times (the weights do not depend on H_kv).

Multi-token prediction (``num_nextn_predict_layers``; ``num_mtp_layers`` in glm4_moe, whose class
defaults to 1; the lite and DSA classes have no such field, default 0) is not built by the causal-LM
class: per module enorm d, hnorm d, eh_proj 2d·d, one decoder layer with an MoE FFN (with a full
indexer for GLM-5) and the post norm d go to ``Model.extras["mtp"]`` (transformers ``MtpLayer``,
the checkpoint's ``model.layers.{L}``), the embedding and head shared with the main model.
"""
from __future__ import annotations

from typing import ClassVar

import sympy
from pydantic import model_validator

from ..components.attention import Attention, AttentionSaves
from ..components.mla import MLA
from ..components.sparse_index import Indexer
from ..core.notation import sym
from ..model.assembly import LayerGroup
from . import register
from .base import NonNegInt, PosInt, values
from .deepseek import DeepseekV3Adapter, DeepseekV32Adapter, _alias

_ROPE_DEFAULT = 0.5  # Glm4MoeConfig.__post_init__: kwargs.setdefault("partial_rotary_factor", 0.5)
#: the legacy layer-type names transformers' ``remap_legacy_layer_types`` turns into ``indexed_attention``
#: (configuration_utils ``_LEGACY_LAYER_TYPE_REMAP``): GLM-5.x checkpoints (GLM-5.2-NVFP4) write
#: ``deepseek_sparse_attention``; every one of them is a DSA layer, as ``indexed_attention`` is
DSA_LEGACY = {"deepseek_sparse_attention": "indexed_attention", "qwen_sparse_attention": "indexed_attention"}


class _GlmChecks:
    """Checks GLM's config classes share (methods only; each adapter declares its own fields)."""

    def check_dense_prefix(self) -> None:
        # the class default is not an error: transformers writes it out at any depth (all layers dense then)
        default = type(self).model_fields["first_k_dense_replace"].default
        if self.first_k_dense_replace > self.num_hidden_layers and self.first_k_dense_replace != default:
            self.fail("first_k_dense_replace", f"{self.first_k_dense_replace} dense layers exceed "
                      f"num_hidden_layers={self.num_hidden_layers}")

    def check_mla_heads(self) -> None:
        H, H_kv = self.num_attention_heads, self.num_key_value_heads
        if H // H_kv != 1:
            self.fail("num_key_value_heads", f"MLA expands keys to every head, and transformers repeats them "
                      f"num_attention_heads // num_key_value_heads times: needs {H} // {H_kv} = 1")


@register("glm4_moe")
class Glm4MoeAdapter(_GlmChecks, DeepseekV3Adapter):
    reference: ClassVar[str] = "Glm4MoeForCausalLM"

    intermediate_size: PosInt = 10944
    num_key_value_heads: PosInt = 8
    head_dim: PosInt | None = None
    use_qk_norm: bool = False
    partial_rotary_factor: float | None = _ROPE_DEFAULT
    rope_parameters: dict | None = None
    rope_scaling: dict | None = None
    n_routed_experts: PosInt = _alias(128, "num_local_experts", "n_routed_experts")
    n_shared_experts: NonNegInt = 1
    moe_intermediate_size: PosInt = 1408
    num_experts_per_tok: PosInt | None = 8
    n_group: PosInt | None = 1
    topk_group: PosInt | None = 1
    first_k_dense_replace: NonNegInt = 1
    num_nextn_predict_layers: NonNegInt = _alias(1, "num_nextn_predict_layers", "num_mtp_layers")

    def check_attention(self) -> None:
        H, H_kv = self.num_attention_heads, self.num_key_value_heads
        if H % H_kv:
            self.fail("num_key_value_heads", f"must divide num_attention_heads={H} (got {H_kv})")
        if self.d_head < 1:
            self.fail("head_dim", f"absent, so hidden_size // num_attention_heads = {self.d_head}: needs >= 1")
        f = self.rotary_factor
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1:
            self.fail("partial_rotary_factor", f"the rotated fraction of head_dim must be in (0, 1] (got {f})")
        self.check_dense_prefix()

    @property
    def d_head(self) -> int:
        return self.head_dim if self.head_dim is not None else self.hidden_size // self.num_attention_heads

    @property
    def rotary_factor(self) -> float:
        """As transformers resolves it: rope_parameters (or legacy rope_scaling), then the top-level
        field (absent: 0.5; null: RoPE's own default 1.0)."""
        for rope in (self.rope_parameters, self.rope_scaling):
            if isinstance(rope, dict) and rope.get("partial_rotary_factor") is not None:
                return rope["partial_rotary_factor"]
        return 1.0 if self.partial_rotary_factor is None else self.partial_rotary_factor

    def mixer(self) -> tuple:
        rot = int(self.d_head * self.rotary_factor)  # the cos/sin table's width (saved tensors)
        return (Attention(qkv_bias=self.attention_bias, qk_norm=self.use_qk_norm,
                          saves=AttentionSaves().with_rope(D_rot=None if rot == self.d_head else sympy.Integer(rot))),)

    def attention_values(self) -> dict:
        return values(H_q=self.num_attention_heads, H_kv=self.num_key_value_heads, D_h=self.d_head)

    def to_model(self):
        model = super().to_model()
        D_h = self.d_head
        model.notes.append(f"RoPE rotates the first int(D_h·{self.rotary_factor}) = "
                           f"{int(D_h * self.rotary_factor)} of D_h = {D_h} dims (partial_rotary_factor); "
                           "elementwise RoPE is counted over all of D_h")
        return model


@register("glm4_moe_lite")
class Glm4MoeLiteAdapter(_GlmChecks, DeepseekV3Adapter):
    reference: ClassVar[str] = "Glm4MoeLiteForCausalLM"

    intermediate_size: PosInt = 10240
    num_key_value_heads: PosInt = 20
    q_lora_rank: PosInt | None = 768
    kv_lora_rank: PosInt = 512
    qk_nope_head_dim: PosInt = 192
    qk_rope_head_dim: PosInt = _alias(64, "head_dim", "qk_rope_head_dim")  # attribute_map: head_dim wins
    v_head_dim: PosInt = 256
    n_routed_experts: PosInt = _alias(64, "num_local_experts", "n_routed_experts")
    n_shared_experts: NonNegInt = 1
    moe_intermediate_size: PosInt = 1536
    num_experts_per_tok: PosInt | None = 4
    n_group: PosInt | None = 1
    topk_group: PosInt | None = 1
    mlp_layer_types: list[str] | None = None
    num_nextn_predict_layers: NonNegInt = 0

    def check_attention(self) -> None:
        self.check_mla_heads()
        self.check_layer_list("mlp_layer_types", self.mlp_layer_types, ("dense", "sparse"))

    @property
    def uses_first_k_dense(self) -> bool:
        return False  # Glm4MoeLiteConfig does not read first_k_dense_replace

    def mlp_kinds(self) -> list[str]:
        if self.mlp_layer_types is not None:
            return list(self.mlp_layer_types)
        return ["dense"] + ["sparse"] * (self.num_hidden_layers - 1)  # Glm4MoeLiteConfig.__post_init__

    def to_model(self):
        model = super().to_model()
        if self.mlp_layer_types is None and "first_k_dense_replace" in self.model_fields_set \
                and self.first_k_dense_replace != 1:
            model.notes.append(f"first_k_dense_replace={self.first_k_dense_replace} is ignored, as "
                               "Glm4MoeLiteConfig ignores it: without mlp_layer_types only layer 0 is dense")
        return model


@register("glm_moe_dsa")
class GlmMoeDsaAdapter(_GlmChecks, DeepseekV32Adapter):
    reference: ClassVar[str] = "GlmMoeDsaForCausalLM"
    unused: ClassVar[dict[str, str]] = {
        **DeepseekV32Adapter.unused,
        "index_share_for_mtp_iteration": "GLM-5.x serving flag: MTP draft steps reuse the main model's top-k "
                                         "(speculative decoding outside the class; no weights)",
        "moe_router_dtype": "the precision the router's logits are computed in (no weights, no matmul FLOPs)",
    }

    intermediate_size: PosInt = 12288
    num_key_value_heads: PosInt = 64
    q_lora_rank: PosInt = 2048
    kv_lora_rank: PosInt = 512
    qk_nope_head_dim: PosInt = 192
    qk_rope_head_dim: PosInt = 64
    v_head_dim: PosInt = 256
    n_routed_experts: PosInt = _alias(256, "num_local_experts", "num_experts", "n_routed_experts")
    n_shared_experts: NonNegInt = 1
    moe_intermediate_size: PosInt = 2048
    num_experts_per_tok: PosInt | None = 8
    n_group: PosInt | None = 1
    topk_group: PosInt | None = 1
    first_k_dense_replace: NonNegInt = 3
    index_n_heads: PosInt = 32
    index_head_dim: PosInt = 128
    index_topk: PosInt = 2048
    indexer_types: list[str] | None = None
    index_topk_pattern: str | list[str] | None = None
    index_topk_freq: int = 1
    index_skip_topk_offset: int = 2
    layer_types: list[str] | None = None
    num_nextn_predict_layers: NonNegInt = 0

    def check_attention(self) -> None:
        self.check_mla_heads()
        if self.mlp_layer_types is None:
            self.check_dense_prefix()

    @model_validator(mode="after")
    def _dsa(self):
        field = ("indexer_types" if self.indexer_types is not None else
                 "index_topk_pattern" if self.index_topk_pattern is not None else "index_skip_topk_offset")
        kinds = self.indexer_kinds()
        self.check_layer_list(field, kinds, ("full", "shared"))
        if kinds[0] != "full":
            self.fail(field, "layer 0 must run its own indexer ('full'): a 'shared' layer reuses the top-k "
                      "of an earlier full layer, and transformers fails on the first one")
        types = None if self.layer_types is None else [DSA_LEGACY.get(t, t) for t in self.layer_types]
        self.check_layer_list("layer_types", types, ("indexed_attention",))
        return self

    def indexer_kinds(self) -> list[str]:
        """Per layer 'full' (own indexer) or 'shared', as GlmMoeDsaConfig.__post_init__ derives it."""
        if self.indexer_types is not None:
            return list(self.indexer_types)
        p = self.index_topk_pattern
        if p is not None:
            if isinstance(p, str):
                bad = sorted(set(p) - {"F", "S"})
                if bad:
                    self.fail("index_topk_pattern", f"unknown letters {bad}: each must be 'F' (full) or 'S' (shared)")
                return [{"F": "full", "S": "shared"}[c] for c in p]
            return list(p)
        freq, offset = max(self.index_topk_freq, 1), self.index_skip_topk_offset
        return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(self.num_hidden_layers)]

    @property
    def n_indexers(self) -> int:
        return self.indexer_kinds().count("full")

    def mixer(self) -> tuple:
        if self.n_indexers == self.num_hidden_layers:
            return super().mixer()
        return (MLA(bias=self.attention_bias, k_sel=sym.k_I),)  # top-k from the last full layer

    def extra_groups(self) -> tuple[LayerGroup, ...]:
        if self.n_indexers == self.num_hidden_layers:
            return ()
        return (LayerGroup("indexers", sym.L_I, (Indexer(),)),)

    def extra_order(self, order: tuple[str, ...]) -> tuple:
        if self.n_indexers == self.num_hidden_layers:
            return order
        return tuple((name, "indexers") if kind == "full" else name
                     for name, kind in zip(order, self.indexer_kinds()))

    def extra_values(self) -> dict:
        vals = super().extra_values()
        if self.n_indexers != self.num_hidden_layers:
            vals.update(values(L_I=self.n_indexers))
        return vals

    def add_mtp(self, model, norms, mixer) -> None:
        super().add_mtp(model, norms, DeepseekV32Adapter.mixer(self))  # MTP layer 0 runs a full indexer

    def to_model(self):
        model = super().to_model()
        if self.n_indexers != self.num_hidden_layers:
            model.notes.append(f"{self.n_indexers} of {self.num_hidden_layers} layers run their own indexer "
                               "(indexer_types 'full'); the others reuse the previous full layer's top-k")
        return model
