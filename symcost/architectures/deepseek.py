"""DeepSeek family: deepseek_v2, deepseek_v3 (and kimi_k2), deepseek_v32, kimi_k25.

Each layer: RMSNorm → MLA (``components/mla.py``) → RMSNorm → dense SwiGLU FFN for the first
``first_k_dense_replace`` layers, MoE for the rest (transformers ``DeepseekV3DecoderLayer``;
``moe_layer_freq`` is ignored by transformers). MoE: router d·E, E routed experts of width d_moe
(k per token, group-limited top-k), shared experts fused into one MLP of width d_sh = E_s·d_moe;
V3-style routers register ``e_score_correction_bias`` [E] as a buffer (V2 has none).
DeepSeek-V3.2 adds a lightning indexer to every attention layer (``components/sparse_index.py``)
and may list ``mlp_layer_types``. Kimi-K2 is DeepSeek-V3 with other numbers (transformers has no
class: the oracle builds it as deepseek_v3). Kimi-K2.5 is that text model (``text_config``) plus
the MoonViT tower and patch-merger projector (``components/moonvit.py``), all built by
transformers' ``Kimi_K25ForConditionalGeneration``, whose top-level ``tie_word_embeddings``
(default true) decides the head.

Multi-token prediction (``num_nextn_predict_layers``) is not built by the causal-LM class; its
weights go to ``Model.extras["mtp"]``, per module as DeepSeek-V3's checkpoint stores it and
transformers' ``MtpLayer`` builds it: enorm d, hnorm d, eh_proj 2d·d, one full decoder layer with
an MoE FFN, and the shared-head norm d. Embedding and LM head are shared with the main model and
not counted again (the checkpoint file repeats them, 2·V·d more on disk).
"""
from __future__ import annotations

from typing import ClassVar

import sympy
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.mla import MLA
from ..components.moe import MoE, MoESaves
from ..components.mtp import add_mtp, mtp_module
from ..components.norm import Norms
from ..components.sparse_index import Indexer
from ..components.towers.moonvit import MoonViT, MoonViTBlock, MoonViTProjector, MoonViTStem
from ..core.errors import SymcostError
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, layer_order
from . import register
from .base import Adapter, LayerCount, NonNegInt, PosInt, quote, validation_message, values

LAYER_NORMS = ("input_layernorm", "post_attention_layernorm")


def check_mla_heads(a: Adapter) -> None:
    """MLA expands keys to every head: ``num_key_value_heads`` null or ``num_attention_heads``."""
    H = a.num_attention_heads
    if a.num_key_value_heads not in (None, H):
        a.fail("num_key_value_heads", f"MLA expands keys to every head: must equal "
               f"num_attention_heads={H} (got {a.num_key_value_heads})")


def _alias(default, *names: str):
    return Field(default, validation_alias=AliasChoices(*names))


