"""Jamba: a hybrid of Mamba-1 and GQA attention layers, MLPs or top-k MoE by a second period.

transformers ``JambaForCausalLM``: ``model.embed_tokens``, L × (``input_layernorm`` → mixer →
``pre_ff_layernorm`` → ``feed_forward``), ``final_layernorm``, ``lm_head`` (tied with
``tie_word_embeddings``, default False). Layer i is attention when
i mod ``attn_layer_period`` = ``attn_layer_offset``, else Mamba; its feed-forward is a
``JambaSparseMoeBlock`` (softmax router d → E, no bias; E SwiGLU experts of ``intermediate_size``;
``num_experts_per_tok`` of them per token) when i mod ``expert_layer_period`` =
``expert_layer_offset`` and ``num_experts`` > 1, else a SwiGLU MLP of ``intermediate_size``.
Attention has no positional encoding (no RoPE) and no biases; head_dim is ``head_dim`` when the
config has one, else d // H_q. The Mamba mixer is ``components.mamba`` with weighted RMSNorms on
dt, B and C (``JambaMambaMixer``): d_ssm = ``mamba_expand``·d, R_dt = ``mamba_dt_rank``
(``"auto"``: ⌈d/16⌉), N = ``mamba_d_state``, K_c = ``mamba_d_conv``, in/out bias
``mamba_proj_bias``, conv bias ``mamba_conv_bias``. Groups: one per (mixer, feed-forward) kind;
counts L_M / L_A when the kinds split by mixer, L_dense / L_moe when by feed-forward, integers
otherwise. The torch scan keeps the recurrent state in float32 (``Model.state_dtype``).

JambaConfig derives ``layers_block_type``/``layer_types``/``layers_num_experts`` from the periods
(properties it never writes); offsets must be in 0..period − 1, as its ``validate_architecture``
requires (a negative offset is refused here too: it would silently select no layer).
"""
from __future__ import annotations

from typing import ClassVar

import sympy
from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.mamba import Mamba
from ..components.moe import WEIGHTS_CAST, MoE
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, kind_order
from . import register
from .base import Adapter, GQAHeads, LayerCount, PosInt, values
from .mamba import dt_rank

MAMBA, ATTN, DENSE, SPARSE = "mamba", "attention", "mlp", "moe"


def kind_groups(per_layer: list[tuple[str, str]], count_sym: dict, layer, vals: dict):
    """One ``LayerGroup`` per distinct (mixer, feed-forward) kind, in layer order, built by
    ``layer(mixer, ffn)``: count L when there is one kind; the kind's symbol from ``count_sym``
    (value recorded in ``vals``) when the kinds split by mixer alone or by feed-forward alone; an
    integer count otherwise. Returns the groups and the distinct kinds."""
    combos = list(dict.fromkeys(per_layer))
    by_mixer = len({a for a, _ in combos}) == len(combos)
    by_ffn = len({f for _, f in combos}) == len(combos)
    groups = []
    for a, f in combos:
        n = per_layer.count((a, f))
        if len(combos) == 1:
            count = sym.L
        elif by_mixer or by_ffn:
            count = count_sym[a if by_mixer else f]
            vals[count] = sympy.Integer(n)
        else:  # an irregular mix: an integer count per (mixer, feed-forward) kind
            count = sympy.Integer(n)
        groups.append(LayerGroup(f"{a}_{f}_layers", count, layer(a, f)))
    return tuple(groups), combos


