"""Gemma 1 (``gemma``), Gemma 2 and Gemma 3 (text-only ``gemma3_text`` and multimodal ``gemma3``).

Gemma 1 (``GemmaDecoderLayer``) is Llama wiring with two RMSNorms (weight stored as 1 + w, still d
each), a GeGLU FFN, head_dim 256 and H_kv = 16 by default, ``attention_bias`` on q/k/v/o, a tied
head and the √d-scaled embedding; every layer is full attention.
Each layer (transformers ``Gemma2DecoderLayer`` / ``Gemma3DecoderLayer``): input_layernorm →
GQA attention → post_attention_layernorm, then pre_feedforward_layernorm → GeGLU FFN →
post_feedforward_layernorm: four RMSNorms of d. Gemma 3 adds per-head q/k RMSNorm (D_h).
Layers are sliding-window (W) or full attention: Gemma 2 alternates (sliding first), Gemma 3
repeats ``sliding_window_pattern − 1`` sliding layers then one full (default 6), unless
``layer_types`` lists them. The embedding is tied by default and scaled by √d (a buffer, no
parameters); attention and final logit soft-capping are elementwise (0 FLOPs). Gemma 3's two
rotary tables (local and global θ) are computed elementwise: no matmul either.
``gemma3`` wraps the Gemma 3 text model with a SigLIP vision tower and projector
(``Gemma3ForConditionalGeneration``, see ``components/vision.py``); tying follows the top-level
``tie_word_embeddings``, not ``text_config``'s.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.norm import Norms
from ..components.towers.vision import Vision
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model
from . import register
from .base import Adapter, Int, LayerCount, PosInt, values
from .llama import LlamaAdapter, window_order

GEMMA_NORMS = ("input_layernorm", "post_attention_layernorm",
               "pre_feedforward_layernorm", "post_feedforward_layernorm")


def alternating_layer_types(layer_types: list[str] | None, n: int) -> list[str]:
    """``layer_types`` as given, else sliding and full alternating, sliding first (Gemma-2, gpt-oss)."""
    if layer_types is not None:
        return list(layer_types)
    return ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]


def window_groups(types: list[str], layer: Callable) -> tuple[tuple[LayerGroup, ...], dict]:
    """Full and sliding layers as two groups (L_full, L_swa), or one group (L) if all alike.

    ``layer(W)`` returns the components of one layer for window ``W`` (None = full attention).
    """
    n_swa = types.count("sliding_attention")
    kinds = [(name, n, w, count) for name, n, w, count in
             (("full_layers", len(types) - n_swa, None, sym.L_full),
              ("swa_layers", n_swa, sym.W, sym.L_swa)) if n]
    if len(kinds) == 1:
        name, _, w, _ = kinds[0]
        return (LayerGroup("layers", sym.L, layer(w)),), {}
    groups = tuple(LayerGroup(name, count, layer(w)) for name, _, w, count in kinds)
    return groups, values(L_full=len(types) - n_swa, L_swa=n_swa)


def gemma_saved(model: Model) -> Model:
    """Gemma's RMSNorm ((x·rsqrt)·(1 + w) in fp32) and √d-scaled embedding, for what training saves
    (the weights and FLOPs are the same)."""
    def fix(c):
        if isinstance(c, Norms) and not c.bias:
            return dataclasses.replace(c, kind="offset")
        if isinstance(c, Embedding):
            return dataclasses.replace(c, scaled=True)
        if isinstance(c, Attention) and c.qk_norm:
            return dataclasses.replace(c, saves=dataclasses.replace(c.saves, qk_norm="offset"))
        return c
    model.pre = tuple(fix(c) for c in model.pre)
    model.groups = tuple(dataclasses.replace(g, components=tuple(fix(c) for c in g.components)) for g in model.groups)
    model.post = tuple(fix(c) for c in model.post)
    return model


@register("gemma")
class GemmaAdapter(LlamaAdapter):
    """Gemma 1: every field defaults as in ``GemmaConfig``."""

    reference: ClassVar[str] = "GemmaForCausalLM"

    vocab_size: PosInt = 256_000
    hidden_size: PosInt = 3072
    intermediate_size: PosInt = 24_576
    num_hidden_layers: LayerCount = 28
    num_attention_heads: PosInt = 16
    num_key_value_heads: PosInt | None = 16
    head_dim: PosInt | None = 256
    tie_word_embeddings: bool = True
    use_bidirectional_attention: bool | None = None

    @model_validator(mode="after")
    def _gemma_consistent(self):
        if self.use_bidirectional_attention:
            self.fail("use_bidirectional_attention", "bidirectional (encoder) Gemma is not modelled")
        return self

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def ffn(self) -> FFN:
        return FFN(act="gelu_tanh")  # GeGLU: gate, up, down

    def to_model(self) -> Model:
        model = gemma_saved(super().to_model())
        model.notes.append("embedding scaled by √d (no parameters)")
        return model


@register("gemma2")
class Gemma2Adapter(LlamaAdapter):
    reference: ClassVar[str] = "Gemma2ForCausalLM"
    qk_norm: ClassVar[bool] = False

    num_key_value_heads: PosInt | None = 4
    head_dim: PosInt | None = 256
    tie_word_embeddings: bool = True
    sliding_window: Int | None = 4096
    use_bidirectional_attention: bool | None = None
    attn_logit_softcapping: float | None = 50.0  # null: no soft-capping (saved tensors only)
    final_logit_softcapping: float | None = 30.0

    @model_validator(mode="after")
    def _gemma_consistent(self):
        self.require_divisible("hidden_size", "num_attention_heads")
        if self.use_bidirectional_attention:
            self.fail("use_bidirectional_attention", "bidirectional (encoder) Gemma is not modelled")
        return self

    def resolved_layer_types(self) -> list[str]:
        return alternating_layer_types(self.layer_types, self.num_hidden_layers)

    def layer(self, window):
        return (Norms(GEMMA_NORMS),
                Attention(W=window, qkv_bias=self.attention_bias, o_bias=self.attention_bias,
                          qk_norm=self.qk_norm, softcap=self.attn_logit_softcapping is not None),
                FFN(act="gelu_tanh"))  # GeGLU: gate, up, down (gelu_pytorch_tanh)

    def to_model(self, tied: bool | None = None) -> Model:
        types = self.resolved_layer_types()
        groups, vals = window_groups(types, self.layer)
        vals.update(values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                           H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h,
                           d_ff=self.intermediate_size))
        if "sliding_attention" in types:
            vals.update(values(W=self.sliding_window))
        tied = self.tie_word_embeddings if tied is None else tied
        return gemma_saved(Model(self.name, self.model_type, (Embedding(),), groups,
                                 (Norms(("norm",)),
                                  LMHead(tied=tied, softcap=self.final_logit_softcapping is not None)), vals,
                                 notes=["embedding scaled by √d (a non-persistent buffer, no parameters); "
                                        "logit soft-capping is elementwise (0 FLOPs)"],
                                 layer_order=window_order(types)))


@register("gemma3_text")
class Gemma3TextAdapter(Gemma2Adapter):
    """Gemma 3 text: q/k norm, sliding pattern; every field defaults as in ``Gemma3TextConfig``
    (released multimodal checkpoints omit e.g. ``vocab_size`` from ``text_config``)."""

    reference: ClassVar[str] = "Gemma3ForCausalLM"
    qk_norm: ClassVar[bool] = True

    model_type: str = "gemma3_text"
    attn_logit_softcapping: float | None = None
    final_logit_softcapping: float | None = None
    vocab_size: PosInt = 262_208
    hidden_size: PosInt = 2304
    intermediate_size: PosInt = 9216
    num_hidden_layers: LayerCount = 26
    num_attention_heads: PosInt = 8
    sliding_window_pattern: PosInt = 6

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        return ["sliding_attention" if (i + 1) % self.sliding_window_pattern else "full_attention"
                for i in range(self.num_hidden_layers)]


class SiglipVisionConfig(BaseModel):
    """``vision_config`` of Gemma 3: SigLIP fields with ``SiglipVisionConfig``'s defaults."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    unused: ClassVar[dict[str, str]] = {
        "num_attention_heads": "heads split the width; no weight or FLOP depends on their count"}

    hidden_size: PosInt = 768
    intermediate_size: PosInt = 3072
    num_hidden_layers: LayerCount = 12
    num_channels: PosInt = 3
    image_size: PosInt = 224
    patch_size: PosInt = 16
    vision_use_head: bool = True


