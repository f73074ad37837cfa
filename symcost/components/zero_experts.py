"""MoE with zero-computation experts (LongCat-Flash): the router also picks identity "experts".

The router scores ``E + E_z`` candidates; ``E`` are SwiGLU experts of width ``d_moe``, the other
``E_z`` return their input unchanged (scaled by the routing weight), so a token costs only as much
as the real experts among its top-``k`` slots (transformers ``LongcatFlashMoE``,
``LongcatFlashTopkRouter``, ``LongcatFlashExperts``).

Parameters (as transformers 5.24 registers them):
    router (classifier)  d·(E+E_z) (+ (E+E_z) with ``router_bias``)
    gate_up_proj         (E+E_z)·2·d_moe·d  — transformers allocates gate/up rows for the zero
                         experts too (never read: a zero-expert slot takes the identity branch, and
                         the checkpoint has no such tensors); ``params()`` keeps them so that the
                         total equals the class, and names them ``experts_gate_up_zero`` so that
                         ``real`` = total − that term is the checkpoint's count
    down_proj            E·d·d_moe
    buffer               e_score_correction_bias [E+E_z]
Active parameters and FLOPs — the convention. Eager transformers runs, per token, one SwiGLU
    expert for each top-k slot that lands on a real expert and the identity for each slot that
    lands on a zero expert (0 FLOPs); how many slots are real depends on the routing (LongCat's
    "dynamic computation"), so no closed form exists for what it computes on given data. symcost
    counts ``k_r = min(k, E)`` real experts per token, under ``minimal`` and ``reference`` alike:
    the most a token can run (every slot real while real experts remain), which is what eager
    transformers computes exactly whenever the router picks real experts first — always when
    ``k = E + E_z`` (every expert is picked) and whenever ``E_z = 0``; for trained routers it is
    an upper bound (the LongCat-Flash report averages ~27B of 18.6–31.3B activated).
    Router 2·tokens·d·(E+E_z); experts 2·tokens·k_r·3·d·d_moe. The zero experts' rows in
    gate_up_proj are never active.
Elementwise: router softmax 5·(E+E_z) per token, the experts' SiLU and gate product over
    k_r·d_moe, the combine 2·k·d (every slot is scaled and added, identity slots too), one add d.

>>> from symcost.core.notation import sym
>>> ZeroExpertMoE().params().total
3*E*d*d_moe + 2*E_z*d*d_moe + d*(E + E_z)
>>> ZeroExpertMoE().active_params().total
3*d*d_moe*k + d*(E + E_z)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST, act_cost
from ..core.notation import sym
from ..core.primitives import Linear, Saved
from ..core.terms import Terms
from .moe import MoE


@dataclass(frozen=True)
class ZeroExpertMoE(MoE):
    E_z: sympy.Expr = sym.E_z
    k_r: sympy.Expr = sym.k  # real experts per token: min(k, E), chosen by the adapter
    correction_bias: bool = True
    #: primitives the class allocates but the checkpoint does not hold (``serving.quant.checkpoint``
    #: skips them: serving memory is the checkpoint's)
    absent_from_checkpoint: ClassVar[tuple[str, ...]] = ("experts_gate_up_zero",)

    @property
    def pool(self) -> sympy.Expr:
        return self.E + self.E_z

    def primitives(self, ph: Phase | None = None):
        d, E, d_moe = self.d, self.E, self.d_moe
        return [
            Linear("router", d, self.pool, self.router_bias, doc="classifier [d, E+E_z]: real and zero experts"),
            Linear("experts_gate_up", d, 2 * d_moe, copies=E, active=self.k_r,
                   doc="E × [d, 2·d_moe] of the real experts, k_r = min(k, E) run per token"),
            Linear("experts_gate_up_zero", d, 2 * d_moe, copies=self.E_z, active=sympy.Integer(0),
                   doc="E_z × [d, 2·d_moe] rows transformers allocates for the zero experts, never read"),
            Linear("experts_down", d_moe, d, copies=E, active=self.k_r,
                   doc="E × [d_moe, d], k_r run per token"),
        ]

    def elementwise(self, ph: Phase) -> Terms:
        rows, d = ph.tokens, self.d
        per = act_cost("silu") + COST["gate_mul"]
        return Terms({"router": COST["router"] * rows * self.pool,
                      "experts_act": per * rows * self.k_r * self.d_moe,
                      "combine": COST["moe_combine"] * rows * self.k * d,
                      "residual": COST["residual"] * rows * d},
                     {"router": "5 per candidate (E+E_z)", "experts_act": "silu + gate product over k_r·d_moe",
                      "combine": "routing weight × output (identity slots too), summed",
                      "residual": "shortcut add"})

    def saved(self, bw) -> list:
        """Saved for backward (``LongcatFlashTopkRouter`` + ``LongcatFlashExperts``, eager loop), per token.

        The block input is the first sublayer's post-attention norm output, which that sublayer's
        dense MLP keeps (``FFN.saved``): not declared again. Router: ``F.linear(x.float(),
        weight.float())`` — below fp32 the fp32 copies of the input 4·d and of the classifier weight
        4·d·(E+E_z) (once per layer); the fp32 softmax scores 4·(E+E_z) and the int64 top-k indices
        8·k that ``gather`` reads (no renormalisation: the weights are only scaled). Each of the k
        slots (k·B·T assignment rows, gathered per expert): an int64 (slot, token) pair 16, the
        gathered input ``b_a·d``, the fp32 routing weight 4 and the weighted output ``d`` that the cast and
        index_add keep; a real-expert slot (k_r·B·T rows, the convention above) adds gate_up
        ``b_a·2·d_moe``, the activation and the product ``b_a·d_moe`` each and the expert output
        ``b_a·d``; a zero-expert slot (k − k_r) multiplies its gathered input itself.
        """
        a, d, f, P = sym.b_a, self.d, self.d_moe, self.pool
        out = []
        if bw.upcast:
            out += [Saved("router/input_fp32", d, 4, "seq"),
                    Saved("router/weight_fp32", d * P, 4, "none", sympy.Integer(1),
                          "fp32 copy of the classifier weight (per layer, batch-free)")]
        out += [Saved("router/scores_fp32", P, 4, "seq"), Saved("router/topk_indices", self.k, 8, "seq")]
        slots, real = self.k * sym.B * sym.T, self.k_r * sym.B * sym.T
        out += [Saved("experts/index_pairs", 2, 8, "seq", slots, "torch.where(expert_mask): int64 pairs"),
                Saved("experts/input", d, a, "seq", slots, "hidden_states[token_idx]"),
                Saved("experts/weight", 1, 4, "seq", slots, "fp32 routing weight of the slot"),
                Saved("experts/weighted", d, a, "seq", slots, "weighted output, cast for index_add"),
                Saved("experts/gate_up", 2 * f, a, rows=real), Saved("experts/act", f, a, rows=real),
                Saved("experts/down_input", f, a, rows=real),
                Saved("experts/output", d, a, "seq", real, "down_proj output, scaled by the weight")]
        return out

    def buffers(self) -> Terms:
        return Terms({"e_score_correction_bias": self.pool}, {"e_score_correction_bias": "[E+E_z] buffer"})

    def label(self) -> str:
        return "MoE (zero experts)"
