"""The Qwen3-VL / Qwen3.5 vision tower: a ViT on Conv3d patches with a resampled learned position
table, a patch merger into the text stream and (Qwen3-VL only) deepstack mergers.

Parameters (transformers ``Qwen3VLVisionModel``; ``Qwen3_5VisionModel`` is the same class with the
deepstack mergers deleted), width d_vis, MLP d_ff_vis, m_vis = spatial_merge_size² patches merged:
    patch_embed  Conv3d C_img → d_vis, kernel t_vis×p_vis×p_vis, with bias: C_img·t_vis·p_vis²·d_vis + d_vis
    pos_embed    P_vis·d_vis (num_position_embeddings, bilinearly resampled to each image's grid;
                 the 2D rotary table is a non-persistent buffer)
    L_vis × [norm1, norm2 LayerNorm 2·d_vis each; qkv d_vis·3·d_vis + 3·d_vis; proj d_vis² + d_vis;
             linear_fc1 d_vis·d_ff_vis + d_ff_vis; linear_fc2 d_ff_vis·d_vis + d_vis]
    merger       LayerNorm 2·d_vis (before the shuffle); linear_fc1 (m_vis·d_vis)² + m_vis·d_vis;
                 linear_fc2 m_vis·d_vis·d + d (d = out_hidden_size, the text hidden size; ``d_vout``
                 when a config states another)
    n_ds deepstack mergers (one per ``deepstack_visual_indexes`` entry), each as the merger but with
                 its LayerNorm after the shuffle, over m_vis·d_vis: 2·m_vis·d_vis.
FLOPs: a text-only pass never runs the tower (0 in every text phase; its features are added to the
    text stream elementwise). ``image_flops()`` is one still image of N_pat patches (grid t = 1) as
    eager attention computes it (``Qwen3VLModel.get_image_features``): the Conv3d
    2·N_pat·d_vis·C_img·t_vis·p_vis², per layer qkv + proj 8·N_pat·d_vis², QKᵀ and PV over the image's
    own N_pat × N_pat block (cu_seqlens) 2·N_pat²·d_vis each (heads·head_dim = d_vis), fc1 + fc2
    4·N_pat·d_vis·d_ff_vis; the position resampling is a gather and a weighted sum (no matmul); then the
    merger, and each deepstack merger, on N_pat/m_vis merged rows: 2·(N_pat/m_vis)·(m_vis·d_vis)² and
    2·(N_pat/m_vis)·m_vis·d_vis·d. ``image_tokens()`` = N_pat/m_vis, the image pad tokens the processor
    repeats (its vision start/end markers are prompt text). Cache: none.

>>> QwenViT().params()["visual/merger_fc2"]
d*d_vis*m_vis + d
>>> QwenViT(deepstack=True).params()["visual/deepstack_norm"]
2*d_vis*m_vis*n_ds
>>> QwenViT().image_tokens(), QwenViT().image_flops()["scores"]
(N_pat/m_vis, 2*L_vis*N_pat**2*d_vis)
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ...core.notation import sym
from ...core.primitives import Linear, Norm, Param
from ...core.terms import Terms
from .vit import ViTTower, encoder_image_flops


@dataclass(frozen=True)
class QwenViT(ViTTower):
    """``d`` is the mergers' output: the text hidden size (out_hidden_size)."""

    key = "visual"
    p_vis: sympy.Expr = sym.p_vis
    t_vis: sympy.Expr = sym.t_vis
    C_img: sympy.Expr = sym.C_img
    m_vis: sympy.Expr = sym.m_vis
    P_vis: sympy.Expr = sym.P_vis
    N_pat: sympy.Expr = sym.N_pat  # patches of the image ``image_flops`` / ``image_tokens`` describe
    n_ds: sympy.Expr = sym.n_ds
    deepstack: bool = False  # Qwen3-VL: n_ds deepstack mergers; Qwen3.5: none

    def weights(self, rows: sympy.Expr | None = None) -> list:
        """The tower's weights; ``rows`` = patches of one image: the mergers then run over rows/m_vis."""
        dv, ff, L, m = self.d_vis, self.d_ff_vis, self.L_vis, self.m_vis
        merged = None if rows is None else rows / m
        prims = [
            Param("patch_embed", self.C_img * self.t_vis * self.p_vis**2 * dv + dv,
                  doc="Conv3d [C_img·t_vis·p_vis², d_vis] + bias"),
            Param("pos_embed", self.P_vis * dv, doc="[P_vis, d_vis] learned, resampled per image"),
            Param("blocks_norms", 4 * dv, copies=L, doc="L_vis × norm1, norm2 (LayerNorm)"),
            Linear("blocks_qkv", dv, 3 * dv, bias=True, copies=L, doc="L_vis × [d_vis, 3·d_vis] + bias"),
            Linear("blocks_proj", dv, dv, bias=True, copies=L, doc="L_vis × [d_vis, d_vis] + bias"),
            Linear("blocks_fc1", dv, ff, bias=True, copies=L, doc="L_vis × [d_vis, d_ff_vis] + bias"),
            Linear("blocks_fc2", ff, dv, bias=True, copies=L, doc="L_vis × [d_ff_vis, d_vis] + bias"),
            Norm("merger_norm", dv, bias=True, doc="LayerNorm [d_vis] before the 2×2 shuffle"),
            Linear("merger_fc1", m * dv, m * dv, bias=True, rows=merged, doc="[m_vis·d_vis, m_vis·d_vis] + bias"),
            Linear("merger_fc2", m * dv, self.d, bias=True, rows=merged, doc="[m_vis·d_vis, d] + bias"),
        ]
        if self.deepstack:
            n = self.n_ds
            prims += [
                Param("deepstack_norm", 2 * m * dv, copies=n, doc="n_ds × LayerNorm [m_vis·d_vis] after the shuffle"),
                Linear("deepstack_fc1", m * dv, m * dv, bias=True, copies=n, rows=merged,
                       doc="n_ds × [m_vis·d_vis, m_vis·d_vis] + bias"),
                Linear("deepstack_fc2", m * dv, self.d, bias=True, copies=n, rows=merged,
                       doc="n_ds × [m_vis·d_vis, d] + bias"),
            ]
        return prims

    def image_tokens(self) -> sympy.Expr:
        """Text tokens one still image fills: one per merged m_vis patches."""
        return self.N_pat / self.m_vis

    def image_flops(self) -> Terms:
        """Forward matmul FLOPs of one still image of N_pat patches (eager attention): tower + mergers."""
        N, dv = self.N_pat, self.d_vis
        t = encoder_image_flops(N, dv, self.d_ff_vis, self.L_vis, self.C_img * self.t_vis * self.p_vis**2)
        for p in self.weights(rows=N):
            if isinstance(p, Linear) and p.name.startswith(("merger", "deepstack")):
                t.add(p.name, p.flops(N), p.doc + " over N_pat/m_vis merged rows")
        return t

    def label(self) -> str:
        return "Qwen ViT + patch merger" + (" + deepstack mergers" if self.deepstack else "")
