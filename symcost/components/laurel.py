"""LAuReL (learned augmented residual layer, Gemma 3n): a low-rank branch beside the attention.

transformers 5.24 ``Gemma3nTextLaurelBlock``: on the normed layer input x, ``linear_left`` d → r_lau,
``linear_right`` r_lau → d (no bias), ``post_laurel_norm`` RMSNorm(d), added back to x; the layer then
averages it with the attention residual ((attn + laurel)/√2). Parameters 2·d·r_lau + d; FLOPs
2·tokens·2·d·r_lau. Elementwise: the norm 4·d, the residual add and the averaging 3·d per token.

>>> Laurel().params().total
2*d*r_lau + d
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import norm_terms
from ..core.notation import sym
from ..core.primitives import Linear, Norm, Saved
from ..core.terms import Terms
from .base import Component
from .norm import pow_rms_saved


@dataclass(frozen=True)
class Laurel(Component):
    key = "laurel"
    d: sympy.Expr = sym.d
    r: sympy.Expr = sym.r_lau

    def primitives(self, ph: Phase | None = None):
        return [Linear("linear_left", self.d, self.r, doc="[d, r_lau]"),
                Linear("linear_right", self.r, self.d, doc="[r_lau, d]"),
                Norm("post_laurel_norm", self.d, doc="RMSNorm [d]")]

    def elementwise(self, ph: Phase) -> Terms:
        t = norm_terms(self.primitives(ph), ph.tokens)
        t.add("residual", 3 * ph.tokens * self.d, "x + branch, then (attn + laurel)/√2")
        return t

    def saved(self, bw) -> list:
        """Per token: linear_left's input is the attention's (input_layernorm's output, counted there);
        linear_right's input ``b_a·r_lau`` and post_laurel_norm, a Gemma RMSNorm of d with the
        mean square kept (``norm.pow_rms_saved``); the residual add and the averaging keep nothing."""
        return [Saved("right_input", self.r, sym.b_a, "seq", doc="linear_left output")] + pow_rms_saved(
            "post_laurel_norm", self.d, bw)

    def label(self) -> str:
        return "LAuReL"
