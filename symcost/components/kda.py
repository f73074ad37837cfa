"""Kimi Delta Attention (KDA): Gated DeltaNet whose decay is per channel instead of per head.

Parameters (transformers ``KimiLinearDeltaAttention``, ``KimiLinearForgetGate``), H = H_kda heads
of dim D = D_kda for q, k and v alike (no grouped heads), no biases:
    q_proj, k_proj, v_proj   d·H·D each
    conv1d                   3·H·D·K_c depthwise (q, k and v go through the conv), no bias
    forget gate              f_a_proj d·D, f_b_proj D·H·D (low rank D), dt_bias H·D, A_log H
    b_proj                   d·H (β)
    output gate              g_a_proj d·D, g_b_proj D·H·D (low rank D)
    o_norm                   D (gated RMSNorm shared by all heads, sigmoid gate)
    o_proj                   H·D·d
FLOPs, batch B; every projection 2·tokens·in·out under both ``impl`` conventions.
``impl="minimal"`` (default): the chunked delta rule of ``components.gated_deltanet`` with
    H_lk = H_lv = H and D_lk = D_lv = D: a per-channel decay folds into q and k before the
    products (q⊙e^g, k⊙e^−g), so the chunk matmuls have the shapes of Gated DeltaNet's and the
    count is the same polynomial in T (see that module): conv 2·B·T·3HD·K_c, k·kᵀ and q·kᵀ
    2·B·T·q·H·D each, the two triangular solves B·T·(C−1)·H·2D, (masked q·kᵀ)·v_new 2·B·T·q·H·D,
    state reads 4·B·T·H·D² and update 2·B·T·H·D². Decode: 6·B·H·D² (S·k, S·q, k⊗δ) + the conv 2·B·3HD·K_c.
``impl="reference"``: what ``chunk_kimi_delta_attention`` and ``recurrent_kimi_delta_attention``
    (the torch fallbacks, no ``fla`` kernel) compute, as FlopCounterMode measures it. Prefill
    zero-pads T to n·C_dn, n = ⌈T/C_dn⌉, C_dn = 64. The intra-chunk k·kᵀ and q·kᵀ with the
    per-channel decay are broadcast multiplies and sums (0 matmul FLOPs), the UT system is solved
    by a row loop of broadcast products (0); per head and chunk the matmuls are
        attn·v_β and attn·(k_β⊙e^g)   2·C_dn²·D each   (the UT transform applied)
        attn_intra·v_new               2·C_dn²·D
        (q⊙e^g)·S and k_cumdecay·S     2·C_dn·D² each
        (k⊙decay)ᵀ·v_new               2·C_dn·D²
    2·B·H·n·(3·C_dn²·D + 3·C_dn·D²) in all; the conv 2·B·3HD·K_c per output position,
    T + K_c − 1 positions (padding K_c − 1, then slicing). Decode: the recurrent step is
    broadcast multiplies and sums (0); the conv ``causal_conv1d_update`` over K_c + 1 columns,
    2 outputs, 2·B·2·3HD·K_c.
Elementwise (``symcost.elementwise``; the same under both ``impl``), per token: SiLU after the
    conv 4·3HD; L2 norm of q and k 3·2HD; β = sigmoid(b) 4·H; the forget gate
    g = −exp(A)·softplus(f + dt_bias) per channel, 5·HD; β scaling of k and v 2·HD; the gated
    RMSNorm with its sigmoid gate 9·HD; one residual add d. The scan's decays, per channel:
    decode multiplies the state by e^g, H·D²; prefill weighs the intra-chunk pairs per channel,
    T·q·H·D, and decays each of the ⌈T/C⌉ chunk states, H·D² each.
Cache (``DynamicCache`` linear-attention layer): conv_states [B, 3·H·D, K_c] (K_c columns) and
    recurrent_states [B, H, D, D], float32 whatever the model dtype.

>>> KDA().cache().total
B*D_kda**2*H_kda + 3*B*D_kda*H_kda*K_c
>>> KDA().params().total.subs({sym.d: 16, sym.H_kda: 2, sym.D_kda: 4, sym.K_c: 4})
846
>>> from symcost.conventions import Phase
>>> KDA().flops(Phase(kind="decode", impl="reference"))["conv1d"]
12*B*D_kda*H_kda*K_c
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..conventions import Phase
from ..elementwise import COST
from ..notation import sym
from ..primitives import Linear, Matmul, Param
from ..terms import Terms
from .gated_deltanet import GatedDeltaNet


@dataclass(frozen=True)
class KDA(GatedDeltaNet):
    # one head count and head dim for q, k and v: Gated DeltaNet with H_lk = H_lv, D_lk = D_lv
    H_lk: sympy.Expr = sym.H_kda
    H_lv: sympy.Expr = sym.H_kda
    D_lk: sympy.Expr = sym.D_kda
    D_lv: sympy.Expr = sym.D_kda

    def primitives(self, ph: Phase | None = None):
        d, H, D, K = self.d, self.H_lv, self.D_lv, self.K_c
        HD = H * D
        prims = [
            Linear("q_proj", d, HD, tp="col", doc="[d, H_kda·D_kda]"),
            Linear("k_proj", d, HD, tp="col", doc="[d, H_kda·D_kda]"),
            Linear("v_proj", d, HD, tp="col", doc="[d, H_kda·D_kda]"),
            Param("conv1d", self.conv_dim * K, doc="depthwise [3·H_kda·D_kda, K_c], no bias"),
            Linear("f_a_proj", d, D, doc="forget gate, low rank: [d, D_kda]"),
            Linear("f_b_proj", D, HD, tp="col", doc="forget gate: [D_kda, H_kda·D_kda]"),
            Param("dt_bias", HD, doc="[H_kda·D_kda], per channel"),
            Param("A_log", H, doc="[H_kda]"),
            Linear("b_proj", d, H, tp="col", doc="[d, H_kda]: β"),
            Linear("g_a_proj", d, D, doc="output gate, low rank: [d, D_kda]"),
            Linear("g_b_proj", D, HD, tp="col", doc="output gate: [D_kda, H_kda·D_kda]"),
            Param("o_norm", D, doc="gated RMSNorm [D_kda]"),
            Linear("o_proj", HD, d, tp="row", doc="[H_kda·D_kda, d]"),
        ]
        if ph is None:
            return prims
        return prims + (self._reference(ph) if ph.impl == "reference" else self._minimal(ph))

    def _reference(self, ph: Phase) -> list[Matmul]:
        B, D, K, c = sym.B, self.D_lv, self.K_c, self.conv_dim
        if ph.kind == "decode":  # the recurrent step is broadcast products: 0 matmul FLOPs
            return [Matmul("conv1d", 2 * B * 2 * c * K, "depthwise conv over K_c + 1 columns: 2 outputs")]
        Q = self.C
        heads = 2 * B * self.H_lv * sympy.ceiling(sym.T / Q)  # per head and (zero-padded) chunk
        return [
            Matmul("conv1d", 2 * B * (sym.T + K - 1) * c * K, "depthwise conv, T + K_c − 1 outputs"),
            Matmul("chunk_ut", heads * Q * Q * 2 * D, "attn·v_β and attn·(k_β⊙e^g): the UT transform applied"),
            Matmul("chunk_values", heads * Q * Q * D, "masked intra-chunk scores · v_new"),
            Matmul("state_reads", 2 * heads * Q * D * D, "(q⊙e^g)·S and k_cumdecay·S per chunk"),
            Matmul("state_update", heads * Q * D * D, "(k⊙decay)ᵀ·v_new into the state per chunk"),
        ]

    def elementwise(self, ph: Phase) -> Terms:
        rows, B, H, D = ph.tokens, sym.B, self.H_lv, self.D_lv
        if ph.kind == "decode":
            decay = rows * H * D * D
        else:
            q = self.C if ph.attention == "full" else (self.C + 1) / 2
            decay = B * sym.T * q * H * D + B * sympy.ceiling(sym.T / self.C) * H * D * D
        return Terms({
            "conv_act": COST["silu"] * rows * self.conv_dim,
            "qk_l2norm": COST["l2norm"] * rows * 2 * H * D,
            "gates": COST["sigmoid"] * rows * H + (1 + COST["softplus"] + 1) * rows * H * D,
            "beta_scale": rows * 2 * H * D,
            "gated_norm": (COST["rmsnorm"] + COST["sigmoid"] + COST["gate_mul"]) * rows * H * D,
            "scan_decay": decay,
            "residual": COST["residual"] * rows * self.d,
        }, {"conv_act": "SiLU over the conv channels", "qk_l2norm": "L2 norm of q and k",
            "gates": "β = sigmoid(b); g = −exp(A)·softplus(f + dt_bias) per channel",
            "beta_scale": "β·k, β·v", "gated_norm": "RMSNorm(o)·sigmoid(gate)",
            "scan_decay": "per-channel decay multiplies of the scan", "residual": "residual add"})

    def saved(self, bw) -> list:
        """Not declared yet: Gated DeltaNet's list (inherited) does not hold for KDA (measured
        5.7× below the bytes saved by transformers' ``chunk_kimi_delta_attention`` on a tiny
        config: its per-channel decay mask [B, H, n, C, C, D] and the row loop of the UT solve,
        which clones each row and leading block, are KDA's own), and fla's ``chunk_kda`` kernel
        (the fused convention) is not declared either; ``train`` says so (exit 2) instead of
        printing Gated DeltaNet's count."""
        raise NotImplementedError(f"{self.label()} declares no saved-for-backward tensors")

    def cache(self) -> Terms:
        return Terms({"conv_state": sym.B * self.conv_dim * self.K_c,
                      "recurrent_state": sym.B * self.H_lv * self.D_lk * self.D_lv},
                     {"conv_state": "[B, 3·H_kda·D_kda, K_c]",
                      "recurrent_state": "[B, H_kda, D_kda, D_kda] (float32)"})

    def label(self) -> str:
        return "Kimi Delta Attention"
