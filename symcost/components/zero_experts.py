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

>>> from symcost.notation import sym
>>> ZeroExpertMoE().params().total
3*E*d*d_moe + 2*E_z*d*d_moe + d*(E + E_z)
>>> ZeroExpertMoE().active_params().total
3*d*d_moe*k + d*(E + E_z)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import sympy

from ..conventions import Phase
from ..elementwise import COST, act_cost
from ..notation import sym
from ..primitives import Linear
from ..terms import Terms
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
        raise NotImplementedError(f"{self.label()} declares no saved-for-backward tensors yet")

    def buffers(self) -> Terms:
        return Terms({self.correction_bias_name: self.pool}, {self.correction_bias_name: "[E+E_z] buffer"})

    def label(self) -> str:
        return "MoE (zero experts)"
