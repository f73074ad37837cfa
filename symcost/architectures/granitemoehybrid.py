"""Granite 4.0 (``granitemoehybrid``): Mamba-2 and attention layers by ``layer_types``, each with
an MoE and a shared SwiGLU MLP.

transformers ``GraniteMoeHybridForCausalLM``: ``model.embed_tokens``, L × (``input_layernorm`` →
mixer → ``post_attention_layernorm`` → ``block_sparse_moe`` + ``shared_mlp``), ``norm``, ``lm_head``
(tied with ``tie_word_embeddings``). The mixer follows ``layer_types`` (alias
``layers_block_type``; default all Mamba; legacy ``mamba``/``attention`` as transformers remaps
them): the Bamba Mamba-2 mixer (``GraniteMoeHybridMambaLayer`` is ``BambaMixer``) or GQA
attention with biases ``attention_bias``, RoPE only with ``position_embedding_type="rope"``.
The MoE: router d·E without bias (softmax over the top-k), E gated experts of width
``intermediate_size`` (d_moe here, fused ``gate_up_proj``), of which k run per token; the shared
MLP (``input_linear`` [d, 2·d_sh], ``output_linear`` [d_sh, d]) of ``shared_intermediate_size``
runs on every token. With ``num_local_experts = 0`` the layer keeps only the shared MLP (counted as
the dense FFN, d_ff = ``shared_intermediate_size``); a 0-wide shared MLP has no weights and no
FLOPs and is left out.

Granite's multipliers (``embedding_multiplier``, ``residual_multiplier``, ``attention_multiplier``
— it replaces the 1/√D_h score scale —, ``logits_scaling``) are scalars: no parameters, no shapes,
0 matmul FLOPs; ``components.multipliers`` counts their elementwise multiplies.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.moe import WEIGHTS_CAST, MoE
from ..components.multipliers import Multipliers
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, layer_order
from . import register
from .bamba import GROUPS, KINDS, MambaHybridAdapter
from .base import NonNegInt, PosInt, values

#: Granite's scalar multipliers (``components.multipliers``): elementwise work only
EMBEDDING, RESIDUAL, LOGITS = (Multipliers(k) for k in ("embedding", "granite_residual", "granite_logits"))


@register("granitemoehybrid")
class GraniteMoeHybridAdapter(MambaHybridAdapter):
    reference: ClassVar[str] = "GraniteMoeHybridForCausalLM"

    vocab_size: PosInt = 32000
    intermediate_size: PosInt = 11008  # the routed experts' width
    num_key_value_heads: PosInt | None = None
    num_local_experts: NonNegInt = 8
    num_experts_per_tok: PosInt = 2
    shared_intermediate_size: NonNegInt = 1024
    position_embedding_type: str | None = None
    layer_types: list[str] | None = Field(None, validation_alias=AliasChoices("layers_block_type",
                                                                              "layer_types"))

    @model_validator(mode="after")
    def _consistent(self):
        self.resolved_layer_types()
        if self.num_local_experts and self.num_experts_per_tok > self.num_local_experts:
            self.fail("num_experts_per_tok", f"{self.num_experts_per_tok} > num_local_experts="
                      f"{self.num_local_experts}")
        return self

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is None:
            return ["linear_attention"] * self.num_hidden_layers
        return self.check_kinds("layer_types", self.layer_types, self.num_hidden_layers, KINDS)

    # -- the model -----------------------------------------------------------------------------------
    def mixer(self, kind: str):
        if kind == "linear_attention":
            return self.mamba()
        return Attention(qkv_bias=self.attention_bias, o_bias=self.attention_bias,
                         rope=self.position_embedding_type == "rope")

    def ffn(self):
        """The MoE with its shared MLP, or the shared MLP alone (``num_local_experts = 0``)."""
        shared = self.shared_intermediate_size > 0
        if self.num_local_experts:
            return MoE(d_sh=sym.d_sh if shared else None, router="topk_softmax", saves=WEIGHTS_CAST)
        return FFN() if shared else None

    def ffn_values(self) -> dict:
        if self.num_local_experts:
            return values(E=self.num_local_experts, k=self.num_experts_per_tok, d_moe=self.intermediate_size,
                          d_sh=self.shared_intermediate_size or None)
        return values(d_ff=self.shared_intermediate_size or None)

    def to_model(self) -> Model:
        types = self.resolved_layer_types()
        vals = values(d=self.hidden_size, V=self.vocab_size)
        vals.update(self.ffn_values())
        ffn = self.ffn()
        groups = []
        for kind in KINDS:
            n = types.count(kind)
            if not n:
                continue
            name, count = GROUPS[kind]
            parts = (Norms(("input_layernorm", "post_attention_layernorm")), self.mixer(kind))
            parts += ((ffn,) if ffn is not None else ()) + (RESIDUAL,)
            groups.append(LayerGroup(name, count, parts))
            vals[count] = values(L=n)[sym.L]
            vals.update(self.mamba_values() if kind == "linear_attention" else self.attention_values())
        model = Model(self.name, self.model_type, (Embedding(), EMBEDDING), tuple(groups),
                      (Norms(("norm",)), LMHead(tied=self.tie_word_embeddings), LOGITS), vals,
                      state_dtype={"recurrent_states": "float32"},
                      layer_order=layer_order(types, lambda k: GROUPS[k][0]))
        if not self.num_local_experts:
            model.notes.append("num_local_experts = 0: every layer keeps only its shared MLP "
                               "(d_ff = shared_intermediate_size)")
        return model