@register("gemma3")
class Gemma3Adapter(Adapter):
    reference: ClassVar[str] = "Gemma3ForConditionalGeneration"

    text_config: Gemma3TextAdapter = Field(default_factory=Gemma3TextAdapter)
    vision_config: SiglipVisionConfig = Field(default_factory=SiglipVisionConfig)
    tie_word_embeddings: bool = True
    mm_tokens_per_image: PosInt = 256

    @model_validator(mode="after")
    def _consistent(self):
        v = self.vision_config
        if v.image_size < v.patch_size:
            self.fail("vision_config.image_size", f"image_size={v.image_size} is smaller than "
                      f"patch_size={v.patch_size}")
        if v.image_size // v.patch_size < math.isqrt(self.mm_tokens_per_image):
            self.fail("mm_tokens_per_image", f"mm_tokens_per_image={self.mm_tokens_per_image} needs more "
                      f"than the {v.image_size // v.patch_size} patches per side the tower makes")
        return self

    def image_tokens(self) -> int:
        """Gemma3MultiModalProjector: AvgPool2d with kernel P // √mm_tokens_per_image on the P×P patch grid."""
        side = self.vision_config.image_size // self.vision_config.patch_size
        return (side // (side // math.isqrt(self.mm_tokens_per_image))) ** 2

    def to_model(self) -> Model:
        m = self.text_config.to_model(tied=self.tie_word_embeddings)
        v = self.vision_config
        m.name = self.name
        m.wrapping(self.model_type)
        m.pre = (Vision(head=v.vision_use_head),) + m.pre
        m.vision = m.pre[0]
        n_pat = (v.image_size // v.patch_size) ** 2
        m.values.update(values(d_vis=v.hidden_size, d_ff_vis=v.intermediate_size,
                               L_vis=v.num_hidden_layers, p_vis=v.patch_size, C_img=v.num_channels,
                               N_pat=n_pat, N_img=self.image_tokens()))
        m.notes.append(f"vision tower: a text-only pass does not run it (0 FLOPs); one image (--images) is "
                       f"vision_config.image_size={v.image_size}² (the only size the tower takes) = {n_pat} "
                       f"patches pooled to {self.image_tokens()} text tokens (mm_tokens_per_image)")
        return m
