"""RecurrentGemma (Griffin): RG-LRU recurrent layers and local (sliding-window) attention layers.

transformers ``RecurrentGemmaForCausalLM``: ``model.embed_tokens`` (V·d, scaled by √d: a buffer),
L × (``temporal_pre_norm`` → temporal block → ``channel_pre_norm`` → ``mlp_block``),
``final_norm``, ``lm_head`` (tied by default; logits soft-capped, elementwise). The norms are
Gemma RMSNorms (x·(1 + w), d each). The temporal block follows ``block_types`` repeated over the
layers (``(block_types * 100)[:L]``): ``recurrent`` → the Griffin recurrent block
(``components.rglru``, w = ``lru_width``, default d, in H_q = ``num_attention_heads`` gate blocks
of D_lru = w/H_q; K_c = ``conv1d_width``), ``attention`` → GQA attention with RoPE over half of
D_h (``head_dim``, default d/H_q), q/k/v biases with ``attention_bias``, o_proj always biased, a
sliding window W = ``attention_window_size`` (alias ``sliding_window``, which wins when both are
given, as in transformers; the cache keeps min(T, W − 1) tokens). The MLP is a gated ``hidden_activation`` MLP of d_ff = ``intermediate_size``
// 2 with biases on all three projections. Groups: L_rec recurrent and L_swa attention layers.
The recurrent block's conv and RG-LRU state live on the modules (not in the cache object the
model builds); the RG-LRU state is float32 (``Model.state_dtype``).
"""
from __future__ import annotations

from typing import ClassVar

import sympy
from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention, AttentionSaves
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.norm import Norms
from ..components.rglru import RecurrentBlock
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, layer_order
from . import register
from .base import Adapter, GQAHeads, LayerCount, PosInt, quote, values
from .gemma import gemma_saved

KINDS = ("recurrent", "attention")


@register("recurrent_gemma")
class RecurrentGemmaAdapter(GQAHeads, Adapter):
    reference: ClassVar[str] = "RecurrentGemmaForCausalLM"

    num_hidden_layers: LayerCount = 26
    vocab_size: PosInt = 256_000
    hidden_size: PosInt = 2560
    intermediate_size: PosInt = 3 * 2560
    num_attention_heads: PosInt = 10
    lru_width: PosInt | None = None
    attention_window_size: PosInt = Field(2048, validation_alias=AliasChoices("sliding_window",
                                                                             "attention_window_size"))
    conv1d_width: PosInt = 4
    hidden_activation: str = "gelu_pytorch_tanh"
    block_types: list[str] | None = ["recurrent", "recurrent", "attention"]
    num_key_value_heads: PosInt | None = None
    attention_bias: bool = False
    tie_word_embeddings: bool = True
    head_dim: PosInt | None = None
    #: rotated fraction of head_dim (RecurrentGemmaConfig sets 0.5 into rope_parameters); saved tensors only
    partial_rotary_factor: float | None = None
    rope_parameters: dict | None = None

    @model_validator(mode="after")
    def _consistent(self):
        H, H_kv = self.num_attention_heads, self.H_kv
        if H_kv > H or H % H_kv:
            self.fail("num_key_value_heads", f"num_key_value_heads={H_kv} must divide num_attention_heads={H}")
        if self.width % H:
            self.fail("lru_width", f"lru_width={self.width} is not divisible by num_attention_heads={H} "
                      "(the RG-LRU gates are num_attention_heads blocks)")
        if self.intermediate_size < 2:
            self.fail("intermediate_size", f"intermediate_size={self.intermediate_size}: the MLP is "
                      "intermediate_size // 2 wide")
        f = self.rotary_factor
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1:
            field = ("rope_parameters" if (self.rope_parameters or {}).get("partial_rotary_factor") is not None
                     else "partial_rotary_factor")
            self.fail(field, f"the rotated fraction of head_dim must be in (0, 1] (got {quote(f)})")
        self.kinds()
        return self


    @property
    def rotary_factor(self):
        """rope_parameters' partial_rotary_factor, else the top-level one, else the config's default 0.5."""
        f = (self.rope_parameters or {}).get("partial_rotary_factor")
        if f is None:
            f = 0.5 if self.partial_rotary_factor is None else self.partial_rotary_factor
        return f

    @property
    def D_rot(self) -> int:
        """The cos/sin width RecurrentGemmaRotaryEmbedding builds: two per frequency of
        arange(0, int(D_h · partial_rotary_factor), 2)."""
        return 2 * ((int(self.D_h * self.rotary_factor) + 1) // 2)

    @property
    def width(self) -> int:
        return self.lru_width or self.hidden_size

    def kinds(self) -> list[str]:
        if not self.block_types:
            self.fail("block_types", "must list the block pattern ('recurrent', 'attention')")
        bad = sorted({quote(k) for k in self.block_types if k not in KINDS})
        if bad:
            self.fail("block_types", f"unknown block type(s) {', '.join(bad)} (expected {', '.join(KINDS)})")
        kinds = (list(self.block_types) * 100)[: self.num_hidden_layers]
        if len(kinds) < self.num_hidden_layers:
            self.fail("block_types", f"{len(self.block_types)} entries repeated 100 times (as the config "
                      f"class does) cover {len(kinds)} of num_hidden_layers={self.num_hidden_layers}")
        return kinds

    def to_model(self) -> Model:
        kinds = self.kinds()
        n_rec = kinds.count("recurrent")
        n_att = len(kinds) - n_rec
        norms = Norms(("temporal_pre_norm", "channel_pre_norm"))
        mlp = FFN(bias=True, act=self.hidden_activation)
        vals = values(d=self.hidden_size, V=self.vocab_size, d_ff=self.intermediate_size // 2,
                      H_q=self.num_attention_heads)
        groups = []
        if n_rec:
            groups.append(LayerGroup("recurrent_layers", sym.L_rec,
                                     (norms, RecurrentBlock(act=self.hidden_activation), mlp)))
            vals.update(values(L_rec=n_rec, D_lru=self.width // self.num_attention_heads, K_c=self.conv1d_width))
        if n_att:
            D_rot = None if self.D_rot == self.D_h else sympy.Integer(self.D_rot)
            attn = Attention(W=sym.W, qkv_bias=self.attention_bias, o_bias=True,
                             saves=AttentionSaves().with_rope(D_rot=D_rot, per_layer=True))
            groups.append(LayerGroup("attention_layers", sym.L_swa, (norms, attn, mlp)))
            vals.update(values(L_swa=n_att, H_kv=self.H_kv, D_h=self.D_h, W=self.attention_window_size))
        # Gemma's (1 + w) norms and √d-scaled embedding (gemma_saved), the soft-capped logits: what training saves
        return gemma_saved(Model(self.name, self.model_type, (Embedding(),), tuple(groups),
                                 (Norms(("final_norm",)), LMHead(tied=self.tie_word_embeddings, softcap=True)), vals,
                                 state_dtype={"recurrent_states": "float32"},
                                 layer_order=layer_order(kinds, lambda k: "recurrent_layers" if k == "recurrent"
                                                         else "attention_layers")))
