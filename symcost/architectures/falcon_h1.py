"""Falcon-H1: attention and a Mamba-2 mixer side by side in every layer, then a SwiGLU MLP.

transformers ``FalconH1ForCausalLM``: ``model.embed_tokens``, L × ``FalconH1DecoderLayer``,
``final_layernorm``, ``lm_head`` (tied with ``tie_word_embeddings``). A layer is
``input_layernorm`` → [``mamba`` (``FalconH1Mixer``) ‖ ``self_attn`` (GQA with RoPE)] — both read
the same normed input and their outputs are added —, then ``pre_ff_layernorm`` →
``feed_forward`` (SwiGLU of ``intermediate_size``). Costs of two parallel branches add, so the
layer is one group holding both mixers as components (``assembly.LayerGroup``), L layers; the
cache holds both the KV of every layer and its conv + SSM state (transformers' ``"hybrid"``
cache layers).

The mixer is ``components.mamba2`` with Falcon-H1's switches: d_in = ``mamba_d_ssm`` (default 1024;
``null`` means ``mamba_expand``·d) = ``mamba_n_heads``·``mamba_d_head``; in_proj bias
``mamba_proj_bias`` but out_proj bias ``projectors_bias``; the gated RMSNorm only with
``mamba_rms_norm`` (default off: y·silu(z) goes straight to out_proj); ``mamba_norm_before_gate``
changes no count. Attention head_dim = ``head_dim`` if the config has one, else d/H_q.

The µP multipliers (``embedding_multiplier``, ``lm_head_multiplier``, ``attention_in_multiplier``,
``attention_out_multiplier``, ``key_multiplier``, ``ssm_in_multiplier``, ``ssm_out_multiplier``,
the two ``mlp_multipliers`` and the five ``ssm_multipliers``, which become the non-persistent
``mup_vector`` buffer [1, 1, 2·d_in + 2·G·N + H_m] each mixer multiplies its in_proj output by)
are not parameters and change no shape: 0 parameters, 0 matmul FLOPs; their elementwise
multiplies are ``components.multipliers`` (one per layer, and on the embeddings and logits). The
branch sum mamba + attention and the residual add are the two adds the mixers' ``residual``
elementwise terms count.
The ``mup_vector`` is recomputed from the config at load, never stored in a checkpoint, so it is
not reported as a checkpoint buffer.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.mamba2 import Mamba2
from ..components.multipliers import Multipliers
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model
from . import register
from .bamba import MambaHybridAdapter
from .base import PosInt, values


@register("falcon_h1")
class FalconH1Adapter(MambaHybridAdapter):
    reference: ClassVar[str] = "FalconH1ForCausalLM"

    mamba_d_ssm: PosInt | None = 1024
    mamba_rms_norm: bool = False
    projectors_bias: bool = False
    mlp_multipliers: list[float] | None = None
    ssm_multipliers: list[float] | None = None
    layer_types: list[str] | None = Field(None, validation_alias=AliasChoices("layer_types",
                                                                              "layers_block_type"))

    @model_validator(mode="after")
    def _consistent(self):
        if self.mlp_multipliers is not None and len(self.mlp_multipliers) != 2:
            self.fail("mlp_multipliers", f"has {len(self.mlp_multipliers)} entries; FalconH1MLP unpacks "
                      "two (gate, down)")
        if self.ssm_multipliers is not None and len(self.ssm_multipliers) < 5:
            self.fail("ssm_multipliers", f"has {len(self.ssm_multipliers)} entries; the mup_vector needs "
                      "five (z, x, B, C, dt)")
        if self.layer_types is not None:
            self.check_kinds("layer_types", self.layer_types, self.num_hidden_layers, allowed=("hybrid",))
        return self

    @property
    def d_in(self) -> int:
        """The Mamba intermediate size: mamba_d_ssm, or mamba_expand · hidden_size when it is null."""
        return self.mamba_expand * self.hidden_size if self.mamba_d_ssm is None else self.mamba_d_ssm

    def mamba(self) -> Mamba2:
        return Mamba2(bias=self.mamba_proj_bias, conv_bias=self.mamba_conv_bias,
                      out_bias=self.projectors_bias, gated_norm=self.mamba_rms_norm)

    def to_model(self) -> Model:
        layer = (Norms(("input_layernorm", "pre_ff_layernorm")), self.mamba(),
                 Attention(qkv_bias=self.attention_bias, o_bias=self.attention_bias),
                 FFN(bias=self.mlp_bias), Multipliers())
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                      d_ff=self.intermediate_size)
        vals.update(self.mamba_values())
        vals.update(self.attention_values())
        pre = (Embedding(), Multipliers("embedding"))
        post = (Norms(("final_layernorm",)), LMHead(tied=self.tie_word_embeddings), Multipliers("falcon_h1_logits"))
        model = Model(self.name, self.model_type, pre, (LayerGroup("layers", sym.L, layer),), post, vals,
                      state_dtype={"recurrent_states": "float32"})
        model.notes.append("every layer runs attention and the Mamba-2 mixer in parallel on the same "
                           "normed input (outputs added); the µP multipliers are elementwise only")
        return model
