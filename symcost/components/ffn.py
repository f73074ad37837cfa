"""Dense feed-forward blocks: gated (SwiGLU/GeGLU, 3 matrices) or plain (GELU, ReLU², 2 matrices).

Parameters (seed 000 §1.3, transformers ``LlamaMLP`` / ``GPT2MLP`` / ``NemotronHMLP``):
    gated: gate_proj and up_proj d·d_ff each, down_proj d_ff·d   -> 3·d·d_ff
    plain: up_proj d·d_ff, down_proj d_ff·d                      -> 2·d·d_ff  (+ biases)
FLOPs: 2·tokens per weight (activations count 0).

>>> FFN().params().total
3*d*d_ff
>>> FFN(gated=False).params().total
2*d*d_ff
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..conventions import Phase
from ..notation import sym
from ..primitives import Linear
from .base import Component


@dataclass(frozen=True)
class FFN(Component):
    key = "mlp"
    d: sympy.Expr = sym.d
    d_ff: sympy.Expr = sym.d_ff
    gated: bool = True
    bias: bool = False

    def primitives(self, ph: Phase | None = None):
        d, d_ff = self.d, self.d_ff
        prims = []
        if self.gated:
            prims.append(Linear("gate_proj", d, d_ff, self.bias, tp="col", doc="[d, d_ff]"))
        prims += [Linear("up_proj", d, d_ff, self.bias, tp="col", doc="[d, d_ff]"),
                  Linear("down_proj", d_ff, d, self.bias, tp="row", doc="[d_ff, d]")]
        return prims

    def label(self) -> str:
        return "gated FFN" if self.gated else "FFN"
