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
Elementwise (``symcost.core.elementwise``; the same under both ``impl``), per token: SiLU after the
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
>>> from symcost.core.conventions import Phase
>>> Mamba().flops(Phase(kind="decode", impl="reference"))["conv1d"]
4*B*K_c*d_ssm
>>> Mamba(bcdt_norm="weighted").params()["b_layernorm"]
N
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Param, Saved, is_one
from ..core.terms import Terms
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
    #: Zamba's ``ZambaMambaMixer``: H_m independent heads, each with its own x_proj and dt_proj
    #: slices (the same weights in all); saved tensors only (None: one head, ``MambaMixer``)
    heads: sympy.Expr | None = None

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

    def saved(self, bw) -> list:
        """Saved for backward, one layer (``conventions.Backward.scan``; measured in tests/test_activations.py).

        Both conventions: the in_proj input ``b_a·d`` and output [x | z] ``b_a·2·d_ssm``, the
        x_proj output [dt | B | C] ``b_a·(R_dt + 2·N)``, and per layer (batch-free) exp(A_log) and
        A = −exp(A_log), fp32 ``4·d_ssm·N`` each.
        ``fused`` (default: mamba_ssm's ``mamba_inner_fn``, which transformers calls when training
        on CUDA with the kernels; ``MambaInnerFn`` at ``checkpoint_lvl=1`` recomputes the conv and
        dt and keeps xz, x_dbl, contiguous B and C ``b_a·N`` each, the scan output ``b_a·d_ssm``
        and the scan's chunk states, fp32 ``4·d_ssm·2·N`` per sequence and 2048-token chunk;
        below fp32 the fp32 copies of D and dt_proj's bias, ``4·d_ssm`` each, per layer).
        ``reference``: transformers' sequential ``mamba_selective_scan``: the conv output
        ``b_a·d_ssm`` over T + K_c − 1 positions and its SiLU ``b_a·d_ssm`` (with B > 1 also its
        contiguous copy for x_proj); dt + dt_bias and softplus(·) ``b_a·d_ssm`` each; the discretised A and B, fp32 ``4·d_ssm·N`` each; the
        T + 1 states of the loop (fp32; below fp32 the zero state in the compute dtype, T − 1
        fp32 states and T casts ``b_a·d_ssm·N``); y + D·x fp32 ``4·d_ssm``, silu(z) ``b_a·d_ssm``
        and the out_proj input ``b_a·d_ssm``; below fp32 the fp32 copies of x ``4·d_ssm``, of B
        ``4·N`` and, per layer, of D ``4·d_ssm``.
        """
        a, d, e, N, R = sym.b_a, self.d, self.d_ssm, self.N, self.R_dt
        B, T, one = sym.B, sym.T, sympy.Integer(1)
        out = [Saved("input", d, a, "seq", doc="in_proj input [.., d]"),
               Saved("in_proj_out", 2 * e, a, doc="[x | z]"),
               Saved("x_proj_out", R + 2 * N, a, doc="[dt | B | C]"),
               Saved("A_exp", e * N, 4, rows=one, doc="exp(A_log.float()), per layer"),
               Saved("A", e * N, 4, rows=one, doc="−exp(A_log), per layer")]
        if bw.scan == "fused":
            out += [Saved("BC", 2 * N, a, doc="B and C, contiguous copies"),
                    Saved("out", e, a, doc="scan output before the gate"),
                    Saved("scan_chunks", 8 * e * N, 1, rows=B * sympy.ceiling(T / 2048),
                          doc="fp32 chunk states [B, d_ssm, ⌈T/2048⌉, 2·N]")]
            if bw.upcast:
                out.append(Saved("D_dt_bias_fp32", 2 * e, 4, rows=one, doc="D.float(), dt_proj.bias.float()"))
            return out
        out += [Saved("conv_out", e, a, rows=B * (T + self.K_c - 1), doc="conv1d output before SiLU"),
                Saved("conv_act", e, a, doc="x = SiLU(conv)"),
                Saved("x_proj_input", e * (1 - is_one(B)), a,
                      doc="x made contiguous for x_proj (B = 1: the transposed view is read as it is)"),
                Saved("dt_biased", e, a, doc="dt + dt_bias (softplus input)"),
                Saved("dt", e, a, doc="softplus output"),
                Saved("dA_dB", 2 * e * N, 4, doc="exp(A·dt) and dt·B"),
                Saved("y_skip", e, 4, doc="y + D·x (fp32)"),
                Saved("silu_z", e, a, doc="silu(z)"),
                Saved("out_proj_input", e, a, doc="gated output in the compute dtype")]
        if self.heads is not None:  # Zamba: per-head x_proj / dt_proj as broadcast matmuls
            H = self.heads
            many = (1 - is_one(B)) * (1 - is_one(H))  # B > 1 and H > 1: the batched matmul expands
            out = [s for s in out if s.name not in ("x_proj_out", "x_proj_input")]
            out += [Saved("x_proj_out", H * (R + 2 * N), a, doc="[dt | B | C] per head"),
                    Saved("x_proj_input", e * (1 + many), a,
                          doc="x made contiguous per head; with B > 1 and H_m > 1 also its expanded copy"),
                    Saved("x_dt_proj_weights", e * (2 * R + 2 * N) * many, a, rows=B,
                          doc="x_proj and dt_proj weights expanded over the batch (B > 1, H_m > 1)")]
        if self.bcdt_norm is not None:  # RMSNorms on dt, B, C after x_proj (FalconMamba, Jamba)
            out.append(Saved("bcdt_norm/rstd", 3, 4, doc="fp32 rstd of dt, B and C"))
            if self.bcdt_norm == "weighted":  # JambaRMSNorm: weight · x̂ keeps x̂ in the compute dtype
                out.append(Saved("bcdt_norm/normed", R + 2 * N, a, doc="x̂ of dt, B, C"))
            if bw.upcast:  # the fp32 copies replace x_proj's output; dt and C normed, in the compute dtype
                out = [s for s in out if s.name != "x_proj_out"]
                out += [Saved("bcdt_norm/input_fp32", R + 2 * N, 4, doc="dt, B, C .float()"),
                        Saved("bcdt_norm/dt_C", R + N, a, doc="normed dt (dt_proj input) and C (h·C)")]
            else:
                out.append(Saved("bcdt_norm/out", R + 2 * N, a, doc="normed dt, B, C"))
        if bw.upcast:
            out += [Saved("states/zero", e * N, a, rows=B, doc="the zero initial state, compute dtype"),
                    Saved("states/fp32", e * N, 4, rows=B * (T - 1), doc="states 1 … T−1 read by the next step"),
                    Saved("states/cast", e * N, a, doc="each state cast for h·C"),
                    Saved("x_B_fp32", e + N * (1 if self.heads is None else self.heads), 4,
                          doc="x.float(), B.float() (per head with heads)"),
                    Saved("D_fp32", e, 4, rows=one, doc="D.float(), per layer")]
        else:
            out.append(Saved("states", e * N, 4, rows=B * (T + 1), doc="the T + 1 states of the loop"))
        return out

    def cache(self) -> Terms:
        return Terms({"conv_states": sym.B * self.d_ssm * self.K_c,
                      "recurrent_states": sym.B * self.d_ssm * self.N},
                     {"conv_states": "[B, d_ssm, K_c]",
                      "recurrent_states": "[B, d_ssm, N] (float32 in the torch scan)"})

    def label(self) -> str:
        return "Mamba-1 mixer"
