"""Kimi Delta Attention with a full-rank output gate (Kimi K3, ``linear_attn_config.use_full_rank_gate``).

KDA (``components/kda.py``) whose output gate is one projection g_proj d·H_kda·D_kda in place of the
low-rank pair g_a_proj d·D_kda + g_b_proj D_kda·H_kda·D_kda. Everything else is KDA's: q/k/v d·H·D each,
the three depthwise convs 3·H·D·K_c (fp32, no bias), the low-rank forget gate f_a_proj d·D +
f_b_proj D·H·D, dt_bias H·D, A_log H, b_proj d·H, o_norm D, o_proj H·D·d; the same scan, FLOPs
conventions and cache (conv_states [B, 3·H·D, K_c] and recurrent_states [B, H, D, D]).
Source: SGLang ``python/sglang/srt/models/kimi_k3.py`` ``KimiK3DeltaAttention`` (``g_proj``
ColumnParallelLinear(hidden_size, num_heads·head_dim) when ``use_full_rank_gate``; the fused layout
``fused_qkvg_proj`` is q, k, v and g stacked), sgl-project/sglang commit
0000e9b46f38dd9055ecad825a42c47a047077e6. The published checkpoint stores A_log with head_dim entries,
of which the loader keeps the first num_heads (``_a_log_weight_loader``); the module holds H_kda.
Parameters − KDA's: d·H·D − (d·D + D·H·D).
Backward: not declared (``train`` refuses; the reference is an inference engine).

>>> (KDAFullGate().params().total - KDA().params().total).expand()
-D_kda**2*H_kda + D_kda*H_kda*d - D_kda*d
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.conventions import Phase
from ..core.primitives import Linear
from .kda import KDA


@dataclass(frozen=True)
class KDAFullGate(KDA):
    def primitives(self, ph: Phase | None = None):
        d, HD = self.d, self.H_lv * self.D_lv
        out = []
        for p in super().primitives(ph):
            if p.name == "g_a_proj":
                out.append(Linear("g_proj", d, HD, tp="col", doc="output gate, full rank: [d, H_kda·D_kda]"))
            elif p.name != "g_b_proj":
                out.append(p)
        return out

    def saved(self, bw) -> list:
        raise NotImplementedError(f"{self.label()}: no saved-for-backward tensors are declared (the reference "
                                  "is SGLang's inference model)")

    def label(self) -> str:
        return "Kimi Delta Attention (full-rank gate)"
