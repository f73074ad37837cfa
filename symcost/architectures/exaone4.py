"""EXAONE 4.0 (``exaone4``): OLMo-2-style post-norms, per-head q/k RMSNorm, sliding/full layers.

Each layer (transformers ``Exaone4DecoderLayer``): attention → post_attention_layernorm, MLP →
post_feedforward_layernorm (2 RMSNorms of d); q/k/v/o without bias and a per-head RMSNorm on q
and k (D_h); SwiGLU. ``layer_types`` defaults to ``sliding_window_pattern − 1`` sliding layers
then one full (pattern 4, window 4096); with no ``sliding_window`` every layer is full attention.
A string pattern (``"LLLG"``, in released configs) is read only beside an explicit ``layer_types``:
``Exaone4Config`` cannot expand it, and neither does the adapter.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import model_validator

from ..components.attention import Attention
from . import register
from .base import PosInt
from .olmo import Olmo3Adapter


@register("exaone4")
class Exaone4Adapter(Olmo3Adapter):
    reference: ClassVar[str] = "Exaone4ForCausalLM"
    fp32_normed_norms: ClassVar[bool] = False  # Exaone4RMSNorm: weight · x̂.to(dtype), Llama's

    vocab_size: PosInt = 102_400
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 16_384
    num_attention_heads: PosInt = 32
    num_key_value_heads: PosInt | None = 32
    sliding_window_pattern: str | int | None = 4

    @model_validator(mode="after")
    def _exaone_consistent(self):
        p = self.sliding_window_pattern
        if self.layer_types is None and self.sliding_window is not None:
            if isinstance(p, str):
                self.fail("sliding_window_pattern", f"{p!r}: a string pattern needs layer_types "
                          "(Exaone4Config cannot expand it)")
            if isinstance(p, int) and p <= 0:
                self.fail("sliding_window_pattern", f"{p}: must be positive")
        return self

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        n, p = self.num_hidden_layers, self.sliding_window_pattern
        if self.sliding_window is None or p is None:
            return ["full_attention"] * n
        if isinstance(p, str) or p <= 0:  # also reached from the base class's checks, before ours
            self.fail("sliding_window_pattern", f"{p!r}: a string pattern needs layer_types (Exaone4Config "
                      "cannot expand it)" if isinstance(p, str) else f"{p}: must be positive")
        return ["sliding_attention" if (i + 1) % p else "full_attention" for i in range(n)]

    def attention(self, window) -> Attention:
        return Attention(W=window, qk_norm=True)
