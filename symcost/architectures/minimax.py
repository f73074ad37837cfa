"""MiniMax-Text-01 (``minimax``): lightning-attention layers with periodic softmax-attention layers, MoE.

Each layer (transformers ``MiniMaxDecoderLayer``): RMSNorm → mixer → RMSNorm → MoE, the residual
of each sublayer taken after its norm and mixed as α·residual + β·output (the ``*_alpha_factor``,
``*_beta_factor`` scalars: elementwise, no weights). The mixer follows ``layer_types``:
``linear_attention`` is lightning attention (``components/lightning_attention.py``),
``full_attention`` Mixtral's GQA attention (``MiniMaxAttention``: no biases, RoPE, ``head_dim`` or
d/H_q; with ``sliding_window`` the mask has the window, but ``MiniMaxCache`` — a DynamicCache built
without the config — keeps every token, so the cache and the ``full`` decode count hold all T).
Every layer's FFN is ``MixtralSparseMoeBlock``: router d·E, E SwiGLU experts of
``intermediate_size`` (written d_ff, as for Mixtral), k per token.

The config, as ``MiniMaxConfig`` derives it: ``num_experts`` (the attribute-map spelling, read
first) or ``num_local_experts``; without ``layer_types``, even layers (0, 2, …) are full attention
and odd layers lightning. The original checkpoint's ``attn_type_list`` (1 = softmax, 0 =
lightning) is not read by the config class, and so not here: a config that gives only that list
gets the alternating default in transformers, and symcost says so in the model notes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import sympy
from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention
from ..components.lightning_attention import LightningAttention
from ..components.moe import MoE
from ..components.norm import Norms
from ..core.conventions import Phase
from ..core.notation import sym
from ..model.assembly import Model, kind_order
from . import register
from .base import LayerCount, PosInt, quote, values
from .llama import LAYER_NORMS
from .mixtral import MixtralAdapter
from .qwen_moe import group_layers

LAYER_TYPES = ("full_attention", "linear_attention")


@dataclass(frozen=True)
class MiniMaxAttention(Attention):
    """``MiniMaxAttention``: GQA attention whose window only masks. ``MiniMaxCache`` is a
    DynamicCache built without the config, so a sliding-window layer keeps every token: the cache
    holds all T, and a decode step under ``full`` multiplies all T + 1 keys. A subclass, not a
    field of ``Attention``: it changes what is computed and cached, for this family alone."""

    def pairs(self, ph: Phase) -> sympy.Expr:
        if ph.kind == "decode" and ph.attention == "full":
            return ph.pairs(None)
        return super().pairs(ph)

    def kept_tokens(self) -> sympy.Expr:
        return sym.T


@register("minimax")
class MiniMaxAdapter(MixtralAdapter):
    reference: ClassVar[str] = "MiniMaxForCausalLM"

    num_hidden_layers: LayerCount
    num_key_value_heads: PosInt | None = 8
    num_local_experts: PosInt = Field(8, validation_alias=AliasChoices("num_experts", "num_local_experts"))
    num_experts_per_tok: PosInt = 2
    block_size: PosInt = 256
    attn_type_list: list | None = None  # the original checkpoint's pattern; MiniMaxConfig ignores it

    @model_validator(mode="after")
    def _consistent(self):  # replaces LlamaAdapter's: these layer types are full and linear attention
        if self.num_attention_heads % self.H_kv:
            self.fail("num_key_value_heads", f"num_attention_heads={self.num_attention_heads} is not "
                      f"divisible by num_key_value_heads={self.H_kv}")
        if self.layer_types is not None:
            self.check_count("layer_types", len(self.layer_types), self.num_hidden_layers)
            unknown = set(map(str, self.layer_types)) - set(LAYER_TYPES)
            if unknown:
                self.fail("layer_types", f"unknown layer type(s) {quote(sorted(unknown))} "
                          f"(expected {', '.join(LAYER_TYPES)})")
        if self.sliding_window is not None and self.sliding_window < 1 \
                and "full_attention" in self.resolved_layer_types():
            self.fail("sliding_window", f"must be a positive window for the softmax-attention layers "
                      f"(got {self.sliding_window}; null means full attention)")
        return self

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        return ["full_attention" if (i + 1) % 2 else "linear_attention" for i in range(self.num_hidden_layers)]

    def layer(self, mixer: str, ffn: str):
        mix = LightningAttention() if mixer == "lin" else MiniMaxAttention(
            W=None if self.sliding_window is None else sym.W)
        return (Norms(LAYER_NORMS), mix, MoE(d_moe=sym.d_ff))

    def to_model(self) -> Model:
        mixers = ["lin" if t == "linear_attention" else "full" for t in self.resolved_layer_types()]
        groups, counts = group_layers([(m, "moe") for m in mixers], self.layer)
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers, H_q=self.num_attention_heads,
                      D_h=self.D_h, d_ff=self.intermediate_size, E=self.num_local_experts, k=self.num_experts_per_tok)
        vals.update(counts)
        if "full" in mixers:
            vals.update(values(H_kv=self.H_kv))
            if self.sliding_window is not None:
                vals.update(values(W=self.sliding_window))
        if "lin" in mixers:
            vals.update(values(C_la=self.block_size))
        notes = []
        if self.attn_type_list is not None and self.layer_types is None:
            stated = ["full_attention" if t == 1 else "linear_attention" for t in self.attn_type_list]
            if stated != self.resolved_layer_types():
                notes.append("attn_type_list is not read (MiniMaxConfig ignores it): the layers follow "
                             "the class's default alternation; state layer_types for the checkpoint's pattern")
        return Model(self.name, self.model_type, (self.embedding(),), groups,
                     (Norms((self.final_norm,)), self.head()), vals, notes=notes,
                     layer_order=kind_order(mixers, groups))

