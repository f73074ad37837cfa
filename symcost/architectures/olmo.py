"""OLMo decoders: olmo (v1), olmo2, olmo3 (sliding/full pattern), olmoe (MoE), flex_olmo (OLMo-2 wiring + MoE).

OLMo (v1, transformers ``OlmoDecoderLayer``): the Llama layer with weightless LayerNorms
(``OlmoLayerNorm``: ``F.layer_norm`` in float32 without weight or bias, 0 parameters) before
attention, before the MLP and at the end; q/k/v/o biases with ``attention_bias``; a SwiGLU MLP of
``intermediate_size`` that never has biases (``OlmoMLP``); ``head_dim`` if the config has one,
else d/H_q; ``clip_qkv`` clamps q, k and v elementwise (0 FLOPs; its comparisons are not in the
elementwise count either). Per layer 2·d·H_q·D_h + 2·d·H_kv·D_h + 3·d·d_ff parameters (+ biases).

OLMo-2 layer (transformers ``Olmo2DecoderLayer``): attention → post_attention_layernorm, then
MLP → post_feedforward_layernorm (norms after the sublayers, none before: 2 RMSNorms of d); q/k
RMSNorm over the whole projection, H_q·D_h and H_kv·D_h; SwiGLU of ``intermediate_size``;
``attention_bias`` on q/k/v/o. OLMo-3 (``Olmo3DecoderLayer``) is the same layer with
``layer_types`` (default: three sliding-window layers then one full, ``sliding_window`` 4096).
OLMoE (``OlmoeDecoderLayer``): Llama pre-norms (input/post_attention RMSNorm), q norm over d and k
norm over H_kv·d/H_q (D_h = d/H_q), and ``OlmoeSparseMoeBlock``: router d·E without bias and E
SwiGLU experts of ``intermediate_size`` (d_ff), k per token, no shared expert. FlexOlmo
(``FlexOlmoDecoderLayer``): OLMo-2 layer with OLMoE's MoE block.
"""
from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention, AttentionSaves, RopeTable
from ..components.ffn import FFN
from ..components.moe import WEIGHTS_CAST, MoE
from ..components.norm import Norms
from ..core.notation import sym
from . import register
from .base import LayerCount, PosInt, values
from .llama import LlamaAdapter

#: OlmoRotaryEmbedding keeps its cos/sin table in float32 (saved tensors only)
OLMO_SAVES = AttentionSaves(rope=RopeTable(fp32=True))
#: OLMo 2's q/k RMSNorms keep their normed output in fp32 ((weight · x̂).to(dtype))
OLMO2_SAVES = replace(OLMO_SAVES, qk_norm="fp32_normed")

POST_NORMS = ("post_attention_layernorm", "post_feedforward_layernorm")


@register("olmo")
class OlmoAdapter(LlamaAdapter):
    reference: ClassVar[str] = "OlmoForCausalLM"
    norm_bias: ClassVar[bool] = True  # LayerNorms, weightless below

    vocab_size: PosInt = 50_304
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 11_008
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32
    clip_qkv: float | None = None

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers  # OlmoAttention has no window

    def ffn(self) -> FFN:
        return FFN()  # OlmoMLP: no biases whatever mlp_bias says

    def attention(self, window) -> Attention:
        # OlmoRotaryEmbedding returns cos and sin in float32; clip_qkv clamps q, k, v in place
        return Attention(qkv_bias=self.attention_bias, o_bias=self.attention_bias,
                         saves=replace(OLMO_SAVES, clip_qkv=self.clip_qkv is not None))

    def to_model(self):
        model = super().to_model()
        weightless = lambda c: replace(c, weightless=True) if isinstance(c, Norms) else c  # noqa: E731
        model.groups = tuple(replace(g, components=tuple(map(weightless, g.components))) for g in model.groups)
        model.post = tuple(map(weightless, model.post))
        return model


