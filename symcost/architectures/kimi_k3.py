"""Kimi K3 (``model_type: kimi_k3``): the Kimi-Linear stack of KDA and NoPE-MLA layers with attention
residuals, a sigmoid-gated MLA output, full-rank KDA output gates, latent routed experts and SiTU.

transformers has no class for it; the reference is SGLang's ``python/sglang/srt/models/kimi_k3.py``
(``KimiK3ForConditionalGeneration`` → ``KimiK3LinearForCausalLM``) and its config classes
``python/sglang/srt/configs/kimi_k3.py`` (``KimiK3Config``: ``text_config`` is a ``KimiLinearConfig``)
and ``configs/kimi_linear.py``, sgl-project/sglang commits 0000e9b46f38dd9055ecad825a42c47a047077e6
(model), 0d7ff71496fe14d524400e7ffe802c97a6fc03f8 (K3 config), 008b79d2358b08adf9b6c879625030f890c8c4e2
(KimiLinearConfig). Defaults are that class's, not transformers' ``KimiLinearConfig``'s.

The text model (``text_config``), layer by layer (``KimiK3DecoderLayer``):
* the mixer is KDA when layer l + 1 is in ``linear_attn_config.kda_layers`` (1-indexed), else MLA
  (``KimiK3MLAAttention``: DeepSeek-V2 MLA with ``skip_rope``, + ``g_proj`` when
  ``mla_use_output_gate``); KDA takes ``num_heads``, ``head_dim``, ``short_conv_kernel_size`` from
  ``linear_attn_config`` and a full-rank ``g_proj`` when ``use_full_rank_gate``;
* the MLP is ``KimiK3MoE`` when ``num_experts`` is set, l ≥ ``first_k_dense_replace`` and
  l % ``moe_layer_freq`` == 0, else a gated MLP of ``intermediate_size``: router d·E (``MoEGate``,
  with the ``e_score_correction_bias`` [E]), E routed experts of ``moe_intermediate_size`` in the latent
  width ``routed_expert_hidden_size`` behind ``routed_expert_down_proj`` d·d_lat and
  ``routed_expert_up_proj`` d_lat·d (+ ``routed_expert_norm`` d_lat with ``latent_moe_use_norm``), and
  ``num_shared_experts`` fused into one gated MLP of E_s·d_moe on d;
* ``hidden_act`` ``silu`` or ``situ`` (every MLP and expert; elementwise only);
* ``input_layernorm``, ``post_attention_layernorm`` and, with ``attn_res_block_size``, the attention
  residual weights (``components/attn_residual.py``); the model adds ``norm`` (+ the output-side
  attention-residual weights) and an untied ``lm_head`` (``ParallelLMHead``; never tied).
The vision tower (``KimiK3VisionTower``, MoonViT3d, and ``KimiK3MultiModalProjector``) is not counted:
the public copies of the checkpoint's config hold only part of ``vision_config``. The KDA state is
SGLang's (conv states K_c − 1 columns wide); the MLA cache is the latent d_kv + D_rope per token. MTP layers
(``num_nextn_predict_layers``) are not built by the reference.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import sympy
from pydantic import model_validator

from ..components.attn_residual import AttnResidual, AttnResidualOutput, score_rows
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.kda import KDA
from ..components.kda_full_gate import KDAFullGate
from ..components.mla import MLA
from ..components.mla_output_gate import GatedMLA
from ..components.moe import MoE
from ..components.norm import Norms
from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Norm
from ..core.terms import Terms
from ..model.assembly import Model, kind_order
from . import register
from .base import Adapter, LayerCount, NonNegInt, PosInt, nested, quote, values
from .deepseek import LAYER_NORMS
from .qwen3_next import CHUNK
from .qwen_moe import group_layers

ACTS = ("silu", "situ")
_KDA_FIELDS = ("num_heads", "head_dim", "short_conv_kernel_size")


@dataclass(frozen=True)
class LatentNormMoE(MoE):
    """K3's latent MoE: ``routed_expert_norm`` RMSNorm [d_lat] on the summed latent before the up
    projection (``KimiK3MoE._latent_norm``); one norm over d_lat per token, 4 FLOPs per element."""

    def primitives(self, ph: Phase | None = None):
        prims = super().primitives(ph)
        at = next(i for i, p in enumerate(prims) if p.name == "latent_up")
        return prims[:at] + [Norm("routed_expert_norm", self.d_lat, doc="RMSNorm [d_lat]")] + prims[at:]

    def elementwise(self, ph: Phase) -> Terms:
        t = super().elementwise(ph)
        t.add("routed_expert_norm", COST["rmsnorm"] * ph.tokens * self.d_lat, "RMSNorm of the latent")
        return t

    def saved(self, bw) -> list:
        raise NotImplementedError("Kimi K3's latent MoE declares no saved-for-backward tensors")


class _SGLangKDAState:
    """The KDA state SGLang allocates per request and layer (``configs/mamba_utils.py``
    ``KimiLinearStateShape.create``): three conv states [H·D, K_c − 1] (q, k, v; the last K_c − 1
    inputs, not transformers' K_c columns) and the temporal state [H, D, D]."""

    def cache(self) -> Terms:
        B, H, D, K = sym.B, self.H_lv, self.D_lv, self.K_c
        return Terms({"conv_state": B * 3 * H * D * (K - 1), "recurrent_state": B * H * D * D},
                     {"conv_state": "3 × [B, H_kda·D_kda, K_c − 1] (SGLang KimiLinearStateShape)",
                      "recurrent_state": "[B, H_kda, D_kda, D_kda]"})


@dataclass(frozen=True)
class K3KDA(_SGLangKDAState, KDA):
    """KDA with the low-rank output gate, holding SGLang's state."""


@dataclass(frozen=True)
class K3KDAFullGate(_SGLangKDAState, KDAFullGate):
    """KDA with the full-rank output gate, holding SGLang's state."""


class KimiK3Text(Adapter):
    """``text_config``: SGLang's ``KimiLinearConfig`` as ``KimiK3LinearForCausalLM`` reads it."""

    vocab_size: PosInt = 163840
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 11008
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32
    hidden_act: str = "silu"
    activation_situ_linear_beta: float | None = None
    moe_intermediate_size: PosInt | None = None
    num_experts: PosInt | None = None
    num_experts_per_token: PosInt | None = None
    num_shared_experts: NonNegInt | None = 0
    first_k_dense_replace: NonNegInt = 0
    moe_layer_freq: PosInt = 1
    moe_renormalize: bool = True
    q_lora_rank: PosInt | None = None
    kv_lora_rank: PosInt | None = None
    qk_nope_head_dim: PosInt | None = None
    qk_rope_head_dim: PosInt | None = None
    v_head_dim: PosInt | None = None
    linear_attn_config: dict | None = None
    attn_res_block_size: PosInt | None = None
    routed_expert_hidden_size: PosInt | None = None
    latent_moe_use_norm: bool = False
    mla_use_output_gate: bool = False

    @model_validator(mode="after")
    def _consistent(self):
        if self.hidden_act not in ACTS:
            self.fail("hidden_act", f"{quote(self.hidden_act)} is not one of {', '.join(ACTS)} "
                      "(KimiK3MLP raises on any other)")
        kinds = self.mixers()
        if "lin" in kinds:
            for f in _KDA_FIELDS:
                v = self.linear_attn_config.get(f)
                if type(v) is not int or v < 1:
                    self.fail(f"linear_attn_config.{f}", f"must be a positive integer (got {quote(v)})")
        if "full" in kinds:
            for f in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
                if getattr(self, f) is None:
                    self.fail(f, "is needed by the MLA (full-attention) layers")
        if "moe" in self.ffns():
            for f in ("moe_intermediate_size", "num_experts_per_token"):
                if getattr(self, f) is None:
                    self.fail(f, "is needed by the MoE layers (num_experts is set)")
            self.check_top_k("num_experts", "num_experts_per_token")
        return self

    def mixers(self) -> list[str]:
        lac = self.linear_attn_config
        if lac is None:
            return ["full"] * self.num_hidden_layers
        for key in ("kda_layers", "full_attn_layers"):
            listed = lac.get(key)
            if not isinstance(listed, list) or any(type(i) is not int for i in listed):
                self.fail(f"linear_attn_config.{key}", f"must be a list of 1-indexed layers (got {quote(listed)})")
        kda = set(lac["kda_layers"])
        return ["lin" if i + 1 in kda else "full" for i in range(self.num_hidden_layers)]

    def ffns(self) -> list[str]:
        if self.num_experts is None:
            return ["dense"] * self.num_hidden_layers
        return ["moe" if i >= self.first_k_dense_replace and i % self.moe_layer_freq == 0 else "dense"
                for i in range(self.num_hidden_layers)]

    @property
    def act(self) -> str:
        if self.hidden_act == "situ" and self.activation_situ_linear_beta is not None:
            return "situ_lin"
        return self.hidden_act

    def layer(self, mixer: str, ffn: str):
        lac = self.linear_attn_config or {}
        if mixer == "lin":
            mix = K3KDAFullGate() if lac.get("use_full_rank_gate", False) else K3KDA()
        else:
            d_q = None if self.q_lora_rank is None else sym.d_q
            mix = (GatedMLA if self.mla_use_output_gate else MLA)(d_q=d_q, rope=False)
        if ffn == "moe":
            cls = LatentNormMoE if self.routed_expert_hidden_size and self.latent_moe_use_norm else MoE
            mlp = cls(d_sh=sym.E_s * sym.d_moe if self.num_shared_experts else None, correction_bias=True,
                      router="sigmoid_group", norm_topk=self.moe_renormalize, act=self.act,
                      d_lat=sym.d_lat if self.routed_expert_hidden_size else None)
        else:
            mlp = FFN(act=self.act)
        parts = [Norms(LAYER_NORMS)]
        if self.attn_res_block_size is not None:
            parts.append(AttnResidual())
        return tuple(parts + [mix, mlp])

    def to_model(self) -> Model:
        mixers, ffns = self.mixers(), self.ffns()
        groups, counts = group_layers(list(zip(mixers, ffns)), self.layer)
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers)
        vals.update(counts)
        lac = self.linear_attn_config or {}
        if "full" in mixers:
            vals.update(values(H_q=self.num_attention_heads, d_q=self.q_lora_rank, d_kv=self.kv_lora_rank,
                               D_nope=self.qk_nope_head_dim, D_rope=self.qk_rope_head_dim, D_v=self.v_head_dim))
        if "lin" in mixers:
            vals.update(values(H_kda=lac["num_heads"], D_kda=lac["head_dim"], K_c=lac["short_conv_kernel_size"],
                               C_dn=CHUNK))
        if "dense" in ffns:
            vals.update(values(d_ff=self.intermediate_size))
        if "moe" in ffns:
            vals.update(values(E=self.num_experts, k=self.num_experts_per_token,
                               E_s=self.num_shared_experts or None, d_moe=self.moe_intermediate_size,
                               d_lat=self.routed_expert_hidden_size))
        post = [Norms(("norm",))]
        if self.attn_res_block_size is not None:
            post.append(AttnResidualOutput())
            vals[sym.R_ar] = sympy.Integer(score_rows(self.num_hidden_layers, self.attn_res_block_size))
        notes = [f"reference: SGLang KimiK3LinearForCausalLM (transformers has no kimi_k3 class); KDA prefill "
                 f"FLOPs under impl=reference follow the torch chunked scan with C_dn = {CHUNK}",
                 "the vision tower (MoonViT3d) and its projector are not counted: text model only"]
        if self.attn_res_block_size is not None:
            notes.append(f"attention residuals: R_ar = {vals[sym.R_ar]} scored rows per token per forward "
                         f"(blocks of attn_res_block_size = {self.attn_res_block_size} layers)")
        return Model(self.name, "kimi_k3", (Embedding(),), groups, (*post, LMHead(tied=False)), vals,
                     notes=notes, state_dtype={"recurrent_state": "fp32"},
                     layer_order=kind_order(list(zip(mixers, ffns)), groups))


@register("kimi_k3")
class KimiK3Adapter(Adapter):
    reference: ClassVar[str] = "KimiK3ForConditionalGeneration (no transformers class: SGLang models/kimi_k3.py)"

    text_config: dict | None = None

    @model_validator(mode="after")
    def _consistent(self):
        self.text()
        return self

    def text(self) -> KimiK3Text:
        return nested(KimiK3Text, self.text_config, "text_config", model_type="kimi_linear", name=self.name)

    def to_model(self) -> Model:
        # not ``wrapping``: the text model is SGLang's K3 stack, not transformers' kimi_linear (whose
        # measured activations and oracles do not apply to it)
        return self.text().to_model()
