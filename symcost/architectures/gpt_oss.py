"""gpt-oss (transformers ``GptOssForCausalLM``): GQA with biases and sinks, sliding/full layers, MoE.

Each layer: RMSNorm → attention (q/k/v/o with biases when ``attention_bias``, default on; one
learned sink logit per head, concatenated to the scores before the softmax: a parameter, no
matmul) → RMSNorm → MoE (router d·E + E bias; E experts with ``gate_up_proj`` [d, 2·d_moe] + bias
and ``down_proj`` [d_moe, d] + bias, k per token, clamped SwiGLU). The expert width d_moe is
``intermediate_size``. Layers alternate sliding (W, first) and full attention unless
``layer_types`` says otherwise; a sliding layer's cache keeps min(T, W−1) tokens. The head is untied.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention, AttentionSaves, RopeTable
from ..components.embedding import Embedding, LMHead
from ..components.moe import MoE, MoESaves
from ..components.norm import Norms
from ..model.assembly import Model
from . import register
from .base import Int, PosInt, values
from .gemma import alternating_layer_types, window_groups
from .llama import LAYER_NORMS, LlamaAdapter, window_order

#: _apply_rotary_emb: a D_h/2-wide cos/sin table rotates each half of q and k (saved tensors only)
GPT_OSS_SAVES = AttentionSaves(rope=RopeTable(half=True))


@register("gpt_oss")
class GptOssAdapter(LlamaAdapter):
    reference: ClassVar[str] = "GptOssForCausalLM"

    num_local_experts: PosInt = Field(validation_alias=AliasChoices("num_experts", "num_local_experts"))
    num_experts_per_tok: PosInt = 4
    num_key_value_heads: PosInt | None = 8
    head_dim: PosInt | None = 64
    sliding_window: Int | None = 128
    attention_bias: bool = True

    @model_validator(mode="after")
    def _router(self):
        self.check_top_k("num_local_experts")
        return self

    def resolved_layer_types(self) -> list[str]:
        return alternating_layer_types(self.layer_types, self.num_hidden_layers)

    def layer(self, window):
        return (Norms(LAYER_NORMS, kind="fp32_normed"),
                Attention(W=window, qkv_bias=self.attention_bias, o_bias=self.attention_bias,
                          sinks=True, saves=GPT_OSS_SAVES),
                # GptOssTopKRouter and the clamped GLU experts (training activations only)
                MoE(router_bias=True, expert_bias=True, router="topk_softmax",
                    saves=MoESaves(router_fp32=False, weights_fp32=False, glu="clamped")))

    def to_model(self) -> Model:
        types = self.resolved_layer_types()
        groups, vals = window_groups(types, self.layer)
        vals.update(values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                           H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h,
                           E=self.num_local_experts, k=self.num_experts_per_tok,
                           d_moe=self.intermediate_size))
        if "sliding_attention" in types:
            vals.update(values(W=self.sliding_window))
        return Model(self.name, self.model_type, (Embedding(),), groups,
                     (Norms(("norm",), kind="fp32_normed"), LMHead(tied=self.tie_word_embeddings)), vals,
                     notes=["expert weights are MXFP4 in the checkpoint: bytes depend on the dtype, "
                            "the parameter count does not"], layer_order=window_order(types))
