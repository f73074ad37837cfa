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

import dataclasses
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
    #: the input is an fp32 residual stream (``residual_in_fp32``: Mamba, Mamba-2): the RMSNorm
    #: returns fp32, so its normed output is kept in fp32 (``4·dim``), not the compute dtype
    fp32_stream: bool = False
    #: the weight multiply runs in fp32 (``NemotronHRMSNorm``: ``(weight.float() · x̂).to(dtype)``):
    #: the normed output is kept in fp32 and, below fp32, each norm's fp32 weight copy (batch-free)
    fp32_weight: bool = False
    #: zero-centred weight, ``x̂ · (1 + w)`` computed in fp32 (``Qwen3NextRMSNorm``, ``Qwen3_5RMSNorm``)
    offset: bool = False

    def primitives(self, ph: Phase | None = None):
        return [Norm(n, self.dim, self.bias) for n in self.names]

    def saved(self, bw) -> list:
        out = []
        for n in self.names:
            out += saved_norm(n, self.dim, self.bias, offset=self.offset)
        if (self.fp32_stream or self.fp32_weight) and not self.bias:
            out = [dataclasses.replace(s, nbytes=4, doc="normed, fp32") if s.name.endswith("/normed") else s
                   for s in out]
        if self.fp32_weight and bw.upcast:
            out += [Saved(f"{n}/weight_fp32", self.dim, 4, "none", sympy.Integer(1), "weight.float(), per layer")
                    for n in self.names]
        return out

    def label(self) -> str:
        return "LayerNorm" if self.bias else "RMSNorm"
