"""MiniMax M3: ``minimax_m3`` (the hub text config), ``minimax_m3_vl_text`` (transformers' text config,
``MiniMaxM3VLForCausalLM``) and ``minimax_m3_vl`` (the wrapper, ``MiniMaxM3SparseForConditionalGeneration``).

Each text layer: RMSNorm → attention → RMSNorm → MLP (Gemma-style RMSNorms, scale + 1). Attention is
GQA with per-head q/k RMSNorm (D_h) and no biases; on ``minimax_m3_sparse`` layers it adds the MSA index
branch (``components/msa.py``). The MLP is a dense SwiGLU-OAI MLP of ``dense_intermediate_size``
(fused gate_up: the same weights as gate + up) or an MoE: sigmoid router d·E (+ an
``e_score_correction_bias`` [E] buffer), E experts of width ``intermediate_size``, k per token, and
always exactly one shared expert of ``shared_intermediate_size``. Untied head by default.

Layer layout, read from the config exactly as ``MiniMaxM3VLTextConfig`` reads it, never completed:
``layer_types`` (or, legacy, ``sparse_attention_config.sparse_attention_freq``) picks full / MSA
attention per layer; ``mlp_layer_types`` (or ``moe_layer_freq``) picks dense / MoE. With neither,
transformers makes every layer full attention / MoE; a config that says otherwise without stating
where — ``use_sparse_attention: true`` with no attention pattern, ``first_k_dense_replace`` > 0 with no
MLP pattern — does not state a complete model and is refused, naming the missing field.
transformers ignores ``first_k_dense_replace``, ``n_shared_experts``, ``use_qk_norm``,
``use_sparse_attention``, ``moe_intermediate_size`` and ``rotary_dim`` (RoPE has no weights).

The wrapper ``minimax_m3_vl`` is that text model (``text_config``) plus the vision tower and
projector (``components/minimax_vit.py``), counted in the total as the class builds them (vision
defaults: ``MiniMaxM3VLVisionConfig``'s). For the hub ``minimax_m3`` text config the tower goes to
``extras`` (from the file's ``vision_config`` or the seeds' table, which equals transformers'
defaults), as do the MTP modules, which no transformers class builds.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

import sympy
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..components.attention import Attention, AttentionSaves
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.moe import MoE, MoESaves
from ..components.msa import MSAAttention, MSAIndexer
from ..components.mtp import add_mtp, mtp_module
from ..components.norm import Norms
from ..components.towers.minimax_vit import MiniMaxViT
from ..core.errors import SymcostError
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, kind_order
from . import register
from .base import Adapter, Int, LayerCount, NonNegInt, PosInt, validation_message, values
from .llama import LAYER_NORMS

#: the q/k norms are zero-centred RMSNorms, x̂·(1 + w) in fp32 (saved tensors only)
OFFSET_NORMS = AttentionSaves(qk_norm="offset")

SEED_MTP_MODULES = 7  # seed 000 §2.8: "7 个 MTP 模块，num_mtp_modules=7"
SPARSE, FULL = "minimax_m3_sparse", "full_attention"

#: legacy ``sparse_attention_config`` keys → transformers' flat fields (and their defaults)
INDEX_FIELDS = {"sparse_num_index_heads": ("index_n_heads", 4), "sparse_index_dim": ("index_head_dim", 128),
                "sparse_block_size": ("index_block_size", 128), "sparse_topk_blocks": ("index_topk_blocks", 16),
                "sparse_local_block": ("index_local_blocks", 1)}

Flag = Annotated[int, Field(ge=0, le=1, strict=False)]  # a 0/1 per-layer entry (true/false accepted)
Count = Annotated[int, Field(gt=0, strict=True)]  # a size: an integer, never 4.7, "4" or true
Count0 = Annotated[int, Field(ge=0, strict=True)]


class M3SparseAttentionConfig(BaseModel):
    """The legacy ``sparse_attention_config`` object, the keys ``MiniMaxM3VLTextConfig`` reads (others ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    use_sparse_attention: bool | None = None
    sparse_attention_freq: list[Flag] | None = None
    sparse_num_index_heads: Count | None = None
    sparse_index_dim: Count | None = None
    sparse_block_size: Count | None = None
    sparse_topk_blocks: Count | None = None
    sparse_local_block: Count0 | None = None


class M3VisionConfig(BaseModel):
    """``vision_config`` (transformers ``MiniMaxM3VLVisionConfig``; defaults = its defaults)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    hidden_size: PosInt = 1280
    intermediate_size: PosInt = 5120
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 16
    num_channels: PosInt = 3
    image_size: PosInt = 2016
    patch_size: PosInt = 14
    temporal_patch_size: PosInt = 2
    spatial_merge_size: PosInt = 2


def vision_values(v: M3VisionConfig, projector_hidden_size: int) -> dict:
    return values(d_vis=v.hidden_size, d_ff_vis=v.intermediate_size, L_vis=v.num_hidden_layers,
                  p_vis=v.patch_size, t_vis=v.temporal_patch_size, C_img=v.num_channels,
                  m_vis=v.spatial_merge_size ** 2, d_proj=projector_hidden_size,
                  N_pat=(v.image_size // v.patch_size) ** 2)


def image_note(v: M3VisionConfig) -> str:
    n_pat = (v.image_size // v.patch_size) ** 2
    return (f"one image (--images) is vision_config.image_size={v.image_size}² at full resolution = {n_pat} "
            f"patches = {n_pat // v.spatial_merge_size ** 2} text tokens (MiniMaxM3VLImageProcessor's default "
            "longest_edge=451584 px would shrink it to 672², 576 tokens); a text-only pass does not run the "
            "tower (0 FLOPs)")


class MiniMaxM3TextAdapter(Adapter):
    """The text decoder's fields and layout, shared by ``minimax_m3`` and ``minimax_m3_vl_text``."""

    reference: ClassVar[str] = "MiniMaxM3VLForCausalLM"
    #: switches of the Hub file the reference class builds one way only (symcost.architectures.fields)
    unused: ClassVar[dict[str, str]] = {
        "use_gemma_norm": "a 1 + w norm scale: the same weights", "qk_norm_type": "one norm layout is built",
        "use_routing_bias": "the routing bias buffer is always built"}
    #: MTP modules assumed when the file states no count (the seeds' 7 for the hub config; none otherwise)
    default_mtp: ClassVar[int] = 0

    hidden_size: PosInt
    vocab_size: PosInt
    num_hidden_layers: LayerCount
    num_attention_heads: PosInt
    num_key_value_heads: PosInt = 4
    head_dim: PosInt = 128
    intermediate_size: PosInt = 3072
    dense_intermediate_size: PosInt = 12288
    shared_intermediate_size: PosInt = 3072
    num_local_experts: PosInt = Field(128, validation_alias=AliasChoices("num_experts", "num_local_experts"))
    num_experts_per_tok: PosInt = 4
    tie_word_embeddings: bool = False
    layer_types: list[str] | None = None
    mlp_layer_types: list[str] | None = None
    moe_layer_freq: list[Flag] | None = None
    sparse_attention_config: M3SparseAttentionConfig | None = None
    index_n_heads: PosInt = 4
    index_head_dim: PosInt = 128
    index_block_size: PosInt = 128
    index_topk_blocks: PosInt = 16
    index_local_blocks: NonNegInt = 1
    # not read by transformers
    first_k_dense_replace: NonNegInt | None = None
    n_shared_experts: Int | None = None
    moe_intermediate_size: Int | None = None
    use_qk_norm: bool | None = None
    #: the Hub file states ``num_nextn_predict_layers`` (its checkpoint holds ``mtp.*`` weights,
    #: which MiniMaxM3VLForCausalLM skips on load; reported apart from the model, as DeepSeek's)
    num_mtp_modules: NonNegInt | None = Field(
        None, validation_alias=AliasChoices("num_mtp_modules", "num_nextn_predict_layers"))

    @model_validator(mode="after")
    def _consistent(self):
        if self.num_attention_heads % self.num_key_value_heads:
            self.fail("num_key_value_heads", f"num_attention_heads={self.num_attention_heads} is not "
                      f"divisible by num_key_value_heads={self.num_key_value_heads}")
        L = self.num_hidden_layers
        (attn, attn_field), (mlp, mlp_field) = self.attention_kinds(), self.mlp_kinds()
        for field, kinds, allowed in ((attn_field, attn, {FULL, SPARSE}), (mlp_field, mlp, {"dense", "sparse"})):
            if len(kinds) != L:
                self.fail(field, f"has {len(kinds)} entries for num_hidden_layers={L}")
            if field in ("layer_types", "mlp_layer_types") and set(kinds) - allowed:
                self.fail(field, f"unknown entries {sorted(set(kinds) - allowed)} (allowed: {sorted(allowed)})")
        if "sparse" in mlp and self.num_experts_per_tok > self.num_local_experts:
            self.fail("num_experts_per_tok", f"{self.num_experts_per_tok} exceeds "
                      f"num_local_experts={self.num_local_experts}")
        if SPARSE in attn:
            if self.num_attention_heads % self.index("index_n_heads"):
                self.fail(self.index_field("index_n_heads"), "must divide num_attention_heads (one block selection "
                          "per index head is repeated to the query heads)")
            if self.index("index_local_blocks") > self.index("index_topk_blocks"):
                self.fail(self.index_field("index_local_blocks"), "more local blocks than index_topk_blocks")
        return self

    # -- resolution, as MiniMaxM3VLTextConfig.__post_init__ does it ------------------------------------
    def legacy(self) -> M3SparseAttentionConfig:
        return self.sparse_attention_config or M3SparseAttentionConfig()

    def index(self, flat: str) -> int:
        """An index setting: the legacy ``sparse_attention_config`` key wins, as in transformers."""
        legacy = next(k for k, (name, _) in INDEX_FIELDS.items() if name == flat)
        value = getattr(self.legacy(), legacy)
        return getattr(self, flat) if value is None else value

    def index_field(self, flat: str) -> str:
        """The field an index setting came from, for error messages."""
        legacy = next(k for k, (name, _) in INDEX_FIELDS.items() if name == flat)
        return f"sparse_attention_config.{legacy}" if getattr(self.legacy(), legacy) is not None else flat

    def attention_kinds(self) -> tuple[list[str], str]:
        """Per-layer attention kind and the field that states it."""
        sac = self.legacy()
        if self.layer_types is not None:
            return list(self.layer_types), "layer_types"
        if sac.sparse_attention_freq is not None:
            return ([SPARSE if f else FULL for f in sac.sparse_attention_freq],
                    "sparse_attention_config.sparse_attention_freq")
        if sac.use_sparse_attention:
            self.fail("sparse_attention_config.sparse_attention_freq", "missing: use_sparse_attention is true but "
                      "the config states no per-layer attention pattern (layer_types or sparse_attention_freq); "
                      "transformers would build every layer full attention")
        return [FULL] * self.num_hidden_layers, "layer_types"

    def mlp_kinds(self) -> tuple[list[str], str]:
        if self.mlp_layer_types is not None:
            return list(self.mlp_layer_types), "mlp_layer_types"
        if self.moe_layer_freq is not None:
            return ["sparse" if f else "dense" for f in self.moe_layer_freq], "moe_layer_freq"
        if self.first_k_dense_replace:
            self.fail("moe_layer_freq", f"missing: first_k_dense_replace={self.first_k_dense_replace} is not read by "
                      "transformers' MiniMaxM3VLTextConfig (it would build every layer MoE); state the per-layer "
                      "MLP pattern in mlp_layer_types or moe_layer_freq")
        return ["sparse"] * self.num_hidden_layers, "mlp_layer_types"

    # -- the model ---------------------------------------------------------------------------------------
    def attention(self, kind: str) -> tuple:
        if kind == FULL:
            return (Attention(qk_norm=True, saves=OFFSET_NORMS),)
        return (MSAAttention(qk_norm=True, saves=OFFSET_NORMS, local=self.index("index_local_blocks") >= 1), MSAIndexer())

    def mlp(self, kind: str):
        return (FFN(clamped_glu=True) if kind == "dense" else
                MoE(d_sh=sym.d_sh, correction_bias=True, saves=MoESaves(glu="clamped")))

    def to_model(self) -> Model:
        (attn, attn_field), (mlp, mlp_field) = self.attention_kinds(), self.mlp_kinds()
        combos = list(dict.fromkeys(zip(attn, mlp)))  # distinct (attention, mlp) kinds, in layer order
        counts = {c: list(zip(attn, mlp)).count(c) for c in combos}
        aligned = len({a for a, _ in combos}) == len({m for _, m in combos}) == len(combos)
        count_sym = {"dense": sym.L_dense, "sparse": sym.L_moe}
        groups, vals = [], values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                                  H_q=self.num_attention_heads, H_kv=self.num_key_value_heads, D_h=self.head_dim)
        for a, m in combos:
            if len(combos) == 1:
                count = sym.L
            elif aligned:
                count = count_sym[m]
                vals[count] = sympy.Integer(counts[(a, m)])
            else:  # an irregular mix: integer counts per (attention, MLP) kind
                count = sympy.Integer(counts[(a, m)])
            name = f"{'msa' if a == SPARSE else 'full'}_{'moe' if m == 'sparse' else 'dense'}_layers"
            groups.append(LayerGroup(name, count, (Norms(LAYER_NORMS, kind="offset"), *self.attention(a), self.mlp(m))))
        if "dense" in mlp:
            vals.update(values(d_ff=self.dense_intermediate_size))
        if "sparse" in mlp:
            vals.update(self.moe_values())
        if SPARSE in attn:
            vals.update(values(H_I=self.index("index_n_heads"), D_I=self.index("index_head_dim"),
                               S_I=self.index("index_block_size"), k_blk=self.index("index_topk_blocks")))
        model = Model(self.name, self.model_type, (Embedding(),), tuple(groups),
                      (Norms(("norm",), kind="offset"), LMHead(tied=self.tie_word_embeddings)), vals,
                      layer_order=kind_order(list(zip(attn, mlp)), groups))
        for field, given in ((attn_field, attn_field in self.model_fields_set or "." in attn_field),
                             (mlp_field, mlp_field in self.model_fields_set)):
            if not given:
                model.notes.append(f"no {field} in the file: every layer "
                                   f"{'full attention' if field == 'layer_types' else 'MoE'} (transformers' default)")
        model.notes += self.default_notes(SPARSE in attn, "dense" in mlp, "sparse" in mlp)
        if aligned and len(combos) > 1:
            model.notes.append("layer counts: " + ", ".join(
                f"{count_sym[m]} = {counts[(a, m)]} ({'MSA' if a == SPARSE else 'full'} attention, "
                f"{'MoE' if m == 'sparse' else 'dense'} MLP)" for a, m in combos))
        if SPARSE in attn:
            model.notes.append(
                "MSA FLOPs: attention='full' counts what eager transformers computes (index scores and main "
                "attention over every key, the block selection applied as a mask); attention='causal' counts "
                "the intended block-sparse pairs, min(i+1, (k_blk-1)·S_I + i mod S_I + 1) keys for the query "
                "at position i" + ("" if self.index("index_local_blocks") >= 1 else
                                   " — with no local block an upper bound, min(i+1, k_blk·S_I)"))
        self.add_extras(model)
        return model

    def moe_values(self) -> dict:
        return values(E=self.num_local_experts, k=self.num_experts_per_tok, d_moe=self.intermediate_size,
                      d_sh=self.shared_intermediate_size)

    def default_notes(self, has_msa: bool, has_dense: bool, has_moe: bool) -> list[str]:
        """Every field taken from transformers' defaults, and every file field transformers ignores."""
        given, sac = self.model_fields_set, self.legacy()
        defaults = ["num_key_value_heads", "head_dim", "tie_word_embeddings"]
        defaults += ["dense_intermediate_size"] if has_dense else []
        if has_moe:
            defaults += ["intermediate_size", "shared_intermediate_size", "num_local_experts", "num_experts_per_tok"]
        out = [f"{f}={getattr(self, f)} taken from transformers' MiniMaxM3VLTextConfig default (absent from the file)"
               for f in defaults if f not in given]
        if has_msa:
            for legacy, (flat, _) in INDEX_FIELDS.items():
                if getattr(sac, legacy) is None and flat not in given:
                    out.append(f"{flat}={getattr(self, flat)} (sparse_attention_config.{legacy}) taken from "
                               "transformers' MiniMaxM3VLTextConfig default (absent from the file)")
        ignored = []
        mlp = self.mlp_kinds()[0]
        k = min(self.first_k_dense_replace or 0, len(mlp))
        if self.first_k_dense_replace is not None and mlp != ["dense"] * k + ["sparse"] * (len(mlp) - k):
            ignored.append(f"first_k_dense_replace={self.first_k_dense_replace} (the stated MLP pattern wins)")
        if self.n_shared_experts not in (None, 1):
            ignored.append(f"n_shared_experts={self.n_shared_experts} (transformers builds exactly one shared expert)")
        if self.moe_intermediate_size not in (None, self.intermediate_size):
            ignored.append(f"moe_intermediate_size={self.moe_intermediate_size} (experts use intermediate_size)")
        if self.use_qk_norm is False:
            ignored.append("use_qk_norm=false (q_norm and k_norm are always built)")
        if sac.use_sparse_attention is False and SPARSE in self.attention_kinds()[0]:
            ignored.append("use_sparse_attention=false (the stated attention pattern has MSA layers)")
        if ignored:
            out.append("ignored, as transformers ignores them: " + "; ".join(ignored))
        return out

    # -- parts transformers' text class does not build -----------------------------------------------------
    def add_extras(self, model: Model) -> None:
        self.add_mtp(model)

    def add_mtp(self, model: Model) -> None:
        n = self.default_mtp if self.num_mtp_modules is None else self.num_mtp_modules
        if not n:
            return
        add_mtp(model, n, mtp_module((Norms(LAYER_NORMS), Attention(qk_norm=True), self.mlp("sparse")),
                                     "one decoder layer: full GQA attention + MoE"))
        for s_, v_ in self.moe_values().items():
            model.values.setdefault(s_, v_)
        src = (f"num_mtp_modules={n} taken from the seeds (000 §2.8), absent from the file"
               if self.num_mtp_modules is None else f"num_mtp_modules={n}")
        model.notes.append(
            f"MTP (extras, not in the total): {src}. transformers does not build them (it drops 'mtp.*' "
            "weights on load), so their structure is assumed: each module = enorm + hnorm + eh_proj [2d, d] + one "
            "decoder layer (full GQA attention with q/k norm + MoE with shared expert) + shared-head norm, "
            "embedding and head shared (the DeepSeek-V3 MTP layout); the seeds' own estimate is attention + MoE "
            "≈ 7.42B per module")


