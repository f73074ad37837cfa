"""Hash routing (DeepSeek-V4): the first MoE layers pick experts from a frozen token→experts table.

A hash-routed layer selects its k experts as ``tid2eid[token_id]`` (a [V, k] int64 table loaded
from the checkpoint) instead of the top-k of the router scores; the learned router [d, E] still
scores the experts to weight the chosen ones. Parameters and FLOPs therefore equal a top-k MoE
layer's (router 2·tokens·d·E, k experts per token — eager dispatch runs one row per (token, slot)
even if a table row repeats an expert), so an adapter can group hash and top-k layers together
and only the routing buffers differ: tid2eid [V, k] per hash layer, e_score_correction_bias [E]
per top-k layer. This component reports both once for the whole stack (one term per buffer name,
as the checkpoint holds them); it has no parameters, FLOPs or cache.
Source: transformers ``DeepseekV4HashRouter``, ``DeepseekV4TopKRouter``.

>>> RouterBuffers().buffers().total
E*(L - L_hash) + L_hash*V*k
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.notation import sym
from ..core.terms import Terms
from .base import Component


@dataclass(frozen=True)
class RouterBuffers(Component):
    key = "router_buffers"
    hash_layers: sympy.Expr = sym.L_hash
    topk_layers: sympy.Expr = sym.L - sym.L_hash
    V: sympy.Expr = sym.V
    E: sympy.Expr = sym.E
    k: sympy.Expr = sym.k

    def primitives(self, ph: Phase | None = None):
        return []

    def buffers(self) -> Terms:
        t = Terms()
        if self.topk_layers != 0:
            t.add("e_score_correction_bias", self.topk_layers * self.E,
                  "[E] per top-k-routed layer (fp32)")
        if self.hash_layers != 0:
            t.add("tid2eid", self.hash_layers * self.V * self.k, "[V, k] int64 per hash-routed layer")
        return t

    def saved(self, bw) -> list:
        """Nothing: the table lookup reads int64 token ids into a buffer (no gradient)."""
        return []

    def label(self) -> str:
        return "MoE routing buffers"
