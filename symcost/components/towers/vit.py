"""The shared body of ViT-style vision towers: per-image matmul FLOPs of patch embedding + encoder.

For N patches of p×p pixels with C channels and L layers of width d_vis (MLP d_ff_vis), eager
attention, 2 FLOPs per multiply-accumulate:
    patch embedding 2·N·d_vis·C·p², per layer q, k, v, out 4·2·N·d_vis², QKᵀ and PV 2·N²·d_vis
    each, MLP 2·2·N·d_vis·d_ff_vis. Projectors differ per model and are added by each tower.
Source: transformers ``SiglipEncoderLayer`` / Kimi-K2.5 ``MoonViT`` blocks, measured under
FlopCounterMode.

>>> from symcost.core.notation import sym
>>> encoder_image_flops(sym.N_pat, sym.d_vis, sym.d_ff_vis, sym.L_vis, sym.C_img * sym.p_vis**2)["mlp"]
4*L_vis*N_pat*d_ff_vis*d_vis
"""
from __future__ import annotations

import sympy

from ...core.terms import Terms


def encoder_image_flops(N: sympy.Expr, d_vis: sympy.Expr, d_ff_vis: sympy.Expr, L_vis: sympy.Expr,
                        patch_pixels: sympy.Expr) -> Terms:
    """Patch embedding (``patch_pixels`` = C·p², or C·t·p² for video patches) + L_vis encoder layers."""
    t = Terms()
    t.add("patch_embedding", 2 * N * d_vis * patch_pixels, "Conv, one output per patch")
    t.add("attn_qkvo", L_vis * 4 * 2 * N * d_vis**2, "L_vis × 4 × [d_vis, d_vis] over N_pat rows")
    t.add("scores", L_vis * 2 * N**2 * d_vis, "QKᵀ: 2·N_pat²·d_vis per layer")
    t.add("values", L_vis * 2 * N**2 * d_vis, "PV: 2·N_pat²·d_vis per layer")
    t.add("mlp", L_vis * 4 * N * d_vis * d_ff_vis, "fc1 + fc2 over N_pat rows")
    return t
