"""Qwen3-Next: a hybrid of Gated DeltaNet and gated full-attention layers, MoE FFN with a shared expert.

Each layer (transformers ``Qwen3NextDecoderLayer``): RMSNorm → mixer → RMSNorm → FFN.
The mixer follows ``layer_types`` (default: every ``full_attention_interval``-th layer is
``full_attention``, the rest ``linear_attention``): Gated DeltaNet (``components.gated_deltanet``)
or GQA attention with per-head q/k RMSNorm and a sigmoid output gate folded into q_proj
(2·H_q·D_h wide). The FFN is an MoE (router, E experts of ``moe_intermediate_size``, one shared
expert of ``shared_expert_intermediate_size`` with a sigmoid gate d → 1) unless the layer is in
``mlp_only_layers`` or off the ``decoder_sparse_step``; then a dense SwiGLU of ``intermediate_size``.
The checkpoint's MTP module (``mtp.*``) is not built by transformers and not counted here.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.gated_deltanet import GatedDeltaNet
from ..components.moe import WEIGHTS_CAST, MoE
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import Model, kind_order
from . import register
from .base import Adapter, Int, LayerCount, NonNegInt, PosInt, quote, values
from .llama import LAYER_NORMS
from .qwen_moe import group_layers

CHUNK = 64  # torch_chunk_gated_delta_rule's chunk_size


@register("qwen3_next")
class Qwen3NextAdapter(Adapter):
    reference: ClassVar[str] = "Qwen3NextForCausalLM"
    split_proj: ClassVar[bool] = False  # Qwen3.5: four DeltaNet input projections (same weights)

    hidden_size: PosInt
    vocab_size: PosInt
    num_hidden_layers: LayerCount
    num_attention_heads: PosInt
    num_key_value_heads: PosInt = 2
    head_dim: PosInt = 256
    intermediate_size: PosInt = 5632  # dense layers only
    attention_bias: bool = False
    tie_word_embeddings: bool = False
    linear_conv_kernel_dim: PosInt = 4
    linear_key_head_dim: PosInt
    linear_value_head_dim: PosInt
    linear_num_key_heads: PosInt
    linear_num_value_heads: PosInt
    num_experts: NonNegInt
    num_experts_per_tok: PosInt
    moe_intermediate_size: PosInt
    shared_expert_intermediate_size: PosInt
    decoder_sparse_step: PosInt = 1
    norm_topk_prob: bool = True
    mlp_only_layers: list[Int] | None = None
    layer_types: list[str] | None = None
    full_attention_interval: PosInt = 4

    @model_validator(mode="after")
    def _consistent(self):
        if self.num_attention_heads % self.num_key_value_heads:
            self.fail("num_key_value_heads", f"num_attention_heads={self.num_attention_heads} is not "
                      f"divisible by num_key_value_heads={self.num_key_value_heads}")
        if self.linear_num_value_heads % self.linear_num_key_heads:
            self.fail("linear_num_value_heads", f"linear_num_value_heads={self.linear_num_value_heads} "
                      f"is not divisible by linear_num_key_heads={self.linear_num_key_heads}")
        if self.layer_types is not None:
            self.check_count("layer_types", len(self.layer_types), self.num_hidden_layers)
            unknown = set(self.layer_types) - {"full_attention", "linear_attention"}
            if unknown:
                self.fail("layer_types", f"unknown layer type(s) {quote(sorted(unknown))} "
                          "(expected full_attention, linear_attention)")
        if self.num_experts:
            self.check_top_k("num_experts")
        return self

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        return ["full_attention" if (i + 1) % self.full_attention_interval == 0 else "linear_attention"
                for i in range(self.num_hidden_layers)]

    def ffn_kind(self, i: int) -> str:
        moe = (i not in (self.mlp_only_layers or []) and self.num_experts > 0
               and (i + 1) % self.decoder_sparse_step == 0)
        return "moe" if moe else "dense"

    def layer(self, mixer: str, ffn: str):
        mix = (GatedDeltaNet(split_proj=self.split_proj) if mixer == "lin" else
               Attention(qkv_bias=self.attention_bias, o_bias=self.attention_bias, qk_norm=True,
                         output_gate=True))
        # the router's top-k weights are cast back to the compute dtype (what backward keeps)
        mlp = (MoE(d_sh=sym.d_sh, shared_gate=True, saves=WEIGHTS_CAST, norm_topk=self.norm_topk_prob is not False)
               if ffn == "moe" else FFN())
        return (Norms(LAYER_NORMS, kind="offset"), mix, mlp)

    def to_model(self) -> Model:
        mixers = ["lin" if t == "linear_attention" else "full" for t in self.resolved_layer_types()]
        kinds = [(m, self.ffn_kind(i)) for i, m in enumerate(mixers)]
        groups, counts = group_layers(kinds, self.layer)
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers)
        vals.update(counts)
        if "full" in mixers:
            vals.update(values(H_q=self.num_attention_heads, H_kv=self.num_key_value_heads,
                               D_h=self.head_dim))
        if "lin" in mixers:
            vals.update(values(H_lk=self.linear_num_key_heads, H_lv=self.linear_num_value_heads,
                               D_lk=self.linear_key_head_dim, D_lv=self.linear_value_head_dim,
                               K_c=self.linear_conv_kernel_dim, C_dn=CHUNK))
        if any(f == "dense" for _, f in kinds):
            vals.update(values(d_ff=self.intermediate_size))
        if any(f == "moe" for _, f in kinds):
            vals.update(values(E=self.num_experts, k=self.num_experts_per_tok,
                               d_moe=self.moe_intermediate_size, d_sh=self.shared_expert_intermediate_size))
        notes = ["Gated DeltaNet prefill FLOPs follow the torch chunked scan: T padded to a multiple "
                 f"of C_dn = {CHUNK}; the decode recurrence is elementwise (0 matmul FLOPs)."]
        return Model(self.name, self.model_type, (Embedding(),), groups,
                     (Norms(("norm",), kind="offset"), LMHead(tied=self.tie_word_embeddings)), vals,
                     notes=notes, state_dtype={"recurrent_state": "fp32"}, layer_order=kind_order(kinds, groups))
