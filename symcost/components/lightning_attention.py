"""Lightning attention (MiniMax-Text-01): linear attention with a fixed per-head exponential decay,
computed block by block (intra-block scores, inter-block state).

Parameters (transformers ``MiniMaxLightningAttention``), H = H_q heads of D = D_h, no biases:
    qkv_proj     d·3·H·D    (SiLU on q, k and v)
    output_gate  d·H·D      (sigmoid gate on the normalised output)
    norm         H·D        (one RMSNorm over all heads)
    out_proj     H·D·d
Buffers (persistent, computed from the config, not learned): slope_rate [H, 1, 1], query_decay and
    key_decay [H, C_la, 1], diagonal_decay [1, H, C_la, C_la] — H·(1 + 2·C_la + C_la²) per layer.
FLOPs, batch B; the projections 2·tokens·in·out. Prefill runs ``n = ⌈T/C_la⌉`` blocks of
    C_la = ``block_size`` tokens, the last one of r = T − C_la·⌊T/C_la⌋ tokens when r > 0 (no
    padding); per head and block of s tokens:
        Q·Kᵀ             2·s·s·D     intra-block scores
        (QKᵀ⊙decay)·V    2·s·s·D
        (Q⊙decay)·KV     2·s·D·D     the state from the earlier blocks
        (K⊙decay)ᵀ·V     2·s·D·D     the block's contribution to the state
    so 4·B·H·D·pairs + 4·B·H·D²·T, the intra-block (query, key) pairs per head being
    ``impl="reference"`` (what the torch loop multiplies, exactly, for every T): Σ s² =
        ⌊T/C_la⌋·C_la² + r² under ``attention="full"`` (the whole block rectangle), and the pairs
        the causal decay mask keeps, ⌊T/C_la⌋·C_la(C_la+1)/2 + r(r+1)/2, under ``"causal"``;
    ``impl="minimal"`` (default): T·C_la (full) or T·(C_la+1)/2 (causal), the same count as a
        polynomial in T — equal to the reference when C_la divides T, and with a second derivative
        in T of 0, as a linear-attention mixer has (the reference's r² stays below C_la²).
    Decode (one token against the cached state), both conventions: kᵀ·v 2·B·H·D² and q·KV
    2·B·H·D², 4·B·H·D² (the transformers step is these two matmuls).
Elementwise (``symcost.core.elementwise``), per token: SiLU on q, k, v 4·3HD; the RMSNorm 4·HD; the
    output gate (sigmoid and product) 5·HD; one residual add d. The decays: prefill weighs each
    intra-block score (B·H·pairs) and each query and key (2·HD per token) and decays the state once
    per block (H·D²); decode decays the state, H·D² per token.
Cache (``MiniMaxCache.linear_cache``): the state KᵀV per layer, [B, H, D, D], in the model dtype.

>>> LightningAttention().cache().total
B*D_h**2*H_q
>>> from symcost.core.conventions import Phase
>>> LightningAttention().flops(Phase(kind="decode")).total
4*B*D_h**2*H_q + 10*B*D_h*H_q*d
>>> LightningAttention().pairs(Phase(impl="reference")).subs({sym.T: 300, sym.C_la: 256})
67472
>>> LightningAttention().pairs(Phase()).subs({sym.T: 300, sym.C_la: 256})
76800
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Norm, Saved, is_one, saved_norm
from ..core.terms import Terms
from .base import Component


@dataclass(frozen=True)
class LightningAttention(Component):
    key = "self_attn"
    d: sympy.Expr = sym.d
    H: sympy.Expr = sym.H_q
    D: sympy.Expr = sym.D_h
    C: sympy.Expr = sym.C_la  # block size of the prefill loop

    def pairs(self, ph: Phase) -> sympy.Expr:
        """(query, key) pairs per sequence and head the intra-block products multiply (prefill)."""
        C, T = self.C, sym.T
        if ph.impl != "reference":
            return T * C if ph.attention == "full" else T * (C + 1) / 2
        whole = sympy.floor(T / C)
        rest = T - C * whole
        if ph.attention == "full":
            return whole * C * C + rest * rest
        return whole * C * (C + 1) / 2 + rest * (rest + 1) / 2

    def primitives(self, ph: Phase | None = None):
        d, HD = self.d, self.H * self.D
        prims = [
            Linear("qkv_proj", d, 3 * HD, tp="col", doc="[d, 3·H_q·D_h]: q, k, v"),
            Linear("output_gate", d, HD, tp="col", doc="[d, H_q·D_h]"),
            Norm("norm", HD, doc="RMSNorm [H_q·D_h]"),
            Linear("out_proj", HD, d, tp="row", doc="[H_q·D_h, d]"),
        ]
        if ph is None:
            return prims
        B, H, D = sym.B, self.H, self.D
        if ph.kind == "decode":
            return prims + [Matmul("state_update", 2 * B * H * D * D, "kᵀ·v, one token"),
                            Matmul("state_read", 2 * B * H * D * D, "q·KV against the cached state")]
        pairs = self.pairs(ph)
        return prims + [
            Matmul("block_scores", 2 * B * H * D * pairs, "Q·Kᵀ within each block"),
            Matmul("block_values", 2 * B * H * D * pairs, "(QKᵀ⊙decay)·V within each block"),
            Matmul("state_read", 2 * B * H * D * D * sym.T, "(Q⊙decay)·KV, the earlier blocks' state"),
            Matmul("state_update", 2 * B * H * D * D * sym.T, "(K⊙decay)ᵀ·V into the state, per block"),
        ]

    def elementwise(self, ph: Phase) -> Terms:
        rows, B, H, D = ph.tokens, sym.B, self.H, self.D
        if ph.kind == "decode":
            decay = rows * H * D * D
        else:
            decay = B * H * self.pairs(ph) + 2 * rows * H * D + B * sympy.ceiling(sym.T / self.C) * H * D * D
        return Terms({
            "qkv_act": COST["silu"] * rows * 3 * H * D,
            "norm": COST["rmsnorm"] * rows * H * D,
            "output_gate": (COST["sigmoid"] + COST["gate_mul"]) * rows * H * D,
            "decay": decay,
            "residual": COST["residual"] * rows * self.d,
        }, {"qkv_act": "SiLU on q, k, v", "norm": "RMSNorm over H_q·D_h",
            "output_gate": "sigmoid(output_gate(x)) times the normalised output",
            "decay": "the decay multiplies (scores, queries, keys, state)", "residual": "residual add"})

    def saved(self, bw) -> list:
        """Saved for backward (transformers ``MiniMaxLightningAttention``, no cache), per layer.

        The same under every ``Backward`` kernel and recompute setting (no softmax attention here).
        Per token: the input ``b_a·d`` (qkv_proj and output_gate read it), the SiLU input (qkv_proj's
        output) ``b_a·3·H·D``; the RMSNorm (``saved_norm`` of H·D), the sigmoid gate and the norm's
        output ``b_a·H·D`` each (their product), out_proj's input ``b_a·H·D``. The decay buffers the
        block products read: diagonal_decay and query_decay, H·(C_la² + C_la), and key_decay H·C_la
        when there are n ≥ 2 blocks. Per block of s tokens, n = ⌈T/C_la⌉ blocks: the masked scores
        ``b_a·B·H·s²`` (Σ s² = the reference pairs), the state entering the block ``b_a·B·H·D²``
        (zeros for the first one), Q⊙decay ``b_a·B·H·s·D`` but in the first block (whose state needs
        no gradient). The state the last block leaves is returned and dropped by the decoder layer, so
        what only it needs is freed: K⊙decay ``b_a·B·H·s·D`` is kept for the first n − 1 blocks
        (C_la·(n − 1) tokens), the block decay e^(−slope·s) ``b_a·H`` for blocks 2 … n − 1. matmul's
        fold of [B, H] copies the q, kᵀ and v slices of the SiLU output, ``3·b_a·B·T·H·D``, and v
        again for the state update of the first n − 1 blocks, unless that fold is a view (B, H or T
        equal to 1): then the SiLU output itself is kept, ``b_a·B·T·3·H·D``.
        """
        a, B, T, H, D, C = sym.b_a, sym.B, sym.T, self.H, self.D, self.C
        HD = H * D
        n = sympy.ceiling(T / C)
        more = 1 - is_one(n)  # 1 when there are two blocks or more
        copies = (1 - is_one(B)) * (1 - is_one(H)) * (1 - is_one(T))
        updated = B * C * (n - 1)  # token rows of the blocks whose state update is kept
        return [
            Saved("input", self.d, a, "seq", doc="qkv_proj / output_gate input [.., d]"),
            Saved("qkv_act_input", 3 * HD, a, doc="SiLU input: qkv_proj's output"),
            Saved("decay_buffers", H * (C * C + C + C * more), a, rows=sympy.Integer(1),
                  doc="diagonal_decay, query_decay, key_decay (n ≥ 2) buffers read by the block products"),
            Saved("block_copies", 3 * HD * copies, a, doc="q, kᵀ, v slices copied by matmul's batch fold"),
            Saved("state_v_copies", HD * copies, a, rows=updated, doc="v copied again for the kept state updates"),
            Saved("qkv_act_output", 3 * HD * (1 - copies), a, doc="the SiLU output, when the products read views of it"),
            Saved("block_scores", H, a, rows=B * self.pairs(Phase(impl="reference")),
                  doc="(QKᵀ⊙decay) of each block, s² per head"),
            Saved("block_states", HD * D, a, rows=B * n, doc="the state entering each block"),
            Saved("q_decay", HD, a, rows=B * (T - sympy.Min(T, C)), doc="Q⊙decay, every block but the first"),
            Saved("k_decay", HD, a, rows=updated, doc="K⊙decay, every block but the last"),
            Saved("block_decay", H, a, rows=sympy.Max(n - 2, 0), doc="e^(−slope·s), blocks 2 … n − 1"),
            *saved_norm("norm", HD, split="tp"),
            Saved("gate", HD, a, doc="sigmoid(output_gate(x))"),
            Saved("norm_out", HD, a, doc="the RMSNorm's output, times the gate"),
            Saved("out_proj_input", HD, a, doc="gate · norm output"),
        ]

    def buffers(self) -> Terms:
        H, C = self.H, self.C
        return Terms({"slope_rate": H, "query_decay": H * C, "key_decay": H * C, "diagonal_decay": H * C * C},
                     {"slope_rate": "[H_q, 1, 1]", "query_decay": "[H_q, C_la, 1]",
                      "key_decay": "[H_q, C_la, 1]", "diagonal_decay": "[1, H_q, C_la, C_la]"})

    def cache(self) -> Terms:
        return Terms({"linear_cache": sym.B * self.H * self.D * self.D},
                     {"linear_cache": "[B, H_q, D_h, D_h]: KᵀV with its decays, model dtype"})

    def label(self) -> str:
        return "lightning attention"
