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
replaces the gate by relu(gate − (mean + std·Φ⁻¹(s))): elementwise, no matmul, the same weights; it
changes only what training saves, so a layer kind whose layers mix sparse and dense ones splits into
``<group>`` and ``<group>_sparse`` (an integer count). Final logit soft-capping (default 30) is
elementwise (0 FLOPs). What training saves is measured (tests/test_activations.py): Gemma 4's norms
(``kind="pow_rstd"``) and attention, AltUp's streams and routers, LAuReL, the per-layer inputs' own clamped
ids and scale buffers, and the correction weight clamped by ``altup_coef_clip`` in training.

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

from ..components.altup import AltUp, AltUpProjections
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.kv_sharing import POW_NORMS, SharedKVAttention
from ..components.laurel import Laurel
from ..components.norm import Norms
from ..components.per_layer_input import PerLayerEmbedding, PerLayerInputGate
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, layer_order
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
    final_logit_softcapping: float | None = 30.0
    altup_coef_clip: float | None = 120.0

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

    def sparse_layers(self) -> list[bool]:
        """Layers with activation sparsity > 0 (``Gemma3nTextConfig``: 0.95 on the first 10 of a stack
        deeper than 10 unless ``activation_sparsity_pattern`` says otherwise)."""
        pattern = self.activation_sparsity_pattern
        if pattern is None:
            n = 10 if self.num_hidden_layers > 10 else 0
            pattern = [0.95] * n + [0.0] * (self.num_hidden_layers - n)
        return [p > 0 for p in pattern]

    def layer_components(self, kind: str, consumer: bool, d_ff=sym.d_ff, sparse: bool = False) -> tuple:
        attn = SharedKVAttention(W=sym.W if kind == "sliding_attention" else None, qkv_bias=self.attention_bias,
                                 o_bias=self.attention_bias, consumer=consumer,
                                 saves=POW_NORMS.with_rope(name=kind))
        return (Norms(GEMMA_NORMS, kind="pow_rstd"),
                AltUp(correct_scale=self.altup_correct_scale, coef_clip=self.altup_coef_clip is not None),
                Laurel(), attn, FFN(d_ff=d_ff, act=self.hidden_activation, gaussian_topk=sparse),
                PerLayerInputGate(act=self.hidden_activation))

    def to_model(self, tied: bool | None = None) -> Model:
        types, consumers, sizes, main = self.resolved_layer_types(), self.kv_consumers(), self.sizes(), self.d_ff
        sparse = self.sparse_layers()
        counts = collections.Counter(zip(types, consumers, sizes))
        by_sparsity = collections.Counter(zip(types, consumers, sizes, sparse))
        # activation sparsity changes only what training saves: a kind whose layers mix both
        # splits, the sparse ones as ``<group>_sparse`` (an integer count)
        mixed = {(t, u, z) for (t, u, z, sp), n in by_sparsity.items() if sp and n < counts[(t, u, z)]}
        groups, vals = [], {}
        for kind in KINDS:  # swa, full, shared swa, shared full; the main FFN width first
            name, count = KINDS[kind]
            for size in [main] + sorted({s for s in sizes if s != main}):
                n_all, n_sparse = counts[(*kind, size)], by_sparsity[(*kind, size, True)]
                if not n_all:
                    continue
                base = name if size == main else f"{name}_ff{size}"
                d_ff = sym.d_ff if size == main else sympy.Integer(size)
                parts = ([(base, n_all - n_sparse, False), (f"{base}_sparse", n_sparse, True)]
                         if (*kind, size) in mixed else [(base, n_all, n_sparse > 0)])
                for i, (group, n, sp) in enumerate(parts):
                    c = sympy.Integer(n)
                    if i == 0 and size == main:
                        vals[count], c = c, count
                    groups.append(LayerGroup(group, c, self.layer_components(*kind, d_ff=d_ff, sparse=sp)))
        def group_of(k):
            base = KINDS[k[:2]][0] + ("" if k[2] == main else f"_ff{k[2]}")
            return base + ("_sparse" if k[3] and k[:3] in mixed else "")
        order = layer_order(zip(types, consumers, sizes, sparse), group_of)
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
        pre = (Embedding(scaled=True), PerLayerEmbedding(first_layer_input=False, own_ids_and_scales=True),
               AltUpProjections())
        return Model(self.name, self.model_type, pre, tuple(groups),
                     (Norms(("norm",), kind="pow_rstd"),
                      LMHead(tied=tied, softcap=self.final_logit_softcapping is not None)), vals, notes=notes,
                     layer_order=order)
