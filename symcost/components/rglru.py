"""Griffin recurrent block (RecurrentGemma): two branches, a temporal conv1d and the RG-LRU scan.

transformers ``RecurrentGemmaRecurrentBlock`` / ``RecurrentGemmaRglru``, with the LRU width
w = ``lru_width`` = H·D_lru (H = ``num_attention_heads`` gate blocks of D_lru channels each):
    y = act(linear_y x)                       linear_y d·w + w
    u = RG-LRU(conv1d(linear_x x))            linear_x d·w + w; conv_1d depthwise w·K_c + w
    out = linear_out(u · y)                   linear_out w·d + d
RG-LRU: input gate i = σ(u W_i + b_i) and recurrence gate r = σ(u W_r + b_r), each block-diagonal
(H blocks of D_lru × D_lru, + bias): H·(D_lru² + D_lru) parameters each; ``recurrent_param`` Λ, w;
a = exp(−8·r·softplus(Λ)); h_t = a ⊙ h_{t−1} + √(1 − a²) ⊙ (i ⊙ u_t) (no multiplier at position 0).
Parameters: 3·d·w + 2·w + d + w·K_c + w + w + 2·H·(D_lru² + D_lru).
FLOPs, batch B, rows = B·T in prefill, B in decode; the three projections 2·rows·in·out and the two
gates 2·rows·H·D_lru² each (``torch.baddbmm`` per block) under both ``impl`` conventions.
``impl="minimal"`` (default): conv 2·rows·w·K_c (one output per token); the scan one
    multiply–accumulate per channel and token, 2·rows·w.
``impl="reference"``: what the transformers torch path runs, as FlopCounterMode measures it (the
    oracle tests use this): prefill conv 2·B·(T + K_c − 1)·w·K_c (padding K_c − 1, then slicing);
    the scan is a Python loop of elementwise ops (0); decode computes the conv as an elementwise
    multiply and sum over the K_c − 1 cached columns and the new one (0).
Elementwise (``symcost.core.elementwise``), per token: the activation of the y branch over w, the two
    sigmoid gates 4·w each, the decay and its normalisation (−8·r·softplus(Λ), exp, a², 1 − a², √,
    the input-gate and normaliser products, the decay multiply of the state: 11·w), the output gate
    u·y w, and one residual add d.
Cache (held by the block itself, not by the transformers cache object): ``conv1d_state``
    [B, w, K_c − 1] (the last K_c − 1 inputs of the conv) and ``recurrent_states`` [B, w], kept in
    float32 whatever the model dtype (adapters record that in ``Model.state_dtype``).

>>> RecurrentBlock().cache().total
B*D_lru*H_q*(K_c - 1) + B*D_lru*H_q
>>> RecurrentBlock().params().total.subs({sym.d: 8, sym.H_q: 2, sym.D_lru: 4, sym.K_c: 4})
344
>>> from symcost.core.conventions import Phase
>>> RecurrentBlock().flops(Phase(kind="decode", impl="reference"))["rg_lru.input_gate"]
2*B*D_lru**2*H_q
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST, act_cost
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Param, Saved, is_one
from ..core.terms import Terms
from .base import Component


@dataclass(frozen=True)
class RecurrentBlock(Component):
    key = "temporal_block"
    d: sympy.Expr = sym.d
    H: sympy.Expr = sym.H_q  # gate blocks: num_attention_heads
    D_lru: sympy.Expr = sym.D_lru
    K_c: sympy.Expr = sym.K_c
    act: str = "gelu_pytorch_tanh"  # hidden_activation of the y branch (elementwise only)

    @property
    def width(self) -> sympy.Expr:
        """lru_width = H·D_lru."""
        return self.H * self.D_lru

    def primitives(self, ph: Phase | None = None):
        d, w, H, D, K = self.d, self.width, self.H, self.D_lru, self.K_c
        prims = [
            Linear("linear_y", d, w, True, tp="col", doc="[d, H_q·D_lru]"),
            Linear("linear_x", d, w, True, tp="col", doc="[d, H_q·D_lru]"),
            Param("conv_1d", w * K, doc="depthwise [H_q·D_lru, K_c]"),
            Param("conv_1d_bias", w, doc="[H_q·D_lru]"),
            Linear("rg_lru.input_gate", D, D, True, copies=H, doc="H_q blocks [D_lru, D_lru] + bias"),
            Linear("rg_lru.recurrent_gate", D, D, True, copies=H, doc="H_q blocks [D_lru, D_lru] + bias"),
            Param("rg_lru.recurrent_param", w, doc="Λ [H_q·D_lru]"),
            Linear("linear_out", w, d, True, tp="row", doc="[H_q·D_lru, d]"),
        ]
        if ph is None:
            return prims
        B, T, rows = sym.B, sym.T, ph.tokens
        if ph.impl == "reference":
            if ph.kind == "prefill":
                prims.append(Matmul("conv_1d", 2 * B * (T + K - 1) * w * K, "depthwise conv, T + K_c − 1 outputs"))
            return prims
        return prims + [Matmul("conv_1d", 2 * rows * w * K, "depthwise conv, one output per token"),
                        Matmul("rg_lru.scan", 2 * rows * w, "h ← a·h + x: one multiply–accumulate per channel")]

    def elementwise(self, ph: Phase) -> Terms:
        rows, w = ph.tokens, self.width
        return Terms({"act": act_cost(self.act) * rows * w,
                      "gates": 2 * COST["sigmoid"] * rows * w,
                      "decay": 11 * rows * w,
                      "output_gate": COST["gate_mul"] * rows * w,
                      "residual": COST["residual"] * rows * self.d},
                     {"act": f"{self.act} on the y branch", "gates": "σ of the input and recurrence gates",
                      "decay": "a = exp(−8·r·softplus(Λ)), √(1 − a²), gating, decay of the state",
                      "output_gate": "u · y", "residual": "residual add"})

    def saved(self, bw) -> list:
        """Saved for backward, one layer (measured in tests/test_activations.py). transformers'
        torch path is the only training path (no fused RG-LRU kernel is called), so both
        ``Backward.scan`` conventions declare it. Per token, w = H·D_lru: the projections' input
        ``b_a·d``; the y branch's activation input and output and the conv input, the RG-LRU output,
        the gated product (linear_out's input) ``b_a·w`` each; the conv output over T + K_c − 1
        positions ``b_a·w`` (B > 1: its contiguous copy for the block-diagonal gates, ``b_a·w``
        more); the two sigmoid gates, −8·r, the decay a = exp(·) and a² = exp(2·), 1 − a² (the
        bounded sqrt's input), the gated input and the normaliser ``b_a·w`` each; the two
        ``~reset`` masks, 1 byte per position each (batch-free); a·~reset as the scan reads it, fp32 ``4·w`` (the tensor
        itself in fp32; below fp32 the scan's fp32 casts of steps 1 … T − 1: step 0 multiplies the
        zero state, which needs no gradient) and the T states of the loop (the zero
        initial state and states 1 … T − 1), fp32 ``4·w``; per layer softplus(Λ) ``b_a·w``."""
        a, d, w, one = sym.b_a, self.d, self.width, sympy.Integer(1)
        B, T = sym.B, sym.T
        return [Saved("input", d, a, "seq", doc="linear_x / linear_y input [.., d]"),
                Saved("y_branch", 2 * w, a, doc="linear_y output (activation input) and act(y)"),
                Saved("conv_input", w, a, doc="linear_x output"),
                Saved("conv_out", w, a, rows=B * (T + self.K_c - 1), doc="conv output, T + K_c − 1 positions"),
                Saved("gate_input_copy", w * (1 - is_one(B)), a,
                      doc="conv output made contiguous for the gates' baddbmm (B = 1: a view)"),
                Saved("gates", 2 * w, a, doc="sigmoid input and recurrence gates"),
                Saved("decay", 5 * w, a, doc="−8·r, exp(log a), exp(2·log a), 1 − a², the normaliser"),
                Saved("gated_input", w, a, doc="u ⊙ i"),
                Saved("reset_masks", 2, 1, "none", T, doc="two ~reset bool masks [1, T, 1] (from the positions)"),
                Saved("scan/decay_fp32", w, 4, rows=B * T - (B if bw.upcast else 0),
                      doc="a·~reset as the scan reads it, fp32 (below fp32: the casts of steps 1 … T − 1; "
                          "step 0 multiplies the zero state, which needs no gradient)"),
                Saved("scan/states", w, 4, doc="the zero state and states 1 … T − 1, fp32"),
                Saved("lru_out", w, a, doc="RG-LRU output"),
                Saved("out_input", w, a, doc="lru_out · y, linear_out input"),
                Saved("softplus_param", w, a, rows=one, doc="softplus(Λ), per layer")]

    def checkpoint_shared(self, bw) -> list:
        """Full recomputation checkpoints each layer with the position ids (the RG-LRU's reset
        mask is computed from them): one int64 [1, T] tensor for all layers."""
        return [Saved("position_ids", 1, 8, "none", sym.T, doc="int64 [1, T], an input of every checkpointed layer")]

    def cache(self) -> Terms:
        w = self.width
        return Terms({"conv1d_state": sym.B * w * (self.K_c - 1), "recurrent_states": sym.B * w},
                     {"conv1d_state": "[B, H_q·D_lru, K_c − 1]",
                      "recurrent_states": "[B, H_q·D_lru] (float32)"})

    def label(self) -> str:
        return "Griffin recurrent block (RG-LRU)"
