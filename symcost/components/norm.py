"""Norm layers: RMSNorm (``dim`` scales) or LayerNorm (scale and bias, ``2·dim``).

A layer holds a few of them (two in Llama, four in Gemma-2/3); the final norm is one more.
Elementwise (``symcost.elementwise``, the generic ``Component.elementwise``): RMSNorm 4, LayerNorm
7 FLOPs per element, each norm over tokens·dim.

>>> Norms(("input_layernorm", "post_attention_layernorm")).params().total
2*d
>>> Norms(("ln_f",), bias=True).elementwise(Phase(kind="decode")).total
7*B*d
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..conventions import Phase
from ..notation import sym
from ..primitives import Norm, Saved, saved_norm
from .base import Component


@dataclass(frozen=True)
class Norms(Component):
    key = "norms"
    names: tuple[str, ...] = ("norm",)
    dim: sympy.Expr = sym.d
    bias: bool = False
    offset: bool = False  # Gemma RMSNorm: (x·rsqrt)·(1 + w) in fp32 (saved tensors only; same weights)

    def primitives(self, ph: Phase | None = None):
        return [Norm(n, self.dim, self.bias) for n in self.names]

    def saved(self, bw) -> list:
        out = []
        for n in self.names:
            out += saved_norm(n, self.dim, self.bias, offset=self.offset)
        return out

    def label(self) -> str:
        return "LayerNorm" if self.bias else "RMSNorm"
