"""Mamba-1 mixer: a gated selective state-space scan, input-dependent dt, B and C per token.

Parameters (transformers ``MambaMixer``, ``FalconMambaMixer``, ``JambaMambaMixer``), with the inner
size d_ssm = expand·d and the time-step rank R_dt (``time_step_rank``; ``"auto"`` is ⌈d/16⌉):
    in_proj  d·2·d_ssm                  [x | z]   (+ 2·d_ssm bias with ``use_bias``)
    conv1d   d_ssm·K_c depthwise        (+ d_ssm bias with ``use_conv_bias``)
    x_proj   d_ssm·(R_dt + 2·N)         [dt | B | C], no bias
    dt_proj  R_dt·d_ssm + d_ssm         (always biased)
    A_log    d_ssm·N;  D  d_ssm
    out_proj d_ssm·d                    (+ d bias with ``use_bias``)
``bcdt_norm``: RMSNorms on dt, B and C after x_proj. ``"weighted"`` (Jamba, ``JambaRMSNorm``):
    R_dt + 2·N parameters; ``"weightless"`` (Falcon-Mamba): no parameters (the class registers
    d_ssm + 2·N non-persistent dummy ``weight`` buffers that the torch path never reads and no
    checkpoint holds, so they are not reported); ``None`` (Mamba): none.
FLOPs, batch B, rows = B·T in prefill, B in decode; the four projections 2·rows·in·out under both
``impl`` conventions (dt_proj's bias add is elementwise). Discretisation exp(dt·A), dt·B·x, the
D skip and the gate are elementwise (0 FLOPs).
``impl="minimal"`` (default): conv 2·rows·d_ssm·K_c (one output per token); the state update
    h ← exp(dt·A)·h + (dt·x)⊗B counted as one multiply–accumulate per state element,
    2·rows·d_ssm·N; the read-out y = h·C, 2·rows·d_ssm·N.
``impl="reference"``: what the transformers torch (non-kernel) path runs, as FlopCounterMode
    measures it (the oracle tests use this). The scan is a sequential loop of broadcast
    multiplies (0) with one matmul per token, the read-out h·C ``[B, d_ssm, N] × [B, N, 1]``,
    2·rows·d_ssm·N. conv 2·B·d_ssm·K_c per output position: T + K_c − 1 positions in prefill
    (padding K_c − 1 on both sides, then slicing), 2 in decode (the K_c cached columns plus the
    new one, unpadded).
Elementwise (``symcost.elementwise``; the same under both ``impl``), per token: SiLU after the
    conv 4·d_ssm; dt = softplus(dt + dt_bias) 4·d_ssm; the decay exp(dt·A) 2·d_ssm·N; x·dt
    d_ssm; the decay multiply of the state d_ssm·N; the D skip 2·d_ssm; the gate y·silu(z)
    5·d_ssm; the dt/B/C RMSNorms 4·(R_dt + 2·N) where present; one residual add d.
Cache: conv_states [B, d_ssm, K_c] (K_c columns, not K_c − 1) and recurrent_states
    [B, d_ssm, N] (what the transformers linear-attention cache layer holds); the torch scan
    produces the recurrent state in float32 whatever the model dtype (adapters record that in
    ``Model.state_dtype``).

>>> Mamba().cache().total
B*K_c*d_ssm + B*N*d_ssm
>>> Mamba().params().total.subs({sym.d: 16, sym.d_ssm: 32, sym.N: 4, sym.K_c: 3, sym.R_dt: 3})
2304
>>> from symcost.conventions import Phase
>>> Mamba().flops(Phase(kind="decode", impl="reference"))["conv1d"]
4*B*K_c*d_ssm
>>> Mamba(bcdt_norm="weighted").params()["b_layernorm"]
N
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import sympy

from ..conventions import Phase
from ..elementwise import COST
from ..notation import sym
from ..primitives import Linear, Matmul, Param
from ..terms import Terms
from .base import Component


@dataclass(frozen=True)
class Mamba(Component):
    key = "mixer"
    d: sympy.Expr = sym.d
    d_ssm: sympy.Expr = sym.d_ssm
    N: sympy.Expr = sym.N
    K_c: sympy.Expr = sym.K_c
    R_dt: sympy.Expr = sym.R_dt
    bias: bool = False  # in_proj and out_proj bias: use_bias / mamba_proj_bias
    conv_bias: bool = True  # use_conv_bias / mamba_conv_bias
    bcdt_norm: Literal["weighted", "weightless", None] = None  # RMSNorms on dt, B, C

    def primitives(self, ph: Phase | None = None):
        d, e, N, K, R = self.d, self.d_ssm, self.N, self.K_c, self.R_dt
        prims = [
            Linear("in_proj", d, 2 * e, self.bias, tp="col", doc="[d, 2·d_ssm]: x, z"),
            Param("conv1d", e * K, doc="depthwise [d_ssm, K_c]"),
        ]
        if self.conv_bias:
            prims.append(Param("conv1d_bias", e, doc="[d_ssm]"))
        prims += [
            Linear("x_proj", e, R + 2 * N, False, doc="[d_ssm, R_dt + 2·N]: dt, B, C"),
            Linear("dt_proj", R, e, True, doc="[R_dt, d_ssm] (+ bias)"),
            Param("A_log", e * N, doc="[d_ssm, N]"),
            Param("D", e, doc="[d_ssm] skip"),
        ]
        if self.bcdt_norm == "weighted":
            prims += [Param("dt_layernorm", R, doc="RMSNorm [R_dt] on dt"),
                      Param("b_layernorm", N, doc="RMSNorm [N] on B"),
                      Param("c_layernorm", N, doc="RMSNorm [N] on C")]
        prims.append(Linear("out_proj", e, d, self.bias, tp="row", doc="[d_ssm, d]"))
        if ph is None:
            return prims
        return prims + (self._reference(ph) if ph.impl == "reference" else self._minimal(ph))

    def _minimal(self, ph: Phase) -> list[Matmul]:
        rows, e, N = ph.tokens, self.d_ssm, self.N
        return [Matmul("conv1d", 2 * rows * e * self.K_c, "depthwise conv, one output per token"),
                Matmul("ssm_update", 2 * rows * e * N, "(dt·x)⊗B accumulated into the decayed state"),
                Matmul("ssm_readout", 2 * rows * e * N, "h·C: [B, d_ssm, N] × [N, 1] per token")]

    def _reference(self, ph: Phase) -> list[Matmul]:
        B, e, N, K = sym.B, self.d_ssm, self.N, self.K_c
        if ph.kind == "decode":
            conv = Matmul("conv1d", 2 * B * 2 * e * K, "depthwise conv over K_c + 1 columns: 2 outputs")
        else:
            conv = Matmul("conv1d", 2 * B * (sym.T + K - 1) * e * K, "depthwise conv, T + K_c − 1 outputs")
        return [conv, Matmul("ssm_readout", 2 * ph.tokens * e * N, "h·C: [B, d_ssm, N] × [N, 1] per token")]

    def elementwise(self, ph: Phase) -> Terms:
        rows, e, N = ph.tokens, self.d_ssm, self.N
        t = {
            "conv_act": COST["silu"] * rows * e,
            "dt": (1 + COST["softplus"]) * rows * e,
            "decay": 2 * rows * e * N,
            "x_dt": rows * e,
            "scan_decay": rows * e * N,
            "d_skip": 2 * rows * e,
            "gate": (COST["silu"] + COST["gate_mul"]) * rows * e,
            "bcdt_norm": COST["rmsnorm"] * rows * (self.R_dt + 2 * N),
            "residual": COST["residual"] * rows * self.d,
        }
        if self.bcdt_norm is None:
            del t["bcdt_norm"]
        return Terms(t, {"conv_act": "SiLU over the conv channels", "dt": "softplus(dt + dt_bias)",
                         "decay": "exp(dt·A) per state element", "x_dt": "x·dt",
                         "scan_decay": "decay multiply of the state", "d_skip": "y + D·x",
                         "gate": "y·silu(z)", "bcdt_norm": "RMSNorms on dt, B and C",
                         "residual": "residual add"})

    def cache(self) -> Terms:
        return Terms({"conv_states": sym.B * self.d_ssm * self.K_c,
                      "recurrent_states": sym.B * self.d_ssm * self.N},
                     {"conv_states": "[B, d_ssm, K_c]",
                      "recurrent_states": "[B, d_ssm, N] (float32 in the torch scan)"})

    def label(self) -> str:
        return "Mamba-1 mixer"
