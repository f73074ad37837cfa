"""A per-layer output scale held as a checkpoint buffer (Gemma 4 ``layer_scalar``).

transformers ``Gemma4TextDecoderLayer`` (5.24) multiplies its output by ``layer_scalar``, a persistent
``nn.Buffer`` of one element (initialised to 1, stored in the checkpoint): 0 parameters, 1 buffer element
per layer, 0 matmul FLOPs; elementwise 1 per element of d per token.

>>> LayerScalar().buffers().total, LayerScalar().params().total
(1, 0)
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.notation import sym
from ..core.primitives import Saved
from ..core.terms import Terms
from .base import Component


@dataclass(frozen=True)
class LayerScalar(Component):
    key = "scale"
    d: sympy.Expr = sym.d

    def primitives(self, ph: Phase | None = None):
        return []

    def buffers(self) -> Terms:
        return Terms({"layer_scalar": sympy.Integer(1)}, {"layer_scalar": "[1] persistent buffer"})

    def elementwise(self, ph: Phase) -> Terms:
        return Terms({"layer_scalar": ph.tokens * self.d}, {"layer_scalar": "output × layer_scalar"})

    def saved(self, bw) -> list:
        """``output * layer_scalar``: the buffer needs no gradient, so the product keeps only the
        one-element buffer (in the compute dtype) for the output's gradient, once per layer."""
        return [Saved("layer_scalar", 1, sym.b_a, "none", sympy.Integer(1), "the [1] buffer, read by backward")]

    def label(self) -> str:
        return "layer output scalar (buffer)"
