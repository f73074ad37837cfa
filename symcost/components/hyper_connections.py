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

from ..core.conventions import Phase
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Param, Saved
from .base import Component


@dataclass(frozen=True)
class HyperConnections(Component):
    """The mHC mixing sites of one decoder layer (``attn_hc`` and ``ffn_hc``)."""

    key = "hc"
    d: sympy.Expr = sym.d
    n: sympy.Expr = sym.n_hc
    sites: tuple[str, ...] = ("attn_hc", "ffn_hc")
    sinkhorn_iters: sympy.Expr = sympy.Integer(20)  # hc_sinkhorn_iters (training activations only)

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

    def residual_width(self):
        return self.n * self.d  # n_hc streams of d

    def saved(self, bw) -> list:
        """Per site and token (``DeepseekV4HyperConnection`` + the decoder layer's mix), fp32 math:
        the input streams ``b_a·n_hc·d`` (read by the collapse and the comb matmul) and, below fp32,
        their fp32 copy ``4·n_hc·d`` (in fp32 ``.float()`` is the tensor itself); the unweighted
        RMSNorm's rsqrt 4 and its output ``4·n_hc·d`` (fn's input); below fp32 the fp32 copy of fn
        ``4·(n_hc+2)·n_hc·n_hc·d`` (batch-free, per site); the projection ``4·(n_hc+2)·n_hc`` (pre,
        post, comb are views); sigmoid outputs of pre and post 4·n_hc each, the softmax 4·n_hc²;
        the Sinkhorn loop's 2·t − 1 divisions (t = hc_sinkhorn_iters) keep each numerator 4·n_hc²
        and denominator 4·n_hc; the final comb (4·n_hc², below fp32 its compute-dtype copy
        ``b_a·n_hc²``), pre + ε 4·n_hc, post (4·n_hc, below fp32 its copy ``b_a·n_hc``), and the
        block output ``b_a·d`` the expansion multiplies."""
        a, n, d, t = sym.b_a, self.n, self.d, self.sinkhorn_iters
        out = []
        for s in self.sites:
            out += [Saved(f"{s}/streams", n * d, a, "seq", doc="[.., n_hc, d] input streams")]
            if bw.upcast:
                out += [Saved(f"{s}/streams_fp32", n * d, 4, "seq"),
                        Saved(f"{s}/fn_fp32", (n + 2) * n * n * d, 4, "none", sympy.Integer(1),
                              "fp32 copy of fn (batch-free, per site)")]
            out += [Saved(f"{s}/rsqrt", 1, 4, "seq"), Saved(f"{s}/normed", n * d, 4, "seq"),
                    Saved(f"{s}/mixes", (n + 2) * n, 4, "seq", doc="pre/post/comb logits"),
                    Saved(f"{s}/sigmoid", 2 * n, 4, "seq", doc="pre and post sigmoids"),
                    Saved(f"{s}/softmax", n * n, 4, "seq"),
                    Saved(f"{s}/sinkhorn", (2 * t - 1) * (n * n + n), 4, "seq",
                          doc="numerator and denominator of every division"),
                    Saved(f"{s}/comb", n * n, a if bw.upcast else 4, "seq"),
                    Saved(f"{s}/pre", n, 4, "seq"), Saved(f"{s}/post", n, a if bw.upcast else 4, "seq"),
                    Saved(f"{s}/block_output", d, a, "seq", doc="attention / FFN output, expanded by post")]
        return out

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

    def saved(self, bw) -> list:
        """``DeepseekV4HyperHead`` (the module is kept in fp32): the streams ``b_a·n_hc·d`` and,
        below fp32, their fp32 copy; the rsqrt 4 and normed ``4·n_hc·d``; the mixes 4·n_hc (and
        the scale 4, a one-element view); the sigmoid 4·n_hc and pre + ε 4·n_hc."""
        a, n, d = sym.b_a, self.n, self.d
        out = [Saved("streams", n * d, a, "seq")]
        if bw.upcast:  # x.float(), and the compute-dtype hc_fn / hc_scale the linear and the scaling read as fp32
            out += [Saved("streams_fp32", n * d, 4, "seq"),
                    Saved("fn_fp32", n * n * d, 4, "none", sympy.Integer(1), "hc_fn.float() (batch-free)"),
                    Saved("scale_fp32", 1, 4, "none", sympy.Integer(1), "hc_scale.float() (batch-free)")]
        return out + [Saved("rsqrt", 1, 4, "seq"), Saved("normed", n * d, 4, "seq"),
                      Saved("mixes", n, 4, "seq"), Saved("sigmoid", n, 4, "seq"), Saved("pre", n, 4, "seq")]

    def label(self) -> str:
        return "hyper-connection head"
