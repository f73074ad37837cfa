"""Primitives: every weight and every matmul-like op, declared once with all its cost channels.

``Linear("o_proj", H_q*D_h, d)`` gives its parameters (``in·out`` + bias), its GEMM FLOPs
(``2·rows·in·out``, see ``conventions``) and its weight bytes from that one line. ``Param`` is a
weight that no GEMM reads (norm scales, ``A_log``, sinks, conv kernels). ``Matmul`` is an op
between activations (attention scores, scans) with a declared FLOPs expression.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import sympy

from .notation import sym

Expr = sympy.Expr
ONE = sympy.Integer(1)
ZERO = sympy.Integer(0)


@dataclass(frozen=True)
class Linear:
    """``y = x W (+ b)`` with ``W: [in_, out]``; ``copies`` of it exist, ``active`` run per token.

    params = copies·(in·out + out·bias); FLOPs = 2·rows·active·in·out.
    """

    name: str
    in_: Expr
    out: Expr
    bias: bool = False
    copies: Expr = ONE
    active: Expr | None = None
    tied: bool = False  # shares its weight with another primitive: counted once, there
    rows: Expr | None = None  # token rows; None = the phase's new tokens (B·T or B)
    tp: Literal["col", "row", None] = None
    doc: str = ""

    @property
    def per_copy(self) -> Expr:
        return self.in_ * self.out + (self.out if self.bias else 0)

    def params(self) -> Expr:
        return ZERO if self.tied else self.copies * self.per_copy

    def active_params(self) -> Expr:
        if self.tied:
            return ZERO
        return (self.copies if self.active is None else self.active) * self.per_copy

    def flops(self, tokens: Expr) -> Expr:
        rows = tokens if self.rows is None else self.rows
        runs = self.copies if self.active is None else self.active
        return 2 * rows * runs * self.in_ * self.out


@dataclass(frozen=True)
class Param:
    """A weight read elementwise (norm scale, bias vector, ``A_log``, conv kernel): no GEMM."""

    name: str
    numel: Expr
    copies: Expr = ONE
    active: Expr | None = None
    doc: str = ""
    norm: Literal["rms", "layer", None] = None  # set by ``Norm``: which norm reads this weight

    def params(self) -> Expr:
        return self.copies * self.numel

    def active_params(self) -> Expr:
        return (self.copies if self.active is None else self.active) * self.numel

    def flops(self, tokens: Expr) -> Expr:
        return ZERO


@dataclass(frozen=True)
class Matmul:
    """A matmul between activations (QKᵀ, PV, conv, scan) with its FLOPs stated."""

    name: str
    flops_expr: Expr
    doc: str = ""

    def params(self) -> Expr:
        return ZERO

    active_params = params

    def flops(self, tokens: Expr) -> Expr:
        return self.flops_expr


Primitive = Linear | Param | Matmul


def Norm(name: str, dim: Expr, bias: bool = False, doc: str = "") -> Param:
    """RMSNorm (``dim`` scales) or LayerNorm (``2·dim`` with bias)."""
    return Param(name, dim * 2 if bias else dim, doc=doc or ("LayerNorm" if bias else "RMSNorm"),
                 norm="layer" if bias else "rms")


@dataclass(frozen=True)
class Saved:
    """One tensor the backward keeps from the forward (training activations), declared once.

    bytes = rows · width · nbytes, one layer, with ``rows`` token rows (``None``: all ``B·T``
    tokens of the micro-batch; ``k·B·T`` for routed assignments; ``T`` for a batch-free table)
    and ``nbytes`` per element (``b_a`` for the compute dtype, 4 for fp32, 8 for int64).
    ``split`` says how tensor parallelism divides it: ``"tp"`` (a head / FFN / vocab shard,
    always ÷ N_tp), ``"seq"`` (hidden-wide, replicated across TP ranks unless sequence
    parallelism shards its tokens, then ÷ N_tp), ``"none"`` (never split).
    """

    name: str
    width: Expr
    nbytes: Expr
    split: Literal["tp", "seq", "none"] = "tp"
    rows: Expr | None = None
    doc: str = ""


@lru_cache(maxsize=256)
def is_one(x: Expr) -> Expr:
    """1 when the positive integer ``x`` is 1, else 0, as ``Max(0, 2 − x)`` (a polynomial-friendly
    indicator that stays in the expression grammar ``symcost.parse`` reads back). Remembered per ``x``:
    the few layout sizes it is asked of recur in every layer, and SymPy's ``Max`` tries to order its
    arguments each time it is built."""
    return sympy.Max(0, 2 - x)


def saved_norm(name: str, dim: Expr, layer: bool = False, split: str = "seq", rows: Expr | None = None,
               heads: Expr = ONE, offset: bool = False) -> list[Saved]:
    """What a norm's backward keeps, per row (``heads`` norms of width ``dim`` per row).

    RMSNorm as transformers writes it (``x.float()``, ``x * rsqrt(mean(x²) + ε)``, back to the
    compute dtype, times the weight): the fp32 input ``4·dim``, the fp32 ``rsqrt`` 4 and the
    normalised ``x`` in the compute dtype ``b_a·dim``. LayerNorm (``torch.nn.LayerNorm``): the input
    ``b_a·dim`` and the fp32 mean and rstd, 4 each. ``offset`` (the zero-centred RMSNorm,
    ``x̂·(1 + w)`` in fp32: Qwen3-Next, Qwen3.5, Gemma): the fp32 input, rstd and normed ``x̂`` and,
    once per norm, the fp32 ``1 + w``.
    """
    if offset:  # Qwen3-Next / Gemma: (x̂ · (1 + weight.float())).type_as(x), all in fp32
        return [Saved(f"{name}/input_fp32", heads * dim, 4, split, rows, "x.float() [.., dim]"),
                Saved(f"{name}/rstd", heads, 4, split, rows, "fp32 rsqrt(mean(x²)+ε) [.., 1]"),
                Saved(f"{name}/normed", heads * dim, 4, split, rows, "x·rstd, fp32"),
                Saved(f"{name}/one_plus_weight", dim, 4, "none", ONE, "1 + weight.float() [dim], per norm")]
    if layer:
        return [Saved(f"{name}/input", heads * dim, sym.b_a, split, rows, "[.., dim] LayerNorm input"),
                Saved(f"{name}/mean_rstd", 2 * heads, 4, split, rows, "fp32 mean and rstd")]
    return [Saved(f"{name}/input_fp32", heads * dim, 4, split, rows, "x.float() [.., dim]"),
            Saved(f"{name}/rstd", heads, 4, split, rows, "fp32 rsqrt(mean(x²)+ε) [.., 1]"),
            Saved(f"{name}/normed", heads * dim, sym.b_a, split, rows, "x·rstd in the compute dtype")]
