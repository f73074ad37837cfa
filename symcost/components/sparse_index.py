"""Lightning indexer of DeepSeek Sparse Attention (DSA): scores every visible key, keeps the top k_I.

Parameters (transformers ``DeepseekV32Indexer``):
    wq_b d_q·H_I·D_I (reads the MLA query latent after q_a_layernorm), wk d·D_I,
    k_norm LayerNorm 2·D_I (scale and bias), weights_proj d·H_I.
FLOPs, as the transformers code computes them: the three projections 2·tokens·in·out, then
    scores q·kᵀ 2·B·H_I·D_I·pairs (one shared key head, broadcast to H_I query heads) and the
    head-weighted sum 2·B·H_I·pairs. ``pairs`` is the whole rectangle under ``full`` (the causal
    mask is added after the matmul) and the causal triangle under ``causal``; ReLU, top-k and the
    scatter into the attention mask count 0. Selecting k_I keys does not shrink the eager MLA
    matmuls (see ``mla.py``).
Training: saves nothing (``torch.no_grad`` in transformers; ``saved``).
Cache: the indexer keys, [B, T, D_I] per layer (``DynamicIndexedLayer.indexer_keys``).

>>> Indexer().params().total
D_I*H_I*d_q + D_I*d + 2*D_I + H_I*d
>>> Indexer().cache().total
B*D_I*T
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Norm
from ..core.terms import Terms
from .base import Component


@dataclass(frozen=True)
class Indexer(Component):
    key = "indexer"
    d: sympy.Expr = sym.d
    d_q: sympy.Expr = sym.d_q
    H_I: sympy.Expr = sym.H_I
    D_I: sympy.Expr = sym.D_I

    def primitives(self, ph: Phase | None = None):
        d, H, D = self.d, self.H_I, self.D_I
        prims = [Linear("wq_b", self.d_q, H * D, doc="[d_q, H_I·D_I]"),
                 Linear("wk", d, D, doc="[d, D_I], one key head"),
                 Norm("k_norm", D, bias=True, doc="LayerNorm [D_I] with bias"),
                 Linear("weights_proj", d, H, doc="[d, H_I] per-head weights")]
        if ph is not None:
            pairs = ph.pairs(None)
            prims += [Matmul("index_scores", 2 * sym.B * H * D * pairs, "q·kᵀ: 2·B·H_I·D_I per (query, key)"),
                      Matmul("head_sum", 2 * sym.B * H * pairs, "Σ_h w_h·score_h: 2·B·H_I per (query, key)")]
        return prims

    def saved(self, bw) -> list:
        """Nothing: transformers runs ``DeepseekV32Indexer.forward`` under ``torch.no_grad`` (its
        weights get no gradient from the LM loss; DeepSeek's separate KL warm-up of the indexer is
        not modelled). The top-k mask it returns is added to the scores, which keeps nothing."""
        return []

    def cache_tp_share(self, tp: int, values: dict):
        """One cached head shared by all query heads: every tensor-parallel rank holds all of it."""
        return 1

    def cache(self) -> Terms:
        return Terms({"indexer_keys": sym.B * sym.T * self.D_I}, {"indexer_keys": "[B, T, D_I]"})

    def label(self) -> str:
        return "DSA lightning indexer"
