"""SigLIP vision tower and the Gemma-3 multimodal projector: a ViT whose output is pooled into the text.

Parameters (transformers ``SiglipVisionModel`` + ``Gemma3MultiModalProjector``):
    patch_embedding  Conv2d C_img → d_vis, kernel p_vis:   C_img·p_vis²·d_vis + d_vis
    position_embedding                                  N_pat·d_vis   (N_pat = (image/patch)²)
    L_vis × [q, k, v, out d_vis² + d_vis each; fc1 d_vis·d_ff_vis + d_ff_vis; fc2 d_ff_vis·d_vis + d_vis;
             layer_norm1, layer_norm2 2·d_vis each]
    post_layernorm 2·d_vis; optional attention-pooling head (``vision_use_head``): probe d_vis,
        MultiheadAttention 4·d_vis² + 4·d_vis, LayerNorm 2·d_vis, MLP as above
    projector: mm_soft_emb_norm d_vis (RMSNorm) and mm_input_projection_weight d_vis·d.
FLOPs: a text-only pass never runs the tower, so every text phase costs 0 here. ``image_flops()`` is one
    image of N_pat = (image_size/p_vis)² patches as eager attention computes it (Gemma3Model
    .get_image_features): Conv2d 2·N_pat·d_vis·C_img·p_vis², per layer q/k/v/out 8·N_pat·d_vis², QKᵀ and
    PV 2·N_pat²·d_vis each (H·D = d_vis), fc1 + fc2 4·N_pat·d_vis·d_ff_vis; the pooling head, when built,
    runs though Gemma 3 discards it: q and out_proj 2·d_vis² each (one probe), packed k/v
    4·N_pat·d_vis², probe scores and values 2·N_pat·d_vis each, its MLP 4·d_vis·d_ff_vis; then
    AvgPool2d (no matmul) down to N_img = mm_tokens_per_image tokens and the projection 2·N_img·d_vis·d.
    ``image_tokens()`` = N_img, the placeholders the processor repeats (its boi/eoi wrapper and
    newlines are prompt text, not counted). The tower takes only its config's image_size. Cache: none.

>>> Vision().params()["vision_tower/attn_qkvo"], Vision().params()["vision_tower/mm_input_projection"]
(4*L_vis*(d_vis**2 + d_vis), d*d_vis)
>>> Vision().image_flops()["scores"], Vision().image_tokens()
(2*L_vis*N_pat**2*d_vis, N_img)
>>> Vision(head=False).params().total_at({sym.d: 32, sym.d_vis: 16, sym.d_ff_vis: 24, sym.L_vis: 1,
...     sym.p_vis: 7, sym.C_img: 3, sym.N_pat: 16})
5144
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ...core.notation import sym
from ...core.primitives import Linear, Norm, Param
from ...core.terms import Terms
from .vit import ViTTower, encoder_image_flops


@dataclass(frozen=True)
class Vision(ViTTower):
    p_vis: sympy.Expr = sym.p_vis
    C_img: sympy.Expr = sym.C_img
    N_pat: sympy.Expr = sym.N_pat
    N_img: sympy.Expr = sym.N_img
    head: bool = False  # SigLIP attention-pooling head (vision_use_head)

    def weights(self) -> list:
        dv, ff = self.d_vis, self.d_ff_vis
        prims = [
            Param("patch_embedding", self.C_img * self.p_vis**2 * dv + dv, doc="Conv2d [C_img·p², d_vis] + bias"),
            Param("position_embedding", self.N_pat * dv, doc="[N_pat, d_vis]"),
            *self.encoder_weights(),
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

    def image_tokens(self) -> sympy.Expr:
        """Text tokens one image fills: the pooled grid, mm_tokens_per_image."""
        return self.N_img

    def image_flops(self) -> Terms:
        """Forward matmul FLOPs of one image (eager attention), the tower + projector."""
        N, dv, ff = self.N_pat, self.d_vis, self.d_ff_vis
        t = encoder_image_flops(N, dv, ff, self.L_vis, self.C_img * self.p_vis**2)
        if self.head:
            t.add("head", 4 * dv**2 + 4 * N * dv**2 + 4 * N * dv + 4 * dv * ff,
                  "probe q + out_proj, packed k/v over N_pat, probe scores + values, MLP on one row")
        t.add("mm_input_projection", 2 * self.N_img * dv * self.d, "[d_vis, d] over N_img pooled tokens")
        return t

    def label(self) -> str:
        return "SigLIP vision tower + projector"
