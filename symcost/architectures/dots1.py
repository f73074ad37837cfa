"""dots.llm1 (``dots1``): Qwen3-style attention with DeepSeek-V3-style MoE layers.

Each layer (transformers ``Dots1DecoderLayer``): input/post_attention RMSNorm; GQA with
``attention_bias`` on q/k/v/o and a per-head RMSNorm on q and k (D_h); the first
``first_k_dense_replace`` layers have a dense SwiGLU of ``intermediate_size``, the rest
``Dots1MoE``: router d·E (no bias) with an ``e_score_correction_bias`` [E] *buffer*, E SwiGLU
experts of ``moe_intermediate_size``, k per token, and a shared SwiGLU of
``n_shared_experts``·d_moe (d_sh). ``layer_types`` defaults to sliding-window layers from
``max_window_layers`` on when ``sliding_window`` is set (``Dots1Config``).
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding
from ..components.ffn import FFN
from ..components.moe import MoE
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import Model, kind_order
from . import register
from .base import LayerCount, NonNegInt, PosInt, values
from .llama import LAYER_NORMS, LlamaAdapter
from .qwen_moe import group_layers


@register("dots1")
class Dots1Adapter(LlamaAdapter):
    reference: ClassVar[str] = "Dots1ForCausalLM"

    vocab_size: PosInt = 152_064
    hidden_size: PosInt = 4608
    intermediate_size: PosInt = 10_944
    moe_intermediate_size: PosInt = 1408
    num_hidden_layers: LayerCount = 62
    num_attention_heads: PosInt = 32
    num_key_value_heads: PosInt | None = 32
    n_shared_experts: PosInt  # Dots1MoE always builds the shared expert (None would not build)
    n_routed_experts: PosInt = Field(validation_alias=AliasChoices("num_local_experts", "n_routed_experts"))
    num_experts_per_tok: PosInt | None = None  # Dots1Config's default; the router needs one
    first_k_dense_replace: NonNegInt = 0
    sliding_window: PosInt | None = 4096
    max_window_layers: int = 62
    norm_topk_prob: bool | None = False  # renormalise the top-k routing weights (training activations only)

    @model_validator(mode="after")
    def _dots_consistent(self):
        if self.num_experts_per_tok is None:
            self.fail("num_experts_per_tok", "is null (Dots1Config's default): the router picks k experts "
                      "per token, so a count is needed")
        if self.num_experts_per_tok > self.n_routed_experts:
            self.fail("num_experts_per_tok", f"num_experts_per_tok={self.num_experts_per_tok} exceeds "
                      f"n_routed_experts={self.n_routed_experts}")
        return self

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        return ["sliding_attention" if self.sliding_window is not None and i >= self.max_window_layers
                else "full_attention" for i in range(self.num_hidden_layers)]

    def layer(self, mixer: str, ffn: str):
        attn = Attention(W=sym.W if mixer == "swa" else None, qkv_bias=self.attention_bias,
                         o_bias=self.attention_bias, qk_norm=True)
        mlp = FFN() if ffn == "dense" else MoE(d_sh=sym.d_sh, correction_bias=True,
                                                         # Dots1TopkRouter: DeepSeek-V3's (activations only)
                                                         router="sigmoid_group", norm_topk=bool(self.norm_topk_prob))
        return (Norms(LAYER_NORMS), attn, mlp)

    def to_model(self) -> Model:
        mixers = ["swa" if t == "sliding_attention" else "full" for t in self.resolved_layer_types()]
        kinds = [(m, "dense" if i < self.first_k_dense_replace else "moe") for i, m in enumerate(mixers)]
        groups, vals = group_layers(kinds, self.layer)
        vals.update(values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                           H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h))
        if "swa" in mixers:
            if self.sliding_window is None:
                self.fail("sliding_window", "sliding-attention layers need a sliding_window")
            vals.update(values(W=self.sliding_window))
        if any(f == "dense" for _, f in kinds):
            vals.update(values(d_ff=self.intermediate_size))
        if any(f == "moe" for _, f in kinds):
            vals.update(values(E=self.n_routed_experts, k=self.num_experts_per_tok,
                               d_moe=self.moe_intermediate_size,
                               d_sh=self.n_shared_experts * self.moe_intermediate_size))
        return Model(self.name, self.model_type, (Embedding(),), groups,
                     (Norms(("norm",)), self.head()), vals, layer_order=kind_order(kinds, groups))
