"""Norm layers: RMSNorm (``dim`` scales) or LayerNorm (scale and bias, ``2·dim``), or weightless.

Family quirks live with the family: how one ``transformers`` norm class is written (a cast, a
``pow``, a ``1 + w``) changes only what its backward keeps, and the adapter names it (``kind``,
one of ``NORM_KINDS``). ``pow_rstd``: ``x̂ = x·pow(mean(x²) + ε, −0.5)`` on ``x.float()``, times
``weight.float()``, back to the compute dtype. ``torch.pow`` keeps its input, so its backward holds
the fp32 mean square beside the rstd; the weight multiply keeps x̂ in fp32 and, below fp32, an fp32
copy of the weight (``pow_rms_saved``; ``with_scale=False``, a weightless norm, keeps neither).

``weightless``: a norm with no learned scale or bias, 0 parameters (``F.layer_norm`` of the
input cast to float32, weight and bias None); its elementwise cost drops
the scale and bias ops (LayerNorm 5, RMSNorm 3 per element), and its backward keeps the fp32 input
with the fp32 mean and rstd.

A layer holds a few of them (two in Llama, four in Gemma-2/3); the final norm is one more.
Elementwise (``symcost.core.elementwise``, the generic ``Component.elementwise``): RMSNorm 4, LayerNorm
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

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Norm, Saved, saved_norm
from ..core.terms import Terms
from .base import Component

#: how a family's norm class is written, ``Norms.kind``: one value per implementation. The
#: parameters are ``Norms``' (``dim`` scales, + ``dim`` biases with ``bias``), and so are the FLOPs;
#: only what the backward keeps differs (``saved``)
NORM_KINDS = (
    #: transformers' RMSNorm (``x.float()``, ``x·rsqrt(mean(x²) + ε)``, back to the compute dtype,
    #: times the weight) or, with ``bias``, ``nn.LayerNorm`` (``primitives.saved_norm``)
    "standard",
    #: zero-centred weight, ``x̂ · (1 + w)`` computed in fp32
    "offset",
    #: rstd as ``torch.pow(mean(x²) + ε, −0.5)``, the weight multiplied in fp32 (``pow_rms_saved``)
    "pow_rstd",
    #: a LayerNorm without bias written out in fp32 — ``x − mean`` computed twice (for the variance
    #: and for the output), fp32 rstd, the fp32 normed ``x̂`` times ``weight.float()`` (below fp32 a
    #: per-norm fp32 weight copy)
    "centred_fp32",
    #: the weight multiplies the fp32 x̂ by type promotion, with no explicit copy of it
    #: (``(weight · x̂).to(dtype)``): the normed output is kept in fp32
    "fp32_normed",
    #: the weight multiply runs in fp32 (``(weight.float() · x̂).to(dtype)``): the normed output is
    #: kept in fp32 and, below fp32, each norm's fp32 weight copy (batch-free)
    "fp32_weight",
    #: the input is an fp32 residual stream (``residual_in_fp32``): the RMSNorm returns fp32, so its
    #: normed output is kept in fp32 (``4·dim``), not the compute dtype
    "fp32_stream",
    #: ``F.layer_norm(x, weight + 1, bias)``: each norm keeps its ``weight + 1`` ([dim], compute
    #: dtype, batch-free)
    "weight_plus_one",
    #: a LayerNorm without bias (``nn.LayerNorm(bias=False)``): ``dim`` weights, like an RMSNorm, but
    #: its backward keeps what a LayerNorm's does (input, fp32 mean and rstd)
    "layer_stats",
    #: an RMSNorm with a bias: ``2·dim`` parameters, like a LayerNorm, but its backward keeps what an
    #: RMSNorm's does (the bias add keeps nothing)
    "rms_stats",
)


@dataclass(frozen=True)
class Norms(Component):
    """The norms of one layer (or the final norm). The mechanism is ``dim``, ``bias`` and
    ``weightless``; how a family's norm class writes it (a cast, a pow, a ``1 + w``) is ``kind``, a
    name from ``NORM_KINDS`` the adapter supplies — one name, since a class is one implementation,
    so an impossible mix of flags cannot be written."""

    key = "norms"
    names: tuple[str, ...] = ("norm",)
    dim: sympy.Expr = sym.d
    bias: bool = False  # LayerNorm (with weightless: a LayerNorm without its scale and bias)
    weightless: bool = False
    kind: str = "standard"  # the family's norm implementation (``NORM_KINDS``); saved tensors only
    #: norms that read the tensor an earlier norm of the layer reads (a parallel residual: LN₁(x)
    #: and LN₂(x); a second pre-FFN norm on the same residual): what is the input itself is kept
    #: once — a LayerNorm's input always, ``pow_rstd``'s ``x.float()`` in fp32 (below fp32 each
    #: norm keeps its own copy); saved tensors only
    same_input: tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in NORM_KINDS:
            raise ValueError(f"Norms.kind: {self.kind!r} is not one of {NORM_KINDS}")

    def primitives(self, ph: Phase | None = None):
        if self.weightless:
            return []
        return [Norm(n, self.dim, self.bias) for n in self.names]

    def elementwise(self, ph: Phase) -> Terms:
        if not self.weightless:
            return super().elementwise(ph)
        # no weight multiply (and, for a LayerNorm, no bias add): LayerNorm 7 - 2, RMSNorm 4 - 1
        cost = COST["layernorm"] - 2 if self.bias else COST["rmsnorm"] - 1
        t = Terms()
        for n in self.names:
            t.add(n, cost * ph.tokens * self.dim, f"weightless {self.label()}: {cost} per element")
        return t

    def saved(self, bw) -> list:
        kind = self.kind
        if self.weightless and kind == "pow_rstd":  # with_scale=False
            return [s for n in self.names for s in pow_rms_saved(n, self.dim, bw, scale=False)]
        if self.weightless:
            if not self.bias:
                raise NotImplementedError("a weightless RMSNorm declares no saved-for-backward tensors")
            # F.layer_norm(x.float(), weight=None, bias=None): the fp32 input, fp32 mean and rstd
            return [s for n in self.names for s in (
                Saved(f"{n}/input_fp32", self.dim, 4, "seq", doc="x.float() [.., dim]"),
                Saved(f"{n}/mean_rstd", 2, 4, "seq", doc="fp32 mean and rstd"))]
        if kind == "centred_fp32":
            out = []
            for n in self.names:
                out += [Saved(f"{n}/centred", 2 * self.dim, 4, "seq", doc="x − mean, fp32, computed twice"),
                        Saved(f"{n}/rstd", 1, 4, "seq", doc="fp32 rsqrt(var + ε) [.., 1]"),
                        Saved(f"{n}/normed", self.dim, 4, "seq", doc="(x − mean)·rstd, fp32")]
                if bw.upcast:
                    out.append(Saved(f"{n}/weight_fp32", self.dim, 4, "none", sympy.Integer(1),
                                     "weight.float(), per layer"))
            return out
        if kind == "pow_rstd":
            return [s for n in self.names for s in pow_rms_saved(n, self.dim, bw)
                    if bw.upcast or n not in self.same_input or not s.name.endswith("/input_fp32")]
        layer = (self.bias and kind != "rms_stats") or kind == "layer_stats"
        out = []
        for n in self.names:
            out += saved_norm(n, self.dim, layer, offset=kind == "offset")
        if self.same_input and self.bias:  # a LayerNorm's saved input is the tensor itself: kept once
            out = [s for s in out if not (s.name.endswith("/input") and s.name[:-len("/input")] in self.same_input)]
        if kind in ("fp32_stream", "fp32_weight", "fp32_normed") and not self.bias:
            out = [dataclasses.replace(s, nbytes=4, doc="normed, fp32") if s.name.endswith("/normed") else s
                   for s in out]
        if kind == "weight_plus_one":
            out += [Saved(f"{n}/weight_plus_one", self.dim, sym.b_a, "none", sympy.Integer(1),
                          "weight + 1 [dim], per norm") for n in self.names]
        if kind == "fp32_weight" and bw.upcast:
            out += [Saved(f"{n}/weight_fp32", self.dim, 4, "none", sympy.Integer(1), "weight.float(), per layer")
                    for n in self.names]
        return out

    def label(self) -> str:
        kind = "LayerNorm" if self.bias else "RMSNorm"
        return f"{kind} (no weights)" if self.weightless else kind


def pow_rms_saved(name: str, dim, bw, *, heads=sympy.Integer(1), split: str = "seq", rows=None,
                  scale: bool = True) -> list[Saved]:
    """What ``Gemma4RMSNorm`` (and the identical ``Gemma3nRMSNorm``) keeps per row (``heads`` norms of width ``dim`` per row; transformers 5.24).

    ``x.float()`` is read by ``pow(2)`` and by the product with the rstd: ``4·dim`` (the input itself
    in fp32); ``torch.pow(mean_squared, −0.5)`` keeps its input, the fp32 mean square, and the product
    keeps the rstd, 4 each per norm. With a scale, ``x̂ · weight.float()`` keeps the fp32 x̂ ``4·dim``
    and, below fp32, the weight's fp32 copy ``4·dim`` once per norm (in fp32 ``.float()`` returns the
    parameter: not an activation). ``scale=False`` (``with_scale=False``): the output is
    ``x̂.type_as(x)``, kept by whatever reads it, not by the norm.
    """
    out = [Saved(f"{name}/input_fp32", heads * dim, 4, split, rows, "x.float() [.., dim]"),
           Saved(f"{name}/mean_square", heads, 4, split, rows, "mean(x²) + ε, fp32, pow's input [.., 1]"),
           Saved(f"{name}/rstd", heads, 4, split, rows, "fp32 pow(mean(x²) + ε, −0.5) [.., 1]")]
    if scale:
        out.append(Saved(f"{name}/normed", heads * dim, 4, split, rows, "x̂ in fp32, the weight product's input"))
        if bw.upcast:
            out.append(Saved(f"{name}/weight_fp32", dim, 4, "none", sympy.Integer(1), "weight.float() [dim], per norm"))
    return out
