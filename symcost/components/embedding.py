"""Token embedding, learned absolute positions, and the LM head.

embed_tokens V·d (lookup: 0 FLOPs); wpe P·d (GPT-2); lm_head d·V, counted once when tied to the
embedding, but its GEMM 2·rows·d·V always runs (rows = all new tokens, or B with
``logits="last"``); Phi-2's head adds a bias V. Source: seed 003 §1, transformers ``LlamaForCausalLM``/``GPT2LMHeadModel``.

>>> LMHead(tied=True).params().total
0
>>> PositionEmbedding().params().total
P*d
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.notation import sym
from ..core.primitives import Linear, Param, Saved, is_one
from .base import Component


@dataclass(frozen=True)
class Embedding(Component):
    key = "embed_tokens"
    V: sympy.Expr = sym.V
    d: sympy.Expr = sym.d
    name: str = "embed_tokens"
    scaled: bool = False  # Gemma: the lookup times the embed_scale buffer (√d), saved for backward

    def primitives(self, ph: Phase | None = None):
        return [Param(self.name, self.V * self.d, doc="[V, d] lookup table")]

    def saved(self, bw) -> list:
        out = [Saved("token_ids", 1, 8, "seq", doc="int64 ids, for the embedding gradient")]
        if self.scaled:  # embed_scale.to(weight.dtype): a one-element tensor the product keeps
            out.append(Saved("embed_scale", 1, sym.b_a, "none", sympy.Integer(1), "√d scale [] in the compute dtype"))
        return out

    def label(self) -> str:
        return "embedding"


@dataclass(frozen=True)
class PositionEmbedding(Component):
    """Learned absolute positions (GPT-2 ``wpe``): a [P, d] table read by position, 0 FLOPs."""

    key = "wpe"
    P: sympy.Expr = sym.P
    d: sympy.Expr = sym.d
    name: str = "wpe"

    def primitives(self, ph: Phase | None = None):
        return [Param(self.name, self.P * self.d, doc="[P, d] lookup table by position")]

    def saved(self, bw) -> list:
        return [Saved("position_ids", 1, 8, "none", sym.T, "int64 positions [1, T], for the table's gradient")]

    def label(self) -> str:
        return "learned positions"


@dataclass(frozen=True)
class LMHead(Component):
    key = "lm_head"
    d: sympy.Expr = sym.d
    V: sympy.Expr = sym.V
    tied: bool = False
    bias: bool = False  # lm_head bias [V] (Phi-2); kept (and counted) even when the weight is tied
    #: logits soft-capped, cap·tanh(logits/cap) (Gemma 2 ``final_logit_softcapping``, RecurrentGemma's
    #: ``logits_soft_cap``): keeps tanh's output [.., V] in the compute dtype; saved tensors only
    softcap: bool = False

    def primitives(self, ph: Phase | None = None):
        rows = ph.logit_rows if ph is not None else None
        doc = "[d, V], tied to embed_tokens" if self.tied else "[d, V]"
        prims = [Linear("lm_head", self.d, self.V, self.bias and not self.tied, tied=self.tied,
                        rows=rows, tp="col", doc=doc)]
        if self.bias and self.tied:
            prims.append(Param("lm_head_bias", self.V, doc="[V] bias of the tied head"))
        return prims

    def saved(self, bw) -> list:
        """The head input ``b_a·d``; the loss upcasts the logits and keeps the fp32 log-softmax
        ``4·V`` per token (the logits in the compute dtype are not kept), the int64 shifted labels
        and one fp32 normaliser. ``softcap``: tanh's output ``b_a·V`` per token (the cap is a
        Python number: no tensor)."""
        return [Saved("input", self.d, sym.b_a, "seq", doc="lm_head input"),
                Saved("log_softmax_fp32", self.V, 4, doc="cross-entropy over logits.float()"),
                Saved("labels", 1, 8, "seq", sym.B * sym.T + is_one(sym.B),
                      "int64 shifted labels (B = 1: the padded [1, T+1] tensor itself, already contiguous)"),
                Saved("loss_weight", 1, 4, "none", sympy.Integer(1), "fp32 total weight (one scalar)")] + (
            [Saved("softcap/tanh", self.V, sym.b_a, "tp", doc="tanh(logits/cap), compute dtype")]
            if self.softcap else [])

    def label(self) -> str:
        return "LM head (tied)" if self.tied else "LM head"
