"""StepFun Step-3.7-Flash (``step3p7``, transformers ``Step3p7ForConditionalGeneration``): a Step-3.5 text
stack (``text_config``, model type ``step3p5``) behind a ViT (``components/towers/step3p7_vision.py``).

Each text layer (transformers 5.24 ``Step3p7DecoderLayer``): RMSNorm → attention → RMSNorm → dense
SwiGLU or MoE; the norms are Gemma-style (``x̂·(1 + w)`` in fp32). The attention
(``Step3p7Attention``) is GQA with per-head q/k RMSNorm [D_h], biases when ``attention_bias``, and a
per-head output gate ``g_proj`` [d, H_q] (no bias; ``sigmoid(g)`` scales each head's output before
o_proj). ``layer_types`` says ``full_attention`` or ``sliding_attention`` per layer; the sliding layers
use ``sliding_window`` and their own query-head count (``num_sliding_attention_heads``, else the legacy
``attention_other_setting.num_attention_heads``, else ``num_attention_heads``), with the same KV heads.
The MoE (``Step3p7SparseMoeBlock``): sigmoid router [E, d] with the ``e_score_correction_bias`` [E]
buffer, top-k renormalised, E experts of ``moe_intermediate_size`` (fused gate_up), one always-active
shared expert of ``share_expert_dim``. Which layers are MoE: ``mlp_layer_types``, else the legacy
``moe_layers_enum`` (indices, a comma-separated string), else every layer from 3 on. The SwiGLU clamps
(``swiglu_limits``, ``swiglu_limits_shared``) and ``moe_router_scaling_factor`` are elementwise.

The Hub's config writes the per-layer lists over the decoder plus its ``num_nextn_predict_layers`` MTP
layers; transformers trims them (``Step3p7TextConfig.__post_init__``) and builds no MTP layer (the
checkpoint's ``layers.{L}..`` are skipped on load), so neither does symcost: they are not counted.
``minimax_m3_sparse`` layers (a sparse-attention indexer some Step variants declare) are refused.
Text fields written at the top level of a ``step3p7`` config are not read by ``Step3p7Config`` (it
builds its default text model), so symcost refuses them rather than guess (AIC's abridged copy of
Step-3.7-Flash is written that way).
"""
from __future__ import annotations

import collections
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import sympy
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.moe import MoE
from ..components.norm import Norms
from ..components.towers.step3p7_vision import Step3p7Vision
from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Linear, Saved
from ..core.terms import Terms
from ..model.assembly import LayerGroup, Model, layer_order
from . import register
from .base import Adapter, Int, LayerCount, NonNegInt, PosInt, nested, quote, values
from .llama import LAYER_NORMS


def _alias(default, *names: str):
    return Field(default, validation_alias=AliasChoices(*names))


@dataclass(frozen=True)
class Step3p7Attention(Attention):
    """GQA with q/k norms and the per-head output gate ``g_proj`` [d, H_q]: o_proj reads
    attn_out·sigmoid(g) (FLOPs 2·tokens·d·H_q for the gate; sigmoid and product elementwise)."""

    def primitives(self, ph: Phase | None = None):
        return [*super().primitives(ph), Linear("g_proj", self.d, self.H_q, tp="col", doc="[d, H_q], per-head gate")]

    def elementwise(self, ph: Phase) -> Terms:
        t = super().elementwise(ph)
        t.add("head_gate", (COST["sigmoid"] + COST["gate_mul"]) * ph.tokens * self.H_q * self.D_h,
              "sigmoid(g) per head times the attention output")
        return t

    def saved(self, bw) -> list:
        a = sym.b_a
        return [*super().saved(bw), Saved("head_gate/g", self.H_q, a, doc="g_proj output [.., H_q]"),
                Saved("head_gate/sigmoid", self.H_q, a, doc="sigmoid(g)"),
                Saved("head_gate/ungated", self.H_q * self.D_h, a, doc="attention output before the gate")]


