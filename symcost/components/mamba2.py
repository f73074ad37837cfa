"""Mamba-2 mixer: a gated, chunked selective state-space scan (SSD) between two projections.

Parameters (seed 001 §2.4; transformers ``Mamba2Mixer`` / ``NemotronHMamba2Mixer``), with
d_in = H_m·D_m and the conv channels c = d_in + 2·G·N (x, B and C go through the conv):
    in_proj  d·(2·d_in + 2·G·N + H_m)   [z | x B C | dt]   (+ bias with ``use_bias``)
    conv1d   c·K_c depthwise             (+ c bias with ``use_conv_bias``)
    dt_bias, A_log, D                    H_m each
    norm     d_in (gated RMSNorm, G groups; absent with ``gated_norm=False``: Falcon-H1's
             ``mamba_rms_norm`` off, where y·silu(z) goes straight to out_proj)
    out_proj d_in·d                      (+ bias with ``use_bias``, or ``out_bias`` when the family
                                          has its own flag: Falcon-H1 ``projectors_bias``)
d_in need not be expand·d (Falcon-H1 ``mamba_d_ssm``); every family requires H_m·D_m = d_in.
Whether the norm runs before the gate (Falcon-H1 ``mamba_norm_before_gate``) or after (Bamba,
Granite 4.0: silu(z) multiplies first) changes no count. The same mixer is transformers'
``BambaMixer``, ``GraniteMoeHybridMambaLayer`` and ``FalconH1Mixer``.
FLOPs, batch B; projections 2·tokens·in·out under both ``impl`` conventions. Discretisation,
decays, D skip, gating and norms are elementwise (0 FLOPs). A state step ``h ← a·h + u`` counts
one multiply-accumulate per state element.
``impl="minimal"`` (default): the SSD algorithm over exactly T tokens, chunks of C, written as a
    polynomial in T (q = keys per query inside a chunk: C under ``attention="full"``, the dense
    C×C block; (C+1)/2 under ``"causal"``, the lower triangle):
    conv 2·B·T·c·K_c (T outputs); C·Bᵀ scores 2·B·T·q·G·N (B and C are shared by the H_m/G heads
    of a group, so per group, as the mamba_ssm kernel does); scores·X 2·B·T·q·H_m·D_m; chunk states
    2·B·T·H_m·D_m·N; state passing, a linear scan over the T/C chunks, 2·B·(T/C)·H_m·D_m·N; state
    read-out 2·B·T·H_m·D_m·N. Exact when C divides T (so for T ≤ C only at T = C); for
    T = m·C + r, 0 < r < C, the exact count has m·C² + r² (full) pairs per head instead of T·C and
    ⌈T/C⌉ state steps instead of T/C.
    Decode: the recurrent step, x⊗B into the decayed state 2·B·H_m·D_m·N and the read-out h·C
    2·B·H_m·D_m·N; conv 2·B·c·K_c (one output).
``impl="reference"``: what the transformers torch (non-kernel) path runs, as FlopCounterMode
    measures it (the oracle tests use this):
    conv 2·B·c·K_c per output position: T + K_c − 1 positions in prefill (padding K_c − 1 on
    both sides, then slicing), 2 in decode (the K_c cached columns plus the new one, unpadded).
    Prefill SSD over n = ⌈T/C⌉ chunks of C (the scan zero-pads T to a multiple of C, computes the
    padding too, and repeats B and C to every head): C·Bᵀ scores 2·B·n·C²·H_m·N, scores·X
    2·B·n·C²·H_m·D_m, chunk states 2·B·n·C·H_m·D_m·N, state passing as one einsum over the
    (n+1)² pairs of chunk boundaries 2·B·(n+1)²·H_m·D_m·N, state read-out 2·B·n·C·H_m·D_m·N.
    Decode: the state update is broadcast multiplies (0); only the read-out h·C is a matmul,
    2·B·H_m·D_m·N. The same under both attention conventions.
Elementwise (``symcost.core.elementwise``; the same under both ``impl``), per token: SiLU after the
    conv 4·c; dt = softplus(dt + dt_bias) and the decay exp(dt·A) 6·H_m; x·dt D_m·H_m; the D skip
    2·H_m·D_m; the gate silu(z)·y 5·H_m·D_m; the gated RMSNorm 4·H_m·D_m; one residual add d. The
    scan's decays: decode multiplies the state by exp(dt·A), H_m·D_m·N; prefill (SSD) masks the
    intra-chunk scores with the decays, T·q·H_m (q as above), and decays each of the ⌈T/C⌉ chunk
    states passed on, H_m·D_m·N each.
Cache: conv_states [B, c, K_c] (K_c columns, not K_c − 1) and recurrent_states
    [B, H_m, D_m, N]; the torch scan produces the recurrent state in float32 whatever the model
    dtype (adapters record that in ``Model.state_dtype``).

>>> Mamba2().cache().total
B*D_m*H_m*N + B*K_c*(D_m*H_m + 2*G*N)
>>> from symcost.core.conventions import Phase
>>> m = Mamba2()
>>> m.flops(Phase(kind="decode")).total - m.flops(Phase(kind="decode", impl="reference")).total
2*B*D_m*H_m*N - 2*B*K_c*(D_m*H_m + 2*G*N)
>>> Mamba2().flops(Phase(kind="prefill"))["ssd_state_passing"]
2*B*D_m*H_m*N*ceiling(T/C)
>>> Mamba2().elementwise(Phase(kind="decode"))["scan_decay"]
B*D_m*H_m*N
>>> Mamba2().params().total.subs({sym.d: 4, sym.H_m: 2, sym.D_m: 4, sym.G: 1, sym.N: 2, sym.K_c: 4})
194
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Param, Saved
from ..core.terms import Terms
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
    bias: bool = False  # in_proj (and, unless ``out_bias`` says otherwise, out_proj) bias: use_bias
    conv_bias: bool = True  # use_conv_bias
    out_bias: bool | None = None  # out_proj bias when it has its own flag (Falcon-H1 projectors_bias)
    gated_norm: bool = True  # the gated RMSNorm before out_proj (Falcon-H1: mamba_rms_norm)

    @property
    def o_bias(self) -> bool:
        return self.bias if self.out_bias is None else self.out_bias

    @property
    def d_in(self) -> sympy.Expr:
        return self.H_m * self.D_m

    @property
    def conv_dim(self) -> sympy.Expr:
        return self.d_in + 2 * self.G * self.N

    def primitives(self, ph: Phase | None = None):
        d, H, K = self.d, self.H_m, self.K_c
        d_in, c = self.d_in, self.conv_dim
        prims = [
            Linear("in_proj", d, d_in + c + H, self.bias, tp="col",
                   doc="[d, 2·H_m·D_m + 2·G·N + H_m]: z, x, B, C, dt"),
            Param("conv1d", c * K, doc="depthwise [H_m·D_m + 2·G·N, K_c]"),
        ]
        if self.conv_bias:
            prims.append(Param("conv1d_bias", c, doc="[H_m·D_m + 2·G·N]"))
        prims += [Param("dt_bias", H, doc="[H_m]"), Param("A_log", H, doc="[H_m]"),
                  Param("D", H, doc="[H_m] skip")]
        if self.gated_norm:
            prims.append(Param("norm", d_in, doc="gated RMSNorm [H_m·D_m]"))
        prims.append(Linear("out_proj", d_in, d, self.o_bias, tp="row", doc="[H_m·D_m, d]"))
        if ph is None:
            return prims
        return prims + (self._reference(ph) if ph.impl == "reference" else self._minimal(ph))

    def _minimal(self, ph: Phase) -> list[Matmul]:
        B, T, C = sym.B, sym.T, self.C
        H, P, N, c, K = self.H_m, self.D_m, self.N, self.conv_dim, self.K_c
        if ph.kind == "decode":
            return [Matmul("conv1d", 2 * B * c * K, "depthwise conv, one output"),
                    Matmul("ssm_update", 2 * B * H * P * N, "x⊗B accumulated into the decayed state"),
                    Matmul("ssm_readout", 2 * B * H * P * N, "h·C: [B·H_m, D_m, N] × [N, 1]")]
        q = C if ph.attention == "full" else (C + 1) / 2  # keys per query inside a chunk
        return [
            Matmul("conv1d", 2 * B * T * c * K, "depthwise conv, T outputs"),
            Matmul("ssd_scores", 2 * B * T * q * self.G * N, "C·Bᵀ within each chunk, per group"),
            Matmul("ssd_values", 2 * B * T * q * H * P, "masked scores · X within each chunk"),
            Matmul("ssd_chunk_states", 2 * B * T * H * P * N, "Bᵀ·X: state of each chunk"),
            Matmul("ssd_state_passing", 2 * B * sympy.ceiling(T / C) * H * P * N,
                   "linear scan over the ⌈T/C⌉ chunk states"),
            Matmul("ssd_state_readout", 2 * B * T * H * P * N, "C · incoming chunk state"),
        ]

    def _reference(self, ph: Phase) -> list[Matmul]:
        B, H, P, N, K, c = sym.B, self.H_m, self.D_m, self.N, self.K_c, self.conv_dim
        if ph.kind == "decode":
            return [
                Matmul("conv1d", 2 * B * 2 * c * K, "depthwise conv over K_c + 1 columns: 2 outputs"),
                Matmul("ssm_readout", 2 * B * H * P * N, "h·C: [B·H_m, D_m, N] × [N, 1]"),
            ]
        n = sympy.ceiling(sym.T / self.C)  # chunks after zero-padding T to a multiple of C
        Q = self.C
        return [
            Matmul("conv1d", 2 * B * (sym.T + K - 1) * c * K, "depthwise conv, T + K_c − 1 outputs"),
            Matmul("ssd_scores", 2 * B * n * Q * Q * H * N, "C·Bᵀ within each chunk"),
            Matmul("ssd_values", 2 * B * n * Q * Q * H * P, "masked scores · X within each chunk"),
            Matmul("ssd_chunk_states", 2 * B * n * Q * H * P * N, "Bᵀ·X: state of each chunk"),
            Matmul("ssd_state_passing", 2 * B * (n + 1) ** 2 * H * P * N,
                   "decay matrix over the n + 1 chunk boundaries × states"),
            Matmul("ssd_state_readout", 2 * B * n * Q * H * P * N, "C · incoming chunk state"),
        ]

    def elementwise(self, ph: Phase) -> Terms:
        rows, B, H, d_in = ph.tokens, sym.B, self.H_m, self.d_in
        state = H * self.D_m * self.N
        if ph.kind == "decode":
            decay = rows * state
        else:
            q = self.C if ph.attention == "full" else (self.C + 1) / 2
            decay = B * sym.T * q * H + B * sympy.ceiling(sym.T / self.C) * state
        t = {
            "conv_act": COST["silu"] * rows * self.conv_dim,
            "dt": (1 + COST["softplus"] + 2) * rows * H,
            "x_dt": rows * d_in,
            "d_skip": 2 * rows * d_in,
            "gate": (COST["silu"] + COST["gate_mul"]) * rows * d_in,
            "norm": COST["rmsnorm"] * rows * d_in,
            "scan_decay": decay,
            "residual": COST["residual"] * rows * self.d,
        }
        if not self.gated_norm:
            del t["norm"]
        return Terms(t, {"conv_act": "SiLU over the conv channels", "dt": "softplus(dt + dt_bias), exp(dt·A)",
            "x_dt": "x·dt", "d_skip": "y + D·x", "gate": "y·silu(z)", "norm": "gated RMSNorm",
            "scan_decay": "decay multiplies of the scan", "residual": "residual add"})

    def saved(self, bw) -> list:
        """Saved for backward, one layer (``conventions.Backward.scan``; measured in tests/test_activations.py).

        Both conventions: the in_proj input ``b_a·d`` and output ``[z | x B C | dt]``
        ``b_a·(2·H_m·D_m + 2·G·N + H_m)`` per token, and per layer (batch-free) A = −exp(A_log)
        and the exp result, fp32 ``4·H_m`` each.
        ``fused`` (default: mamba_ssm's ``mamba_split_conv1d_scan_combined``, which transformers
        calls when training on CUDA with the kernels installed; ``MambaSplitConv1dScanCombinedFn``
        keeps zxbcdt, the scan output ``out_x`` ``b_a·H_m·D_m`` and the gated norm's fp32 rstd
        ``4·G`` and recomputes conv, scan, norm and out_proj input in backward).
        ``reference``: transformers' torch path (``mamba2_chunk_scan``), n = ⌈T/C⌉ chunks over
        T_p = n·C padded rows: the conv's output ``b_a·c`` over T + K_c − 1 positions; dt + dt_bias
        and softplus(·) ``b_a·H_m`` each; fp32 over T_p: the padded x for the D skip, two einsum
        copies of x and the state read-out C·h (``4·H_m·D_m`` each... four in all with the padded
        scan output the norm reads), B and C repeated to H_m heads and their einsum copies
        (``4·H_m·N`` × 5), the scores C·Bᵀ, the decay matrix L and the masked scores' copy
        (``4·H_m·C`` × 3), two decays ``4·H_m`` × 2; per sequence the chunk-boundary decays
        ``4·H_m·(n+1)²`` and the chunk states ``4·H_m·D_m·N·(2n+1)``; per layer the four boolean
        tril masks ``2·C² + 2·(n+1)²``; the gated RMSNorm in fp32 (silu(z), y·silu(z), its rstd
        ``4·G``, the normed output) and the out_proj input ``b_a·H_m·D_m``. In fp32 the conv's
        SiLU output ``c`` and dt ``H_m`` are kept as they are; below fp32 their fp32 copies are:
        x ``4·H_m·D_m``, dt twice ``4·H_m``, z ``4·H_m·D_m``.
        """
        a, d, H, P, N, G, C = sym.b_a, self.d, self.H_m, self.D_m, self.N, self.G, self.C
        d_in, c, T, B = self.d_in, self.conv_dim, sym.T, sym.B
        one = sympy.Integer(1)
        out = [Saved("input", d, a, "seq", doc="in_proj input [.., d]"),
               Saved("in_proj_out", d_in + c + H, a, doc="[z | x B C | dt], kept whole"),
               Saved("A_exp", H, 4, rows=one, doc="exp(A_log.float()) [H_m], per layer"),
               Saved("A", H, 4, rows=one, doc="A = −exp(A_log) [H_m], per layer")]
        if bw.scan == "fused":
            return out + [Saved("out_x", d_in, a, doc="scan output before the gated norm"),
                          Saved("norm_rstd", G, 4, doc="fp32 rstd per group")]
        n = sympy.ceiling(T / C)
        Tp = B * n * C  # padded rows
        out += [Saved("conv_out", c, a, rows=B * (T + self.K_c - 1), doc="conv1d output before SiLU, T + K_c − 1 positions"),
                Saved("dt_biased", H, a, doc="dt + dt_bias (softplus input)"),
                Saved("dt_softplus", H, a, doc="softplus output (clamp input)")]
        if bw.upcast:
            out += [Saved("x_fp32", d_in, 4, doc="x.float()"),
                    Saved("dt_fp32", 2 * H, 4, doc="dt.float(), twice (x·dt and A·dt)")]
            if self.gated_norm:
                out.append(Saved("z_fp32", d_in, 4, doc="gate.float() in the gated norm"))
        else:
            out += [Saved("conv_act", c, a, doc="SiLU(conv) [x B C], x read by x·dt"),
                    Saved("dt", H, a, doc="clamped dt")]
        out += [Saved("scan/x_padded", d_in, 4, rows=Tp, doc="padded x for the D skip"),
                Saved("scan/x_copies", 2 * d_in, 4, rows=Tp, doc="x·dt in the two einsums' layouts"),
                Saved("scan/BC", 5 * H * N, 4, rows=Tp,
                      doc="B, C repeated to H_m heads, padded, and their einsum copies (C twice, B twice)"),
                Saved("scan/scores", 3 * H * C, 4, rows=Tp, doc="C·Bᵀ, the decay matrix L, the masked scores' copy"),
                Saved("scan/decays", 2 * H, 4, rows=Tp, doc="decay_states and state_decay_out"),
                Saved("scan/chunk_decay", H * (n + 1) ** 2, 4, rows=B, doc="decays between chunk boundaries"),
                Saved("scan/states", H * P * N * (2 * n + 1), 4, rows=B,
                      doc="chunk states with the initial one (n + 1) and their einsum copy (n)"),
                Saved("scan/readout", d_in, 4, rows=Tp, doc="C·h (Y_off's input)"),
                Saved("scan/masks", 2 * C ** 2 + 2 * (n + 1) ** 2, 1, "none", one,
                      doc="boolean tril masks of the two segment sums, per layer"),
                Saved("norm/y_padded", d_in, 4, rows=Tp, doc="scan output (padded storage), gated norm input")]
        if not self.gated_norm:  # Falcon-H1 without mamba_rms_norm: y · silu(z), straight to out_proj
            return out + [Saved("silu_z", d_in, a, doc="silu(z)"),
                          Saved("out_proj_input", d_in, a, doc="y·silu(z) in the compute dtype")]
        out += [Saved("norm/silu_z", d_in, 4, doc="silu(z) fp32"),
                Saved("norm/gated", d_in, 4, doc="y·silu(z) fp32"),
                Saved("norm/rstd", G, 4, doc="fp32 rstd per group"),
                Saved("norm/normed", d_in, 4, doc="normed, fp32 (the scan output's dtype)"),
                Saved("out_proj_input", d_in, a, doc="normed cast to the compute dtype")]
        return out

    def cache(self) -> Terms:
        return Terms({"conv_states": sym.B * self.conv_dim * self.K_c,
                      "recurrent_states": sym.B * self.H_m * self.D_m * self.N},
                     {"conv_states": "[B, H_m·D_m + 2·G·N, K_c]",
                      "recurrent_states": "[B, H_m, D_m, N] (float32 in the torch scan)"})

    def label(self) -> str:
        return "Mamba-2 mixer"
