"""Attention residuals (Kimi K3): each sublayer's input is a learned softmax mixture of block summaries.

The residual stream is cut into blocks of b = ``attn_res_block_size`` layers. Layer l's attention
input snapshots the running prefix into a bank when l is a multiple of b; at every aggregation
point (before attention, before the MLP, and once before the final norm) the banked summaries and
the current prefix, R rows per token, are scored by RMSNorm then a d → 1 projection, softmaxed
over the R rows, and mixed; the mixture goes through the layer's own input/post-attention norm.
Source: SGLang ``python/sglang/srt/layers/attn_residual.py`` (``AttnResidual.forward``,
``aggregate_stream_torch``, the eager reference) and ``python/sglang/srt/models/kimi_k3.py``
(``KimiK3DecoderLayer`` ``self_attention_res_norm/_proj``, ``mlp_res_norm/_proj``;
``KimiK3LinearModel`` ``output_attn_res_norm/_proj``), sgl-project/sglang at commit
0000e9b46f38dd9055ecad825a42c47a047077e6 (model) and 01fd23325ec08538327a88d3dedd860b99dd444f (layer).
Parameters: per layer two RMSNorms d and two projections d (``ReplicatedLinear(d, 1)``, no bias);
    once, before the final norm, one more of each.
Rows: with nvb banked summaries an aggregation point scores R = nvb + 1 rows; the attention side of
    layer l has nvb = ⌈l/b⌉ (layer 0 has none and only norms its input), the MLP side ⌊l/b⌋ + 1, the
    output side ⌈L/b⌉. ``R_ar`` is their sum over the forward, R_ar = Σ_{l≥1}(⌈l/b⌉ + 1) +
    Σ_l(⌊l/b⌋ + 2) + ⌈L/b⌉ + 1, an integer of the config (``score_rows``).
FLOPs: the score projection, 2·d per scored row, 2·tokens·R_ar·d over the whole forward (the eager
    reference runs ``score_proj`` over T·R rows; the fused kernels compute the same dot products).
Elementwise (``symcost.core.elementwise``), per scored row: the score RMSNorm 4·d, softmax 5, the
    weighted mix 2·d (multiply, add).
Cache: none (the bank lives for one forward pass).

>>> AttnResidual().params().total
4*d
>>> score_rows(93, 12)
1002
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Matmul, Norm, Param
from ..core.terms import Terms
from .base import Component


def score_rows(L: int, b: int) -> int:
    """R_ar: the rows all aggregation points of one forward score, per token (module docstring)."""
    attn = sum(-(-l // b) + 1 for l in range(1, L))
    mlp = sum(l // b + 2 for l in range(L))
    return attn + mlp + (-(-L // b)) + 1


@dataclass(frozen=True)
class AttnResidual(Component):
    """One decoder layer's two aggregation weights; their work is counted once, by ``AttnResidualOutput``."""

    key = "attn_res"
    d: sympy.Expr = sym.d

    def primitives(self, ph: Phase | None = None):
        d = self.d
        return [Norm("self_attention_res_norm", d, doc="RMSNorm [d] scoring the attention side's rows"),
                Param("self_attention_res_proj", d, doc="Linear [d, 1], no bias (its GEMM: attn_res_scores)"),
                Norm("mlp_res_norm", d, doc="RMSNorm [d] scoring the MLP side's rows"),
                Param("mlp_res_proj", d, doc="Linear [d, 1], no bias (its GEMM: attn_res_scores)")]

    def elementwise(self, ph: Phase) -> Terms:
        return Terms()  # over R rows, not tokens: counted by AttnResidualOutput

    def label(self) -> str:
        return "attention residual weights"


@dataclass(frozen=True)
class AttnResidualOutput(Component):
    """The output-side aggregation weights, and the scoring work of every aggregation point."""

    key = "attn_res_out"
    d: sympy.Expr = sym.d
    R: sympy.Expr = sym.R_ar

    def primitives(self, ph: Phase | None = None):
        d = self.d
        prims = [Norm("output_attn_res_norm", d, doc="RMSNorm [d]"),
                 Param("output_attn_res_proj", d, doc="Linear [d, 1], no bias")]
        if ph is not None:
            prims.append(Matmul("attn_res_scores", 2 * ph.tokens * self.R * d,
                                "score projections d → 1 over the R_ar rows every token's aggregation points score"))
        return prims

    def elementwise(self, ph: Phase) -> Terms:
        rows = ph.tokens * self.R
        return Terms({"score_norm": COST["rmsnorm"] * rows * self.d, "softmax": COST["softmax"] * rows,
                      "mix": 2 * rows * self.d},
                     {"score_norm": "RMSNorm of each scored row", "softmax": "over each point's R rows",
                      "mix": "weighted sum of the rows"})

    def label(self) -> str:
        return "attention residual scores"