@register("minimax_m3_vl_text")
class MiniMaxM3VLTextAdapter(MiniMaxM3TextAdapter):
    """transformers' own text config: the decoder only (MTP only when ``num_mtp_modules`` is stated)."""


@register("minimax_m3")
class MiniMaxM3Adapter(MiniMaxM3TextAdapter):
    """The hub text config: the decoder, plus the vision tower and the MTP modules in ``extras``."""

    default_mtp: ClassVar[int] = SEED_MTP_MODULES

    # the multimodal wrapper's fields, if a full config is given
    vision_config: M3VisionConfig | None = None
    projector_hidden_size: PosInt = 6144

    def add_extras(self, model: Model) -> None:
        v = self.vision_config or M3VisionConfig()
        tower = MiniMaxViT()
        model.extras.add("vision", tower.params()[tower.key], tower.label())
        model.vision = tower
        model.values.update(vision_values(v, self.projector_hidden_size))
        src = ("the file's vision_config" if self.vision_config is not None else
               "the seeds' vision_config table (000 §1.1: 32 layers, d=1280, 16 heads, d_ff=5120, patch 14, "
               "image 2016) and, for num_channels=3, temporal_patch_size=2, spatial_merge_size=2, "
               "transformers' MiniMaxM3VLVisionConfig defaults")
        model.notes.append(
            f"vision tower + projector (extras, not in the total; exact against MiniMaxM3VLVisionModel + "
            f"MiniMaxM3VLMultiModalProjector): vision_config from {src}; projector_hidden_size="
            f"{self.projector_hidden_size}" + ("" if "projector_hidden_size" in self.model_fields_set else
                                              " from transformers' MiniMaxM3VLConfig default") +
            f"; {image_note(v)}")
        self.add_mtp(model)


