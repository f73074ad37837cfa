"""Mamba-2: a pure state-space stack, each layer one RMSNorm and one Mamba-2 mixer.

transformers ``Mamba2ForCausalLM``: ``backbone.embeddings``, L × (``norm`` → ``Mamba2Mixer``),
``norm_f``, ``lm_head`` tied to the embedding when ``tie_word_embeddings`` (default False in the
config class; the published state-spaces checkpoints set it True). The config requires
hidden_size · expand = num_heads · head_dim, so d_in = H_m·D_m. The torch scan keeps the
recurrent state in float32 (``Model.state_dtype``).
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import model_validator

from ..components.embedding import Embedding, LMHead
from ..components.mamba2 import Mamba2
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model
from . import register
from .base import Adapter, LayerCount, PosInt, values


@register("mamba2")
class Mamba2Adapter(Adapter):
    reference: ClassVar[str] = "Mamba2ForCausalLM"

    num_heads: PosInt = 128
    head_dim: PosInt = 64
    vocab_size: PosInt
    hidden_size: PosInt
    state_size: PosInt = 128
    num_hidden_layers: LayerCount
    expand: PosInt = 2
    conv_kernel: PosInt = 4
    n_groups: PosInt = 8
    use_bias: bool = False
    use_conv_bias: bool = True
    chunk_size: PosInt = 256
    tie_word_embeddings: bool = False
    residual_in_fp32: bool = True  # the residual stream in fp32: the final norm returns fp32

    @model_validator(mode="after")
    def _consistent(self):
        if self.hidden_size * self.expand != self.num_heads * self.head_dim:
            self.fail("num_heads", f"hidden_size·expand = {self.hidden_size * self.expand} must equal "
                      f"num_heads·head_dim = {self.num_heads * self.head_dim}")
        self.require_divisible("num_heads", "n_groups")
        return self

    def to_model(self) -> Model:
        mixer = Mamba2(bias=self.use_bias, conv_bias=self.use_conv_bias)
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                      N=self.state_size, H_m=self.num_heads, D_m=self.head_dim, G=self.n_groups,
                      K_c=self.conv_kernel, C=self.chunk_size)
        return Model(self.name, self.model_type, (Embedding(name="embeddings"),),
                     (LayerGroup("layers", sym.L, (Norms(("norm",)), mixer)),),
                     (Norms(("norm_f",), kind="fp32_stream" if self.residual_in_fp32 else "standard"), LMHead(tied=self.tie_word_embeddings)), vals,
                     state_dtype={"recurrent_states": "float32"})
