"""RWKV-4 (``rwkv``): LayerNorm → time mix → residual, LayerNorm → channel mix → residual
(transformers 5.24 ``RwkvBlock``; ``components/rwkv.py``), with one more LayerNorm ``pre_ln`` in the
first block only (counted at the top, after the embedding), ``ln_out`` and an untied ``head`` by
default. All norms are ``nn.LayerNorm`` (weight and bias, 2·d). ``attention_hidden_size`` defaults to
``hidden_size``, ``intermediate_size`` to 4·``hidden_size`` (``RwkvConfig.__post_init__``);
``context_length`` is also read as ``max_position_embeddings`` (its attribute map). ``rescale_every``
halves the hidden state every few layers in inference (elementwise, 0 FLOPs). The state is the five
[B, d, L] tensors ``RwkvModel`` returns (``RwkvCausalLMOutput.state``), three of them float32.
A decode step under ``impl="reference"`` runs on B² rows, as transformers 5.24's one-token path
broadcasts (``components/rwkv.py``); ``minimal`` counts B.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, Field

from ..components.embedding import Embedding
from ..components.norm import Norms
from ..components.rwkv import STATE_FP32, RwkvChannelMix, RwkvHead, RwkvPreLN, RwkvTimeMix
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model
from . import register
from .base import Adapter, LayerCount, PosInt, values


@register("rwkv")
class RwkvAdapter(Adapter):
    reference: ClassVar[str] = "RwkvForCausalLM"

    vocab_size: PosInt = 50277
    context_length: PosInt = Field(1024, validation_alias=AliasChoices("max_position_embeddings", "context_length"))
    hidden_size: PosInt = 4096
    num_hidden_layers: LayerCount = 32
    attention_hidden_size: PosInt | None = None
    intermediate_size: PosInt | None = None
    tie_word_embeddings: bool = False

    def to_model(self) -> Model:
        d = self.hidden_size
        vals = values(d=d, V=self.vocab_size, L=self.num_hidden_layers,
                      d_att=self.attention_hidden_size or d, d_ff=self.intermediate_size or 4 * d)
        layer = (Norms(("ln1", "ln2"), bias=True), RwkvTimeMix(), RwkvChannelMix())
        model = Model(self.name, self.model_type,
                      (Embedding(name="embeddings"), RwkvPreLN()),
                      (LayerGroup("blocks", sym.L, layer),),
                      (Norms(("ln_out",), bias=True), RwkvHead(tied=self.tie_word_embeddings)), vals,
                      state_dtype={k: "float32" for k in STATE_FP32})
        if (self.attention_hidden_size or d) != d:
            model.notes.append(f"attention_hidden_size={self.attention_hidden_size} differs from hidden_size={d}: "
                               "transformers allocates the WKV state d wide, so its cached forward (generate) "
                               "fails; weights and uncached FLOPs are as counted")
        return model
