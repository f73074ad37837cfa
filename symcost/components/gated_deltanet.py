"""Gated DeltaNet: linear attention whose [D_lk, D_lv] state per value head is decayed and delta-updated.

Parameters (seed 001 §2.6; transformers ``Qwen3NextGatedDeltaNet``), with key width
k = H_lk·D_lk, value width v = H_lv·D_lv and conv channels c = 2·k + v (q, k and v go through
the conv):
    in_proj_qkvz d·(2·k + 2·v)   [q | k | v | z]
    in_proj_ba   d·2·H_lv        [β | a]
    (Qwen3.5 ``Qwen3_5GatedDeltaNet``, ``split_proj``: the same widths as four projections,
    in_proj_qkv d·c, in_proj_z d·v, in_proj_b and in_proj_a d·H_lv each; OLMo-Hybrid
    ``OlmoHybridGatedDeltaNet``, ``separate_proj``: six, q_proj and k_proj d·k each, v_proj and
    the gate g_proj d·v each, a_proj and b_proj d·H_lv each, out_proj named o_proj)
    conv1d       c·K_c depthwise, no bias
    dt_bias, A_log  H_lv each
    norm         D_lv (gated RMSNorm shared by all heads)
    out_proj     v·d
FLOPs, batch B; projections 2·tokens·in·out under both ``impl`` conventions. Decays, β scaling,
norms and gates are elementwise (0 FLOPs).
``impl="minimal"`` (default): the chunked gated delta rule over exactly T tokens, chunks of
    C = C_dn, as a polynomial in T (q = keys per query inside a chunk: C under ``attention="full"``,
    (C+1)/2 under ``"causal"``; k·kᵀ needs only the strict lower triangle there, (C−1)/2):
    conv 2·B·T·c·K_c (T outputs); k·kᵀ and q·kᵀ 2·B·T·q·H_lk·D_lk each, per key head (β and
    the decays are per value head but scale the product elementwise); the two unit-lower-triangular
    solves (UT transform, forward substitution) B·T·(C−1)·H_lv·(D_lk + D_lv); (masked q·kᵀ)·v_new
    2·B·T·q·H_lv·D_lv; the state reads k_cumdecay·S and q·S 4·B·T·H_lv·D_lk·D_lv; the update
    kᵀ·v_new 2·B·T·H_lv·D_lk·D_lv. Exact when C divides T; for T = m·C + r, 0 < r < C, the exact
    count uses m·C² + r² (full) block pairs per head instead of T·C, likewise for the solves.
    Decode: the recurrent step as the products it is, per value head: the reads S·k and S·q
    4·B·H_lv·D_lk·D_lv and the rank-1 update k⊗δ 2·B·H_lv·D_lk·D_lv (6·B·H_lv·D_lk·D_lv; the
    decay of S is elementwise); conv 2·B·c·K_c (one output).
``impl="reference"``: what the transformers torch fallback runs, as FlopCounterMode measures it
    (the oracle tests use this):
    conv 2·B·c·K_c per output position: T + K_c − 1 positions in prefill (padding K_c − 1, then
    slicing), 2 in decode (the K_c cached columns plus the new one, unpadded).
    Prefill: ``torch_chunk_gated_delta_rule`` zero-pads T to n·C_dn, n = ⌈T/C_dn⌉, C_dn = 64,
    and computes the padding too; q/k heads are repeated to H_lv. Per value head and chunk:
    k_β·kᵀ and q·kᵀ 2·C_dn²·D_lk each, (masked q·kᵀ)·v_new 2·C_dn²·D_lv, the state reads
    k_cumdecay·S and q·S 2·C_dn·D_lk·D_lv each and the update kᵀ·v_new 2·C_dn·D_lk·D_lv.
    The two triangular solves (``linalg.solve_triangular``) are not counted by FlopCounterMode.
    For T a multiple of 64 this is the polynomial 2·B·H_lv·T·(2·C_dn·D_lk + C_dn·D_lv + 3·D_lk·D_lv).
    Decode: ``torch_recurrent_gated_delta_rule`` does the step with broadcast multiplies and
    sums, no matmul, so it counts 0.
Elementwise (``symcost.core.elementwise``; the same under both ``impl``), per token: SiLU after the
    conv 4·c; L2 norm of q and k 3·2·H_lk·D_lk; β = sigmoid(b) 4·H_lv and the decay
    g = −exp(A)·softplus(a + dt_bias) 5·H_lv; β scaling of k and v H_lv·(D_lk + D_lv); the gated
    RMSNorm and its gate silu(z) 9·H_lv·D_lv; one residual add d. The scan's decays: decode
    multiplies the state by exp(g), H_lv·D_lk·D_lv; prefill masks the intra-chunk scores with the
    decays, T·q·H_lv, and decays each of the ⌈T/C⌉ chunk states, H_lv·D_lk·D_lv each.
Cache: conv_state [B, c, K_c] (K_c columns, not K_c − 1) and recurrent_state
    [B, H_lv, D_lk, D_lv], float32 in the torch scan whatever the model dtype.

>>> GatedDeltaNet().cache().total
B*D_lk*D_lv*H_lv + B*K_c*(2*D_lk*H_lk + D_lv*H_lv)
>>> from symcost.core.conventions import Phase
>>> dn = GatedDeltaNet()
>>> dn.flops(Phase(kind="decode")).total - dn.flops(Phase(kind="decode", impl="reference")).total
6*B*D_lk*D_lv*H_lv - 2*B*K_c*(2*D_lk*H_lk + D_lv*H_lv)
>>> GatedDeltaNet().flops(Phase(kind="prefill"))["ut_solve"]
B*H_lv*T*(C_dn - 1)*(D_lk + D_lv)
>>> GatedDeltaNet().elementwise(Phase(kind="decode"))["scan_decay"]
B*D_lk*D_lv*H_lv
>>> GatedDeltaNet().params().total.subs({sym.d: 8, sym.H_lk: 1, sym.H_lv: 2, sym.D_lk: 4, sym.D_lv: 4, sym.K_c: 4})
360
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Param, Saved, is_one
from ..core.terms import Terms
from .base import Component


@dataclass(frozen=True)
class GatedDeltaNet(Component):
    key = "linear_attn"
    d: sympy.Expr = sym.d
    H_lk: sympy.Expr = sym.H_lk
    H_lv: sympy.Expr = sym.H_lv
    D_lk: sympy.Expr = sym.D_lk
    D_lv: sympy.Expr = sym.D_lv
    K_c: sympy.Expr = sym.K_c
    C: sympy.Expr = sym.C_dn  # chunk size of the prefill scan
    #: Qwen3.5 (``Qwen3_5GatedDeltaNet``) splits the two input projections into four: in_proj_qkv,
    #: in_proj_z, in_proj_b, in_proj_a — the same weights and FLOPs under their own names
    split_proj: bool = False
    #: OLMo-Hybrid (``OlmoHybridGatedDeltaNet``) projects q, k, v, the gate g, a and b separately and
    #: calls the output projection o_proj — again the same weights and FLOPs
    separate_proj: bool = False

    @property
    def conv_dim(self) -> sympy.Expr:
        return 2 * self.H_lk * self.D_lk + self.H_lv * self.D_lv

    def primitives(self, ph: Phase | None = None):
        d, Hv, dv, K = self.d, self.H_lv, self.D_lv, self.K_c
        c, v = self.conv_dim, Hv * dv
        k = self.H_lk * self.D_lk
        prims = [
            Linear("in_proj_qkvz", d, c + v, tp="col", doc="[d, 2·H_lk·D_lk + 2·H_lv·D_lv]: q, k, v, z"),
            Linear("in_proj_ba", d, 2 * Hv, tp="col", doc="[d, 2·H_lv]: β, a"),
        ] if not (self.split_proj or self.separate_proj) else [
            Linear("q_proj", d, k, tp="col", doc="[d, H_lk·D_lk]"),
            Linear("k_proj", d, k, tp="col", doc="[d, H_lk·D_lk]"),
            Linear("v_proj", d, v, tp="col", doc="[d, H_lv·D_lv]"),
            Linear("a_proj", d, Hv, tp="col", doc="[d, H_lv]: a (decay)"),
            Linear("b_proj", d, Hv, tp="col", doc="[d, H_lv]: β"),
            Linear("g_proj", d, v, tp="col", doc="[d, H_lv·D_lv]: output gate"),
        ] if self.separate_proj else [
            Linear("in_proj_qkv", d, c, tp="col", doc="[d, 2·H_lk·D_lk + H_lv·D_lv]: q, k, v"),
            Linear("in_proj_z", d, v, tp="col", doc="[d, H_lv·D_lv]: output gate z"),
            Linear("in_proj_b", d, Hv, tp="col", doc="[d, H_lv]: β"),
            Linear("in_proj_a", d, Hv, tp="col", doc="[d, H_lv]: a (decay)"),
        ]
        prims += [
            Param("conv1d", c * K, doc="depthwise [2·H_lk·D_lk + H_lv·D_lv, K_c], no bias"),
            Param("dt_bias", Hv, doc="[H_lv]"),
            Param("A_log", Hv, doc="[H_lv]"),
            Param("o_norm" if self.separate_proj else "norm", dv, doc="gated RMSNorm [D_lv]"),
            Linear("o_proj" if self.separate_proj else "out_proj", v, d, tp="row", doc="[H_lv·D_lv, d]"),
        ]
        if ph is None:
            return prims
        return prims + (self._reference(ph) if ph.impl == "reference" else self._minimal(ph))

    def _minimal(self, ph: Phase) -> list[Matmul]:
        B, T, C = sym.B, sym.T, self.C
        Hk, Hv, dk, dv, c, K = self.H_lk, self.H_lv, self.D_lk, self.D_lv, self.conv_dim, self.K_c
        if ph.kind == "decode":
            return [Matmul("conv1d", 2 * B * c * K, "depthwise conv, one output"),
                    Matmul("state_reads", 4 * B * Hv * dk * dv, "S·k and S·q"),
                    Matmul("state_update", 2 * B * Hv * dk * dv, "k⊗δ into the decayed state")]
        full = ph.attention == "full"
        q = C if full else (C + 1) / 2  # keys per query inside a chunk
        q_kk = C if full else (C - 1) / 2  # the UT system needs the strict lower triangle
        return [
            Matmul("conv1d", 2 * B * T * c * K, "depthwise conv, T outputs"),
            Matmul("chunk_kk", 2 * B * T * q_kk * Hk * dk, "k·kᵀ within each chunk, per key head"),
            Matmul("chunk_qk", 2 * B * T * q * Hk * dk, "q·kᵀ within each chunk, per key head"),
            Matmul("ut_solve", B * T * (C - 1) * Hv * (dk + dv),
                   "forward substitution of the UT system for v_β and k_β (C(C−1)/2 MACs per column)"),
            Matmul("chunk_values", 2 * B * T * q * Hv * dv, "masked q·kᵀ · v_new within each chunk"),
            Matmul("state_reads", 4 * B * T * Hv * dk * dv, "k_cumdecay·S and q·S per chunk"),
            Matmul("state_update", 2 * B * T * Hv * dk * dv, "kᵀ·v_new into the state per chunk"),
        ]

    def _reference(self, ph: Phase) -> list[Matmul]:
        B, Hv, dk, dv, K, c = sym.B, self.H_lv, self.D_lk, self.D_lv, self.K_c, self.conv_dim
        if ph.kind == "decode":  # the recurrent step is elementwise: 0 matmul FLOPs
            return [Matmul("conv1d", 2 * B * 2 * c * K, "depthwise conv over K_c + 1 columns: 2 outputs")]
        Q = self.C
        n = sympy.ceiling(sym.T / Q)  # chunks after zero-padding T to a multiple of C_dn
        heads = 2 * B * Hv * n  # every product below runs per value head and chunk
        return [
            Matmul("conv1d", 2 * B * (sym.T + K - 1) * c * K, "depthwise conv, T + K_c − 1 outputs"),
            Matmul("chunk_kk", heads * Q * Q * dk, "k_β·kᵀ within each chunk (UT system)"),
            Matmul("chunk_qk", heads * Q * Q * dk, "q·kᵀ within each chunk"),
            Matmul("chunk_values", heads * Q * Q * dv, "masked q·kᵀ · v_new within each chunk"),
            Matmul("state_reads", 2 * heads * Q * dk * dv, "k_cumdecay·S and q·S per chunk"),
            Matmul("state_update", heads * Q * dk * dv, "kᵀ·v_new into the state per chunk"),
        ]

    def elementwise(self, ph: Phase) -> Terms:
        rows, B, Hv, dk, dv = ph.tokens, sym.B, self.H_lv, self.D_lk, self.D_lv
        if ph.kind == "decode":
            decay = rows * Hv * dk * dv
        else:
            q = self.C if ph.attention == "full" else (self.C + 1) / 2
            decay = B * sym.T * q * Hv + B * sympy.ceiling(sym.T / self.C) * Hv * dk * dv
        return Terms({
            "conv_act": COST["silu"] * rows * self.conv_dim,
            "qk_l2norm": COST["l2norm"] * rows * 2 * self.H_lk * dk,
            "gates": (COST["sigmoid"] + 1 + COST["softplus"] + 1) * rows * Hv,
            "beta_scale": rows * Hv * (dk + dv),
            "gated_norm": (COST["rmsnorm"] + COST["silu"] + COST["gate_mul"]) * rows * Hv * dv,
            "scan_decay": decay,
            "residual": COST["residual"] * rows * self.d,
        }, {"conv_act": "SiLU over the conv channels", "qk_l2norm": "L2 norm of q and k",
            "gates": "β = sigmoid(b), g = −exp(A)·softplus(a + dt_bias)", "beta_scale": "β·k, β·v",
            "gated_norm": "RMSNorm(y)·silu(z)", "scan_decay": "decay multiplies of the scan",
            "residual": "residual add"})

    def saved(self, bw) -> list:
        """Saved for backward, one layer (``conventions.Backward.scan``; measured in tests/test_activations.py).

        Both conventions: the projections' input ``b_a·d``; the per-layer fp32 −exp(A_log) and its
        exp, ``4·H_lv`` each; the gated RMSNorm and out_proj input (below).
        ``fused`` (default: fla's ``chunk_gated_delta_rule``, which transformers calls when the
        kernels are installed; ``ChunkGatedDeltaRuleFunction`` keeps q, k, v, g, β and the initial
        state and recomputes the chunk quantities in backward, with the conv and the L2 norm fused
        as fla's ``ShortConvolution`` / ``use_qk_l2norm_in_kernel``): the conv input
        ``b_a·c`` (c = 2·H_lk·D_lk + H_lv·D_lv), q/k/v after the conv ``b_a·c``, β ``b_a·H_lv``
        and g ``4·H_lv``, then the norm as below.
        ``reference``: transformers' ``torch_chunk_gated_delta_rule``, n = ⌈T/C_dn⌉ chunks over
        T_p = n·C_dn padded rows, q/k repeated to H_lv heads, everything fp32: per token the conv
        input and output (``b_a·c``, the output over T + K_c − 1 positions), β ``b_a·H_lv``, the
        decay's softplus input and output ``4·H_lv`` each, the L2-normalised q and k with their
        inverse norms ``4·H_lv·(D_lk + 1)`` each (in fp32 with H_lk = H_lv, q and k are the conv's
        SiLU output itself, ``b_a·c``, with the inverse norms); per padded row v, k, q, k_β, the UT solutions
        (new values, k_cumdecay) and v_new (``4·H_lv·(3·D_lv + 4·D_lk)`` in all, with n ≥ 2 the
        decayed q and k ``4·H_lv·2·D_lk`` more), k·kᵀ, q·kᵀ, the pairwise decays, the UT system
        and the masked q·kᵀ (``4·H_lv·C_dn`` × 5), β and three decay vectors ``4·H_lv`` × 4; per
        sequence the zero initial state and the n − 1 states passed between chunks
        ``4·H_lv·D_lk·D_lv·n`` and the chunk decays ``4·H_lv·n``; per layer the triu mask
        ``C_dn²`` bytes.
        Norm (both): the core output, fp32 ``4·H_lv·D_lv``, its rstd ``4·H_lv``, the normed and
        weighted outputs ``b_a·H_lv·D_lv`` each, z (a copy, ``b_a``; below fp32 its fp32 copy; in fp32
        with H_lk = H_lv and the fused in_proj_qkvz, a view that keeps that projection, ``b_a·(c + H_lv·D_lv)``) and
        silu(z) fp32 ``4·H_lv·D_lv``; the out_proj input ``b_a·H_lv·D_lv``.
        """
        a, d, Hk, Hv, dk, dv, C = sym.b_a, self.d, self.H_lk, self.H_lv, self.D_lk, self.D_lv, self.C
        c, v, T, B = self.conv_dim, Hv * dv, sym.T, sym.B
        one = sympy.Integer(1)
        out = [Saved("input", d, a, "seq", doc="in_proj input [.., d]"),
               Saved("A_exp", Hv, 4, rows=one, doc="exp(A_log.float()) [H_lv], per layer"),
               Saved("A", Hv, 4, rows=one, doc="−exp(A_log) [H_lv], per layer")]
        if bw.scan == "fused":
            out += [Saved("conv_input", c, a, doc="[q k v] before the short conv"),
                    Saved("qkv", c, a, doc="q, k, v after the conv (kernel inputs)"),
                    Saved("beta", Hv, a, doc="sigmoid(b)"), Saved("g", Hv, 4, doc="fp32 log-decay")]
        else:
            n = sympy.ceiling(T / C)
            Tp = B * n * C
            many = 1 - is_one(n)  # 1 when n ≥ 2: the states passed between chunks need gradients
            # fp32 without repeat_interleave (H_lk = H_lv): .to(float32) returns q and k themselves
            r = 0 if bw.upcast else is_one(Hv / Hk)
            out += [Saved("conv_input", c, a, doc="cat(q, k, v) [.., c]"),
                    Saved("conv_out", c, a, rows=B * (T + self.K_c - 1), doc="conv output before SiLU"),
                    Saved("beta", Hv, a, doc="sigmoid(b)"),
                    Saved("softplus_in", Hv, 4, doc="a.float() + dt_bias"),
                    Saved("softplus_out", Hv, 4, doc="softplus(a + dt_bias)"),
                    Saved("qk_inv_norm", 2 * Hv, 4, doc="inverse L2 norms of q and k"),
                    Saved("qk", 2 * Hv * dk * 4 * (1 - r) + r * c * a, 1,
                          doc="fp32 q, k (repeated to H_lv); in fp32 with H_lk = H_lv no copy is made and "
                              "the conv's SiLU output [q k v] is kept instead"),
                    Saved("scan/vectors", Hv * (3 * dv + 4 * dk + 2 * many * dk), 4, rows=Tp,
                          doc="padded v, k, q, k_β, new values, k_cumdecay, v_new (+ decayed q, k when n ≥ 2)"),
                    Saved("scan/chunk_pairs", 5 * Hv * C, 4, rows=Tp,
                          doc="k_β·kᵀ, q·kᵀ, pairwise decays, UT system, masked q·kᵀ [.., C_dn]"),
                    Saved("scan/decays", 4 * Hv, 4, rows=Tp, doc="padded β and three exp(decay) vectors"),
                    Saved("scan/states", Hv * dk * dv * n, 4, rows=B, doc="zero initial state + n − 1 passed states"),
                    Saved("scan/chunk_decay", Hv * n, 4, rows=B, doc="exp(total decay) per chunk"),
                    Saved("scan/mask", C ** 2, 1, "none", one, doc="boolean triu mask, per layer")]
        # fp32, one value head per key head, fused projection: z.reshape is a view of in_proj_qkvz's output
        z_width = v if bw.upcast or self.split_proj else v + is_one(Hv / Hk) * c
        out += [Saved("norm/input_fp32", v, 4, doc="core output .float()"),
                Saved("norm/rstd", Hv, 4, doc="fp32 rstd per head"),
                Saved("norm/normed", v, a), Saved("norm/weighted", v, a, doc="weight · normed"),
                Saved("norm/z", z_width, 4 if bw.upcast else a,
                      doc="z: a copy; below fp32 its fp32 copy; in fp32 with H_lk = H_lv a view of in_proj_qkvz"),
                Saved("norm/silu_z", v, 4, doc="silu(z.float())"),
                Saved("out_proj_input", v, a, doc="[.., H_lv·D_lv]")]
        return out

    def cache(self) -> Terms:
        return Terms({"conv_state": sym.B * self.conv_dim * self.K_c,
                      "recurrent_state": sym.B * self.H_lv * self.D_lk * self.D_lv},
                     {"conv_state": "[B, 2·H_lk·D_lk + H_lv·D_lv, K_c]",
                      "recurrent_state": "[B, H_lv, D_lk, D_lv] (float32 in the torch scan)"})

    def label(self) -> str:
        return "Gated DeltaNet"
