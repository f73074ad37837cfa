"""Qwen3-VL: a Qwen3 text stack (dense, or Qwen3-MoE) behind the Qwen ViT tower with deepstack mergers.

``qwen3_vl`` (transformers ``Qwen3VLForConditionalGeneration``): ``text_config`` is a Qwen3 decoder
(``Qwen3VLTextModel``: RMSNorm → GQA attention with per-head q/k RMSNorm and ``attention_bias`` on
q/k/v/o → RMSNorm → SwiGLU) with every layer full attention (the text config has no sliding window);
its interleaved M-RoPE has no weights. ``qwen3_vl_moe`` (``Qwen3VLMoeForConditionalGeneration``): the
text layers are Qwen3-MoE layers (router d·E, E experts of ``moe_intermediate_size``, k per token, no
shared expert), dense SwiGLU of ``intermediate_size`` on ``mlp_only_layers`` and off the
``decoder_sparse_step``. The vision tower (``components/qwen_vit.py``) adds one deepstack merger per
``vision_config.deepstack_visual_indexes`` entry; their outputs are added to the first text layers'
hidden states (elementwise). The head is tied by the top-level ``tie_word_embeddings`` (default false),
the one the wrapper class reads. Defaults are those of transformers' config classes.
The vision tower helpers here are shared with Qwen3.5 (``qwen3_5.py``), whose tower has no deepstack.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from ..components.attention import Attention
from ..components.towers.qwen_vit import QwenViT
from ..core.notation import sym
from ..model.assembly import Model
from . import register
from .base import Adapter, LayerCount, NonNegInt, PosInt, nested, values
from .llama import Qwen3Adapter
from .qwen_moe import Qwen3MoeAdapter


def _alias(default, *names: str):
    return Field(default, validation_alias=AliasChoices(*names))


class QwenVisionConfig(BaseModel):
    """``vision_config`` (transformers ``Qwen3VLVisionConfig`` / ``Qwen3_5VisionConfig``, their defaults;
    ``num_hidden_layers`` / ``num_attention_heads`` are its attribute-map aliases)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    depth: PosInt = _alias(27, "num_hidden_layers", "depth")
    hidden_size: PosInt = 1152
    intermediate_size: PosInt = 4304
    num_heads: PosInt = _alias(16, "num_attention_heads", "num_heads")
    in_channels: PosInt = 3
    patch_size: PosInt = 16
    spatial_merge_size: PosInt = 2
    temporal_patch_size: PosInt = 2
    out_hidden_size: PosInt = 3584
    num_position_embeddings: PosInt = 2304
    deepstack_visual_indexes: list[int] = [8, 16, 24]


