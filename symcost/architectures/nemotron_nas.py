"""NVIDIA Llama-Nemotron NAS models (``nemotron-nas``, ``DeciLMForCausalLM``): Llama-3.3-Nemotron-Super-49B,
Llama-3.1-Nemotron-Ultra-253B, Llama-3.1-Nemotron-51B — a Llama stack whose blocks a neural architecture
search made heterogeneous, one ``block_configs`` entry per layer.

transformers has no class for it: the checkpoints ship their own modeling code (``auto_map``:
``modeling_decilm.DeciLMForCausalLM``, ``configuration_decilm.DeciLMConfig``), which is the reference
here. The adapter follows ``modeling_decilm.py`` of nvidia/Llama-3_3-Nemotron-Super-49B-v1 as its
public copies show it — ``DeciLMDecoderLayer.__init__``, ``DeciLMLinearAttention``,
``DeciLMLinearMLP``, ``_ffn_mult_to_intermediate_size`` (the same rule vLLM's and SGLang's
``models/nemotron_nas.py`` and llama.cpp's ``DeciModel`` restate). Per layer:

* ``attention.no_op``: no attention and no ``input_layernorm``;
  ``attention.replace_with_linear``: ``input_layernorm`` d and ``self_attn.linear_attn`` [d, d], no bias;
  otherwise ``input_layernorm`` d and Llama GQA attention with H_kv = H_q // ``n_heads_in_group``
  (per layer), D_h = ``head_dim`` or d // H_q, biases when ``attention_bias``; it caches 2·H_kv·D_h.
* ``ffn.no_op``: no MLP and no ``post_attention_layernorm``;
  ``ffn.replace_with_linear``: ``post_attention_layernorm`` d and ``mlp.linear_mlp`` [d, d], no bias;
  otherwise ``post_attention_layernorm`` d and a SwiGLU MLP of width
  d_ff = round_up(int(2·ffn_mult·d/3), 256) (Python float arithmetic, as the reference; biases when
  ``mlp_bias``).

Layers of one kind (attention kind and H_kv, FFN kind and width) form one group; the most common FFN
width is ``d_ff`` and the most common KV-head count ``H_kv``, others are numbers in their group. A layer
whose attention and FFN are both no-ops (81 of Ultra's 162) holds nothing and runs nothing: it is in
its own group of identity layers (``IdentityBlock``: no weights, FLOPs or cache; still a layer of
the pipeline's split). Embedding V·d, final RMSNorm d, LM head V·d (untied by default).
The variants the Hub code also accepts but no published NAS checkpoint uses (sliding-window, sink,
Mamba, Llama-4 and MoE blocks, ``sparsify``) are refused by name.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import ClassVar

import sympy
from pydantic import BaseModel, ConfigDict, model_validator

from ..components.attention import Attention
from ..components.base import Component
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.norm import Norms
from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Linear, Saved
from ..core.terms import Terms
from ..model.assembly import LayerGroup, Model, layer_order
from . import register
from .base import Adapter, LayerCount, PosInt, quote, values


@dataclass(frozen=True)
class LinearAttention(Component):
    """``DeciLMLinearAttention``: attention replaced by one bias-free linear map, ``linear_attn`` [d, d]."""

    key = "self_attn"
    d: sympy.Expr = sym.d

    def primitives(self, ph: Phase | None = None):
        return [Linear("linear_attn", self.d, self.d, doc="[d, d], replaces attention")]

    def elementwise(self, ph: Phase) -> Terms:
        return Terms({"residual": COST["residual"] * ph.tokens * self.d}, {"residual": "residual add"})

    def saved(self, bw) -> list:
        return [Saved("input", self.d, sym.b_a, "seq", doc="linear_attn input")]


@dataclass(frozen=True)
class LinearMLP(LinearAttention):
    """``DeciLMLinearMLP``: the MLP replaced by one bias-free linear map, ``linear_mlp`` [d, d]."""

    key = "mlp"

    def primitives(self, ph: Phase | None = None):
        return [Linear("linear_mlp", self.d, self.d, doc="[d, d], replaces the MLP")]

    def saved(self, bw) -> list:
        return [Saved("input", self.d, sym.b_a, "seq", doc="linear_mlp input")]


@dataclass(frozen=True)
class IdentityBlock(Component):
    """A block whose attention and FFN are both no-ops: ``DeciLMDecoderLayer`` holds no module and its
    forward returns the input. Still a decoder layer (pipeline stages split the real layer list)."""

    key = "identity"

    def primitives(self, ph: Phase | None = None):
        return []

    def elementwise(self, ph: Phase) -> Terms:
        return Terms()

    def saved(self, bw) -> list:
        return []


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    no_op: bool = False
    replace_with_linear: bool = False
    sparsify: list | str | None = None


class AttentionBlock(_Part):
    n_heads_in_group: PosInt | None = None
    window_length: PosInt | None = None
    num_sink_tokens: PosInt | None = None
    mamba: dict | None = None
    llama4: dict | None = None


class FFNBlock(_Part):
    ffn_mult: float | None = None
    moe: dict | None = None
    gated: bool = True
    hidden_act: str | None = "silu"


class BlockConfig(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    attention: AttentionBlock = AttentionBlock()
    ffn: FFNBlock = FFNBlock()


def ffn_mult_to_intermediate_size(ffn_mult: float, d: int) -> int:
    """``_ffn_mult_to_intermediate_size``: int(2·ffn_mult·d/3) in Python floats, rounded up to 256."""
    size = int(2 * ffn_mult * d / 3)
    return size if size % 256 == 0 else size + 256 - size % 256


#: layer kinds as group-name parts
_ATTN = {"attention": "attn", "linear": "linear_attn", "none": "no_attn"}
_FFN = {"mlp": "ffn", "linear": "linear_ffn", "none": "no_ffn"}


@register("nemotron-nas")
class NemotronNasAdapter(Adapter):
    reference: ClassVar[str] = "DeciLMForCausalLM (remote code: modeling_decilm.py)"
    unused: ClassVar[dict[str, str]] = {
        "pretraining_tp": "a tensor-parallel slicing of the Llama matmuls in the reference forward; same weights",
        "intermediate_size": "null in DeciLM configs: each block's width comes from its ffn_mult",
        "num_key_value_heads": "null in DeciLM configs: each block's KV heads come from n_heads_in_group",
    }

    hidden_size: PosInt
    vocab_size: PosInt
    num_hidden_layers: LayerCount
    num_attention_heads: PosInt
    block_configs: list[BlockConfig]
    head_dim: PosInt | None = None
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False

    @model_validator(mode="after")
    def _blocks(self):
        self.check_count("block_configs", len(self.block_configs), self.num_hidden_layers)
        H = self.num_attention_heads
        if self.head_dim is None and self.hidden_size // H < 1:
            self.fail("num_attention_heads", f"hidden_size // num_attention_heads = 0 (hidden_size={self.hidden_size})")
        for i, b in enumerate(self.block_configs):
            a, f = b.attention, b.ffn
            where = f"block_configs[{i}]"
            for part, name in ((a, "attention"), (f, "ffn")):
                if part.sparsify:
                    self.fail(f"{where}.{name}.sparsify", "sparsified blocks are not modelled")
            for field in ("window_length", "num_sink_tokens", "mamba", "llama4"):
                if getattr(a, field) is not None and not a.no_op:
                    self.fail(f"{where}.attention.{field}", "sliding-window, sink, Mamba and Llama-4 attention "
                              "blocks of DeciLM are not modelled (no published NAS checkpoint uses them)")
            if f.moe is not None and not f.no_op:
                self.fail(f"{where}.ffn.moe", "DeciLM MoE blocks are not modelled")
            if not f.gated and not f.no_op and not f.replace_with_linear:
                self.fail(f"{where}.ffn.gated", "ungated DeciLM MLPs are not modelled")
            if self.attn_kind(b) == "attention":
                g = a.n_heads_in_group
                if g is None:
                    self.fail(f"{where}.attention.n_heads_in_group", "an attention block needs n_heads_in_group "
                              "(H_kv = num_attention_heads // n_heads_in_group)")
                if H % g:
                    self.fail(f"{where}.attention.n_heads_in_group", f"{g} does not divide num_attention_heads={H}")
            if self.ffn_kind(b) == "mlp":
                m = f.ffn_mult
                if m is None or isinstance(m, bool) or not m > 0:
                    self.fail(f"{where}.ffn.ffn_mult", f"an MLP block needs a positive ffn_mult (got {quote(m)})")
                if ffn_mult_to_intermediate_size(m, self.hidden_size) > 2**40:
                    self.fail(f"{where}.ffn.ffn_mult", f"{m} gives an FFN wider than 2^40")
        return self

    # -- per layer ------------------------------------------------------------------------------
    @staticmethod
    def attn_kind(b: BlockConfig) -> str:
        a = b.attention
        return "none" if a.no_op else "linear" if a.replace_with_linear else "attention"

    @staticmethod
    def ffn_kind(b: BlockConfig) -> str:
        f = b.ffn
        return "none" if f.no_op else "linear" if f.replace_with_linear else "mlp"

    def layer_kind(self, b: BlockConfig) -> tuple:
        """(attention kind, H_kv or 0, FFN kind, d_ff or 0) of one block."""
        a, f = self.attn_kind(b), self.ffn_kind(b)
        H_kv = self.num_attention_heads // b.attention.n_heads_in_group if a == "attention" else 0
        d_ff = ffn_mult_to_intermediate_size(b.ffn.ffn_mult, self.hidden_size) if f == "mlp" else 0
        return a, H_kv, f, d_ff

    @property
    def D_h(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @staticmethod
    def _most_common(xs: list[int]) -> int | None:
        if not xs:
            return None
        counts = collections.Counter(xs)
        return max(xs, key=lambda x: (counts[x], -xs.index(x)))

    def components(self, kind: tuple, main_kv, main_ff) -> tuple:
        a, H_kv, f, d_ff = kind
        if a == "none" and f == "none":
            return (IdentityBlock(),)
        norms = (("input_layernorm",) if a != "none" else ()) + (("post_attention_layernorm",) if f != "none" else ())
        out = [Norms(norms)]
        if a == "attention":
            out.append(Attention(H_kv=sym.H_kv if H_kv == main_kv else sympy.Integer(H_kv),
                                 qkv_bias=self.attention_bias, o_bias=self.attention_bias))
        elif a == "linear":
            out.append(LinearAttention())
        if f == "mlp":
            out.append(FFN(d_ff=sym.d_ff if d_ff == main_ff else sympy.Integer(d_ff), bias=self.mlp_bias))
        elif f == "linear":
            out.append(LinearMLP())
        return tuple(out)

    def group_name(self, kind: tuple, main_kv, main_ff) -> str:
        a, H_kv, f, d_ff = kind
        left = _ATTN[a] + (f"_kv{H_kv}" if a == "attention" and H_kv != main_kv else "")
        right = _FFN[f] + (f"{d_ff}" if f == "mlp" and d_ff != main_ff else "")
        return f"{left}_{right}"

    def to_model(self) -> Model:
        kinds = [self.layer_kind(b) for b in self.block_configs]
        live = [k for k in kinds if not (k[0] == "none" and k[2] == "none")]  # layers with weights
        main_kv = self._most_common([k[1] for k in live if k[0] == "attention"])
        main_ff = self._most_common([k[3] for k in live if k[2] == "mlp"])
        counts = collections.Counter(kinds)
        order = list(dict.fromkeys(kinds))
        groups = [LayerGroup(self.group_name(k, main_kv, main_ff),
                             sympy.Integer(counts[k]), self.components(k, main_kv, main_ff)) for k in order]
        names = {k: g.name for k, g in zip(order, groups)}
        layer_names = layer_order(kinds, names)
        if len(groups) == 1:
            groups = [LayerGroup("layers", sym.L, groups[0].components)]
            layer_names = ("layers",) * len(kinds)
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                      H_q=self.num_attention_heads, D_h=self.D_h, H_kv=main_kv, d_ff=main_ff)
        notes = [(f"heterogeneous NAS blocks (block_configs): {len(groups)} kinds of layer over "
                 f"{self.num_hidden_layers} layers; the reference is the checkpoint's own modeling_decilm.py "
                 "(transformers has no class)")]
        empty = len(kinds) - len(live)
        if empty:
            notes.append(f"{empty} of {self.num_hidden_layers} layers have both attention and FFN as no-ops: "
                         "identity layers (group no_attn_no_ffn) with no weights, FLOPs or cache")
        if main_ff is not None:
            notes.append(f"d_ff = round_up(int(2·ffn_mult·d/3), 256) per block; the most common width "
                         f"{main_ff} is d_ff, the others are numbers in their groups")
        return Model(self.name, self.model_type, (Embedding(),), tuple(groups),
                     (Norms(("norm",)), LMHead(tied=self.tie_word_embeddings)), vals, notes=notes,
                     layer_order=layer_names)
