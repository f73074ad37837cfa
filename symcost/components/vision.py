"""SigLIP vision tower and the Gemma-3 multimodal projector: a ViT whose output is pooled into the text.

Parameters (transformers ``SiglipVisionModel`` + ``Gemma3MultiModalProjector``):
    patch_embedding  Conv2d C_img → d_vis, kernel p_vis:   C_img·p_vis²·d_vis + d_vis
    position_embedding                                  N_pat·d_vis   (N_pat = (image/patch)²)
    L_vis × [q, k, v, out d_vis² + d_vis each; fc1 d_vis·d_ff_vis + d_ff_vis; fc2 d_ff_vis·d_vis + d_vis;
             layer_norm1, layer_norm2 2·d_vis each]
    post_layernorm 2·d_vis; optional attention-pooling head (``vision_use_head``): probe d_vis,
        MultiheadAttention 4·d_vis² + 4·d_vis, LayerNorm 2·d_vis, MLP as above
    projector: mm_soft_emb_norm d_vis (RMSNorm) and mm_input_projection_weight d_vis·d.
FLOPs: a text-only pass never runs the tower, so every text phase costs 0 here; the per-image cost
is not modelled yet. Cache: none.

>>> Vision().params()["vision_tower/attn_qkvo"], Vision().params()["vision_tower/mm_input_projection"]
(4*L_vis*(d_vis**2 + d_vis), d*d_vis)
>>> Vision(head=False).params().total_at({sym.d: 32, sym.d_vis: 16, sym.d_ff_vis: 24, sym.L_vis: 1,
...     sym.p_vis: 7, sym.C_img: 3, sym.N_pat: 16})
5144
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..conventions import Phase
from ..notation import sym
from ..primitives import Linear, Norm, Param
from ..terms import Terms
from .base import Component


@dataclass(frozen=True)
class Vision(Component):
    key = "vision_tower"
    d: sympy.Expr = sym.d
    d_vis: sympy.Expr = sym.d_vis
    d_ff_vis: sympy.Expr = sym.d_ff_vis
    L_vis: sympy.Expr = sym.L_vis
    p_vis: sympy.Expr = sym.p_vis
    C_img: sympy.Expr = sym.C_img
    N_pat: sympy.Expr = sym.N_pat
    head: bool = False  # SigLIP attention-pooling head (vision_use_head)

    def primitives(self, ph: Phase | None = None):
        if ph is not None:
            return []  # a text-only pass does not run the tower
        dv, ff, L = self.d_vis, self.d_ff_vis, self.L_vis
        prims = [
            Param("patch_embedding", self.C_img * self.p_vis**2 * dv + dv, doc="Conv2d [C_img·p², d_vis] + bias"),
            Param("position_embedding", self.N_pat * dv, doc="[N_pat, d_vis]"),
            Linear("attn_qkvo", dv, dv, bias=True, copies=4 * L, doc="L_vis × 4 × [d_vis, d_vis] + bias"),
            Linear("fc1", dv, ff, bias=True, copies=L, doc="L_vis × [d_vis, d_ff_vis] + bias"),
            Linear("fc2", ff, dv, bias=True, copies=L, doc="L_vis × [d_ff_vis, d_vis] + bias"),
            Param("layer_norms", 4 * dv, copies=L, doc="L_vis × 2 LayerNorms"),
            Norm("post_layernorm", dv, bias=True),
        ]
        if self.head:
            prims += [
                Param("head_probe", dv, doc="[1, 1, d_vis]"),
                Linear("head_attention", dv, dv, bias=True, copies=4, doc="in_proj 3·[d_vis, d_vis], out_proj"),
                Norm("head_layernorm", dv, bias=True),
                Linear("head_fc1", dv, ff, bias=True, doc="[d_vis, d_ff_vis] + bias"),
                Linear("head_fc2", ff, dv, bias=True, doc="[d_ff_vis, d_vis] + bias"),
            ]
        prims += [
            Norm("mm_soft_emb_norm", dv, doc="RMSNorm [d_vis]"),
            Linear("mm_input_projection", dv, self.d, doc="[d_vis, d] into the text stream"),
        ]
        return prims

    # the tower sits among the embeddings at the model's top level: keep its terms under one key
    def params(self) -> Terms:
        return Terms({self.key: super().params()}, {self.key: self.label()})

    def active_params(self) -> Terms:
        return Terms({self.key: super().active_params()}, {self.key: self.label()})

    def label(self) -> str:
        return "SigLIP vision tower + projector"
