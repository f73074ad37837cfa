"""The Gemma 4 audio tower (a USM-style Conformer) and its embedder into the text model: parameters.

Parameters (transformers 5.24 ``Gemma4AudioModel`` and ``Gemma4MultimodalEmbedder``), with
d = d_aud, H = H_aud, D = D_aud = d_aud // H_aud, c₀, c₁ = ``subsampling_conv_channels``:
    stem      two Conv2d 3×3 stride 2 (no bias): 9·c₀ and 9·c₀·c₁, each followed by a LayerNorm without
              bias (c₀, c₁); ``input_proj_linear`` ⌊c₀/4⌋·c₁ → d (no bias; the class sizes it
              from c₀)
    per layer two macaron feed-forwards, each d → 4d → d (8·d²) with pre/post RMSNorms (2·d);
              chunked local attention q, k, v d·H·D, ``post`` d·d, ``relative_k_proj`` d·H·D,
              ``per_dim_scale`` D; light conv ``linear_start`` d → 2d, depthwise conv d·K_aud (no bias),
              ``linear_end`` d·d, two RMSNorms (2·d); three more RMSNorms (3·d)
    head      ``output_proj`` d → d_aud,out with bias
    embedder  ``embed_audio.embedding_projection`` d_aud,out → d_text (its pre-norm has no weight)
Buffers: with ``use_clipped_linears`` (the default) every ``Gemma4ClippableLinear`` (10 per layer: 4 in the
    feed-forwards, q/k/v/post, linear_start/end) keeps four scalar bounds. The sinusoidal position table and
    the logit soft-cap are non-persistent.
FLOPs: a text-only pass never runs the tower (0 token rows, as for the vision tower); the FLOPs of one
    audio clip are not modelled here.

>>> Gemma4AudioBlock().params().total
4*D_aud*H_aud*d_aud + D_aud + K_aud*d_aud + 20*d_aud**2 + 9*d_aud
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ...core.conventions import Phase
from ...core.notation import sym
from ...core.primitives import Norm, Param
from ...core.terms import Terms
from ..base import Component
from .gemma4_vision import clip_buffers
from .vit import tower_linear as _lin


@dataclass(frozen=True)
class Gemma4AudioStem(Component):
    key = "audio_stem"
    modality = "audio"
    d_aud: sympy.Expr = sym.d_aud
    c0: sympy.Expr = sym.c_aud0
    c1: sympy.Expr = sym.c_aud1

    def primitives(self, ph: Phase | None = None):
        return [Param("audio_conv0", 9 * self.c0, doc="Conv2d 1 → c₀, 3×3"),
                Param("audio_conv0_norm", self.c0, doc="LayerNorm [c₀], no bias"),
                Param("audio_conv1", 9 * self.c0 * self.c1, doc="Conv2d c₀ → c₁, 3×3"),
                Param("audio_conv1_norm", self.c1, doc="LayerNorm [c₁], no bias"),
                _lin("audio_input_proj", sympy.floor(self.c0 / 4) * self.c1, self.d_aud, ph,
                     "[⌊c₀/4⌋·c₁, d_aud]")]

    def label(self) -> str:
        return "Gemma 4 audio subsampling stem"


@dataclass(frozen=True)
class Gemma4AudioBlock(Component):
    key = "audio_block"
    modality = "audio"
    d_aud: sympy.Expr = sym.d_aud
    H_aud: sympy.Expr = sym.H_aud
    D_aud: sympy.Expr = sym.D_aud
    K_aud: sympy.Expr = sym.K_aud
    clipped: bool = True

    def primitives(self, ph: Phase | None = None):
        h, hd = self.d_aud, self.H_aud * self.D_aud
        prims = []
        for ff in ("feed_forward1", "feed_forward2"):
            prims += [_lin(f"{ff}_up", h, 4 * h, ph, "[d_aud, 4·d_aud]"),
                      _lin(f"{ff}_down", 4 * h, h, ph, "[4·d_aud, d_aud]"),
                      Norm(f"{ff}_pre_norm", h), Norm(f"{ff}_post_norm", h)]
        prims += [_lin(n, h, hd, ph, "[d_aud, H_aud·D_aud]") for n in ("q_proj", "k_proj", "v_proj")]
        prims += [_lin("post", h, h, ph, "[d_aud, d_aud]"),
                  _lin("relative_k_proj", h, hd, ph, "[d_aud, H_aud·D_aud] on the position table"),
                  Param("per_dim_scale", self.D_aud, doc="[D_aud]"),
                  _lin("lconv_linear_start", h, 2 * h, ph, "[d_aud, 2·d_aud], GLU"),
                  Param("lconv_depthwise_conv1d", h * self.K_aud, doc="depthwise [d_aud, 1, K_aud]"),
                  _lin("lconv_linear_end", h, h, ph, "[d_aud, d_aud]"),
                  Norm("lconv_pre_layer_norm", h), Norm("lconv_conv_norm", h),
                  Norm("norm_pre_attn", h), Norm("norm_post_attn", h), Norm("norm_out", h)]
        return prims

    def buffers(self) -> Terms:
        return clip_buffers(sympy.Integer(10), self.clipped)

    def label(self) -> str:
        return "Gemma 4 audio conformer block"


@dataclass(frozen=True)
class Gemma4AudioEmbedder(Component):
    key = "embed_audio"
    modality = "audio"
    d_aud: sympy.Expr = sym.d_aud
    d_out: sympy.Expr = sym.d_aud_out
    d: sympy.Expr = sym.d

    def primitives(self, ph: Phase | None = None):
        return [_lin("audio_output_proj", self.d_aud, self.d_out, ph, "[d_aud, d_aud,out] + bias", bias=True),
                _lin("embed_audio_projection", self.d_out, self.d, ph, "[d_aud,out, d] into the text stream")]

    def label(self) -> str:
        return "Gemma 4 audio output projection + embedder"