class QwenVLWrapper(Adapter):
    """Shared by the Qwen3-VL and Qwen3.5 wrappers: a text adapter from ``text_config`` + the Qwen ViT."""

    text_adapter: ClassVar[type[Adapter]]
    text_type: ClassVar[str]
    deepstack: ClassVar[bool] = True  # Qwen3.5's vision model deletes the deepstack mergers

    text_config: dict[str, Any] | None = None
    vision_config: QwenVisionConfig | None = None
    tie_word_embeddings: bool = False

    @model_validator(mode="after")
    def _consistent(self):
        self.text()
        v = self.vision
        if v.hidden_size % v.num_heads:
            self.fail("vision_config.num_heads", f"hidden_size={v.hidden_size} is not divisible by "
                      f"num_heads={v.num_heads}")
        return self

    @property
    def vision(self) -> QwenVisionConfig:
        return self.vision_config or QwenVisionConfig()

    def text(self) -> Adapter:
        return nested(self.text_adapter, self.text_config, "text_config", model_type=self.text_type,
                      name=self.name, tie_word_embeddings=self.tie_word_embeddings)

    def image_side(self) -> int:
        """Patches per side of the image ``--images`` means: the learned position grid
        (⌊√num_position_embeddings⌋, the tower's num_grid_per_side), rounded up to whole merge blocks."""
        v = self.vision
        side, s = math.isqrt(v.num_position_embeddings), v.spatial_merge_size
        return -(-side // s) * s

    def to_model(self) -> Model:
        text, v = self.text(), self.vision
        m = text.to_model()
        m.wrapping(self.model_type)
        d_text = m.values[sym.d]
        n_ds = len(v.deepstack_visual_indexes) if self.deepstack else 0
        side = self.image_side()
        tower = QwenViT(d=sym.d if v.out_hidden_size == d_text else sym.d_vout, deepstack=n_ds > 0)
        m.pre = (tower,) + m.pre
        m.vision = tower
        m.values.update(values(d_vis=v.hidden_size, d_ff_vis=v.intermediate_size, L_vis=v.depth,
                               p_vis=v.patch_size, t_vis=v.temporal_patch_size, C_img=v.in_channels,
                               m_vis=v.spatial_merge_size ** 2, P_vis=v.num_position_embeddings,
                               N_pat=side * side))
        if n_ds:
            m.values.update(values(n_ds=n_ds))
        if v.out_hidden_size != d_text:
            m.values.update(values(d_vout=v.out_hidden_size))
            m.notes.append(f"vision_config.out_hidden_size={v.out_hidden_size} differs from the text hidden "
                           f"size {d_text}: the class builds the merger that way (counted as d_vout), but its "
                           "image features cannot enter the text stream")
        px = side * v.patch_size
        m.notes.append(
            f"vision tower (visual): weights exact against {self.reference}; a text-only pass does not run it "
            f"(0 FLOPs). One image (--images) is {px}×{px} px: the learned position grid "
            f"(num_position_embeddings={v.num_position_embeddings}, {side}×{side} patches of {v.patch_size} px, "
            f"no resampling) = {side * side} patches = {side * side // v.spatial_merge_size ** 2} text tokens; "
            "the tower takes any size that is a multiple of patch_size·spatial_merge_size")
        return m


class Qwen3VLTextAdapter(Qwen3Adapter):
    """``Qwen3VLTextConfig``: Qwen3 attention and SwiGLU, every layer full attention, its defaults."""

    reference: ClassVar[str] = "Qwen3VLTextModel"

    vocab_size: PosInt = 151936
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 22016
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32
    num_key_value_heads: PosInt | None = 32
    head_dim: PosInt | None = 128
    # not read by Qwen3VLTextModel (no sliding window; layer_types would only label the layers)
    layer_types: Any = None
    sliding_window: Any = None

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def attention(self, window) -> Attention:
        # multimodal RoPE: position ids [3, B, T], so the cos/sin table is per sequence
        a = super().attention(window)  # position ids [3, B, T]: a cos/sin table per sequence
        return dataclasses.replace(a, saves=a.saves.with_rope(per_sequence=True))


class Qwen3VLMoeTextAdapter(Qwen3MoeAdapter):
    """``Qwen3VLMoeTextConfig``: Qwen3-MoE layers (``mlp_only_layers``, ``decoder_sparse_step``), all full
    attention, head_dim default d/H_q, its defaults; ``num_local_experts`` is its alias of ``num_experts``."""

    reference: ClassVar[str] = "Qwen3VLMoeTextModel"

    vocab_size: PosInt = 151936
    hidden_size: PosInt = 2048
    intermediate_size: PosInt = 5632
    num_hidden_layers: LayerCount = 24
    num_attention_heads: PosInt = 16
    num_key_value_heads: PosInt | None = 16
    head_dim: PosInt | None = None
    num_experts: NonNegInt = _alias(60, "num_local_experts", "num_experts")
    num_experts_per_tok: PosInt = 4
    moe_intermediate_size: PosInt = 1408
    layer_types: Any = None
    sliding_window: Any = None
    use_sliding_window: Any = None

    @model_validator(mode="after")
    def _experts(self):
        if any(self.ffn_kind(i) == "moe" for i in range(self.num_hidden_layers)) \
                and self.num_experts_per_tok > self.num_experts:
            self.fail("num_experts_per_tok", f"num_experts_per_tok={self.num_experts_per_tok} exceeds "
                      f"num_experts={self.num_experts}")
        return self

    def resolved_layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def moe(self):
        # Qwen3VLMoeTextTopKRouter always renormalises the top-k weights (it reads no norm_topk_prob)
        return dataclasses.replace(super().moe(), norm_topk=True)

    def attention(self, window) -> Attention:
        # multimodal RoPE: position ids [3, B, T], so the cos/sin table is per sequence
        a = super().attention(window)  # position ids [3, B, T]: a cos/sin table per sequence
        return dataclasses.replace(a, saves=a.saves.with_rope(per_sequence=True))


@register("qwen3_vl")
class Qwen3VLAdapter(QwenVLWrapper):
    reference: ClassVar[str] = "Qwen3VLForConditionalGeneration"
    text_adapter: ClassVar[type[Adapter]] = Qwen3VLTextAdapter
    text_type: ClassVar[str] = "qwen3_vl_text"


@register("qwen3_vl_moe")
class Qwen3VLMoeAdapter(QwenVLWrapper):
    reference: ClassVar[str] = "Qwen3VLMoeForConditionalGeneration"
    text_adapter: ClassVar[type[Adapter]] = Qwen3VLMoeTextAdapter
    text_type: ClassVar[str] = "qwen3_vl_moe_text"