@register("jamba")
class JambaAdapter(GQAHeads, Adapter):
    reference: ClassVar[str] = "JambaForCausalLM"

    vocab_size: PosInt = 65536
    tie_word_embeddings: bool = False
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 14336
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32
    num_key_value_heads: PosInt | None = 8
    head_dim: PosInt | None = None
    num_experts_per_tok: PosInt = 2
    num_experts: PosInt = Field(16, validation_alias=AliasChoices("num_local_experts", "num_experts"))
    expert_layer_period: PosInt = 2
    expert_layer_offset: int = 1
    attn_layer_period: PosInt = 8
    attn_layer_offset: int = 4
    mamba_d_state: PosInt = 16
    mamba_d_conv: PosInt = 4
    mamba_expand: PosInt = 2
    mamba_dt_rank: int | str = "auto"
    mamba_conv_bias: bool = True
    mamba_proj_bias: bool = False

    @model_validator(mode="after")
    def _consistent(self):
        for kind in ("attn", "expert"):
            off, per = getattr(self, f"{kind}_layer_offset"), getattr(self, f"{kind}_layer_period")
            if not 0 <= off < per:
                self.fail(f"{kind}_layer_offset", f"{off} must be in 0..{kind}_layer_period − 1 = {per - 1}")
        if self.num_attention_heads % self.H_kv:
            self.fail("num_key_value_heads", f"num_attention_heads={self.num_attention_heads} is not "
                      f"divisible by num_key_value_heads={self.H_kv}")
        if MAMBA in self.mixer_kinds():
            dt_rank("mamba_dt_rank", self.mamba_dt_rank, self.hidden_size)
        if SPARSE in self.ffn_kinds() and self.num_experts_per_tok > self.num_experts:
            self.fail("num_experts_per_tok", f"{self.num_experts_per_tok} exceeds num_experts={self.num_experts}")
        return self


    def mixer_kinds(self) -> list[str]:
        return [ATTN if i % self.attn_layer_period == self.attn_layer_offset else MAMBA
                for i in range(self.num_hidden_layers)]

    def ffn_kinds(self) -> list[str]:
        moe = self.num_experts > 1
        return [SPARSE if moe and i % self.expert_layer_period == self.expert_layer_offset else DENSE
                for i in range(self.num_hidden_layers)]

    # -- the model -----------------------------------------------------------------------------------
    def layer(self, mixer: str, ffn: str) -> tuple:
        if mixer == MAMBA:
            mix = Mamba(bias=self.mamba_proj_bias, conv_bias=self.mamba_conv_bias, bcdt_norm="weighted")
        else:
            mix = Attention(rope=False)
        return (Norms(("input_layernorm", "pre_ff_layernorm")), mix, MoE(d_moe=sym.d_ff, norm_topk=False, saves=WEIGHTS_CAST) if ffn == SPARSE else FFN())

    def to_model(self) -> Model:
        per_layer = list(zip(self.mixer_kinds(), self.ffn_kinds()))
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers, d_ff=self.intermediate_size)
        count_sym = {MAMBA: sym.L_M, ATTN: sym.L_A, DENSE: sym.L_dense, SPARSE: sym.L_moe}
        groups, combos = kind_groups(per_layer, count_sym, self.layer, vals)
        kinds = {k for c in combos for k in c}
        if MAMBA in kinds:
            vals.update(values(d_ssm=self.mamba_expand * self.hidden_size, N=self.mamba_d_state,
                               K_c=self.mamba_d_conv,
                               R_dt=dt_rank("mamba_dt_rank", self.mamba_dt_rank, self.hidden_size)))
        if ATTN in kinds:
            vals.update(values(H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h))
        if SPARSE in kinds:
            vals.update(values(E=self.num_experts, k=self.num_experts_per_tok))
        model = Model(self.name, self.model_type, (Embedding(),), groups,
                      (Norms(("final_layernorm",)), LMHead(tied=self.tie_word_embeddings)), vals,
                      state_dtype={"recurrent_states": "float32"}, layer_order=kind_order(per_layer, groups))
        model.notes.append("layers: " + ", ".join(
            f"{per_layer.count(c)} × {'Mamba' if c[0] == MAMBA else 'attention'} + "
            f"{'MoE' if c[1] == SPARSE else 'MLP'}" for c in combos))
        return model