@register("deepseek_v3", "kimi_k2")
class DeepseekV3Adapter(Adapter):
    reference: ClassVar[str] = "DeepseekV3ForCausalLM"
    correction_bias: ClassVar[bool] = True  # e_score_correction_bias buffer
    has_indexer: ClassVar[bool] = False

    hidden_size: PosInt
    vocab_size: PosInt
    num_hidden_layers: LayerCount
    num_attention_heads: PosInt
    intermediate_size: PosInt = 18432
    num_key_value_heads: PosInt | None = None
    q_lora_rank: PosInt | None = 1536
    kv_lora_rank: PosInt = 512
    qk_nope_head_dim: PosInt = 128
    qk_rope_head_dim: PosInt = 64
    v_head_dim: PosInt = 128
    n_routed_experts: PosInt = _alias(256, "num_local_experts", "n_routed_experts")
    n_shared_experts: PosInt = 1
    moe_intermediate_size: PosInt = 2048
    num_experts_per_tok: PosInt | None = 8
    n_group: PosInt | None = 8
    topk_group: PosInt | None = 4
    first_k_dense_replace: NonNegInt = 3
    moe_layer_freq: PosInt = 1
    attention_bias: bool = False
    tie_word_embeddings: bool = False
    num_nextn_predict_layers: NonNegInt = _alias(1, "num_nextn_predict_layers", "num_mtp_layers")
    norm_topk_prob: bool | None = True  # renormalise the top-k routing weights (training activations only)

    @model_validator(mode="after")
    def _consistent(self):
        self.check_attention()
        self.check_first_k_dense()
        if self.n_moe_layers:
            self.check_router()
        return self

    def check_first_k_dense(self) -> None:
        """A stated dense prefix past the stack is an error; the class default is not (transformers
        writes it out whatever the depth, and then makes every layer dense)."""
        default = type(self).model_fields["first_k_dense_replace"].default
        if self.first_k_dense_replace > self.num_hidden_layers and self.first_k_dense_replace != default \
                and self.uses_first_k_dense:
            self.fail("first_k_dense_replace", f"first_k_dense_replace={self.first_k_dense_replace} exceeds "
                      f"num_hidden_layers={self.num_hidden_layers}")

    def check_attention(self) -> None:
        check_mla_heads(self)

    def check_router(self) -> None:
        """V3 routing: top-2 per group summed, top ``topk_group`` groups, top-k experts among them."""
        E, g = self.n_routed_experts, self.n_group
        if self.num_experts_per_tok is None or self.num_experts_per_tok > E:
            self.fail("num_experts_per_tok", f"needs 1..n_routed_experts={E} (got {self.num_experts_per_tok})")
        if g is None or E % g or E // g < 2:
            self.fail("n_group", f"n_routed_experts={E} must split into n_group={g} groups of >= 2")
        if self.topk_group is None or self.topk_group > g:
            self.fail("topk_group", f"needs 1..n_group={g} (got {self.topk_group})")

    def check_layer_list(self, field: str, entries: list | None, allowed: tuple[str, ...]) -> None:
        """A per-layer list (``mlp_layer_types``, ...): one entry per layer, each one of ``allowed``."""
        if entries is None:
            return
        if len(entries) != self.num_hidden_layers:
            self.fail(field, f"has {len(entries)} entries for num_hidden_layers={self.num_hidden_layers}")
        unknown = sorted({str(e) for e in entries} - set(allowed))
        if unknown:
            self.fail(field, f"unknown entries {unknown}: each must be one of {', '.join(map(repr, allowed))}")

    # -- the layer stack -----------------------------------------------------------------------
    def mlp_kinds(self) -> list[str]:
        n_dense = min(self.first_k_dense_replace, self.num_hidden_layers)
        return ["dense"] * n_dense + ["sparse"] * (self.num_hidden_layers - n_dense)

    @property
    def uses_first_k_dense(self) -> bool:
        return True

    @property
    def n_moe_layers(self) -> int:
        return self.mlp_kinds().count("sparse")

    def ffn_bias(self) -> bool:
        return False  # DeepseekV3MLP has no biases

    def mixer(self) -> tuple:
        return (MLA(d_q=None if self.q_lora_rank is None else sym.d_q, bias=self.attention_bias),)

    def moe(self) -> MoE:
        d_sh = sym.E_s * sym.d_moe if self.n_shared_experts else None  # GLM allows n_shared_experts 0
        return MoE(d_sh=d_sh, correction_bias=self.correction_bias, proj_bias=self.ffn_bias(),
                   norm_topk=bool(self.norm_topk_prob),
                   router="sigmoid_group")

    def to_model(self) -> Model:
        kinds = self.mlp_kinds()
        n_moe = kinds.count("sparse")
        n_dense = len(kinds) - n_moe
        norms, mixer = Norms(LAYER_NORMS), self.mixer()
        parts = [("dense_layers", n_dense, sym.L_dense, FFN(bias=self.ffn_bias())),
                 ("moe_layers", n_moe, sym.L_moe, self.moe())]
        parts = [p for p in parts if p[1]]
        groups = tuple(LayerGroup("layers" if len(parts) == 1 else name, sym.L if len(parts) == 1 else count,
                                  (norms, *mixer, ffn)) for name, _, count, ffn in parts)
        groups += self.extra_groups()
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers)
        vals.update(self.attention_values())
        if n_dense:
            vals.update(values(d_ff=self.intermediate_size))
        if n_moe:
            vals.update(self.moe_values())
        if len(parts) > 1:
            vals.update(values(L_dense=n_dense, L_moe=n_moe))
        vals.update(self.extra_values())
        def names(kind: str) -> str:
            return "layers" if len(parts) == 1 else "moe_layers" if kind == "sparse" else "dense_layers"
        model = Model(self.name, self.model_type, (Embedding(),), groups,
                      (Norms(("norm",)), LMHead(tied=self.tie_word_embeddings)), vals,
                      layer_order=self.extra_order(layer_order(kinds, names)))
        if self.moe_layer_freq != 1:
            model.notes.append(f"moe_layer_freq={self.moe_layer_freq} is ignored, as transformers ignores it: "
                               "every layer after first_k_dense_replace is MoE")
        self.add_mtp(model, norms, mixer)
        return model

    def attention_values(self) -> dict:
        return values(H_q=self.num_attention_heads, d_q=self.q_lora_rank, d_kv=self.kv_lora_rank,
                      D_nope=self.qk_nope_head_dim, D_rope=self.qk_rope_head_dim, D_v=self.v_head_dim)

    def moe_values(self) -> dict:
        return values(E=self.n_routed_experts, k=self.num_experts_per_tok, E_s=self.n_shared_experts or None,
                      d_moe=self.moe_intermediate_size)

    def extra_groups(self) -> tuple[LayerGroup, ...]:
        """Groups beside the dense/MoE layers (GLM-5's indexers when some layers share top-k)."""
        return ()

    def extra_order(self, order: tuple[str, ...]) -> tuple:
        """``Model.layer_order`` with the ``extra_groups`` each layer holds."""
        return order

    def extra_values(self) -> dict:
        return {}

    def add_mtp(self, model: Model, norms, mixer) -> None:
        n = self.num_nextn_predict_layers
        if not n:
            return
        add_mtp(model, n, mtp_module((norms, *mixer, self.moe()), "one decoder layer with an MoE FFN"))
        for s_, v_ in self.moe_values().items():  # the MTP layer is MoE even when the main stack is dense
            model.values.setdefault(s_, v_)
        model.notes.append(
            "MTP modules (extras, not in the total): enorm + hnorm + eh_proj [2d, d] + one MoE decoder layer "
            "+ shared-head norm each; embedding and head shared with the main model (DeepSeek-V3 checkpoint "
            "layout, transformers MtpLayer); the checkpoint file also repeats embed_tokens and the head")