@register("olmo2")
class Olmo2Adapter(LlamaAdapter):
    reference: ClassVar[str] = "Olmo2ForCausalLM"
    layer_norms: ClassVar[tuple[str, ...]] = POST_NORMS
    #: Olmo2RMSNorm's ``(weight · x̂).to(dtype)``: the normed output is kept in fp32 (saved tensors only;
    #: a subclass whose RMSNorm casts x̂ first, EXAONE 4, turns it off)
    fp32_normed_norms: ClassVar[bool] = True

    vocab_size: PosInt = 50_304
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 11_008
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def attention(self, window) -> Attention:
        # Olmo2RMSNorm multiplies its weight into the fp32 x̂ (``(weight · x̂).to(dtype)``), the rotary
        # embedding returns cos and sin in float32 (saved tensors only)
        return Attention(W=window, qkv_bias=self.attention_bias, o_bias=self.attention_bias,
                         qk_norm_full=True, saves=OLMO2_SAVES)

    def to_model(self):
        model = super().to_model()
        if not self.fp32_normed_norms:
            return model
        fp32 = lambda c: replace(c, kind="fp32_normed") if isinstance(c, Norms) else c  # noqa: E731
        model.groups = tuple(replace(g, components=tuple(map(fp32, g.components))) for g in model.groups)
        model.post = tuple(map(fp32, model.post))
        return model


@register("olmo3")
class Olmo3Adapter(Olmo2Adapter):
    reference: ClassVar[str] = "Olmo3ForCausalLM"

    sliding_window: PosInt | None = 4096

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        return ["sliding_attention" if (i + 1) % 4 else "full_attention"
                for i in range(self.num_hidden_layers)]

    def attention(self, window) -> Attention:
        # Olmo3RotaryEmbedding computes one cos/sin table per layer type present (saved tensors only)
        a = super().attention(window)
        return replace(a, saves=a.saves.with_rope(name="sliding_attention" if window else "full_attention"))


class _OlmoMoe:
    """The MoE fields and block shared by olmoe and flex_olmo (experts of intermediate_size)."""

    @model_validator(mode="after")
    def _moe_consistent(self):
        if self.num_experts_per_tok > self.num_experts:
            self.fail("num_experts_per_tok", f"num_experts_per_tok={self.num_experts_per_tok} exceeds "
                      f"num_experts={self.num_experts}")
        return self

    def ffn(self) -> MoE:
        # OlmoeTopKRouter: Qwen3-MoE's router (renormalised only with norm_topk_prob, cast back to the
        # compute dtype): training activations only
        return MoE(d_moe=sym.d_ff, norm_topk=self.norm_topk_prob, saves=WEIGHTS_CAST)

    def to_model(self):
        model = super().to_model()
        model.values.update(values(E=self.num_experts, k=self.num_experts_per_tok))
        return model


@register("olmoe")
class OlmoeAdapter(_OlmoMoe, LlamaAdapter):
    reference: ClassVar[str] = "OlmoeForCausalLM"

    vocab_size: PosInt = 50_304
    hidden_size: PosInt = 2048
    intermediate_size: PosInt = 2048
    num_hidden_layers: LayerCount = 16
    num_attention_heads: PosInt = 16
    num_experts: PosInt = Field(64, validation_alias=AliasChoices("num_local_experts", "num_experts"))
    num_experts_per_tok: PosInt = 8
    norm_topk_prob: bool = False  # renormalise the top-k routing weights (training activations only)

    @model_validator(mode="after")
    def _olmoe_consistent(self):
        self.require_divisible("hidden_size", "num_attention_heads")
        if self.head_dim is not None and self.head_dim != self.hidden_size // self.num_attention_heads:
            self.fail("head_dim", f"head_dim={self.head_dim}: OlmoeAttention's q/k norms need "
                      f"hidden_size // num_attention_heads = {self.hidden_size // self.num_attention_heads}")
        return self

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def attention(self, window) -> Attention:
        # q_norm over d = H_q·D_h, k_norm over H_kv·D_h (D_h = d/H_q)
        return Attention(qkv_bias=self.attention_bias, o_bias=self.attention_bias, qk_norm_full=True)


@register("flex_olmo")
class FlexOlmoAdapter(_OlmoMoe, Olmo2Adapter):
    reference: ClassVar[str] = "FlexOlmoForCausalLM"

    vocab_size: PosInt = 100_352
    num_experts: PosInt = Field(7, validation_alias=AliasChoices("num_local_experts", "num_experts"))
    num_experts_per_tok: PosInt = 5
    norm_topk_prob: bool = False  # renormalise the top-k routing weights (training activations only)
    # FlexOlmoRMSNorm and FlexOlmoRotaryEmbedding are OLMo-2's: the fp32 normed output and cos/sin
    # come with Olmo2Adapter
