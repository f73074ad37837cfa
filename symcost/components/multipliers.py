"""Scalar and µP multipliers on activations: no weights, no matmuls, elementwise work only.

Some families scale activations by constants from the config: Granite 4.0
(``GraniteMoeHybridModel``) multiplies the embeddings by ``embedding_multiplier``, each sublayer's
output by ``residual_multiplier`` before the residual add, and divides the logits by
``logits_scaling`` (its ``attention_multiplier`` replaces the 1/√D_h score scale, which is not
counted); Falcon-H1 (``FalconH1Model``, ``FalconH1DecoderLayer``, ``FalconH1Mixer``, ``FalconH1MLP``)
multiplies the embeddings (``embedding_multiplier``), the logits (``lm_head_multiplier``), the
attention input and output (``attention_in_multiplier``, ``attention_out_multiplier``), the keys
(``key_multiplier``), the Mamba input and output (``ssm_in_multiplier``, ``ssm_out_multiplier``),
the in_proj output by the ``mup_vector`` built from the five ``ssm_multipliers`` (a non-persistent
buffer [1, 1, 2·d_in + 2·G·N + H_m], recomputed from the config, never in a checkpoint), and the
MLP gate and down outputs (``mlp_multipliers``). transformers applies every one of them whatever
its value, so they are counted even when it is 1.
Parameters: 0. FLOPs (matmul): 0. Shapes: unchanged, so no other count moves.
Elementwise (``symcost.core.elementwise``): one multiply per scaled element, per row —
    Σ widths × tokens, or × logit rows for the scales applied to the logits (width V).
The sets (``SETS``): ``embedding`` d per token; ``granite_residual`` 2·d per token per layer;
``granite_logits`` and ``falcon_h1_logits`` V per logit row; ``falcon_h1_layer`` (the default), per token:
    ssm_in d, mup_vector 2·H_m·D_m + 2·G·N + H_m, ssm_out d, attention_in d, key H_kv·D_h,
    attention_out d, mlp_gate d_ff, mlp_down d.

>>> from symcost.core.conventions import Phase
>>> m = Multipliers()
>>> m.params().total, m.flops(Phase(kind="prefill")).total
(0, 0)
>>> Multipliers("granite_logits").elementwise(Phase(kind="prefill", logits="last")).total
B*V
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.notation import sym
from ..core.primitives import Saved
from ..core.terms import Terms
from .base import Component

#: the multiplier sets, by name: (term, elements scaled per row, what); ``on_logits`` sets scale
#: the logit rows, the others every new token
SETS: dict[str, tuple[tuple[str, sympy.Expr, str], ...]] = {
    "falcon_h1_layer": (
        ("ssm_in", sym.d, "Mamba input × ssm_in_multiplier"),
        ("mup_vector", 2 * sym.H_m * sym.D_m + 2 * sym.G * sym.N + sym.H_m,
         "in_proj output × mup_vector (ssm_multipliers)"),
        ("ssm_out", sym.d, "Mamba output × ssm_out_multiplier"),
        ("attention_in", sym.d, "attention input × attention_in_multiplier"),
        ("key", sym.H_kv * sym.D_h, "keys × key_multiplier"),
        ("attention_out", sym.d, "attention output × attention_out_multiplier"),
        ("mlp_gate", sym.d_ff, "gate_proj output × mlp_multipliers[0]"),
        ("mlp_down", sym.d, "down_proj output × mlp_multipliers[1]"),
    ),
    "granite_residual": (("residual", 2 * sym.d, "both sublayer outputs × residual_multiplier"),),
    "embedding": (("embedding_multiplier", sym.d, "embeddings × embedding_multiplier"),),
    "granite_logits": (("logits_scaling", sym.V, "logits ÷ logits_scaling"),),
    "falcon_h1_logits": (("lm_head_multiplier", sym.V, "logits × lm_head_multiplier"),),
}
ON_LOGITS = {"granite_logits", "falcon_h1_logits"}


@dataclass(frozen=True)
class Multipliers(Component):
    key = "multipliers"
    kind: str = "falcon_h1_layer"  # a key of ``SETS``

    @property
    def scales(self) -> tuple[tuple[str, sympy.Expr, str], ...]:
        return SETS[self.kind]

    def primitives(self, ph: Phase | None = None):
        return []

    def saved(self, bw) -> list:
        """A product with a Python scalar keeps nothing for backward; Falcon-H1's ``mup_vector`` is a
        tensor (a buffer, not a parameter), kept once per layer in the compute dtype."""
        if self.kind != "falcon_h1_layer":
            return []
        width = next(w for name, w, _ in self.scales if name == "mup_vector")
        return [Saved("mup_vector", width, sym.b_a, "none", sympy.Integer(1), "[1, 1, 2·H_m·D_m + 2·G·N + H_m] buffer")]

    def elementwise(self, ph: Phase) -> Terms:
        rows = ph.logit_rows if self.kind in ON_LOGITS else ph.tokens
        t = Terms()
        for name, width, doc in self.scales:
            t.add(name, rows * width, doc)
        return t

    def label(self) -> str:
        return "multipliers"
