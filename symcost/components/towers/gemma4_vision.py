"""The Gemma 4 vision tower: a ViT with a learned 2-D position table, Gemma-style blocks and position-pooled
soft tokens, and the multimodal embedder into the text model.

Parameters (transformers 5.24 ``Gemma4VisionModel`` and ``Gemma4MultimodalEmbedder``):
    stem      ``patch_embedder.input_proj`` 3·p_vis² → d_vis (no bias), ``position_embedding_table``
              [2, P_axis, d_vis] (one table per axis, summed)
    per layer q_proj d_vis·H_vis·D_vis, k_proj and v_proj d_vis·H_kv,vis·D_vis, o_proj H_vis·D_vis·d_vis
              (no biases); q_norm, k_norm RMSNorm D_vis (v_norm has no weight); GeGLU MLP gate, up
              d_vis·d_ff_vis, down d_ff_vis·d_vis; four RMSNorms of d_vis (Gemma's input/post-attention/
              pre-/post-feedforward)
    embedder  ``embed_vision.embedding_projection`` d_vis → d (its pre-norm has no weight)
Buffers: ``std_bias``, ``std_scale`` [d_vis] with ``standardize``; with ``use_clipped_linears`` every
    projection of a block is a ``Gemma4ClippableLinear`` holding four scalar bounds (input_min, input_max,
    output_min, output_max), 7 per layer.
FLOPs: a text-only pass never runs the tower, so its weights have 0 token rows there (as Kimi K2.5's
    MoonViT). ``image_flops()`` is one image as ``Gemma4Model.get_image_features`` computes it (eager): the
    processor pads every image to N_pat = max_soft_tokens·k² patches (k = pooling_kernel_size) and the
    encoder runs on all of them. input_proj 2·N_pat·3·p_vis²·d_vis; per layer q/k/v/o
    2·N_pat·d_vis·(2·H_vis + 2·H_kv,vis)·D_vis, QKᵀ and PV 2·N_pat²·H_vis·D_vis each,
    MLP 6·N_pat·d_vis·d_ff_vis;
    the pooler averages k×k patches with a one-hot matmul [N_img, N_pat]·[N_pat, d_vis], 2·N_img·N_pat·d_vis
    (absent when k = 1); then the embedder 2·N_img·d_vis·d. ``image_tokens()`` = N_img = max_soft_tokens,
    the soft tokens of an image whose resize fills the patch budget (a smaller one has fewer and costs
    less only in the embedder). Cache: none.

>>> Gemma4VisionBlock().params().total
2*D_vis*H_kv_vis*d_vis + 2*D_vis*H_vis*d_vis + 2*D_vis + 3*d_ff_vis*d_vis + 4*d_vis
>>> Gemma4Vision().image_flops()["scores"]
2*D_vis*H_vis*L_vis*N_pat**2
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ...core.conventions import Phase
from ...core.notation import sym
from ...core.primitives import Norm, Param
from ...core.terms import Terms
from ..base import Component
from .vit import ViTTower
from .vit import tower_linear as _lin

CLIP_BOUNDS = ("input_min", "input_max", "output_min", "output_max")


def clip_buffers(n_linears: sympy.Expr, on: bool) -> Terms:
    """The four scalar bounds each ``Gemma4ClippableLinear`` keeps when clipping is on."""
    if not on:
        return Terms()
    return Terms({b: n_linears for b in CLIP_BOUNDS}, {b: "[] buffer per clippable linear" for b in CLIP_BOUNDS})


@dataclass(frozen=True)
class Gemma4VisionStem(Component):
    key = "vision_stem"
    modality = "image"
    d_vis: sympy.Expr = sym.d_vis
    p_vis: sympy.Expr = sym.p_vis
    P_axis: sympy.Expr = sym.P_axis
    standardize: bool = False

    def primitives(self, ph: Phase | None = None):
        return [_lin("vision_input_proj", 3 * self.p_vis**2, self.d_vis, ph, "[3·p_vis², d_vis]"),
                Param("vision_position_embedding_table", 2 * self.P_axis * self.d_vis, doc="[2, P_axis, d_vis]")]

    def buffers(self) -> Terms:
        if not self.standardize:
            return Terms()
        return Terms({"std_bias": self.d_vis, "std_scale": self.d_vis},
                     {"std_bias": "[d_vis] buffer", "std_scale": "[d_vis] buffer"})

    def label(self) -> str:
        return "Gemma 4 vision patch embedder"


@dataclass(frozen=True)
class Gemma4VisionBlock(Component):
    key = "vision_block"
    modality = "image"
    d_vis: sympy.Expr = sym.d_vis
    d_ff_vis: sympy.Expr = sym.d_ff_vis
    H_vis: sympy.Expr = sym.H_vis
    H_kv_vis: sympy.Expr = sym.H_kv_vis
    D_vis: sympy.Expr = sym.D_vis
    clipped: bool = False

    def primitives(self, ph: Phase | None = None):
        h, f, q, kv = self.d_vis, self.d_ff_vis, self.H_vis * self.D_vis, self.H_kv_vis * self.D_vis
        return [_lin("q_proj", h, q, ph, "[d_vis, H_vis·D_vis]"),
                _lin("k_proj", h, kv, ph, "[d_vis, H_kv,vis·D_vis]"),
                _lin("v_proj", h, kv, ph, "[d_vis, H_kv,vis·D_vis]"),
                _lin("o_proj", q, h, ph, "[H_vis·D_vis, d_vis]"),
                Norm("q_norm", self.D_vis), Norm("k_norm", self.D_vis),
                _lin("gate_proj", h, f, ph, "[d_vis, d_ff_vis]"),
                _lin("up_proj", h, f, ph, "[d_vis, d_ff_vis]"),
                _lin("down_proj", f, h, ph, "[d_ff_vis, d_vis]"),
                *(Norm(n, h) for n in ("input_layernorm", "post_attention_layernorm",
                                       "pre_feedforward_layernorm", "post_feedforward_layernorm"))]

    def buffers(self) -> Terms:
        return clip_buffers(sympy.Integer(7), self.clipped)

    def label(self) -> str:
        return "Gemma 4 vision block"


@dataclass(frozen=True)
class Gemma4VisionEmbedder(Component):
    key = "embed_vision"
    modality = "image"
    d_vis: sympy.Expr = sym.d_vis
    d: sympy.Expr = sym.d

    def primitives(self, ph: Phase | None = None):
        return [_lin("embed_vision_projection", self.d_vis, self.d, ph, "[d_vis, d] into the text stream")]

    def label(self) -> str:
        return "Gemma 4 vision embedder"


@dataclass(frozen=True)
class Gemma4Vision(ViTTower):
    """The whole tower + embedder, for the per-image questions (the weights are counted by the parts above)."""

    key = "vision"
    H_vis: sympy.Expr = sym.H_vis
    H_kv_vis: sympy.Expr = sym.H_kv_vis
    D_vis: sympy.Expr = sym.D_vis
    p_vis: sympy.Expr = sym.p_vis
    N_pat: sympy.Expr = sym.N_pat
    N_img: sympy.Expr = sym.N_img
    pooled: bool = True  # pooling_kernel_size > 1: the one-hot pooling matmul runs

    def image_tokens(self) -> sympy.Expr:
        return self.N_img

    def image_flops(self) -> Terms:
        N, h, f, L = self.N_pat, self.d_vis, self.d_ff_vis, self.L_vis
        q, kv = self.H_vis * self.D_vis, self.H_kv_vis * self.D_vis
        t = Terms()
        t.add("patch_embedding", 2 * N * 3 * self.p_vis**2 * h, "input_proj over N_pat patches")
        t.add("attn_qkvo", L * 2 * N * h * (2 * q + 2 * kv), "L_vis × q, k, v, o over N_pat rows")
        t.add("scores", L * 2 * N**2 * q, "QKᵀ: 2·N_pat²·H_vis·D_vis per layer")
        t.add("values", L * 2 * N**2 * q, "PV: 2·N_pat²·H_vis·D_vis per layer")
        t.add("mlp", L * 6 * N * h * f, "gate, up, down over N_pat rows")
        if self.pooled:
            t.add("pooler", 2 * self.N_img * N * h, "one-hot average [N_img, N_pat]·[N_pat, d_vis]")
        t.add("embed_vision_projection", 2 * self.N_img * h * self.d, "[d_vis, d] over N_img soft tokens")
        return t

    def label(self) -> str:
        return "Gemma 4 vision tower + embedder"
