"""MiniMax-M3 vision tower and projector: a CLIP-like ViT on Conv3d patches, then a two-stage GELU
MLP that projects every patch to d and fuses m_vis neighbouring patches into one text token.

Parameters (transformers ``MiniMaxM3VLVisionModel`` + ``MiniMaxM3VLMultiModalProjector``):
    embeddings.proj  Conv3d C_img → d_vis, kernel t_vis×p_vis×p_vis, no bias: C_img·t_vis·p_vis²·d_vis
    pre_layrnorm     LayerNorm 2·d_vis (no post-norm; the 3D RoPE has no weights)
    L_vis × [q, k, v, out_proj d_vis² + d_vis each; fc1 d_vis·d_ff_vis + d_ff_vis;
             fc2 d_ff_vis·d_vis + d_vis; layer_norm1, layer_norm2 2·d_vis each]
    projector: linear_1 d_vis·d_proj + d_proj, linear_2 d_proj·d + d,
               merge_linear_1 m_vis·d·d_proj + d_proj, merge_linear_2 d_proj·d + d
               (m_vis = spatial_merge_size²).
FLOPs: a text-only pass never runs the tower (0 in every text phase). ``image_flops()`` gives one
    still image of N_pat patches (grid t = 1) as eager attention computes it: each GEMM over N_pat
    rows (the merge stage over N_pat/m_vis rows), the Conv3d 2·N_pat·d_vis·C_img·t_vis·p_vis², and
    per layer QKᵀ and PV over the whole N_pat × N_pat rectangle, 2·N_pat²·d_vis each (H·D = d_vis).
    ``image_tokens()``: the image then fills N_pat/m_vis text tokens, the ``]<]image[>[`` placeholders
    ``MiniMaxM3VLProcessor`` repeats (its start/end-of-image brackets, 2 more, are prompt text). Cache: none.

>>> from symcost.core.notation import sym
>>> MiniMaxViT().params()["vision_tower/patch_embedding"]
C_img*d_vis*p_vis**2*t_vis
>>> MiniMaxViT().image_flops()["scores"]
2*L_vis*N_pat**2*d_vis
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ...core.notation import sym
from ...core.primitives import Linear, Norm, Param
from ...core.terms import Terms
from .vit import ViTTower


@dataclass(frozen=True)
class MiniMaxViT(ViTTower):
    p_vis: sympy.Expr = sym.p_vis
    t_vis: sympy.Expr = sym.t_vis
    C_img: sympy.Expr = sym.C_img
    m_vis: sympy.Expr = sym.m_vis
    d_proj: sympy.Expr = sym.d_proj

    def weights(self, merged_rows: sympy.Expr | None = None) -> list:
        dv, dp = self.d_vis, self.d_proj
        return [
            Param("patch_embedding", self.C_img * self.t_vis * self.p_vis**2 * dv,
                  doc="Conv3d [C_img·t_vis·p_vis², d_vis], no bias"),
            Norm("pre_layrnorm", dv, bias=True),
            *self.encoder_weights(),
            Linear("proj_linear_1", dv, dp, bias=True, doc="[d_vis, d_proj] per patch"),
            Linear("proj_linear_2", dp, self.d, bias=True, doc="[d_proj, d] per patch"),
            Linear("merge_linear_1", self.m_vis * self.d, dp, bias=True, rows=merged_rows,
                   doc="[m_vis·d, d_proj] per merged token"),
            Linear("merge_linear_2", dp, self.d, bias=True, rows=merged_rows,
                   doc="[d_proj, d] per merged token"),
        ]

    def image_tokens(self, N_pat: sympy.Expr = sym.N_pat) -> sympy.Expr:
        """Text tokens one still image fills: one per merged m_vis patches."""
        return N_pat / self.m_vis

    def image_flops(self, N_pat: sympy.Expr = sym.N_pat) -> Terms:
        """Forward FLOPs of one still image of ``N_pat`` patches (eager attention)."""
        t = Terms()
        for p in self.weights(merged_rows=N_pat / self.m_vis):
            if isinstance(p, Linear):
                t.add(p.name, p.flops(N_pat), p.doc)
        t.add("patch_embedding", 2 * N_pat * self.d_vis * self.C_img * self.t_vis * self.p_vis**2,
              "Conv3d, one output per patch")
        pairs = 2 * self.L_vis * N_pat**2 * self.d_vis
        t.add("scores", pairs, "QKᵀ: 2·N_pat²·d_vis per layer")
        t.add("values", pairs, "PV: 2·N_pat²·d_vis per layer")
        return t

    def label(self) -> str:
        return "MiniMax-M3 ViT + patch-merge projector"
