"""OLMo-Hybrid: Gated DeltaNet linear-attention layers and OLMo-3 full-attention layers.

transformers ``OlmoHybridForCausalLM``: ``model.embed_tokens``, one layer per entry of
``layer_types`` (default: every 4th layer ``full_attention``, the last one if no 4th exists; the
class requires at least one layer of each kind), ``norm``, ``lm_head``.
    ``linear_attention`` (``OlmoHybridLinearAttentionDecoderLayer``): Llama pre-norms
        (input_layernorm, post_attention_layernorm) around a Gated DeltaNet
        (``OlmoHybridGatedDeltaNet``: ``components.gated_deltanet`` with ``separate_proj`` —
        q_proj, k_proj, v_proj, a_proj, b_proj, g_proj, o_proj; the same weights, FLOPs and torch
        chunked scan as Qwen3-Next's) and the MLP.
    ``full_attention`` (``OlmoHybridAttentionDecoderLayer``): OLMo-2 post-norms
        (post_attention_layernorm, post_feedforward_layernorm) after attention with q/k RMSNorm
        over the whole projection (H_q·D_h, H_kv·D_h), biases with ``attention_bias``, RoPE unless
        ``rope_parameters.rope_theta`` is null (NoPE), and after the MLP.
The MLP is SwiGLU of ``intermediate_size``, no biases. DeltaNet sizes: H_lk =
``linear_num_key_heads`` and H_lv = ``linear_num_value_heads`` (default H_q), D_lk =
``linear_key_head_dim`` (default int(0.75·d/H_lk)), D_lv = ``linear_value_head_dim`` (default
2·D_lk), K_c = ``linear_conv_kernel_dim``; the recurrent state is float32 (``Model.state_dtype``).
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.gated_deltanet import GatedDeltaNet
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, layer_order
from . import register
from .base import Adapter, GQAHeads, LayerCount, PosInt, quote, values
from .llama import LAYER_NORMS
from .olmo import OLMO2_SAVES, POST_NORMS
from .qwen3_next import CHUNK

KINDS = ("linear_attention", "full_attention")


@register("olmo_hybrid")
class OlmoHybridAdapter(GQAHeads, Adapter):
    reference: ClassVar[str] = "OlmoHybridForCausalLM"

    vocab_size: PosInt = 100_352
    hidden_size: PosInt = 3840
    intermediate_size: PosInt = 11_008
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 30
    num_key_value_heads: PosInt | None = None
    head_dim: PosInt | None = None
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    rope_parameters: dict | None = None
    layer_types: list[str] | None = None
    linear_num_key_heads: PosInt | None = None
    linear_num_value_heads: PosInt | None = None
    linear_key_head_dim: PosInt | None = None
    linear_value_head_dim: PosInt | None = None
    linear_conv_kernel_dim: PosInt = 4

    @model_validator(mode="after")
    def _consistent(self):
        H_q, H_kv = self.num_attention_heads, self.H_kv
        if H_q % H_kv:
            self.fail("num_key_value_heads", f"num_attention_heads={H_q} is not divisible by "
                      f"num_key_value_heads={H_kv}")
        if self.H_lv % self.H_lk:
            self.fail("linear_num_value_heads", f"linear_num_value_heads={self.H_lv} is not divisible by "
                      f"linear_num_key_heads={self.H_lk}")
        if self.D_lk < 1:
            self.fail("linear_key_head_dim", f"the default int(0.75·hidden_size/linear_num_key_heads) is "
                      f"{self.D_lk}: give a positive linear_key_head_dim")
        kinds = self.kinds()
        if "linear_attention" not in kinds or "full_attention" not in kinds:
            self.fail("layer_types", "OLMo-Hybrid needs at least one linear_attention and one "
                      "full_attention layer")
        return self


    @property
    def H_lk(self) -> int:
        return self.linear_num_key_heads or self.num_attention_heads

    @property
    def H_lv(self) -> int:
        return self.linear_num_value_heads or self.num_attention_heads

    @property
    def D_lk(self) -> int:
        return self.linear_key_head_dim or int(0.75 * self.hidden_size / self.H_lk)

    @property
    def D_lv(self) -> int:
        return self.linear_value_head_dim or 2 * self.D_lk

    @property
    def rope(self) -> bool:
        """NoPE when the config states ``rope_parameters`` with a null ``rope_theta``."""
        return not (isinstance(self.rope_parameters, dict) and "rope_theta" in self.rope_parameters
                    and self.rope_parameters["rope_theta"] is None)

    def kinds(self) -> list[str]:
        L = self.num_hidden_layers
        if self.layer_types is None:
            kinds = ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(L)]
            if "full_attention" not in kinds:
                kinds[-1] = "full_attention"
            return kinds
        self.check_count("layer_types", len(self.layer_types), L)
        unknown = sorted(set(self.layer_types) - set(KINDS))
        if unknown:
            self.fail("layer_types", f"unknown layer type(s) {quote(unknown)} (expected {', '.join(KINDS)})")
        return list(self.layer_types)

    def to_model(self) -> Model:
        kinds = self.kinds()
        n_lin = kinds.count("linear_attention")
        mlp = FFN()
        # OlmoHybridRMSNorm multiplies its weight into the fp32 x̂ ((weight · x̂).to(dtype)) and the rotary
        # embedding returns cos/sin in float32: both kept in fp32 (saved tensors only)
        lin = (Norms(LAYER_NORMS, kind="fp32_normed"), GatedDeltaNet(separate_proj=True), mlp)
        full = (Norms(POST_NORMS, kind="fp32_normed"),
                Attention(qkv_bias=self.attention_bias, o_bias=self.attention_bias, qk_norm_full=True,
                          rope=self.rope, saves=OLMO2_SAVES), mlp)
        groups = (LayerGroup("linear_layers", sym.L_lin, lin), LayerGroup("attention_layers", sym.L_full, full))
        vals = values(d=self.hidden_size, V=self.vocab_size, d_ff=self.intermediate_size,
                      L_lin=n_lin, L_full=len(kinds) - n_lin,
                      H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h,
                      H_lk=self.H_lk, H_lv=self.H_lv, D_lk=self.D_lk, D_lv=self.D_lv,
                      K_c=self.linear_conv_kernel_dim, C_dn=CHUNK)
        return Model(self.name, self.model_type, (Embedding(),), groups,
                     (Norms(("norm",), kind="fp32_normed"), LMHead(tied=self.tie_word_embeddings)), vals,
                     notes=["Gated DeltaNet prefill FLOPs follow the torch chunked scan: T padded to a "
                            f"multiple of C_dn = {CHUNK}; the decode recurrence is elementwise (0 matmul FLOPs)."],
                     state_dtype={"recurrent_state": "fp32"},
                     layer_order=layer_order(kinds, lambda k: "linear_layers" if k == "linear_attention"
                                             else "attention_layers"))
