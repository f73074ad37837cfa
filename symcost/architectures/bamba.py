"""Bamba: a hybrid of Mamba-2 and GQA attention layers, every layer with a SwiGLU MLP.

transformers ``BambaForCausalLM``: ``model.embed_tokens``, L × (``input_layernorm`` → mixer →
``pre_ff_layernorm`` → ``feed_forward`` SwiGLU of ``intermediate_size``), ``final_layernorm``,
``lm_head`` (tied with ``tie_word_embeddings``). The mixer is GQA attention with RoPE (biases with
``attention_bias``; head_dim = ``head_dim`` if the config has one, else d/H_q) on the layers
listed in ``attn_layer_indices`` and a Mamba-2 mixer (``BambaMixer``: ``components.mamba2``) on
the others; groups L_M Mamba and L_A attention layers. Mamba-2 dimensions come from the
``mamba_*`` fields: d_in = ``mamba_expand``·d = ``mamba_n_heads``·``mamba_d_head`` (``"auto"``
derives the head dim), in_proj/out_proj bias ``mamba_proj_bias``, conv bias ``mamba_conv_bias``.
The torch scan keeps the recurrent state in float32 (``Model.state_dtype``).

The config's ``layer_types`` (``layers_block_type``) is a property derived from
``attn_layer_indices``; BambaConfig refuses to set it. A config that writes it out anyway is
accepted when it agrees with ``attn_layer_indices``.
"""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.mamba2 import Mamba2
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, layer_order
from . import register
from .base import Adapter, GQAHeads, LayerCount, PosInt, values

KINDS = ("linear_attention", "full_attention")
#: layer kind -> (group name, count symbol)
GROUPS = {"linear_attention": ("mamba_layers", sym.L_M), "full_attention": ("attention_layers", sym.L_A)}


class MambaHybridAdapter(GQAHeads, Adapter):
    """The ``mamba_*`` fields Bamba, Granite 4.0 and Falcon-H1 share, and their checks."""

    vocab_size: PosInt = 128000
    hidden_size: PosInt = 4096
    intermediate_size: PosInt = 14336
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 32
    num_key_value_heads: PosInt | None = 8
    head_dim: PosInt | None = None
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    mamba_n_heads: PosInt = 128
    mamba_d_head: PosInt | Literal["auto"] = "auto"
    mamba_n_groups: PosInt = 1
    mamba_d_state: PosInt = 256
    mamba_d_conv: PosInt = 4
    mamba_expand: PosInt = 2
    mamba_chunk_size: PosInt = 256
    mamba_conv_bias: bool = True
    mamba_proj_bias: bool = False

    @model_validator(mode="after")
    def _mamba_consistent(self):
        if self.num_attention_heads % self.H_kv:
            self.fail("num_key_value_heads", f"num_attention_heads={self.num_attention_heads} is not "
                      f"divisible by num_key_value_heads={self.H_kv}")
        if self.d_in % self.mamba_n_heads:
            self.fail("mamba_n_heads", f"mamba_n_heads={self.mamba_n_heads} does not divide the Mamba "
                      f"intermediate size {self.d_in}")
        if self.D_m * self.mamba_n_heads != self.d_in:
            self.fail("mamba_d_head", f"mamba_d_head·mamba_n_heads = {self.D_m * self.mamba_n_heads} must "
                      f"equal the Mamba intermediate size {self.d_in}")
        self.require_divisible("mamba_n_heads", "mamba_n_groups")
        return self


    @property
    def d_in(self) -> int:
        """The Mamba intermediate size: mamba_expand · hidden_size."""
        return self.mamba_expand * self.hidden_size

    @property
    def D_m(self) -> int:
        return self.d_in // self.mamba_n_heads if self.mamba_d_head == "auto" else self.mamba_d_head

    def mamba(self) -> Mamba2:
        return Mamba2(bias=self.mamba_proj_bias, conv_bias=self.mamba_conv_bias)

    def mamba_values(self) -> dict:
        return values(N=self.mamba_d_state, H_m=self.mamba_n_heads, D_m=self.D_m, G=self.mamba_n_groups,
                      K_c=self.mamba_d_conv, C=self.mamba_chunk_size)

    def attention_values(self) -> dict:
        return values(H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h)


@register("bamba")
class BambaAdapter(MambaHybridAdapter):
    reference: ClassVar[str] = "BambaForCausalLM"

    attn_layer_indices: list[int] | None = None
    layer_types: list[str] | None = Field(None, validation_alias=AliasChoices("layer_types",
                                                                              "layers_block_type"))

    @model_validator(mode="after")
    def _consistent(self):
        self.resolved_layer_types()
        return self

    def resolved_layer_types(self) -> list[str]:
        L, idx = self.num_hidden_layers, self.attn_layer_indices or []
        out = sorted({i for i in idx if not 0 <= i < L})
        if out:
            self.fail("attn_layer_indices", f"{out} out of range for num_hidden_layers={L} (0..{L - 1})")
        kinds = ["full_attention" if i in idx else "linear_attention" for i in range(L)]
        if self.layer_types is not None:
            given = self.check_kinds("layer_types", self.layer_types, L, KINDS)
            if given != kinds:
                self.fail("layer_types", "disagrees with attn_layer_indices, from which BambaConfig "
                          f"derives it ({self.attn_layer_indices})")
        return kinds

    # -- the model -----------------------------------------------------------------------------------
    def mixer(self, kind: str):
        if kind == "linear_attention":
            return self.mamba()
        return Attention(qkv_bias=self.attention_bias, o_bias=self.attention_bias)

    def ffn(self):
        return FFN(bias=self.mlp_bias)

    def layer_norms(self) -> Norms:
        return Norms(("input_layernorm", "pre_ff_layernorm"))

    def to_model(self) -> Model:
        types = self.resolved_layer_types()
        vals = values(d=self.hidden_size, V=self.vocab_size, d_ff=self.intermediate_size)
        groups = []
        for kind in KINDS:
            n = types.count(kind)
            if not n:
                continue
            name, count = GROUPS[kind]
            groups.append(LayerGroup(name, count, (self.layer_norms(), self.mixer(kind), self.ffn())))
            vals[count] = values(L=n)[sym.L]
            vals.update(self.mamba_values() if kind == "linear_attention" else self.attention_values())
        return Model(self.name, self.model_type, (Embedding(),), tuple(groups),
                     (Norms(("final_layernorm",)), LMHead(tied=self.tie_word_embeddings)), vals,
                     state_dtype={"recurrent_states": "float32"},
                     layer_order=layer_order(types, lambda k: GROUPS[k][0]))
