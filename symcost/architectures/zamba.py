"""Zamba (v1): Mamba-1 layers, some preceded by one shared transformer block (no adapters).

transformers ``ZambaForCausalLM``: ``model.embed_tokens`` (V·d), one layer per entry of
``layers_block_type`` (alias ``layer_types``; default two Mamba layers, a hybrid one, then hybrid
where i mod ``attn_layer_period`` = ``attn_layer_offset`` over the remaining L − 3):
    ``linear_attention``: input_layernorm RMSNorm(d) → Mamba-1 mixer (``ZambaMambaMixer``:
        ``components.mamba`` with d_ssm = ``mamba_expand``·d split into ``n_mamba_heads`` heads
        with their own x_proj, dt_proj and scans — the same weights and FLOPs as one Mamba-1
        mixer; R_dt = ``mamba_dt_rank`` ("auto": ⌈d/16⌉), N = ``mamba_d_state``, K_c =
        ``mamba_d_conv``, biases with ``mamba_proj_bias`` / ``mamba_conv_bias``)
    ``hybrid``: the shared transformer block on [hidden states, original embeddings]
        (``components.shared_block``: attention from 2·d with D_h = ``attention_head_dim``, alias
        ``head_dim``, default 2·d // H_q, no RoPE; a SwiGLU-shaped MLP of ``intermediate_size``
        with ``hidden_act``, no biases), its own d·d ``linear``, then the same Mamba layer
then ``final_layernorm`` and ``lm_head`` (tied by default). Every hybrid layer runs the same block:
with ``tie_word_embeddings`` the class ties them all to the first (N_blk = 1; transformers 5.24
then cannot build a stack with a single hybrid layer, its tie pattern finding no target), untied
each hybrid layer keeps its own copy (N_blk = L_hyb). The torch scan keeps the recurrent state in
float32 (``Model.state_dtype``).
"""
from __future__ import annotations

from typing import ClassVar

import sympy
from pydantic import AliasChoices, Field, field_validator, model_validator

from ..components.embedding import Embedding, LMHead
from ..components.mamba import Mamba
from ..components.norm import Norms
from ..components.shared_block import SharedBlockCall, SharedBlockWeights
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model
from . import register
from .base import Adapter, LayerCount, PosInt, values
from .mamba import dt_rank
from .zamba2 import KINDS, LEGACY, check_shared_attention, layer_layout


@register("zamba")
class ZambaAdapter(Adapter):
    reference: ClassVar[str] = "ZambaForCausalLM"

    vocab_size: PosInt = 32000
    tie_word_embeddings: bool = True
    hidden_size: PosInt = 3712
    attention_hidden_size: PosInt | None = None
    intermediate_size: PosInt = 14848
    num_hidden_layers: LayerCount = 76
    num_attention_heads: PosInt = 16
    attention_head_dim: PosInt | None = Field(None, validation_alias=AliasChoices("head_dim",
                                                                                  "attention_head_dim"))
    num_key_value_heads: PosInt = 16
    n_mamba_heads: PosInt = 2
    hidden_act: str = "gelu"
    attn_layer_period: PosInt = 6
    attn_layer_offset: int = 4
    mamba_d_state: PosInt = 16
    mamba_d_conv: PosInt = 4
    mamba_expand: PosInt = 2
    mamba_dt_rank: int | str = "auto"
    mamba_conv_bias: bool = True
    mamba_proj_bias: bool = False
    layers_block_type: list[str] | None = Field(None, validation_alias=AliasChoices("layer_types",
                                                                                    "layers_block_type"))

    @field_validator("layers_block_type")
    @classmethod
    def _transformers_names(cls, v):
        """The layer names as ZambaConfig writes them back (legacy ``mamba`` → ``linear_attention``)."""
        return None if v is None else [LEGACY.get(k, k) if isinstance(k, str) else k for k in v]

    @model_validator(mode="after")
    def _consistent(self):
        d = self.hidden_size
        check_shared_attention(self, self.num_key_value_heads)
        if (self.mamba_expand * d) % self.n_mamba_heads:
            self.fail("n_mamba_heads", f"n_mamba_heads={self.n_mamba_heads} does not divide the Mamba "
                      f"intermediate size mamba_expand·hidden_size = {self.mamba_expand * d}")
        dt_rank("mamba_dt_rank", self.mamba_dt_rank, d)
        self.kinds()
        return self

    @property
    def D_h(self) -> int:
        return self.attention_head_dim or 2 * self.hidden_size // self.num_attention_heads

    def kinds(self) -> list[str]:
        field = "layers_block_type"
        if self.layers_block_type is None:
            p, o = self.attn_layer_period, self.attn_layer_offset
            kinds = ["linear_attention", "linear_attention", "hybrid"] + [
                "hybrid" if i % p == o else "linear_attention" for i in range(self.num_hidden_layers - 3)]
            self.check_count(field, len(kinds), self.num_hidden_layers)
            return kinds
        return self.check_kinds(field, self.layers_block_type, self.num_hidden_layers, KINDS)

    def to_model(self) -> Model:
        kinds = self.kinds()
        n_hyb = kinds.count("hybrid")
        n_mamba = len(kinds) - n_hyb
        norm = Norms(("input_layernorm",))
        mamba = Mamba(bias=self.mamba_proj_bias, conv_bias=self.mamba_conv_bias, heads=sympy.Integer(self.n_mamba_heads))
        vals = values(d=self.hidden_size, V=self.vocab_size, d_ssm=self.mamba_expand * self.hidden_size,
                      N=self.mamba_d_state, K_c=self.mamba_d_conv,
                      R_dt=dt_rank("mamba_dt_rank", self.mamba_dt_rank, self.hidden_size))
        pre, groups = [Embedding()], []
        if n_mamba:
            groups.append(LayerGroup("mamba_layers", sym.L_M, (norm, mamba)))
            vals.update(values(L_M=n_mamba))
        if n_hyb:
            block = dict(fused_gate_up=False, mlp_adapter=False)
            pre.append(SharedBlockWeights(**block))
            call = SharedBlockCall(act=self.hidden_act, **block)
            groups.append(LayerGroup("hybrid_layers", sym.L_hyb, (call, norm, mamba)))
            vals.update(values(L_hyb=n_hyb, N_blk=1 if self.tie_word_embeddings else n_hyb, H_q=self.num_attention_heads, H_kv=self.num_key_value_heads,
                               D_h=self.D_h, d_ff=self.intermediate_size))
        return Model(self.name, self.model_type, tuple(pre), tuple(groups),
                     (Norms(("final_layernorm",)), LMHead(tied=self.tie_word_embeddings)), vals,
                     state_dtype={"recurrent_states": "float32"},
                     **layer_layout(kinds, 1, self.tie_word_embeddings, adapters=False))
