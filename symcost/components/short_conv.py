"""Short convolution mixer (LFM2): a doubly gated depthwise causal convolution over the hidden size.

transformers ``Lfm2ShortConv`` (also ``Lfm2MoeShortConv``): ``in_proj`` d → 3·d splits into
B, C, x; y = C ⊙ conv(B ⊙ x), a depthwise causal conv of kernel K_c (``conv_L_cache``) over the d
channels; ``out_proj`` d → d. Parameters, with ``bias`` (``conv_bias``: on all three):
    in_proj  d·3·d (+ 3·d)    conv  d·K_c (+ d)    out_proj d·d (+ d)
FLOPs, batch B, rows = B·T in prefill, B in decode: the projections 2·rows·in·out under both
``impl`` conventions; the conv under
``impl="minimal"`` (default): 2·rows·d·K_c (one output per token);
``impl="reference"``: what the transformers torch path runs, as FlopCounterMode measures it:
    2·B·d·K_c per output position, T + K_c − 1 positions in prefill (padding K_c − 1 on both
    sides, then slicing), 2 in decode (the K_c cached columns plus the new one, unpadded).
Elementwise (``symcost.core.elementwise``), per token: the two gate products B ⊙ x and C ⊙ y, 2·d;
    one residual add d.
Cache: conv_states [B, d, K_c] (K_c columns, not K_c − 1: the transformers linear-attention
    cache layer keeps the last K_c inputs), in the model dtype.

>>> ShortConv().params().total.subs({sym.d: 16, sym.K_c: 3})
1072
>>> ShortConv().cache().total
B*K_c*d
>>> from symcost.core.conventions import Phase
>>> ShortConv().flops(Phase(kind="prefill", impl="reference"))["conv"]
2*B*K_c*d*(K_c + T - 1)
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Param, Saved
from ..core.terms import Terms
from .base import Component


@dataclass(frozen=True)
class ShortConv(Component):
    key = "mixer"
    d: sympy.Expr = sym.d
    K_c: sympy.Expr = sym.K_c
    bias: bool = False  # conv_bias: in_proj, conv and out_proj

    def primitives(self, ph: Phase | None = None):
        d, K = self.d, self.K_c
        prims = [Linear("in_proj", d, 3 * d, self.bias, tp="col", doc="[d, 3·d]: B, C, x"),
                 Param("conv", d * K, doc="depthwise [d, K_c]")]
        if self.bias:
            prims.append(Param("conv_bias", d, doc="[d]"))
        prims.append(Linear("out_proj", d, d, self.bias, tp="row", doc="[d, d]"))
        if ph is None:
            return prims
        B, T = sym.B, sym.T
        if ph.impl != "reference":
            conv = Matmul("conv", 2 * ph.tokens * d * K, "depthwise conv, one output per token")
        elif ph.kind == "decode":
            conv = Matmul("conv", 2 * B * 2 * d * K, "depthwise conv over K_c + 1 columns: 2 outputs")
        else:
            conv = Matmul("conv", 2 * B * (T + K - 1) * d * K, "depthwise conv, T + K_c − 1 outputs")
        return prims + [conv]

    def elementwise(self, ph: Phase) -> Terms:
        rows = ph.tokens
        return Terms({"gates": 2 * COST["gate_mul"] * rows * self.d,
                      "residual": COST["residual"] * rows * self.d},
                     {"gates": "B ⊙ x before the conv, C ⊙ y after it", "residual": "residual add"})

    def saved(self, bw) -> list:
        """Saved for backward, one layer (measured in tests/test_activations.py): the in_proj input
        ``b_a·d`` and output [B | C | x] ``b_a·3·d`` (read by both gate products), the conv input
        B ⊙ x ``b_a·d``, the conv output ``b_a·d`` read by C ⊙ y and the out_proj input ``b_a·d``.
        ``reference`` (transformers' ``F.conv1d`` with K_c − 1 padding on both sides, then sliced):
        the conv output's storage spans T + K_c − 1 positions; ``fused`` (the causal-conv1d kernel,
        ``CausalConv1dFn`` keeps its input and weights): T positions."""
        a, d, B, T = sym.b_a, self.d, sym.B, sym.T
        conv_rows = B * (T + self.K_c - 1) if bw.scan == "reference" else None
        return [Saved("input", d, a, "seq", doc="in_proj input [.., d]"),
                Saved("in_proj_out", 3 * d, a, doc="[B | C | x]"),
                Saved("conv_input", d, a, doc="B ⊙ x"),
                Saved("conv_out", d, a, rows=conv_rows, doc="conv output, read by C ⊙ y"),
                Saved("out_proj_input", d, a, doc="(C ⊙ y) made contiguous")]

    def cache(self) -> Terms:
        return Terms({"conv_states": sym.B * self.d * self.K_c}, {"conv_states": "[B, d, K_c]"})

    def label(self) -> str:
        return "short convolution"
