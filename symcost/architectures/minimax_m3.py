"""MiniMax M3 (text decoder: transformers ``MiniMaxM3VLForCausalLM``, config ``minimax_m3_vl_text``).

Each layer: RMSNorm → attention → RMSNorm → MLP (Gemma-style RMSNorms, scale + 1). Attention is GQA
with per-head q/k RMSNorm (D_h) and no biases; on ``minimax_m3_sparse`` layers it adds the MSA index
branch (``components/msa.py``). The MLP is a dense SwiGLU-OAI MLP of ``dense_intermediate_size``
(fused gate_up: the same weights as gate + up) or an MoE: sigmoid router d·E (+ an
``e_score_correction_bias`` [E] buffer), E experts of width ``intermediate_size``, k per token, and
always exactly one shared expert of ``shared_intermediate_size``. Untied head by default.

Layer layout, as transformers resolves it: ``layer_types`` (or, legacy,
``sparse_attention_config.sparse_attention_freq``) picks full / MSA attention per layer, else every
layer is full attention; ``mlp_layer_types`` (or ``moe_layer_freq``) picks dense / MoE, else every
layer is MoE. transformers ignores ``first_k_dense_replace``, ``n_shared_experts``, ``use_qk_norm``,
``use_sparse_attention``, ``moe_intermediate_size`` and ``rotary_dim`` (RoPE has no weights).

The bundled ``minimax-m3-abridged.json`` lacks the layout lists (and the vision config, the MTP count
and ``sparse_local_block``). Built as-is, transformers would make 60 full-attention MoE layers
(447,186,441,216 parameters); this adapter instead completes the layout as the seeds give it —
dense MLP on the first ``first_k_dense_replace`` layers, full attention on the first 3 (seed 001
§3.3.1: layers 0–2 full, 3–59 MSA) — and lists every such completion in ``Model.notes``.
The vision tower + projector (``components/minimax_vit.py``) and the MTP modules go to ``extras``.
"""
from __future__ import annotations

from typing import ClassVar

import sympy
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from ..assembly import LayerGroup, Model
from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.minimax_vit import MiniMaxViT
from ..components.moe import MoE
from ..components.mtp import add_mtp, mtp_module
from ..components.msa import MSAAttention, MSAIndexer
from ..components.norm import Norms
from ..notation import sym
from . import register
from .base import MAX_INT, Adapter, Int, LayerCount, NonNegInt, PosInt, quote, values
from .llama import LAYER_NORMS

SEED_FULL_LAYERS = 3  # seed 001 §3.3.1 / §6.1: "3 层 Full Attention（Layer 0-2）+ 57 层 MSA"
SEED_MTP_MODULES = 7  # seed 000 §2.8: "7 个 MTP 模块，num_mtp_modules=7"
SPARSE, FULL = "minimax_m3_sparse", "full_attention"

#: legacy ``sparse_attention_config`` keys → transformers' flat fields (and their defaults)
INDEX_FIELDS = {"sparse_num_index_heads": ("index_n_heads", 4), "sparse_index_dim": ("index_head_dim", 128),
                "sparse_block_size": ("index_block_size", 128), "sparse_topk_blocks": ("index_topk_blocks", 16),
                "sparse_local_block": ("index_local_blocks", 1)}


