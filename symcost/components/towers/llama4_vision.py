"""The Llama 4 vision tower (a ViT with a class token and a pixel-shuffle MLP adapter) and its projector.

Parameters (transformers ``Llama4VisionModel`` + ``Llama4MultiModalProjector``, 5.24):
    stem      patch_embedding.linear C_img·p_vis²·d_vis (an Unfold + Linear, no bias), class_embedding
              d_vis, positional_embedding_vlm (N_pat + 1)·d_vis (the patches and the class token),
              layernorm_pre LayerNorm 2·d_vis
    per layer (``Llama4VisionEncoderLayer``, the pre-LN ViT block of ``components/moonvit.py``)
              input_layernorm, post_attention_layernorm 2·d_vis each; q, k, v, o d_vis² + d_vis each;
              fc1 d_vis·d_ff_vis + d_ff_vis, fc2 d_ff_vis·d_vis + d_vis
    adapter   layernorm_post 2·d_vis; vision_adapter.mlp.fc1 d_ff_vis·d_proj (transformers sizes its
              input by the tower's intermediate_size), fc2 d_pout·d_pout, no biases;
              multi_modal_projector.linear_1 d_vout·d (no bias)
    (d_proj = projector_input_dim, d_pout = projector_output_dim, d_vout = vision_output_dim.)
FLOPs: the tower runs only on image tiles, never in a text-only prefill or decode, so its weights
    are declared with 0 token rows there (what FlopCounterMode measures on text input).
    ``Llama4Vision().image_flops()`` is one tile of image_size² pixels, N_pat = (image_size/p_vis)²
    patches, as eager attention computes it (``Llama4ForConditionalGeneration.get_image_features`` and
    the projector): the patch Linear 2·N_pat·d_vis·C_img·p_vis², then N_pat + 1 rows (the class token
    joins) through every layer — q/k/v/o 8·(N_pat+1)·d_vis², QKᵀ and PV 2·(N_pat+1)²·d_vis each, fc1 +
    fc2 4·(N_pat+1)·d_vis·d_ff_vis —; the class token is dropped, pixel shuffle (no matmul) merges
    m_vis = 1/pixel_shuffle_ratio² patches into one row of m_vis·d_vis = d_ff_vis features, and the
    N_img = N_pat/m_vis rows go through fc1 2·N_img·d_ff_vis·d_proj, fc2 2·N_img·d_pout² and the
    projector 2·N_img·d_vout·d. ``image_tokens()`` = N_img, the ``<|patch|>`` tokens
    ``Llama4Processor`` writes for one tile (its image start/end markers are prompt text).

>>> Llama4VisionStem().params().total
C_img*d_vis*p_vis**2 + d_vis*(N_pat + 1) + 3*d_vis
>>> Llama4Vision().image_tokens(), Llama4Vision().image_flops()["scores"]
(N_pat/m_vis, 2*L_vis*d_vis*(N_pat + 1)**2)
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ...core.conventions import Phase
from ...core.notation import sym
from ...core.primitives import Norm, Param
from ...core.terms import Terms
from ..base import Component
from .moonvit import MergedPatchTower, MoonViTBlock
from .vit import PatchStem, encoder_image_flops
from .vit import tower_linear as _lin


@dataclass(frozen=True)
class Llama4VisionStem(PatchStem):
    def primitives(self, ph: Phase | None = None):
        h = self.d_vis
        return [_lin("vision_patch_embedding", self.C_img * self.p_vis ** 2, h, ph,
                     "Unfold + Linear [C_img·p_vis², d_vis], no bias"),
                Param("vision_class_embedding", h, doc="[d_vis] class token"),
                Param("vision_positional_embedding", (self.N_pat + 1) * h, doc="[N_pat + 1, d_vis]"),
                Norm("vision_layernorm_pre", h, bias=True)]

    def label(self) -> str:
        return "Llama 4 vision patch embedding"


@dataclass(frozen=True)
class Llama4VisionBlock(MoonViTBlock):
    """One ``Llama4VisionEncoderLayer``: the same weights as a MoonViT block."""

    def label(self) -> str:
        return "Llama 4 vision encoder layer"


@dataclass(frozen=True)
class Llama4VisionAdapter(Component):
    key = "mm_projector"
    modality = "image"
    d: sympy.Expr = sym.d
    d_vis: sympy.Expr = sym.d_vis
    d_ff_vis: sympy.Expr = sym.d_ff_vis
    d_proj: sympy.Expr = sym.d_proj
    d_pout: sympy.Expr = sym.d_pout
    d_vout: sympy.Expr = sym.d_vout

    def primitives(self, ph: Phase | None = None):
        return [Norm("vision_layernorm_post", self.d_vis, bias=True),
                _lin("vision_adapter_fc1", self.d_ff_vis, self.d_proj, ph, "[d_ff_vis, d_proj], no bias"),
                _lin("vision_adapter_fc2", self.d_pout, self.d_pout, ph, "[d_pout, d_pout], no bias"),
                _lin("multi_modal_projector", self.d_vout, self.d, ph, "[d_vout, d] into the text stream")]

    def label(self) -> str:
        return "Llama 4 pixel-shuffle adapter + projector"


@dataclass(frozen=True)
class Llama4Vision(MergedPatchTower):
    """The whole tower + projector, for the per-image questions (the model's parameters are
    Llama4VisionStem, Llama4VisionBlock and Llama4VisionAdapter); one text token per m_vis patches
    after pixel shuffle."""

    d_proj: sympy.Expr = sym.d_proj
    d_pout: sympy.Expr = sym.d_pout
    d_vout: sympy.Expr = sym.d_vout

    def image_flops(self) -> Terms:
        """Forward matmul FLOPs of one image tile (eager attention), the tower + adapter + projector."""
        N, h, rows = self.N_pat, self.d_vis, self.image_tokens()
        t = encoder_image_flops(N + 1, h, self.d_ff_vis, self.L_vis, self.C_img * self.p_vis**2)
        t = Terms({k: (2 * N * h * self.C_img * self.p_vis**2 if k == "patch_embedding" else v)
                   for k, v in t.items()}, t.docs)  # the class token joins after the patch Linear
        t.add("vision_adapter_fc1", 2 * rows * self.d_ff_vis * self.d_proj, "[d_ff_vis, d_proj] over N_pat/m_vis rows")
        t.add("vision_adapter_fc2", 2 * rows * self.d_pout**2, "[d_pout, d_pout] over N_pat/m_vis rows")
        t.add("multi_modal_projector", 2 * rows * self.d_vout * self.d, "[d_vout, d] over N_pat/m_vis rows")
        return t

    def label(self) -> str:
        return "Llama 4 vision tower + pixel-shuffle adapter + projector"