class Step3p5TextAdapter(Adapter):
    """``text_config`` (transformers ``Step3p7TextConfig``, model type ``step3p5``), its defaults and
    attribute-map aliases (the alias first: the class keeps it when both are written)."""

    reference: ClassVar[str] = "Step3p7TextModel"
    unused: ClassVar[dict[str, str]] = {
        "swiglu_limits": "clamp bounds of the routed experts' SwiGLU (elementwise)",
        "swiglu_limits_shared": "clamp bounds of the shared expert's SwiGLU (elementwise)",
        "moe_router_scaling_factor": "scales the routed experts' output (elementwise)",
        "partial_rotary_factors": "RoPE rotates part of each head (no weights; elementwise counted over D_h)",
        "query_pre_attn_scalar": "the attention scale (no weights, no FLOPs)",
    }

    vocab_size: PosInt = 128815
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 11264
    num_hidden_layers: LayerCount = 45
    num_attention_heads: PosInt = 64
    num_key_value_heads: PosInt = _alias(8, "num_attention_groups", "num_key_value_heads")
    head_dim: PosInt = 128
    num_experts_per_tok: PosInt = _alias(8, "moe_top_k", "num_experts_per_tok")
    n_routed_experts: PosInt = _alias(288, "moe_num_experts", "n_routed_experts")  # num_local_experts alone is not read
    moe_intermediate_size: PosInt = 1280
    share_expert_dim: PosInt = _alias(1280, "share_expert_dims", "share_expert_dim")
    num_nextn_predict_layers: NonNegInt = _alias(0, "num_mtp_layers", "num_nextn_predict_layers")
    sliding_window: Int | None = None
    num_sliding_attention_heads: PosInt | None = None
    attention_other_setting: dict | None = None
    layer_types: list[str] | None = None
    mlp_layer_types: list[str] | None = None
    moe_layers_enum: str | list[int] | None = None
    attention_bias: bool = False
    mlp_bias: bool = False
    tie_word_embeddings: bool = False
    gating: bool | str = True

    @model_validator(mode="after")
    def _consistent(self):
        H, H_kv = self.num_attention_heads, self.num_key_value_heads
        if H % H_kv:
            self.fail("num_key_value_heads", f"must divide num_attention_heads={H} (got {H_kv})")
        if self.H_swa % H_kv:
            self.fail("num_sliding_attention_heads", f"{self.H_swa} sliding heads are not a multiple of "
                      f"num_key_value_heads={H_kv}")
        types = self.attn_types()
        self.check_count("layer_types", len(types), self.num_hidden_layers)
        unknown = sorted(set(types) - {"full_attention", "sliding_attention"})
        if "minimax_m3_sparse" in unknown:
            self.fail("layer_types", "minimax_m3_sparse layers (Step's sparse-attention indexer) are not modelled")
        if unknown:
            self.fail("layer_types", f"unknown layer type(s) {quote(unknown)} (expected full_attention, "
                      "sliding_attention)")
        if "sliding_attention" in types and (self.sliding_window is None or self.sliding_window < 1):
            self.fail("sliding_window", f"the sliding_attention layers need a positive window "
                      f"(got {quote(self.sliding_window)})")
        mlp = self.mlp_types()
        self.check_count("mlp_layer_types", len(mlp), self.num_hidden_layers)
        if set(mlp) - {"dense", "sparse"}:
            self.fail("mlp_layer_types", f"unknown entries {quote(sorted(set(mlp) - {'dense', 'sparse'}))}: "
                      "each must be 'dense' or 'sparse'")
        if "sparse" in mlp and self.num_experts_per_tok > self.n_routed_experts:
            self.fail("num_experts_per_tok", f"{self.num_experts_per_tok} exceeds n_routed_experts="
                      f"{self.n_routed_experts}")
        if self.gating not in (True, "per-head"):
            self.fail("gating", f"only the per-head output gate is modelled (got {quote(self.gating)})")
        return self

    # -- the layer lists as Step3p7TextConfig.__post_init__ resolves them ---------------------------
    def _trim(self, xs: list) -> list:
        n, pad = self.num_hidden_layers, self.num_nextn_predict_layers
        return xs[:n] if pad and len(xs) == n + pad else xs

    def attn_types(self) -> list[str]:
        if self.layer_types is None:
            return ["full_attention"] * self.num_hidden_layers
        return self._trim(list(self.layer_types))

    def mlp_types(self) -> list[str]:
        if self.mlp_layer_types is not None:
            return self._trim(list(self.mlp_layer_types))
        n = self.num_hidden_layers
        if self.moe_layers_enum is not None:
            items = self.moe_layers_enum.split(",") if isinstance(self.moe_layers_enum, str) else self.moe_layers_enum
            try:
                moe = {int(i) for i in items if str(i).strip()}
            except ValueError:
                self.fail("moe_layers_enum", f"must list layer indices (got {quote(self.moe_layers_enum)})")
        else:
            moe = set(range(3, n))
        return ["sparse" if i in moe else "dense" for i in range(n)]

    @property
    def H_swa(self) -> int:
        if self.num_sliding_attention_heads is not None:
            return self.num_sliding_attention_heads
        other = self.attention_other_setting or {}
        heads = other.get("num_attention_heads", self.num_attention_heads)
        if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1:
            self.fail("attention_other_setting.num_attention_heads", f"must be a positive integer (got {quote(heads)})")
        return heads

    # -- the model ----------------------------------------------------------------------------------
    def components(self, attn: str, mlp: str) -> tuple:
        sliding = attn == "sliding_attention"
        H_q = sym.H_q if not sliding or self.H_swa == self.num_attention_heads else sympy.Integer(self.H_swa)
        mixer = Step3p7Attention(H_q=H_q, W=sym.W if sliding else None, qkv_bias=self.attention_bias,
                                 o_bias=self.attention_bias, qk_norm=True)
        ffn = (MoE(d_sh=sym.d_sh, correction_bias=True, router="sigmoid", norm_topk=True) if mlp == "sparse"
               else FFN(bias=self.mlp_bias))
        return (Norms(LAYER_NORMS, kind="offset"), mixer, ffn)

    def to_model(self) -> Model:
        kinds = list(zip(self.attn_types(), self.mlp_types()))
        counts = collections.Counter(kinds)
        order = list(dict.fromkeys(kinds))
        short = {"full_attention": "full", "sliding_attention": "swa", "dense": "dense", "sparse": "moe"}
        names = {k: f"{short[k[0]]}_{short[k[1]]}_layers" for k in order}
        if len(order) == 1:
            groups = [LayerGroup("layers", sym.L, self.components(*order[0]))]
            names = {order[0]: "layers"}
        else:
            groups = [LayerGroup(names[k], sympy.Integer(counts[k]), self.components(*k)) for k in order]
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                      H_q=self.num_attention_heads, H_kv=self.num_key_value_heads, D_h=self.head_dim)
        if any(m == "dense" for _, m in kinds):
            vals.update(values(d_ff=self.intermediate_size))
        if any(m == "sparse" for _, m in kinds):
            vals.update(values(E=self.n_routed_experts, k=self.num_experts_per_tok, d_moe=self.moe_intermediate_size,
                               d_sh=self.share_expert_dim))
        if any(a == "sliding_attention" for a, _ in kinds):
            vals.update(values(W=self.sliding_window))
        notes = [("Gemma-style RMSNorms (x̂·(1 + w) in fp32); a per-head output gate g_proj [d, H_q] on every "
                  "attention layer; SwiGLU clamps and the routed scaling factor are elementwise")]
        if self.H_swa != self.num_attention_heads and any(a == "sliding_attention" for a, _ in kinds):
            notes.append(f"sliding-window layers run {self.H_swa} query heads (full layers {self.num_attention_heads}), "
                         f"the same {self.num_key_value_heads} KV heads")
        if self.num_nextn_predict_layers:
            notes.append(f"{self.num_nextn_predict_layers} MTP layer(s) in the checkpoint are not built by "
                         "transformers (skipped on load) and not counted here")
        return Model(self.name, self.model_type, (Embedding(),), tuple(groups),
                     (Norms(("norm",), kind="offset"), LMHead(tied=self.tie_word_embeddings)), vals, notes=notes,
                     layer_order=layer_order(kinds, names))