class M3VisionConfig(BaseModel):
    """``vision_config`` (transformers ``MiniMaxM3VLVisionConfig``; defaults = its defaults)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    hidden_size: PosInt = 1280
    intermediate_size: PosInt = 5120
    num_hidden_layers: PosInt = 32
    num_attention_heads: PosInt = 16
    num_channels: PosInt = 3
    image_size: PosInt = 2016
    patch_size: PosInt = 14
    temporal_patch_size: PosInt = 2
    spatial_merge_size: PosInt = 2


@register("minimax_m3")
class MiniMaxM3Adapter(Adapter):
    reference: ClassVar[str] = "MiniMaxM3VLForCausalLM"

    hidden_size: PosInt
    vocab_size: PosInt
    num_hidden_layers: LayerCount
    num_attention_heads: PosInt
    num_key_value_heads: PosInt = 4
    head_dim: PosInt = 128
    intermediate_size: PosInt = 3072
    dense_intermediate_size: PosInt = 12288
    shared_intermediate_size: PosInt = 3072
    num_local_experts: PosInt = Field(128, validation_alias=AliasChoices("num_local_experts", "num_experts"))
    num_experts_per_tok: PosInt = 4
    tie_word_embeddings: bool = False
    layer_types: list[str] | None = None
    mlp_layer_types: list[str] | None = None
    moe_layer_freq: list[Int] | None = None
    sparse_attention_config: dict | None = None
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
    num_mtp_modules: NonNegInt | None = None
    # the multimodal wrapper's fields, if a full config is given
    vision_config: M3VisionConfig | None = None
    projector_hidden_size: PosInt = 6144

    @model_validator(mode="after")
    def _consistent(self):
        if self.num_attention_heads % self.num_key_value_heads:
            self.fail("num_key_value_heads", f"num_attention_heads={self.num_attention_heads} is not "
                      f"divisible by num_key_value_heads={self.num_key_value_heads}")
        if self.num_experts_per_tok > self.num_local_experts:
            self.fail("num_experts_per_tok", f"{self.num_experts_per_tok} exceeds "
                      f"num_local_experts={self.num_local_experts}")
        attn, mlp = self.attention_kinds()[0], self.mlp_kinds()[0]
        for field, kinds, allowed in (("layer_types", attn, {FULL, SPARSE}),
                                      ("mlp_layer_types", mlp, {"dense", "sparse"})):
            if len(kinds) != self.num_hidden_layers:
                self.fail(field, f"has {len(kinds)} entries for num_hidden_layers={self.num_hidden_layers}")
            if set(kinds) - allowed:
                self.fail(field, f"unknown entries {sorted(set(kinds) - allowed)}")
        if SPARSE in attn:
            if self.num_attention_heads % self.index("index_n_heads"):
                self.fail("index_n_heads", "must divide num_attention_heads (one block selection per "
                          "KV group is repeated to the query heads)")
            if self.index("index_local_blocks") > self.index("index_topk_blocks"):
                self.fail("index_local_blocks", "more local blocks than index_topk_blocks")
        return self

    # -- resolution, as MiniMaxM3VLTextConfig.__post_init__ does it ------------------------------------
    def index(self, flat: str) -> int:
        """An index setting: the legacy ``sparse_attention_config`` key wins, as in transformers."""
        for legacy, (name, _) in INDEX_FIELDS.items():
            if name == flat and legacy in (self.sparse_attention_config or {}):
                value = self.sparse_attention_config[legacy]
                low = 0 if flat == "index_local_blocks" else 1
                if type(value) is not int or not low <= value <= MAX_INT:
                    self.fail(f"sparse_attention_config.{legacy}", f"must be an integer >= {low} (got {quote(value)})")
                return value
        return getattr(self, flat)

    def attention_kinds(self) -> tuple[list[str], str | None]:
        """Per-layer attention kind and, when the file does not say, where the layout came from."""
        L, sac = self.num_hidden_layers, self.sparse_attention_config or {}
        if self.layer_types is not None:
            return list(self.layer_types), None
        if "sparse_attention_freq" in sac:
            freq = sac["sparse_attention_freq"]
            if not isinstance(freq, list) or any(type(f) not in (int, bool) for f in freq):
                self.fail("sparse_attention_config.sparse_attention_freq", f"must be a list of 0/1 (got {quote(freq)})")
            return [SPARSE if f else FULL for f in freq], None
        if sac.get("use_sparse_attention"):
            n = min(SEED_FULL_LAYERS, L)
            return [FULL] * n + [SPARSE] * (L - n), (
                f"attention layout (no layer_types / sparse_attention_freq in the file) taken from the seeds "
                f"(001 §3.3.1): full attention on layers 0–{n - 1}, MSA on the other {L - n}; transformers "
                f"would make every layer full attention")
        return [FULL] * L, "no layer_types / sparse_attention_freq: every layer full attention (transformers' default)"

    def mlp_kinds(self) -> tuple[list[str], str | None]:
        L = self.num_hidden_layers
        if self.mlp_layer_types is not None:
            return list(self.mlp_layer_types), None
        if self.moe_layer_freq is not None:
            return ["sparse" if f else "dense" for f in self.moe_layer_freq], None
        if self.first_k_dense_replace is not None:
            n = min(self.first_k_dense_replace, L)
            return ["dense"] * n + ["sparse"] * (L - n), (
                f"MLP layout (no mlp_layer_types / moe_layer_freq in the file) taken from first_k_dense_replace="
                f"{self.first_k_dense_replace}, as the seeds give it ({n} dense + {L - n} MoE); transformers "
                f"ignores first_k_dense_replace and would make every layer MoE")
        return ["sparse"] * L, "no mlp_layer_types / moe_layer_freq: every layer MoE (transformers' default)"

    # -- the model ---------------------------------------------------------------------------------------
    def attention(self, kind: str) -> tuple:
        if kind == FULL:
            return (Attention(qk_norm=True),)
        return (MSAAttention(qk_norm=True, local=self.index("index_local_blocks") >= 1), MSAIndexer())

    def mlp(self, kind: str):
        return FFN() if kind == "dense" else MoE(d_sh=sym.d_sh, correction_bias=True)

    def to_model(self) -> Model:
        attn, attn_note = self.attention_kinds()
        mlp, mlp_note = self.mlp_kinds()
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
            groups.append(LayerGroup(name, count, (Norms(LAYER_NORMS), *self.attention(a), self.mlp(m))))
        if "dense" in mlp:
            vals.update(values(d_ff=self.dense_intermediate_size))
        if "sparse" in mlp:
            vals.update(self.moe_values())
        if SPARSE in attn:
            vals.update(values(H_I=self.index("index_n_heads"), D_I=self.index("index_head_dim"),
                               S_I=self.index("index_block_size"), k_blk=self.index("index_topk_blocks")))
        model = Model(self.name, self.model_type, (Embedding(),), tuple(groups),
                      (Norms(("norm",)), LMHead(tied=self.tie_word_embeddings)), vals)
        model.notes += [n for n in (attn_note, mlp_note) if n]
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
        self.add_vision(model)
        self.add_mtp(model)
        return model

    def moe_values(self) -> dict:
        return values(E=self.num_local_experts, k=self.num_experts_per_tok, d_moe=self.intermediate_size,
                      d_sh=self.shared_intermediate_size)

    def default_notes(self, has_msa: bool, has_dense: bool, has_moe: bool) -> list[str]:
        """Every field taken from transformers' defaults, and every file field transformers ignores."""
        given, sac = self.model_fields_set, self.sparse_attention_config or {}
        defaults = ["num_key_value_heads", "head_dim", "tie_word_embeddings"]
        defaults += ["dense_intermediate_size"] if has_dense else []
        if has_moe:
            defaults += ["intermediate_size", "shared_intermediate_size", "num_local_experts", "num_experts_per_tok"]
        out = [f"{f}={getattr(self, f)} taken from transformers' MiniMaxM3VLTextConfig default (absent from the file)"
               for f in defaults if f not in given]
        if has_msa:
            for legacy, (flat, _) in INDEX_FIELDS.items():
                if legacy not in sac and flat not in given:
                    out.append(f"{flat}={getattr(self, flat)} (sparse_attention_config.{legacy}) taken from "
                               "transformers' MiniMaxM3VLTextConfig default (absent from the file)")
        ignored = []
        if self.n_shared_experts not in (None, 1):
            ignored.append(f"n_shared_experts={self.n_shared_experts} (transformers builds exactly one shared expert)")
        if self.moe_intermediate_size not in (None, self.intermediate_size):
            ignored.append(f"moe_intermediate_size={self.moe_intermediate_size} (experts use intermediate_size)")
        if self.use_qk_norm is False:
            ignored.append("use_qk_norm=false (q_norm and k_norm are always built)")
        if ignored:
            out.append("ignored, as transformers ignores them: " + "; ".join(ignored))
        return out

    # -- parts transformers' text class does not build -----------------------------------------------------
    def add_vision(self, model: Model) -> None:
        v = self.vision_config or M3VisionConfig()
        tower = MiniMaxViT()
        model.extras.add("vision", tower.params()[tower.key], tower.label())
        model.vision = tower
        n_pat = (v.image_size // v.patch_size) ** 2
        model.values.update(values(d_vis=v.hidden_size, d_ff_vis=v.intermediate_size, L_vis=v.num_hidden_layers,
                                   p_vis=v.patch_size, t_vis=v.temporal_patch_size, C_img=v.num_channels,
                                   m_vis=v.spatial_merge_size ** 2, d_proj=self.projector_hidden_size,
                                   N_pat=n_pat))
        src = ("the file's vision_config" if self.vision_config is not None else
               "the seeds' vision_config table (000 §1.1: 32 layers, d=1280, 16 heads, d_ff=5120, patch 14, "
               "image 2016) and, for num_channels=3, temporal_patch_size=2, spatial_merge_size=2, "
               "transformers' MiniMaxM3VLVisionConfig defaults")
        model.notes.append(
            f"vision tower + projector (extras, not in the total; exact against MiniMaxM3VLVisionModel + "
            f"MiniMaxM3VLMultiModalProjector): vision_config from {src}; projector_hidden_size="
            f"{self.projector_hidden_size}" + ("" if "projector_hidden_size" in self.model_fields_set else
                                              " from transformers' MiniMaxM3VLConfig default") +
            f"; one image (--images) is vision_config.image_size={v.image_size}² at full resolution = {n_pat} "
            f"patches = {n_pat // v.spatial_merge_size ** 2} text tokens (MiniMaxM3VLImageProcessor's default "
            "longest_edge=451584 px would shrink it to 672², 576 tokens); a text-only pass does not run the "
            "tower (0 FLOPs)")

    def add_mtp(self, model: Model) -> None:
        n = SEED_MTP_MODULES if self.num_mtp_modules is None else self.num_mtp_modules
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
