"""Gemma 3n, text model (``gemma3n_text``): AltUp streams, LAuReL, per-layer inputs, KV sharing.

A layer (transformers 5.24 ``Gemma3nTextDecoderLayer``) runs on the active one of n_alt AltUp streams
(``components/altup.py``: predict before, correct after): input_layernorm → LAuReL branch
(``components/laurel.py``) beside the attention → post_attention_layernorm, pre_feedforward_layernorm →
GeGLU FFN (``hidden_activation``) → post_feedforward_layernorm, then the per-layer-input gate
(``components/per_layer_input.py``, as Gemma 4) adds its output to the other streams. Attention is
Gemma's GQA with per-head q/k RMSNorm and a scale-free v norm; the last ``num_kv_shared_layers``
layers reuse the keys and values of the last earlier layer of their type (no k/v weights, no cache:
``components/kv_sharing.py``, as Gemma 4 — but Gemma 3n never cuts those layers to the last position).
Layer types default to four sliding layers then one full, repeated (``Gemma3nTextConfig``).

Once per model: the √d-scaled embedding, the per-layer embedding table [V_pl, L·d_pl] and its
d → L·d_pl projection with a d_pl norm, and the (n_alt − 1) AltUp stream projections in and out
(``AltUpProjections``); the final norm and a tied head (default). Activation sparsity
(``activation_sparsity_pattern``, default 0.95 for the first 10 layers of a stack deeper than 10)
replaces the gate by relu(gate − (mean + std·Φ⁻¹(s))): elementwise, no matmul, the same weights.
Final logit soft-capping is elementwise (0 FLOPs).

``intermediate_size`` may be one size or a per-layer list (transformers writes the list). When the list
holds different sizes (MatFormer mix-and-match), the most common one (the first layer's on a tie) is
d_ff and layers of another size form their own groups (``<group>_ff<size>``) whose width and count
are the config's integers, not symbols.

The multimodal ``gemma3n`` (``Gemma3nForConditionalGeneration``) is not supported: its vision tower is
a timm MobileNetV5 built from ``vision_config.architecture`` (no shapes in the config; timm is needed
even to build it) and its audio tower a USM Conformer with chunked local attention, neither modelled;
``architectures.NOT_MODELLED`` says so instead of approximating. Its ``text_config`` is a gemma3n_text
config.
"""
from __future__ import annotations

import collections
from typing import ClassVar

import sympy
from pydantic import model_validator

from ..assembly import LayerGroup, Model, layer_order
from ..components.altup import AltUp, AltUpProjections
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.kv_sharing import SharedKVAttention
from ..components.laurel import Laurel
from ..components.norm import Norms
from ..components.per_layer_input import PerLayerEmbedding, PerLayerInputGate
from ..notation import sym
from . import register
from .base import Int, LayerCount, NonNegInt, PosInt, values
from .gemma import GEMMA_NORMS, Gemma2Adapter
from .gemma4 import KINDS


