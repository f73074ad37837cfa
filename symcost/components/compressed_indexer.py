"""DeepSeek-V4 lightning indexer: scores a CSA layer's compressed entries and keeps the top k_I.

It runs its own overlapping compressor at width D_I over the same m_csa-token windows (kv_proj and
gate_proj [d, 2·D_I], position_bias [m_csa, 2·D_I], kv_norm D_I), projects H_I query heads from the
attention's query latent (q_b_proj [d_q, H_I·D_I]) and per-head weights from x
(weights_proj [d, H_I]), and scores entry s for query t as Σ_h w_{t,h}·ReLU(q_{t,h}·k_s).
FLOPs: the four projections at 2·tokens·in·out and the scores 2·B·H_I·D_I·pairs, pairs as in
``compressed_attention.compressed_pairs`` without the top-k cap (every visible entry is scored):
prefill T·⌊T/m_csa⌋ (``full``), decode ⌊(T+1)/m_csa⌋. Top-k, ReLU and the weighted head sum
count 0. Source: transformers ``DeepseekV4Indexer``, ``DeepseekV4IndexerScorer``.
Cache: the indexer's own compressed keys [B, ⌊T/m⌋, D_I], tail kv/gate [B, T mod m, 2·D_I] and
overlap kv/gate [B, m, D_I] (in ``DeepseekV4CSACache`` under the name "indexer").

>>> CompressedIndexer().params().total
D_I*H_I*d_q + 4*D_I*d + 2*D_I*m_csa + D_I + H_I*d
>>> CompressedIndexer().cache()["index_compressed"]
B*D_I*floor(T/m_csa)
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.notation import sym
from ..core.primitives import Linear, Matmul
from ..core.terms import Terms
from .base import Component
from .compressed_attention import compressed_pairs, compressor_cache, compressor_primitives


@dataclass(frozen=True)
class CompressedIndexer(Component):
    key = "indexer"
    d: sympy.Expr = sym.d
    d_q: sympy.Expr = sym.d_q
    H_I: sympy.Expr = sym.H_I
    D_I: sympy.Expr = sym.D_I
    m: sympy.Expr = sym.m_csa

    def primitives(self, ph: Phase | None = None):
        prims = compressor_primitives("", self.d, self.D_I, self.m, overlap=True)
        prims += [Linear("q_b_proj", self.d_q, self.H_I * self.D_I, doc="[d_q, H_I·D_I] index queries"),
                  Linear("weights_proj", self.d, self.H_I, doc="[d, H_I] per-head score weights")]
        if ph is not None:
            prims.append(Matmul("scores", 2 * sym.B * self.H_I * self.D_I * compressed_pairs(ph, self.m),
                                "q·k over every compressed index key"))
        return prims

    def saved(self, bw) -> list:
        """Nothing: the indexer returns integer top-k indices (``DeepseekV4Indexer``), so no gradient
        reaches it from the loss and its backward never reads what the branch's ops saved (measured:
        transformers' branch stays alive, its in-place window assembly making an autograd cycle,
        which tests/test_activations.py itemises as unreached; a backward does not need it)."""
        return []

    def cache_tp_share(self, tp: int, values: dict):
        """One cached head shared by all query heads: every tensor-parallel rank holds all of it."""
        return 1

    def cache(self) -> Terms:
        return compressor_cache("index_", self.D_I, self.m, overlap=True)

    def label(self) -> str:
        return "lightning indexer over compressed keys"
