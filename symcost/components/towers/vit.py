"""The shared body of ViT-style vision towers: the per-image matmul FLOPs of patch embedding + encoder,
the pre-LN encoder layer's weights, and ``ViTTower``, the base every tower's whole-tower component
builds on (each tower keeps its own stem, projector and quirks in its own module).

For N patches of p×p pixels with C channels and L layers of width d_vis (MLP d_ff_vis), eager
attention, 2 FLOPs per multiply-accumulate:
    patch embedding 2·N·d_vis·C·p², per layer q, k, v, out 4·2·N·d_vis², QKᵀ and PV 2·N²·d_vis
    each, MLP 2·2·N·d_vis·d_ff_vis. Projectors differ per model and are added by each tower.
The CLIP/SigLIP encoder layer (transformers ``SiglipEncoderLayer``, ``CLIPEncoderLayer``): q, k, v,
    out d_vis² + d_vis each, fc1 d_vis·d_ff_vis + d_ff_vis, fc2 d_ff_vis·d_vis + d_vis, two
    LayerNorms 2·d_vis each.
Source: transformers ``SiglipEncoderLayer`` / Kimi-K2.5 ``MoonViT`` blocks, measured under
FlopCounterMode.

>>> from symcost.core.notation import sym
>>> encoder_image_flops(sym.N_pat, sym.d_vis, sym.d_ff_vis, sym.L_vis, sym.C_img * sym.p_vis**2)["mlp"]
4*L_vis*N_pat*d_ff_vis*d_vis
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ...core.conventions import Phase
from ...core.notation import sym
from ...core.primitives import Linear, Param
from ...core.terms import Terms
from ..base import Component

NO_ROWS = sympy.Integer(0)  # text-only phases: the tower does not run


def tower_linear(name: str, in_, out, ph: Phase | None, doc: str, bias: bool = False) -> Linear:
    """A tower's weight declared in a text model's layer list: 0 token rows in every text phase
    (a text-only pass never feeds the tower; what FlopCounterMode measures on text input)."""
    return Linear(name, in_, out, bias=bias, rows=NO_ROWS if ph is not None else None, doc=doc)


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
class ViTTower(Component):
    """A whole vision tower (+ projector) as one component, for the per-image questions
    (``image_tokens()``, ``image_flops()``, which each tower states).

    A text-only pass never runs it (no primitives in any text phase). A tower whose model counts
    its weights here lists them in ``weights()``; they sit among the embeddings at the model's top
    level, so its parameters are kept under its key. One whose weights other components count
    (a stem, blocks and a projector of their own) lists none and has no parameters.
    """

    key = "vision_tower"
    modality = "image"
    abstract = True  # a shared base: not a sheet section of its own (report.mechanisms)
    d: sympy.Expr = sym.d
    d_vis: sympy.Expr = sym.d_vis
    d_ff_vis: sympy.Expr = sym.d_ff_vis
    L_vis: sympy.Expr = sym.L_vis

    def weights(self) -> list:
        """The tower's weights (default: none, counted by other components)."""
        return []

    def primitives(self, ph: Phase | None = None):
        return [] if ph is not None else self.weights()  # a text-only pass does not run the tower

    def encoder_weights(self) -> list:
        """L_vis CLIP/SigLIP encoder layers: q, k, v, out, fc1, fc2 with biases, two LayerNorms."""
        dv, ff, L = self.d_vis, self.d_ff_vis, self.L_vis
        return [
            Linear("attn_qkvo", dv, dv, bias=True, copies=4 * L, doc="L_vis × 4 × [d_vis, d_vis] + bias"),
            Linear("fc1", dv, ff, bias=True, copies=L, doc="L_vis × [d_vis, d_ff_vis] + bias"),
            Linear("fc2", ff, dv, bias=True, copies=L, doc="L_vis × [d_ff_vis, d_vis] + bias"),
            Param("layer_norms", 4 * dv, copies=L, doc="L_vis × 2 LayerNorms"),
        ]

    def _nested(self, t: Terms) -> Terms:
        return Terms({self.key: t}, {self.key: self.label()}) if t else t

    def params(self) -> Terms:
        return self._nested(super().params())

    def active_params(self) -> Terms:
        return self._nested(super().active_params())


@dataclass(frozen=True)
class PatchStem(Component):
    """A tower's patch embedding as a layer-list component (its weights in a text model's pre-layer
    list, 0 token rows in text phases): C_img·p_vis² pixels per patch into d_vis, N_pat patches of
    one image. Each tower states its own weights (bias, class token, position table)."""

    key = "vision_stem"
    modality = "image"
    abstract = True  # a shared base: not a sheet section of its own (report.mechanisms)
    d_vis: sympy.Expr = sym.d_vis
    p_vis: sympy.Expr = sym.p_vis
    C_img: sympy.Expr = sym.C_img
    N_pat: sympy.Expr = sym.N_pat