@register("deepseek_v2")
class DeepseekV2Adapter(DeepseekV3Adapter):
    """DeepSeek-V2 (and V2-Lite, q_lora_rank null): softmax router without correction bias,
    ``greedy`` or ``group_limited_greedy`` top-k, ``mlp_bias`` on dense and shared MLPs, no MTP."""

    reference: ClassVar[str] = "DeepseekV2ForCausalLM"
    correction_bias: ClassVar[bool] = False

    intermediate_size: PosInt = 11008
    n_routed_experts: PosInt = _alias(64, "num_experts", "n_routed_experts")
    n_shared_experts: PosInt = 2
    moe_intermediate_size: PosInt = 1407
    num_experts_per_tok: PosInt | None = None
    n_group: PosInt | None = None
    topk_group: PosInt | None = None
    topk_method: str = "greedy"
    first_k_dense_replace: NonNegInt = 0
    mlp_bias: bool = False
    num_nextn_predict_layers: NonNegInt = 0

    def ffn_bias(self) -> bool:
        return self.mlp_bias

    @model_validator(mode="after")
    def _v2(self):
        self.require_divisible("hidden_size", "num_attention_heads")  # transformers validates it
        return self

    def mixer(self) -> tuple:
        """``DeepseekV2Attention``: MLA as in V3, RoPE as a complex product (``apply_rotary_emb``)."""
        return (MLA(d_q=None if self.q_lora_rank is None else sym.d_q, bias=self.attention_bias,
                    rope_complex=True),)

    def moe(self) -> MoE:
        """``DeepseekV2TopkRouter``: softmax of ``F.linear(x.float(), weight.float())`` (fp32 copies
        below fp32), top-k of the scores (group-limited: after a masked_fill over the groups left out),
        never renormalised (the config class drops ``norm_topk_prob``), only scaled."""
        d_sh = sym.E_s * sym.d_moe if self.n_shared_experts else None
        return MoE(d_sh=d_sh, proj_bias=self.ffn_bias(), norm_topk=False, router="softmax",
                   saves=MoESaves(router_upcast=True, group_mask=self.topk_method == "group_limited_greedy"))

    def check_router(self) -> None:
        E = self.n_routed_experts
        if self.num_experts_per_tok is None or self.num_experts_per_tok > E:
            self.fail("num_experts_per_tok", f"needs 1..n_routed_experts={E} (got {self.num_experts_per_tok})")
        if self.topk_method not in ("greedy", "group_limited_greedy"):
            self.fail("topk_method", f"unknown top-k method {quote(self.topk_method)}")
        if self.topk_method == "group_limited_greedy":
            g = self.n_group
            if g is None or E % g:
                self.fail("n_group", f"n_routed_experts={E} must split into n_group={g} groups")
            if self.topk_group is None or self.topk_group > g:
                self.fail("topk_group", f"needs 1..n_group={g} (got {self.topk_group})")


