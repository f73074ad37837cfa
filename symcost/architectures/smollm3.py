"""SmolLM3 (``smollm3``): Llama wiring with NoPE layers and an optional sliding window.

Each layer (transformers ``SmolLM3DecoderLayer``): input/post_attention RMSNorm, GQA with
``attention_bias`` on q/k/v/o, SwiGLU with ``mlp_bias``; the head is tied by default. Every
``no_rope_layer_interval``-th layer skips rotary (``no_rope_layers``): no weights, so no count
moves. ``layer_types`` defaults to sliding-window attention on the rotary-free layers only when
``use_sliding_window`` and ``sliding_window`` are set (``SmolLM3Config``: a layer is sliding when
``no_rope_layers[i]`` is 0), full attention otherwise.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import model_validator

from . import register
from .base import LayerCount, PosInt
from .llama import LlamaAdapter


@register("smollm3")
class SmolLM3Adapter(LlamaAdapter):
    reference: ClassVar[str] = "SmolLM3ForCausalLM"

    vocab_size: PosInt = 128_256
    hidden_size: PosInt = 2048
    intermediate_size: PosInt = 11_008
    num_hidden_layers: LayerCount = 36
    num_attention_heads: PosInt = 16
    num_key_value_heads: PosInt | None = 4
    tie_word_embeddings: bool = True
    use_sliding_window: bool = False
    no_rope_layers: list[int] | None = None
    no_rope_layer_interval: PosInt = 4

    @model_validator(mode="after")
    def _smollm3_consistent(self):
        if self.no_rope_layers is not None and len(self.no_rope_layers) < self.num_hidden_layers:
            self.fail("no_rope_layers", f"has {len(self.no_rope_layers)} entries for "
                      f"num_hidden_layers={self.num_hidden_layers}")
        windowed = self.use_sliding_window and self.sliding_window is not None
        if self.layer_types is not None and "sliding_attention" in self.layer_types and not windowed:
            self.fail("layer_types", "sliding_attention layers need use_sliding_window and a sliding_window")
        return self

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        rope = self.no_rope_layers or [int((i + 1) % self.no_rope_layer_interval != 0)
                                       for i in range(self.num_hidden_layers)]
        windowed = self.use_sliding_window and self.sliding_window is not None
        return ["sliding_attention" if windowed and not rope[i] else "full_attention"
                for i in range(self.num_hidden_layers)]
