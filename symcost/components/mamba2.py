"""Mamba-2 mixer: a gated, chunked selective state-space scan (SSD) between two projections.

Parameters (seed 001 §2.4; transformers ``Mamba2Mixer`` / ``NemotronHMamba2Mixer``), with
d_in = H_m·D_m and the conv channels c = d_in + 2·G·N (x, B and C go through the conv):
    in_proj  d·(2·d_in + 2·G·N + H_m)   [z | x B C | dt]   (+ bias with ``use_bias``)
    conv1d   c·K_c depthwise             (+ c bias with ``use_conv_bias``)
    dt_bias, A_log, D                    H_m each
    norm     d_in (gated RMSNorm, G groups)
    out_proj d_in·d                      (+ bias with ``use_bias``)
FLOPs, as the torch (non-kernel) path runs under FlopCounterMode, batch B:
    projections 2·tokens·in·out; conv 2·B·c·K_c per output position: T + K_c − 1 positions in
    prefill (padding K_c − 1 on both sides, then slicing), 2 in decode (the K_c cached columns
    plus the new one, unpadded).
    Prefill SSD over n = ⌈T/C⌉ chunks of C (the scan zero-pads T to a multiple of C and
    computes the padding too): C·Bᵀ scores 2·B·n·C²·H_m·N, scores·X 2·B·n·C²·H_m·D_m,
    chunk states 2·B·n·C·H_m·D_m·N, state passing between the n+1 boundaries
    2·B·(n+1)²·H_m·D_m·N, state read-out 2·B·n·C·H_m·D_m·N.
    Decode: one recurrent step; only the read-out h·C is a matmul, 2·B·H_m·D_m·N.
    The same under both attention conventions: the scan computes these products whatever the
    mask keeps. Discretisation, decays, D skip, gating and norms are elementwise (0 FLOPs).
Cache: conv_states [B, c, K_c] (K_c columns, not K_c − 1) and recurrent_states
    [B, H_m, D_m, N]; the torch scan produces the recurrent state in float32 whatever the model
    dtype (adapters record that in ``Model.state_dtype``).

>>> Mamba2().cache().total
B*D_m*H_m*N + B*K_c*(D_m*H_m + 2*G*N)
>>> from symcost.conventions import Phase
>>> Mamba2().flops(Phase(kind="decode"))["ssm_readout"]
2*B*D_m*H_m*N
>>> Mamba2().params().total.subs({sym.d: 4, sym.H_m: 2, sym.D_m: 4, sym.G: 1, sym.N: 2, sym.K_c: 4})
194
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..conventions import Phase
from ..notation import sym
from ..primitives import Linear, Matmul, Param
from ..terms import Terms
from .base import Component


@dataclass(frozen=True)
class Mamba2(Component):
    key = "mixer"
    d: sympy.Expr = sym.d
    H_m: sympy.Expr = sym.H_m
    D_m: sympy.Expr = sym.D_m
    G: sympy.Expr = sym.G
    N: sympy.Expr = sym.N
    K_c: sympy.Expr = sym.K_c
    C: sympy.Expr = sym.C  # SSD chunk size
    bias: bool = False  # in_proj / out_proj bias (use_bias)
    conv_bias: bool = True  # use_conv_bias

    @property
    def d_in(self) -> sympy.Expr:
        return self.H_m * self.D_m

    @property
    def conv_dim(self) -> sympy.Expr:
        return self.d_in + 2 * self.G * self.N

    def primitives(self, ph: Phase | None = None):
        d, H, P, N, K = self.d, self.H_m, self.D_m, self.N, self.K_c
        d_in, c = self.d_in, self.conv_dim
        prims = [
            Linear("in_proj", d, d_in + c + H, self.bias, tp="col",
                   doc="[d, 2·H_m·D_m + 2·G·N + H_m]: z, x, B, C, dt"),
            Param("conv1d", c * K, doc="depthwise [H_m·D_m + 2·G·N, K_c]"),
        ]
        if self.conv_bias:
            prims.append(Param("conv1d_bias", c, doc="[H_m·D_m + 2·G·N]"))
        prims += [Param("dt_bias", H, doc="[H_m]"), Param("A_log", H, doc="[H_m]"),
                  Param("D", H, doc="[H_m] skip"),
                  Param("norm", d_in, doc="gated RMSNorm [H_m·D_m]"),
                  Linear("out_proj", d_in, d, self.bias, tp="row", doc="[H_m·D_m, d]")]
        if ph is None:
            return prims
        B = sym.B
        if ph.kind == "decode":
            return prims + [
                Matmul("conv1d", 2 * B * 2 * c * K, "depthwise conv over K_c + 1 columns: 2 outputs"),
                Matmul("ssm_readout", 2 * B * H * P * N, "h·C: [B·H_m, D_m, N] × [N, 1]"),
            ]
        n = sympy.ceiling(sym.T / self.C)  # chunks after zero-padding T to a multiple of C
        Q = self.C
        return prims + [
            Matmul("conv1d", 2 * B * (sym.T + K - 1) * c * K, "depthwise conv, T + K_c − 1 outputs"),
            Matmul("ssd_scores", 2 * B * n * Q * Q * H * N, "C·Bᵀ within each chunk"),
            Matmul("ssd_values", 2 * B * n * Q * Q * H * P, "masked scores · X within each chunk"),
            Matmul("ssd_chunk_states", 2 * B * n * Q * H * P * N, "Bᵀ·X: state of each chunk"),
            Matmul("ssd_state_passing", 2 * B * (n + 1) ** 2 * H * P * N,
                   "decay matrix over the n + 1 chunk boundaries × states"),
            Matmul("ssd_state_readout", 2 * B * n * Q * H * P * N, "C · incoming chunk state"),
        ]

    def cache(self) -> Terms:
        return Terms({"conv_states": sym.B * self.conv_dim * self.K_c,
                      "recurrent_states": sym.B * self.H_m * self.D_m * self.N},
                     {"conv_states": "[B, H_m·D_m + 2·G·N, K_c]",
                      "recurrent_states": "[B, H_m, D_m, N] (float32 in the torch scan)"})

    def label(self) -> str:
        return "Mamba-2 mixer"
