"""Small Llama variants: arcee (AFM), nemotron (Nemotron-4 / Minitron), helium, stablelm.

Arcee (transformers ``ArceeDecoderLayer``): Llama wiring with an ungated MLP, ``up_proj`` d→d_ff,
relu², ``down_proj`` d_ff→d (``mlp_bias``). Nemotron (``NemotronDecoderLayer``): the same ungated
relu² MLP, ``LayerNorm1P`` norms (weight and bias, 2·d each, also the final norm), partial rotary
(0 parameters), ``attention_bias`` on q/k/v/o. Helium (``HeliumDecoderLayer``): Llama, but
``o_proj`` is d→d without bias (so H_q·D_h must equal d); head_dim 128 by default.
StableLM (``StableLmDecoderLayer``): LayerNorms with bias, q/k/v bias when ``use_qkv_bias``, o_proj
d→d without bias, D_h = d/H_q, SwiGLU; with ``qk_layernorm`` one bias-free LayerNorm per head on q
and on k (H_q·D_h and H_kv·D_h weights); with ``use_parallel_residual`` attention and MLP share
the input norm and there is no post_attention_layernorm.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

from pydantic import model_validator

from ..components.attention import Attention, AttentionSaves
from ..components.ffn import FFN
from . import register
from .base import LayerCount, PartialRotary, PosInt
from .llama import LlamaAdapter

#: StableLmLayerNormPerHead: one nn.LayerNorm per head, applied head by head (saved tensors only)
STABLELM_SAVES = AttentionSaves(qk_norm="per_head_layernorm")


class _Full:
    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers


@register("arcee")
class ArceeAdapter(_Full, LlamaAdapter):
    reference: ClassVar[str] = "ArceeForCausalLM"

    vocab_size: PosInt = 32_000
    hidden_size: PosInt = 2560
    intermediate_size: PosInt = 18_432
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32

    def ffn(self) -> FFN:
        return FFN(gated=False, bias=self.mlp_bias, act="relu2")


@register("nemotron")
class NemotronAdapter(PartialRotary, ArceeAdapter):
    reference: ClassVar[str] = "NemotronForCausalLM"
    norm_bias: ClassVar[bool] = True
    norm_kw: ClassVar[dict] = {"kind": "weight_plus_one"}  # NemotronLayerNorm1P: layer_norm(x, w + 1, b)
    rotary_default: ClassVar[float] = 0.5

    vocab_size: PosInt = 256_000
    hidden_size: PosInt = 6144
    intermediate_size: PosInt = 24_576
    num_attention_heads: PosInt = 48

    @model_validator(mode="after")
    def _kv_given(self):
        if self.num_key_value_heads is None:  # NemotronAttention divides by it as stored (None)
            self.fail("num_key_value_heads", "required: NemotronConfig keeps None and the attention cannot use it")
        return self

    def attention(self, window) -> Attention:
        a = super().attention(window)
        return dataclasses.replace(a, saves=a.saves.with_rope(D_rot=self.D_rot(self.D_h)))


@register("helium")
class HeliumAdapter(_Full, LlamaAdapter):
    reference: ClassVar[str] = "HeliumForCausalLM"
    norm_kw: ClassVar[dict] = {"kind": "fp32_weight"}  # HeliumRMSNorm: (weight.float() · x̂).to(dtype)

    vocab_size: PosInt = 48_000
    hidden_size: PosInt = 2560
    intermediate_size: PosInt = 7040
    num_hidden_layers: LayerCount = 24
    num_attention_heads: PosInt = 20
    num_key_value_heads: PosInt | None = 20
    head_dim: PosInt | None = 128

    @model_validator(mode="after")
    def _helium_consistent(self):
        if self.num_attention_heads * self.D_h != self.hidden_size:
            self.fail("head_dim", f"num_attention_heads·head_dim = {self.num_attention_heads * self.D_h} "
                      f"must equal hidden_size={self.hidden_size} (HeliumAttention's o_proj is d→d)")
        return self

    def attention(self, window) -> Attention:
        # apply_rotary_pos_emb interleaves cos/sin (repeat_interleave) in every layer
        return Attention(qkv_bias=self.attention_bias, saves=AttentionSaves().with_rope(per_layer=True))


@register("stablelm")
class StableLmAdapter(_Full, PartialRotary, LlamaAdapter):
    reference: ClassVar[str] = "StableLmForCausalLM"
    norm_bias: ClassVar[bool] = True

    vocab_size: PosInt = 50_304
    intermediate_size: PosInt = 6912
    hidden_size: PosInt = 2560
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32
    num_key_value_heads: PosInt | None = 32
    use_qkv_bias: bool = False
    qk_layernorm: bool = False
    use_parallel_residual: bool = False
    rotary_default: ClassVar[float] = 0.25

    @model_validator(mode="after")
    def _stablelm_consistent(self):
        self.require_divisible("hidden_size", "num_attention_heads")
        return self

    @property
    def D_h(self) -> int:  # StableLmAttention: hidden_size // num_heads, whatever head_dim says
        return self.hidden_size // self.num_attention_heads

    @property
    def layer_norms(self) -> tuple[str, ...]:
        if self.use_parallel_residual:
            return ("input_layernorm",)
        return ("input_layernorm", "post_attention_layernorm")

    def attention(self, window) -> Attention:
        return Attention(qkv_bias=self.use_qkv_bias, qk_norm_full=self.qk_layernorm,
                         saves=STABLELM_SAVES.with_rope(D_rot=self.D_rot(self.D_h)))

    def ffn(self) -> FFN:  # parallel residual: the MLP reads the tensor attention keeps
        return FFN(bias=self.mlp_bias, shared_input=self.use_parallel_residual)
