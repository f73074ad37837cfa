"""Step-3.7 vision tower and projector: a SigLIP-like ViT with layer scale and 2-D RoPE, two stride-2
convolutions that shrink the patch grid 4× per side, and one linear map into the text stream.

Parameters (transformers ``Step3p7VisionModel`` + ``Step3p7Model.multi_modal_projector``):
    patch_embedding     Conv2d C_img → d_vis, kernel p_vis, no bias:     C_img·p_vis²·d_vis
    position_embedding  N_pat·d_vis   (N_pat = (image_size / p_vis)²; the axial RoPE has no weights)
    pre_layernorm       LayerNorm 2·d_vis
    L_vis × [q, k, v, out_proj d_vis² + d_vis each; fc1 d_vis·d_ff_vis + d_ff_vis; fc2 d_ff_vis·d_vis + d_vis;
             layernorm_before, layernorm_after 2·d_vis each; layer scales lambda_1, lambda_2 d_vis each]
    downsampler1 Conv2d d_vis → 2·d_vis, 3×3, bias: 18·d_vis² + 2·d_vis
    downsampler2 Conv2d 2·d_vis → 4·d_vis, 3×3, bias: 72·d_vis² + 4·d_vis
    multi_modal_projector [4·d_vis, d] (+ d with ``projector_bias``).
    d_ff_vis = int(d_vis · mlp_ratio) (``Step3p7VisionConfig.__post_init__``, float arithmetic).
FLOPs: a text-only pass never runs the tower (0 in every text phase). ``image_flops()`` is one image of
    the config's image_size (N_pat patches on a g×g grid, g = image_size / p_vis) as eager attention
    computes it: the ViT (``towers.vit``), then downsampler1 over ⌈g/2⌉² outputs, 2·⌈g/2⌉²·9·d_vis·2·d_vis,
    downsampler2 over N_img = ⌈⌈g/2⌉/2⌉² outputs, 2·N_img·9·2·d_vis·4·d_vis, and the projector
    2·N_img·4·d_vis·d. ``image_tokens()`` = N_img for that global view; the processor's local crops
    (``pixel_values_local``) add their own tokens and are not modelled. Cache: none.

>>> Step3p7Vision().params()["vision_tower/downsamplers"]
90*d_vis**2 + 6*d_vis
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ...core.notation import sym
from ...core.primitives import Linear, Norm, Param
from ...core.terms import Terms
from .vit import ViTTower, encoder_image_flops


@dataclass(frozen=True)
class Step3p7Vision(ViTTower):
    p_vis: sympy.Expr = sym.p_vis
    C_img: sympy.Expr = sym.C_img
    N_pat: sympy.Expr = sym.N_pat
    #: tokens of one image after the two stride-2 convolutions (⌈⌈g/2⌉/2⌉² for a g×g grid)
    N_img: sympy.Expr = sym.N_img
    #: outputs of the first downsampler (⌈g/2⌉²): FLOPs only
    N_half: sympy.Expr | None = None
    projector_bias: bool = False

    def weights(self) -> list:
        dv, L = self.d_vis, self.L_vis
        return [
            Param("patch_embedding", self.C_img * self.p_vis**2 * dv, doc="Conv2d [C_img·p_vis², d_vis], no bias"),
            Param("position_embedding", self.N_pat * dv, doc="[N_pat, d_vis]"),
            Norm("pre_layernorm", dv, bias=True),
            *self.encoder_weights(),
            Param("layer_scales", 2 * dv, copies=L, doc="L_vis × lambda_1, lambda_2 [d_vis]"),
            Param("downsamplers", 9 * dv * 2 * dv + 2 * dv + 9 * 2 * dv * 4 * dv + 4 * dv,
                  doc="Conv2d 3×3 d_vis→2·d_vis and 2·d_vis→4·d_vis, with bias"),
            Linear("multi_modal_projector", 4 * dv, self.d, self.projector_bias, doc="[4·d_vis, d]"),
        ]

    def image_tokens(self) -> sympy.Expr:
        """Text tokens one image (its global view) fills: the grid after both downsamplers."""
        return self.N_img

    def image_flops(self) -> Terms:
        """Forward matmul FLOPs of one image (eager attention): tower, downsamplers, projector."""
        N, dv, ff = self.N_pat, self.d_vis, self.d_ff_vis
        t = encoder_image_flops(N, dv, ff, self.L_vis, self.C_img * self.p_vis**2)
        half = self.N_half if self.N_half is not None else 4 * self.N_img
        t.add("downsampler1", 2 * half * 9 * dv * 2 * dv, "3×3 conv d_vis→2·d_vis over ⌈g/2⌉² outputs")
        t.add("downsampler2", 2 * self.N_img * 9 * 2 * dv * 4 * dv, "3×3 conv 2·d_vis→4·d_vis over N_img outputs")
        t.add("multi_modal_projector", 2 * self.N_img * 4 * dv * self.d, "[4·d_vis, d] over N_img tokens")
        return t

    def label(self) -> str:
        return "Step-3.7 ViT + downsamplers + projector"
