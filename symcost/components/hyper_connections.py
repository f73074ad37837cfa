"""Manifold-constrained hyper-connections (mHC): the residual is n_hc parallel streams of width d.

Around each block (attention and FFN) one mixing site reads the flattened streams [n_hc·d] and
projects them to (n_hc + 2)·n_hc weights: ``pre`` (n_hc, collapses the streams into the block
input), ``post`` (n_hc, expands the block output back) and ``comb`` (n_hc × n_hc, Sinkhorn-projected
onto doubly-stochastic matrices, mixes the input streams into the output streams).
Parameters per site: fn (n_hc+2)·n_hc·n_hc·d, base (n_hc+2)·n_hc, scale 3 — the 3 is why
DeepSeek-V4's parameter total is odd. The final head collapse (``HyperHead``) has
hc_fn n_hc·n_hc·d, hc_base n_hc, hc_scale 1.
FLOPs per site: the projection 2·tokens·n_hc·d·(n_hc+2)·n_hc, plus the stream mix
``comb.T @ streams`` 2·tokens·n_hc²·d (a batched matmul in the decoder layer); ``pre``/``post``
weighting, sigmoid, softmax and the Sinkhorn iterations are elementwise (0 FLOPs).
Head: 2·tokens·n_hc·d·n_hc. Source: transformers ``DeepseekV4HyperConnection``,
``DeepseekV4HyperHead``, ``DeepseekV4DecoderLayer``. Nothing is cached.

>>> HyperConnections().params().total
2*d*n_hc**2*(n_hc + 2) + 2*n_hc*(n_hc + 2) + 6
>>> HyperHead().params().total
d*n_hc**2 + n_hc + 1
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..conventions import Phase
from ..notation import sym
from ..primitives import Linear, Matmul, Param
from .base import Component


@dataclass(frozen=True)
class HyperConnections(Component):
    """The mHC mixing sites of one decoder layer (``attn_hc`` and ``ffn_hc``)."""

    key = "hc"
    d: sympy.Expr = sym.d
    n: sympy.Expr = sym.n_hc
    sites: tuple[str, ...] = ("attn_hc", "ffn_hc")

    def primitives(self, ph: Phase | None = None):
        d, n = self.d, self.n
        prims = []
        for s in self.sites:
            prims += [
                Linear(f"{s}_fn", n * d, (n + 2) * n, doc="[n_hc·d, (n_hc+2)·n_hc] pre/post/comb logits"),
                Param(f"{s}_base", (n + 2) * n, doc="[(n_hc+2)·n_hc] biases"),
                Param(f"{s}_scale", sympy.Integer(3), doc="[3] scales of pre, post, comb"),
            ]
            if ph is not None:
                prims.append(Matmul(f"{s}_comb", 2 * ph.tokens * n * n * d,
                                    "comb.T @ streams: [n_hc, n_hc] × [n_hc, d] per token"))
        return prims

    def label(self) -> str:
        return "hyper-connections (mHC)"


@dataclass(frozen=True)
class HyperHead(Component):
    """The final collapse of the n_hc streams into one before the last norm and the LM head."""

    key = "hc_head"
    d: sympy.Expr = sym.d
    n: sympy.Expr = sym.n_hc

    def primitives(self, ph: Phase | None = None):
        d, n = self.d, self.n
        return [Linear("hc_head_fn", n * d, n, doc="[n_hc·d, n_hc] collapse weights"),
                Param("hc_head_base", n, doc="[n_hc]"),
                Param("hc_head_scale", sympy.Integer(1), doc="[1]")]

    def label(self) -> str:
        return "hyper-connection head"
