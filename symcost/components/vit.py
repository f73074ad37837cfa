"""The shared body of ViT-style vision towers: per-image matmul FLOPs of patch embedding + encoder.

For N patches of p×p pixels with C channels and L layers of width d_vis (MLP d_ff_vis), eager
attention, 2 FLOPs per multiply-accumulate:
    patch embedding 2·N·d_vis·C·p², per layer q, k, v, out 4·2·N·d_vis², QKᵀ and PV 2·N²·d_vis
    each, MLP 2·2·N·d_vis·d_ff_vis. Projectors differ per model and are added by each tower.
Source: transformers ``SiglipEncoderLayer`` / Kimi-K2.5 ``MoonViT`` blocks (measured in
tests/test_vision.py under FlopCounterMode).

>>> from symcost.notation import sym
>>> encoder_image_flops(sym.N_pat, sym.d_vis, sym.d_ff_vis, sym.L_vis, sym.C_img * sym.p_vis**2)["mlp"]
4*L_vis*N_pat*d_ff_vis*d_vis
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..conventions import Phase
from ..notation import sym
from ..terms import Terms
from .base import Component


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


@dataclass(frozen=True)
class MergedPatchTower(Component):
    """A whole ViT tower + projector for the per-image questions, whose weights other components
    count (stem, blocks, projector): ``image_tokens()`` = N_pat / m_vis text tokens per image, one
    per merged (or pixel-shuffled) group of m_vis patches. Subclasses add ``image_flops()``."""

    key = "vision"
    modality = "image"
    d: sympy.Expr = sym.d
    d_vis: sympy.Expr = sym.d_vis
    d_ff_vis: sympy.Expr = sym.d_ff_vis
    L_vis: sympy.Expr = sym.L_vis
    p_vis: sympy.Expr = sym.p_vis
    C_img: sympy.Expr = sym.C_img
    N_pat: sympy.Expr = sym.N_pat
    m_vis: sympy.Expr = sym.m_vis

    def primitives(self, ph: Phase | None = None):
        return []  # the weights are counted by the tower's stem, block and projector components

    def image_tokens(self) -> sympy.Expr:
        return self.N_pat / self.m_vis
