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
Elementwise (``symcost.core.elementwise``; the same under both ``impl``), per token: SiLU after the
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
>>> from symcost.core.conventions import Phase
>>> KDA().flops(Phase(kind="decode", impl="reference"))["conv1d"]
12*B*D_kda*H_kda*K_c
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Param, Saved, is_one
from ..core.terms import Terms
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
        """Saved for backward, one layer: transformers' torch path (``scan="reference"``:
        ``chunk_kimi_delta_attention``, what a CPU run executes; measured in tests/test_activations.py).
        H = H_kda, D = D_kda, n = ⌈T/C_dn⌉ chunks over T_p = n·C_dn zero-padded rows, the scan in fp32.

        Per token: the projections' input ``b_a·d``; the conv input and its output before SiLU
        (``b_a·3HD``, the output over T + K_c − 1 positions); the f_b_proj and g_b_proj inputs ``b_a·D``
        each; the forget gate's softplus written out — exp(g), 1 + exp(g) and the softplus 4·HD each,
        torch.where's bool mask HD bytes; β ``b_a·H``; q and k as fp32 contiguous copies with their
        L2 norms, 4·(HD + H) each; the gated RMSNorm: the fp32 core output, rstd, the normed and
        weighted outputs and sigmoid(gate) (4·HD each but rstd 4·H) and the out_proj input ``b_a·HD``
        (in fp32 with B = H = 1 the core output is a view of the padded scan output: T_p − T rows more).
        Per layer: exp(A_log) and −exp(A_log) 4·H each, below fp32 the norm's fp32 weight copy 4·D,
        and three bool C_dn² triangular masks.
        Per padded row (4 bytes each): β; v, k, k_β, the scaled q, v_β, e^g, k_β·e^g, v_new and
        each chunk's e^g (9·HD); the per-channel pairs of a chunk: the decay mask, k_β·k·decay and
        q·k·decay [C_dn, D] (3·H·C_dn·D) and the UT matrix and masked q·kᵀ (2·H·C_dn); with n ≥ 2,
        k_cumdecay (HD) and, for the n − 1 chunks whose state is passed on, q·e^g, e^(g_last − g) and
        (k·e^(g_last − g)) (3·HD per row) and e^(g_last) (H·D per chunk). The UT solve's row loop keeps
        each row and leading block it clones: Σ_{i<C_dn} (i + i²) = (C_dn−1)·C_dn·(C_dn+1)/3 per head
        and chunk. Per sequence the n states S the chunks read, 4·H·D² each (the first is zeros).
        The last chunk's state update is computed and dropped; two of its tensors stay alive and are
        never read by the backward (the test subtracts them, ``UNREACHED``). fla's ``chunk_kda`` (the
        fused convention) is not declared: ``train`` says so (exit 2).
        """
        if bw.scan != "reference":
            raise NotImplementedError(f"{self.label()}: fla's chunk_kda (the fused kernels) declares no saved "
                                      "tensors (use --scan reference, transformers' torch path)")
        a, d, H, D, C, K = sym.b_a, self.d, self.H_lv, self.D_lv, self.C, self.K_c
        HD, T, B, one = H * D, sym.T, sym.B, sympy.Integer(1)
        n = sympy.ceiling(T / C)
        Tp = B * n * C
        many = 1 - is_one(n)  # 1 when n ≥ 2: a state is passed between chunks
        out = [Saved("input", d, a, "seq", doc="q/k/v, gate and β projections' input"),
               Saved("conv_input", 3 * HD, a, doc="cat(q, k, v) before the depthwise conv"),
               Saved("conv_out", 3 * HD, a, rows=B * (T + K - 1), doc="conv output before SiLU"),
               Saved("gate_low_rank", 2 * D, a, "seq", doc="f_b_proj and g_b_proj inputs [.., D]"),
               Saved("forget_gate", 3 * HD, 4, doc="exp(g), 1 + exp(g), softplus(g): fp32"),
               Saved("forget_gate/mask", HD, 1, doc="torch.where(g > 20) bool mask"),
               Saved("beta", H, a, doc="sigmoid(b)"),
               Saved("qk_l2norm", 2 * (HD + H), 4, doc="fp32 contiguous q, k and their L2 norms"),
               Saved("A", 2 * H, 4, rows=one, doc="exp(A_log) and −exp(A_log), per layer"),
               Saved("scan/masks", 3 * C ** 2, 1, "none", one, doc="three bool triu [C_dn, C_dn] masks, per layer"),
               Saved("scan/vectors", 9 * HD + H + many * HD, 4, rows=Tp,
                     doc="padded β, v, k, k_β, q, v_β, e^g, k_β·e^g, v_new, each chunk's e^g (+ k_cumdecay when n ≥ 2)"),
               Saved("scan/passed", 3 * HD, 4, rows=B * (n - 1) * C,
                     doc="q·e^g, e^(g_last − g), k·e^(g_last − g) of the chunks whose state is passed on"),
               Saved("scan/passed_decay", HD * (n - 1), 4, rows=B, doc="e^(g_last) of those chunks"),
               Saved("scan/chunk_pairs", H * C * (3 * D + 2), 4, rows=Tp,
                     doc="decay mask, k_β·k·decay, q·k·decay [C_dn, D]; UT matrix, masked q·kᵀ [C_dn]"),
               Saved("scan/ut_rows", H * (C - 1) * C * (C + 1) / 3, 4, rows=B * n,
                     doc="the UT solve's cloned rows and leading blocks, per head and chunk"),
               Saved("scan/states", H * D * D * n, 4, rows=B, doc="zero initial state + n − 1 passed states"),
               Saved("norm", 4 * HD + H, 4, doc="fp32 core output, rstd, normed, weighted, sigmoid(gate)"),
               Saved("out_proj_input", HD, a, doc="gated output in the compute dtype")]
        if bw.upcast:
            out.append(Saved("norm/weight_fp32", D, 4, "none", one, "o_norm weight.float(), per layer"))
        else:  # fp32, B = H = 1: the unpadded core output is a view of the padded one, kept whole
            out.append(Saved("norm/input_padding", is_one(B) * is_one(H) * HD, 4, rows=B * (n * C - T),
                             doc="the padded rows the core output's storage keeps when its slice needs no copy"))
        return out

    def cache(self) -> Terms:
        return Terms({"conv_state": sym.B * self.conv_dim * self.K_c,
                      "recurrent_state": sym.B * self.H_lv * self.D_lk * self.D_lv},
                     {"conv_state": "[B, 3·H_kda·D_kda, K_c]",
                      "recurrent_state": "[B, H_kda, D_kda, D_kda] (float32)"})

    def label(self) -> str:
        return "Kimi Delta Attention"