@register("gemma3n_text")
class Gemma3nTextAdapter(Gemma2Adapter):
    """Every field defaults as in ``Gemma3nTextConfig`` (5.24)."""

    reference: ClassVar[str] = "Gemma3nForCausalLM"
    qk_norm: ClassVar[bool] = True

    model_type: str = "gemma3n_text"
    vocab_size: PosInt = 262_400
    hidden_size: PosInt = 2048
    intermediate_size: PosInt | list[PosInt] = 16_384
    num_hidden_layers: LayerCount = 35
    num_attention_heads: PosInt = 8
    num_key_value_heads: PosInt = 2
    head_dim: PosInt = 256
    hidden_activation: str = "gelu_pytorch_tanh"
    tie_word_embeddings: bool = True
    attention_bias: bool = False
    sliding_window: Int = 512
    vocab_size_per_layer_input: PosInt = 262_144
    hidden_size_per_layer_input: PosInt = 256
    altup_active_idx: NonNegInt = 0
    altup_num_inputs: PosInt = 4
    altup_correct_scale: bool = True
    num_kv_shared_layers: NonNegInt = 15
    laurel_rank: PosInt = 64
    activation_sparsity_pattern: list[float] | None = None

    @model_validator(mode="after")
    def _gemma3n_consistent(self):
        L = self.num_hidden_layers
        if isinstance(self.intermediate_size, list):
            self.check_count("intermediate_size", len(self.intermediate_size), L)
        if self.activation_sparsity_pattern is not None:
            self.check_count("activation_sparsity_pattern", len(self.activation_sparsity_pattern), L)
        if self.altup_active_idx >= self.altup_num_inputs:
            self.fail("altup_active_idx", f"altup_active_idx={self.altup_active_idx} names no stream of "
                      f"altup_num_inputs={self.altup_num_inputs}")
        if self.num_kv_shared_layers:
            if self.num_kv_shared_layers >= L:
                self.fail("num_kv_shared_layers", f"num_kv_shared_layers={self.num_kv_shared_layers} leaves no "
                          f"layer of the num_hidden_layers={L} to compute the keys and values they reuse")
            types = self.resolved_layer_types()
            if set(types[:L - self.num_kv_shared_layers]) != set(types):
                self.fail("num_kv_shared_layers", "a KV-shared layer's type (layer_types) has no earlier layer "
                          "of the same type to reuse the keys and values of")
        return self

    def sizes(self) -> list[int]:
        size = self.intermediate_size
        return list(size) if isinstance(size, list) else [size] * self.num_hidden_layers

    @property
    def d_ff(self) -> int:
        """The most common FFN width (the first layer's on a tie): the one the symbol d_ff stands for."""
        sizes = self.sizes()
        counts = collections.Counter(sizes)
        return max(sizes, key=lambda s: (counts[s], -sizes.index(s)))

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        return ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(self.num_hidden_layers)]

    def kv_consumers(self) -> list[bool]:
        """``Gemma3nTextConfig.kv_sharing_modes == "reuse"``: the last ``num_kv_shared_layers`` layers."""
        first = self.num_hidden_layers - self.num_kv_shared_layers
        return [bool(self.num_kv_shared_layers) and i >= first for i in range(self.num_hidden_layers)]

    def layer_components(self, kind: str, consumer: bool, d_ff=sym.d_ff) -> tuple:
        attn = SharedKVAttention(W=sym.W if kind == "sliding_attention" else None, qkv_bias=self.attention_bias,
                                 o_bias=self.attention_bias, consumer=consumer)
        return (Norms(GEMMA_NORMS), AltUp(), Laurel(), attn, FFN(d_ff=d_ff, act=self.hidden_activation),
                PerLayerInputGate(act=self.hidden_activation))

    def to_model(self, tied: bool | None = None) -> Model:
        types, consumers, sizes, main = self.resolved_layer_types(), self.kv_consumers(), self.sizes(), self.d_ff
        counts = collections.Counter(zip(types, consumers, sizes))
        groups, vals = [], {}
        for kind in KINDS:  # swa, full, shared swa, shared full; the main FFN width first
            name, count = KINDS[kind]
            if counts[(*kind, main)]:
                vals[count] = sympy.Integer(counts[(*kind, main)])
                groups.append(LayerGroup(name, count, self.layer_components(*kind)))
            for size in sorted({s for s in sizes if s != main}):
                if counts[(*kind, size)]:
                    groups.append(LayerGroup(f"{name}_ff{size}", sympy.Integer(counts[(*kind, size)]),
                                             self.layer_components(*kind, d_ff=sympy.Integer(size))))
        order = layer_order(zip(types, consumers, sizes),
                            lambda k: KINDS[k[:2]][0] + ("" if k[2] == main else f"_ff{k[2]}"))
        if len(groups) == 1 and groups[0].count in vals:
            vals.pop(groups[0].count)
            groups = [LayerGroup("layers", sym.L, groups[0].components)]
            order = ("layers",) * len(order)
        vals.update(values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                           H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.head_dim, d_ff=self.d_ff,
                           d_pl=self.hidden_size_per_layer_input, V_pl=self.vocab_size_per_layer_input,
                           n_alt=self.altup_num_inputs, r_lau=self.laurel_rank))
        if "sliding_attention" in types:
            vals.update(values(W=self.sliding_window))
        tied = self.tie_word_embeddings if tied is None else tied
        notes = ["embedding scaled by √d and the per-layer table by √d_pl (non-persistent buffers, no "
                 "parameters); final logit soft-capping and activation sparsity are elementwise (0 FLOPs)"]
        if self.num_kv_shared_layers:
            notes.append(f"the last {self.num_kv_shared_layers} layers reuse an earlier layer's keys and values "
                         "(no k/v weights, no cache)")
        return Model(self.name, self.model_type, (Embedding(), PerLayerEmbedding(), AltUpProjections()),
                     tuple(groups), (Norms(("norm",)), LMHead(tied=tied)), vals, notes=notes, layer_order=order)