class Step3p7VisionConfig(BaseModel):
    """``vision_config`` (transformers ``Step3p7VisionConfig``): defaults and the Hub's spellings
    ``width`` / ``layers`` / ``heads``, which its ``__post_init__`` pops over the canonical fields."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)
    unused: ClassVar[dict[str, str]] = {
        "pool_type": "the Hub's perception-encoder setting; Step3p7VisionModel builds no pooling head",
        "use_cls_token": "Step3p7VisionModel builds no class token",
        "use_ln_post": "Step3p7VisionModel builds no post-norm",
        "output_dim": "Step3p7VisionModel builds no output projection (the downsamplers set the width)",
        "ls_init_value": "the layer scales' initial value (their size is d_vis)",
    }

    hidden_size: PosInt = _alias(1536, "width", "hidden_size")
    num_hidden_layers: PosInt = _alias(47, "layers", "num_hidden_layers")
    num_attention_heads: PosInt = _alias(16, "heads", "num_attention_heads")
    num_channels: PosInt = 3
    image_size: PosInt = 728
    patch_size: PosInt = 14
    mlp_ratio: float = 8960 / 1536

    @property
    def intermediate_size(self) -> int:
        return int(self.hidden_size * self.mlp_ratio)  # Step3p7VisionConfig.__post_init__


@register("step3p7")
class Step3p7Adapter(Adapter):
    reference: ClassVar[str] = "Step3p7ForConditionalGeneration"
    unused: ClassVar[dict[str, str]] = {
        "image_token_len": "the processor's tokens per global image view (symcost derives them: image_tokens())",
        "patch_token_len": "the processor's tokens per local crop (local crops are not modelled)",
        "understand_projector_stride": "a remote-code setting Step3p7Model does not read (the two stride-2 "
                                       "downsamplers are fixed)",
    }
    #: text fields a flat (abridged) config writes at the top level, which Step3p7Config does not read
    FLAT: ClassVar[tuple[str, ...]] = ("num_hidden_layers", "hidden_size", "layer_types", "num_experts",
                                       "moe_intermediate_size", "vocab_size", "num_attention_heads")

    text_config: dict[str, Any] | None = None
    vision_config: Step3p7VisionConfig | None = None
    projector_bias: bool = False
    tie_word_embeddings: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _flat(cls, data):
        if isinstance(data, dict) and data.get("text_config") is None:
            flat = [k for k in cls.FLAT if k in data]
            if flat:
                raise ValueError(f"field 'text_config': absent, but the text fields {', '.join(flat)} are written at "
                                 "the top level; Step3p7Config does not read them there (it builds its default "
                                 "text model): nest them under text_config, as the Hub's config.json does")
        return data

    @model_validator(mode="after")
    def _consistent(self):
        self.text()
        v = self.vision
        if v.hidden_size % v.num_attention_heads:
            self.fail("vision_config.num_attention_heads", f"hidden_size={v.hidden_size} is not divisible by "
                      f"num_attention_heads={v.num_attention_heads}")
        if v.image_size < v.patch_size:
            self.fail("vision_config.image_size", f"{v.image_size} is smaller than patch_size={v.patch_size}")
        if v.intermediate_size < 1:
            self.fail("vision_config.mlp_ratio", f"gives an MLP width int(hidden_size·mlp_ratio) = {v.intermediate_size}")
        return self

    @property
    def vision(self) -> Step3p7VisionConfig:
        return self.vision_config or Step3p7VisionConfig()

    def text(self) -> Step3p5TextAdapter:
        fixed = {"model_type": "step3p5", "name": self.name}
        if self.tie_word_embeddings is not None:
            fixed["tie_word_embeddings"] = self.tie_word_embeddings
        return nested(Step3p5TextAdapter, self.text_config, "text_config", **fixed)

    def to_model(self) -> Model:
        v = self.vision
        m = self.text().to_model()
        m.wrapping(self.model_type)
        g = v.image_size // v.patch_size
        half = math.ceil(g / 2)
        tokens = math.ceil(half / 2) ** 2
        tower = Step3p7Vision(N_half=sympy.Integer(half * half), projector_bias=self.projector_bias)
        m.pre = (tower,) + m.pre
        m.vision = tower
        m.values.update(values(d_vis=v.hidden_size, d_ff_vis=v.intermediate_size, L_vis=v.num_hidden_layers,
                               p_vis=v.patch_size, C_img=v.num_channels, N_pat=g * g,
                               N_img=tokens))
        m.notes.append(f"vision tower (vision_model + downsamplers + multi_modal_projector): weights exact against "
                       f"{self.reference}; a text-only pass does not run it (0 FLOPs). One image (--images) is its "
                       f"global {v.image_size}×{v.image_size} view: {g}×{g} patches → {tokens} text "
                       f"token{'s' * (tokens != 1)} after the two stride-2 convolutions; the processor's local crops "
                       "are not counted")
        return m

