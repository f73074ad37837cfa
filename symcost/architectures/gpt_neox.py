"""GPT-NeoX / Pythia (``gpt_neox``): MHA with a fused qkv, LayerNorms, plain GELU MLP.

Each layer (transformers ``GPTNeoXLayer``): input_layernorm and post_attention_layernorm
(LayerNorms, 2·d each); attention ``query_key_value`` d→3d and ``dense`` d→d, both with a bias
when ``attention_bias`` (default true), D_h = d/H_q, H_kv = H_q (the fused qkv is the same weights
and GEMM FLOPs as q/k/v_proj); rotary on ``partial_rotary_factor`` of each head (0 parameters);
MLP ``dense_h_to_4h`` d→d_ff and ``dense_4h_to_h`` d_ff→d, always with biases. With
``use_parallel_residual`` (default) h = x + attn(LN₁(x)) + mlp(LN₂(x)), else serial: the same
weights and GEMMs either way, so the flag changes no parameter or FLOP count (training
activations: both LayerNorms read x, which is saved once). Final LayerNorm; ``embed_out`` head
without bias, untied by default.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import model_validator

from ..components.attention import Attention, AttentionSaves, RopeTable
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from . import register
from .base import LayerCount, PartialRotary, PosInt
from .llama import LlamaAdapter


@register("gpt_neox")
class GPTNeoXAdapter(PartialRotary, LlamaAdapter):
    reference: ClassVar[str] = "GPTNeoXForCausalLM"
    final_norm: ClassVar[str] = "final_layer_norm"
    norm_bias: ClassVar[bool] = True

    vocab_size: PosInt = 50_432
    hidden_size: PosInt = 6144
    num_hidden_layers: LayerCount = 44
    num_attention_heads: PosInt = 64
    intermediate_size: PosInt = 24_576
    attention_bias: bool = True
    use_parallel_residual: bool = True
    rotary_pct: float | None = None  # GPTNeoXConfig's spelling of partial_rotary_factor
    rotary_default: ClassVar[float] = 0.25

    @property
    def top_rotary_factor(self) -> float | None:  # the top-level partial_rotary_factor is not read
        return self.rotary_pct

    @property
    def norm_kw(self) -> dict:  # parallel residual: both LayerNorms read x, kept once
        return {"same_input": self.layer_norms[1:] if self.use_parallel_residual else ()}

    @model_validator(mode="after")
    def _neox_consistent(self):
        self.require_divisible("hidden_size", "num_attention_heads")
        return self

    # GPTNeoXAttention reads neither num_key_value_heads nor head_dim
    @property
    def H_kv(self) -> int:
        return self.num_attention_heads

    @property
    def D_h(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def attention(self, window) -> Attention:
        return Attention(qkv_bias=self.attention_bias, o_bias=self.attention_bias,
                         saves=AttentionSaves(fused_qkv=True, rope=RopeTable(D_rot=self.D_rot(self.D_h))))

    def ffn(self) -> FFN:
        return FFN(gated=False, bias=True, act="gelu")

    def embedding(self) -> Embedding:
        return Embedding(name="embed_in")

    def head(self) -> LMHead:
        return LMHead(tied=self.tie_word_embeddings)
