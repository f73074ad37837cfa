"""MLA with a sigmoid output gate (Kimi K3, ``mla_use_output_gate``): o_proj reads attn ⊙ σ(g_proj(x)).

MLA (``components/mla.py``) plus one projection g_proj d·H_q·D_v of the layer input; the attention
output (H_q·D_v per token) is multiplied by its sigmoid right before o_proj. K3's MLA is NoPE
(``skip_rope=True``: ``rope=False``). Weights, cache and attention FLOPs are MLA's; the gate adds
2·tokens·d·H_q·D_v FLOPs and, elementwise, sigmoid 4 + product 1 per gated element, 5·tokens·H_q·D_v.
Source: SGLang ``python/sglang/srt/models/kimi_k3.py`` ``KimiK3MLAAttention`` (``g_proj``
ColumnParallelLinear(hidden_size, num_attention_heads·v_head_dim), ``_gated_o_proj_forward``:
x·sigmoid(gate)), sgl-project/sglang commit 0000e9b46f38dd9055ecad825a42c47a047077e6.
Backward: not declared (``train`` refuses; the reference is an inference engine).

>>> GatedMLA().params()["g_proj"]
D_v*H_q*d
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.primitives import Linear
from ..core.terms import Terms
from .mla import MLA


@dataclass(frozen=True)
class GatedMLA(MLA):
    def primitives(self, ph: Phase | None = None):
        prims = super().primitives(ph)
        gate = Linear("g_proj", self.d, self.H_q * self.D_v, tp="col", doc="output gate [d, H_q·D_v]")
        at = next(i for i, p in enumerate(prims) if p.name == "o_proj")
        return prims[:at] + [gate] + prims[at:]

    def elementwise(self, ph: Phase) -> Terms:
        t = super().elementwise(ph)
        t.add("output_gate", (COST["sigmoid"] + COST["gate_mul"]) * ph.tokens * self.H_q * self.D_v,
              "σ(g) and its product with the attention output")
        return t

    def saved(self, bw) -> list:
        raise NotImplementedError(f"{self.label()}: no saved-for-backward tensors are declared (the reference "
                                  "is SGLang's inference model)")

    def label(self) -> str:
        return "MLA with output gate" + ("" if self.rope else " (NoPE)")