@register("deepseek_v32")
class DeepseekV32Adapter(DeepseekV3Adapter):
    """DeepSeek-V3.2: V3 plus the DSA lightning indexer in every attention layer; q_lora_rank required."""

    reference: ClassVar[str] = "DeepseekV32ForCausalLM"
    has_indexer: ClassVar[bool] = True

    q_lora_rank: PosInt = 1536
    index_n_heads: PosInt = 64
    index_head_dim: PosInt = 128
    index_topk: PosInt = 2048
    mlp_layer_types: list[str] | None = None

    @model_validator(mode="after")
    def _v32(self):
        if self.index_head_dim < self.qk_rope_head_dim:
            self.fail("index_head_dim", f"must be >= qk_rope_head_dim={self.qk_rope_head_dim} "
                      "(the indexer rotates its first qk_rope_head_dim dims)")
        self.check_layer_list("mlp_layer_types", self.mlp_layer_types, ("dense", "sparse"))
        return self

    def mlp_kinds(self) -> list[str]:
        return list(self.mlp_layer_types) if self.mlp_layer_types is not None else super().mlp_kinds()

    @property
    def uses_first_k_dense(self) -> bool:
        return self.mlp_layer_types is None

    def mixer(self) -> tuple:
        return (MLA(bias=self.attention_bias, k_sel=sym.k_I), Indexer())

    def extra_values(self) -> dict:
        return values(H_I=self.index_n_heads, D_I=self.index_head_dim, k_I=self.index_topk)


