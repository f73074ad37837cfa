"""MiniMax Sparse Attention (MSA): a small index branch picks k_blk key blocks of S_I keys per query,
and the GQA main attention attends only those blocks.

Index branch (transformers ``MiniMaxM3VLIndexer``), parameters:
    q_proj d·H_I·D_I, k_proj d·D_I (one key head shared by the H_I index heads), q_norm and
    k_norm RMSNorm D_I each (Gemma-style, scale + 1)                  -> d·D_I·(H_I + 1) + 2·D_I
FLOPs: the two projections 2·tokens·in·out, then the scores q·kᵀ, 2·B·H_I·D_I per (query, key):
    the rectangle T·T in prefill (masked after the matmul), T+1 keys in decode. Max-pooling keys
    into ⌈T/S_I⌉ blocks, the local-block boost, top-k and the mask scatter are not matmuls: 0.
Cache: the index keys ``idx_keys`` [B, 1, T, D_I] per MSA layer (``MiniMaxM3VLSparseCacheLayer``),
    next to the layer's usual K and V.
Training: the index branch saves nothing (its output is integer indices: no gradient reaches it);
    the main attention saves what GQA attention saves (``attention.Attention.saved``).
Main attention (``MiniMaxM3VLAttention``): the GQA projections with per-head q/k RMSNorm of D_h.
    With eager attention the selected blocks only build an additive mask: the QKᵀ and PV matmuls
    still run over every key (``attention="full"``, what transformers computes). Under
    ``attention="causal"`` only the pairs the causal and block masks keep are counted (the
    intended block-sparse kernel): with ``index_local_blocks`` ≥ 1 the query's own (partial) block
    is always kept, so a query at position i attends exactly
        keys(i) = min(i + 1, (k_blk − 1)·S_I + (i mod S_I) + 1),
    deterministic although the other blocks are chosen by data; decode at context T uses i = T, and
    prefill sums i = 0..T−1 in closed form (``msa_pairs_prefill``). With no local block the count is
    data-dependent and ``min(i + 1, k_blk·S_I)`` is its upper bound.

>>> from symcost.core.notation import sym
>>> MSAIndexer().params().total
D_I*H_I*d + D_I*d + 2*D_I
>>> MSAIndexer().cache().total
B*D_I*T
>>> [msa_pairs_prefill(T, 2, 4) for T in (3, 8, 9, 14)]  # k_blk=2, S_I=4: Σ_i keys(i)
[6, 36, 41, 73]
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Norm
from ..core.terms import Terms
from .attention import Attention
from .base import Component


def msa_pairs_decode(T, k_blk, S_I, local: bool = True) -> sympy.Expr:
    """Keys the new token at position T attends (T cached + itself)."""
    T, k_blk, S_I = sympy.sympify((T, k_blk, S_I))
    if not local:
        return sympy.Min(T + 1, k_blk * S_I)
    return sympy.Min(T + 1, (k_blk - 1) * S_I + sympy.Mod(T, S_I) + 1)


def msa_pairs_prefill(T, k_blk, S_I, local: bool = True) -> sympy.Expr:
    """Σ_{i=0}^{T-1} keys(i): the causal triangle until k_blk blocks exist, then the sparse rows."""
    T, k_blk, S_I = sympy.sympify((T, k_blk, S_I))
    N = k_blk * S_I
    tri = T * (T + 1) / 2
    if not local:
        return sympy.Piecewise((tri, T <= N), (N * (N + 1) / 2 + (T - N) * N, True))
    m = T - N
    q, r = sympy.floor(m / S_I), sympy.Mod(m, S_I)
    rest = N * (N + 1) / 2 + m * ((k_blk - 1) * S_I + 1) + q * S_I * (S_I - 1) / 2 + r * (r - 1) / 2
    return sympy.Piecewise((tri, T <= N), (rest, True))


@dataclass(frozen=True)
class MSAIndexer(Component):
    key = "indexer"
    d: sympy.Expr = sym.d
    H_I: sympy.Expr = sym.H_I
    D_I: sympy.Expr = sym.D_I

    def primitives(self, ph: Phase | None = None):
        d, H, D = self.d, self.H_I, self.D_I
        prims = [Linear("index_q_proj", d, H * D, doc="[d, H_I·D_I]"),
                 Linear("index_k_proj", d, D, doc="[d, D_I], one key head shared by the H_I heads"),
                 Norm("index_q_norm", D, doc="per-head RMSNorm [D_I]"),
                 Norm("index_k_norm", D, doc="RMSNorm [D_I]")]
        if ph is not None:
            pairs = ph.pairs(None)
            prims.append(Matmul("index_scores", 2 * sym.B * H * D * pairs,
                                "q·kᵀ: 2·B·H_I·D_I per (query, key), fp32"))
        return prims

    def saved(self, bw) -> list:
        """Nothing: the branch ends in integer block indices (``topk(...).indices``), so no gradient
        reaches its weights from the loss and the backward never reads what its ops saved
        (transformers' branch stays alive all the same — ``scatter_`` writes in place into the
        block scores ``amax`` saved, an autograd cycle — which tests/test_activations.py itemises as
        unreached); the block mask built from the indices is added to the scores."""
        return []

    def cache_tp_share(self, tp: int, values: dict):
        """One cached head shared by all query heads: every tensor-parallel rank holds all of it."""
        return 1

    def cache(self) -> Terms:
        return Terms({"idx_keys": sym.B * sym.T * self.D_I}, {"idx_keys": "[B, 1, T, D_I]"})

    def label(self) -> str:
        return "MSA index branch"


@dataclass(frozen=True)
class MSAAttention(Attention):
    """GQA main attention of an MSA layer: dense + mask as implemented, block-sparse under ``causal``."""

    S_I: sympy.Expr = sym.S_I
    k_blk: sympy.Expr = sym.k_blk
    local: bool = True  # index_local_blocks >= 1: the query's own block is always kept

    def primitives(self, ph: Phase | None = None):
        prims = super().primitives(ph)
        if ph is None or ph.attention == "full":
            return prims
        if ph.kind == "decode":
            pairs = msa_pairs_decode(sym.T, self.k_blk, self.S_I, self.local)
        else:
            pairs = msa_pairs_prefill(sym.T, self.k_blk, self.S_I, self.local)
        doc = "2·B·H_q·D_h per kept (query, key): k_blk blocks of S_I keys"
        return [Matmul(p.name, 2 * sym.B * self.H_q * self.D_h * pairs, doc)
                if isinstance(p, Matmul) else p for p in prims]

    def label(self) -> str:
        return "GQA attention, MSA block-sparse"
