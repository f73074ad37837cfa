"""MoonViT, the Kimi-K2.5 vision tower, and its patch-merger projector into the text model.

Parameters (transformers ``Kimi_K25VisionModel`` and ``Kimi_K25MultimodalProjection``, 5.24):
    stem      patch_embed.proj Conv2d C_img·p_vis²·d_vis + d_vis, a learned position grid
              N_pat·d_vis (pos_emb_height·pos_emb_width; the time table is a non-persistent buffer)
    per layer norm1, norm2 LayerNorm 2·d_vis each; q, k, v, proj d_vis²+d_vis each;
              fc1 d_vis·d_ff_vis+d_ff_vis, fc2 d_ff_vis·d_vis+d_vis
    final_layernorm 2·d_vis
    projector pre_norm LayerNorm 2·d_vis; in_proj (m_vis·d_vis)² + m_vis·d_vis;
              out_proj m_vis·d_vis·d + d (m_vis = merge_kernel_size[0]·merge_kernel_size[1])
FLOPs: the tower runs only on image/video patches, never in a text-only prefill or decode, so its
    weights are declared with 0 token rows there (what FlopCounterMode measures on text input).
    ``MoonViT().image_flops()`` is one still image of N_pat patches (grid t = 1) as eager attention
    computes it (``Kimi_K25Model.get_image_features``): the Conv2d 2·N_pat·d_vis·C_img·p_vis² (each patch
    is its own p×p input), per layer q/k/v/proj 8·N_pat·d_vis², QKᵀ and PV over the image's own
    N_pat × N_pat block (cu_seqlens) 2·N_pat²·d_vis each, fc1 + fc2 4·N_pat·d_vis·d_ff_vis; the position
    grid is resampled by ``embedding_bag`` and the patches pooled by ``index_add_`` (no matmul); then the
    projector on N_pat/m_vis merged rows: in_proj 2·(N_pat/m_vis)·(m_vis·d_vis)², out_proj
    2·(N_pat/m_vis)·m_vis·d_vis·d. ``image_tokens()`` = N_pat/m_vis, the ``<|media_pad|>`` tokens
    ``Kimi_K25Processor`` repeats (the chat template's media begin/end markers are prompt text).

>>> MoonViTBlock().params().total
2*d_ff_vis*d_vis + d_ff_vis + 4*d_vis**2 + 9*d_vis
>>> MoonViT().image_tokens(), MoonViT().image_flops()["scores"]
(N_pat/m_vis, 2*L_vis*N_pat**2*d_vis)
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ...core.conventions import Phase
from ...core.notation import sym
from ...core.primitives import Norm, Param
from ...core.terms import Terms
from ..base import Component
from .vit import PatchStem, ViTTower, encoder_image_flops, tower_linear


def _lin(name, in_, out, ph, doc):
    return tower_linear(name, in_, out, ph, doc, bias=True)


@dataclass(frozen=True)
class MoonViTStem(PatchStem):
    def primitives(self, ph: Phase | None = None):
        return [_lin("vision_patch_embed", self.C_img * self.p_vis ** 2, self.d_vis, ph,
                     "Conv2d [C_img·p_vis², d_vis] + bias"),
                Param("vision_pos_emb", self.N_pat * self.d_vis, doc="learned grid [N_pat, d_vis]")]

    def label(self) -> str:
        return "MoonViT patch embedding"


@dataclass(frozen=True)
class MoonViTBlock(Component):
    key = "vision_block"
    modality = "image"
    d_vis: sympy.Expr = sym.d_vis
    d_ff_vis: sympy.Expr = sym.d_ff_vis

    def primitives(self, ph: Phase | None = None):
        h, f = self.d_vis, self.d_ff_vis
        return [Norm("norm1", h, bias=True), Norm("norm2", h, bias=True)] + [
            _lin(n, h, h, ph, "[d_vis, d_vis] + bias") for n in ("q_proj", "k_proj", "v_proj", "proj")] + [
            _lin("fc1", h, f, ph, "[d_vis, d_ff_vis] + bias"),
            _lin("fc2", f, h, ph, "[d_ff_vis, d_vis] + bias")]

    def label(self) -> str:
        return "MoonViT block"


@dataclass(frozen=True)
class MoonViTProjector(Component):
    key = "mm_projector"
    modality = "image"
    d_vis: sympy.Expr = sym.d_vis
    m_vis: sympy.Expr = sym.m_vis
    d: sympy.Expr = sym.d

    def primitives(self, ph: Phase | None = None):
        h, m = self.d_vis, self.m_vis
        return [Norm("vision_final_layernorm", h, bias=True),
                Norm("mm_projector_pre_norm", h, bias=True),
                _lin("mm_projector_in_proj", m * h, m * h, ph, "[m_vis·d_vis, m_vis·d_vis] + bias"),
                _lin("mm_projector_out_proj", m * h, self.d, ph, "[m_vis·d_vis, d] + bias")]

    def label(self) -> str:
        return "MoonViT final norm + patch-merger projector"


@dataclass(frozen=True)
class MergedPatchTower(ViTTower):
    """A whole ViT tower + projector for the per-image questions, whose weights other components
    count (stem, blocks, projector; so ``weights()`` lists none): ``image_tokens()`` = N_pat / m_vis
    text tokens per image, one per merged (or pixel-shuffled) group of m_vis patches. Subclasses
    add ``image_flops()`` (MoonViT here, Llama 4's tower in ``llama4_vision``)."""

    key = "vision"
    abstract = True  # not a sheet section of its own (report.mechanisms)
    p_vis: sympy.Expr = sym.p_vis
    C_img: sympy.Expr = sym.C_img
    N_pat: sympy.Expr = sym.N_pat
    m_vis: sympy.Expr = sym.m_vis

    def image_tokens(self) -> sympy.Expr:
        return self.N_pat / self.m_vis


@dataclass(frozen=True)
class MoonViT(MergedPatchTower):
    """The whole tower + projector, for the per-image questions (the model's parameters are
    MoonViTStem, MoonViTBlock and MoonViTProjector); one text token per merged m_vis-patch kernel."""

    def image_flops(self) -> Terms:
        """Forward matmul FLOPs of one still image (eager attention), the tower + projector."""
        N, h, m = self.N_pat, self.d_vis, self.m_vis
        t = encoder_image_flops(N, h, self.d_ff_vis, self.L_vis, self.C_img * self.p_vis**2)
        t.add("mm_projector_in_proj", 2 * (N / m) * (m * h)**2, "[m_vis·d_vis, m_vis·d_vis] over N_pat/m_vis rows")
        t.add("mm_projector_out_proj", 2 * (N / m) * m * h * self.d, "[m_vis·d_vis, d] over N_pat/m_vis rows")
        return t

    def label(self) -> str:
        return "MoonViT tower + patch-merger projector"