@register("minimax_m3_vl")
class MiniMaxM3VLAdapter(Adapter):
    """The wrapper: ``text_config`` (a ``minimax_m3_vl_text`` config) + vision tower + projector, all in the total."""

    reference: ClassVar[str] = "MiniMaxM3SparseForConditionalGeneration"

    text_config: dict
    vision_config: M3VisionConfig = M3VisionConfig()
    projector_hidden_size: PosInt = 6144
    tie_word_embeddings: bool = False

    @model_validator(mode="after")
    def _consistent(self):
        self.text()
        return self

    def text(self) -> MiniMaxM3VLTextAdapter:
        # MiniMaxM3VLConfig.__post_init__: a tied text config ties the wrapper's head
        tie = self.tie_word_embeddings or bool(self.text_config.get("tie_word_embeddings", False))
        raw = {**self.text_config, "model_type": "minimax_m3_vl_text", "name": self.name, "tie_word_embeddings": tie}
        try:
            return MiniMaxM3VLTextAdapter.model_validate(raw)
        except ValidationError as e:
            raise SymcostError(validation_message(e, "text_config")) from None

    def to_model(self) -> Model:
        m = self.text().to_model()
        m.wrapping(self.model_type)
        tower = MiniMaxViT()
        m.pre = m.pre + (tower,)
        m.vision = tower
        m.values.update(vision_values(self.vision_config, self.projector_hidden_size))
        src = "vision_config" if "vision_config" in self.model_fields_set else "vision_config: transformers defaults"
        m.notes.append("vision tower + projector in the total, as MiniMaxM3SparseForConditionalGeneration builds "
                       f"them ({src}, projector_hidden_size={self.projector_hidden_size}); "
                       f"{image_note(self.vision_config)}")
        return m