class MoonViTConfig(BaseModel):
    """``vision_config`` of Kimi-K2.5: transformers' names (``Kimi_K25VisionConfig``) first; where they are
    absent, the Hub file's (``vt_*``, ``init_pos_emb_*``), which the original remote code reads."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    #: spellings the remote code reads and transformers' class does not (it keeps its defaults):
    #: the one deliberate exception to tests/test_alias_precedence.py's "a spelling alone" check
    remote_code_names: ClassVar[frozenset] = frozenset({
        "vt_hidden_size", "vt_intermediate_size", "vt_num_hidden_layers", "init_pos_emb_height",
        "init_pos_emb_width"})
    #: fields the tower's weights and FLOPs do not depend on (symcost.architectures.fields)
    unused: ClassVar[dict[str, str]] = {
        "num_attention_heads": "heads split the width; no weight or FLOP depends on their count",
        "vt_num_attention_heads": "the Hub file's name of num_attention_heads",
        "mm_hidden_size": "= hidden_size", "text_hidden_size": "= the text model's hidden_size",
        "pos_emb_time": "sizes a non-persistent sinusoidal buffer for video frames",
        "init_pos_emb_time": "the Hub file's name of pos_emb_time",
        "merge_type": "the one merger the reference code builds",
        "mm_projector_type": "the one projector the reference code builds",
        "video_attn_type": "video frames only"}

    hidden_size: PosInt = _alias(1152, "hidden_size", "vt_hidden_size")
    intermediate_size: PosInt = _alias(4304, "intermediate_size", "vt_intermediate_size")
    num_hidden_layers: LayerCount = _alias(27, "num_hidden_layers", "vt_num_hidden_layers")
    patch_size: PosInt = 14
    pos_emb_height: PosInt = _alias(64, "pos_emb_height", "init_pos_emb_height")
    pos_emb_width: PosInt = _alias(64, "pos_emb_width", "init_pos_emb_width")
    merge_kernel_size: tuple[PosInt, PosInt] = (2, 2)


@register("kimi_k25")
class KimiK25Adapter(Adapter):
    """Kimi-K2.5: the DeepSeek-V3-kind text model from ``text_config`` plus MoonViT and its projector."""

    reference: ClassVar[str] = "Kimi_K25ForConditionalGeneration"

    text_config: dict
    vision_config: MoonViTConfig = MoonViTConfig()
    projection_hidden_size: PosInt = 1152
    tie_word_embeddings: bool = True

    @model_validator(mode="after")
    def _consistent(self):
        self.text()
        if self.projection_hidden_size != self.vision_config.hidden_size:
            self.fail("projection_hidden_size", f"the projector norms vision features of "
                      f"vision_config.hidden_size={self.vision_config.hidden_size}")
        return self

    def text(self) -> DeepseekV3Adapter:
        raw = {**self.text_config, "model_type": "deepseek_v3", "name": self.name,
               "tie_word_embeddings": self.tie_word_embeddings}
        try:
            return DeepseekV3Adapter.model_validate(raw)
        except ValidationError as e:
            raise SymcostError(validation_message(e, "text_config")) from None

    def to_model(self) -> Model:
        text, v = self.text(), self.vision_config
        m = text.to_model()
        kh, kw = v.merge_kernel_size
        m.wrapping(self.model_type)
        m.pre = m.pre + (MoonViTStem(), MoonViTProjector())
        m.groups = (LayerGroup("vision_layers", sym.L_vis, (MoonViTBlock(),)),) + m.groups
        m.values.update(values(d_vis=v.hidden_size, d_ff_vis=v.intermediate_size, L_vis=v.num_hidden_layers,
                               p_vis=v.patch_size, C_img=3, N_pat=v.pos_emb_height * v.pos_emb_width,
                               m_vis=kh * kw))
        m.notes.append("MoonViT tower and projector: weights exact against Kimi_K25ForConditionalGeneration; "
                       "they run only on image/video patches, so text prefill/decode FLOPs hold none of them")
        ph, pw, p = v.pos_emb_height, v.pos_emb_width, v.patch_size
        # the processor pads the patch grid to whole merge kernels
        gh, gw = -(-ph // kh) * kh, -(-pw // kw) * kw
        m.vision = MoonViT() if gh * gw == ph * pw else MoonViT(N_pat=sympy.Integer(gh * gw))
        m.notes.append(f"one image (--images) is {ph * p}×{pw * p} px, the learned position grid "
                       f"(vision_config pos_emb {ph}×{pw} patches of {p} px, used without resampling; the config "
                       f"states no image size) = {gh * gw} patches = {gh * gw // (kh * kw)} text tokens; "
                       "Kimi_K25ImageProcessor's default cap is 16384 patches (max_patches), 4096 tokens")
        return m
