"""Dense decoders of the Llama kind: llama, mistral, qwen2, qwen3, phi3.

Each layer: RMSNorm → GQA attention → RMSNorm → SwiGLU FFN (transformers ``LlamaDecoderLayer``).
The families differ only in wiring flags: Qwen2 has q/k/v biases, Qwen3 per-head q/k RMSNorm,
Mistral (and Qwen with ``use_sliding_window``) a sliding window, Phi-3 fuses qkv and gate/up
(same weights, same counts).
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import model_validator

from ..components.attention import Attention, AttentionSaves
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, layer_order
from . import register
from .base import Adapter, GQAHeads, Int, LayerCount, PosInt, quote, values

LAYER_NORMS = ("input_layernorm", "post_attention_layernorm")



def window_order(types: list[str]) -> tuple[str, ...]:
    """The layer order of full and sliding-window layers as grouped here and by
    ``gemma.window_groups``: ``full_layers`` / ``swa_layers`` by ``layer_types``, ``layers`` if all alike."""
    if len(set(t == "sliding_attention" for t in types)) == 1:
        return ("layers",) * len(types)
    return layer_order(types, lambda t: "swa_layers" if t == "sliding_attention" else "full_layers")

@register("llama")
class LlamaAdapter(GQAHeads, Adapter):
    reference: ClassVar[str] = "LlamaForCausalLM"
    qkv_bias_always: ClassVar[bool] = False
    qk_norm: ClassVar[bool] = False
    #: the norms of one layer and the final norm, LayerNorms (with bias) when ``norm_bias``
    layer_norms: ClassVar[tuple[str, ...]] = LAYER_NORMS
    final_norm: ClassVar[str] = "norm"
    norm_bias: ClassVar[bool] = False
    #: extra ``Norms`` fields of the family's norm modules (saved-for-backward only), e.g.
    #: ``{"kind": "fp32_weight"}`` when the weight multiply runs in fp32 (Helium)
    norm_kw: ClassVar[dict] = {}

    hidden_size: PosInt
    vocab_size: PosInt
    num_hidden_layers: LayerCount
    num_attention_heads: PosInt
    intermediate_size: PosInt
    num_key_value_heads: PosInt | None = None
    head_dim: PosInt | None = None
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    sliding_window: Int | None = None  # checked only where a layer uses it
    layer_types: list[str] | None = None

    @model_validator(mode="after")
    def _consistent(self):
        if self.num_attention_heads % self.H_kv:
            self.fail("num_key_value_heads", f"num_attention_heads={self.num_attention_heads} is not "
                      f"divisible by num_key_value_heads={self.H_kv}")
        if self.layer_types is not None:
            self.check_count("layer_types", len(self.layer_types), self.num_hidden_layers)
            unknown = set(self.layer_types) - {"full_attention", "sliding_attention"}
            if unknown:
                self.fail("layer_types", f"unknown layer type(s) {quote(sorted(unknown))} "
                          "(expected full_attention, sliding_attention)")
        if "sliding_attention" in self.resolved_layer_types():
            if self.sliding_window is None:
                flag = " and use_sliding_window: true" if "use_sliding_window" in self.switches else ""
                self.fail("sliding_window", f"sliding-attention layers need a sliding_window{flag}")
            if self.sliding_window < 1:
                self.fail("sliding_window", f"must be a positive window for the sliding-attention layers "
                          f"(got {self.sliding_window}; null means full attention)")
        return self


    def resolved_layer_types(self) -> list[str]:
        """``full_attention`` / ``sliding_attention`` per layer."""
        if self.layer_types is not None:
            return list(self.layer_types)
        return ["full_attention"] * self.num_hidden_layers

    # -- the model -----------------------------------------------------------------------------------
    def attention(self, window) -> Attention:
        return Attention(W=window, qkv_bias=self.attention_bias or self.qkv_bias_always,
                         o_bias=self.attention_bias, qk_norm=self.qk_norm)

    def ffn(self) -> FFN:
        return FFN(bias=self.mlp_bias)

    def head(self) -> LMHead:
        return LMHead(tied=self.tie_word_embeddings)

    def embedding(self) -> Embedding:
        return Embedding()

    def to_model(self) -> Model:
        types = self.resolved_layer_types()
        n_swa = types.count("sliding_attention")
        n_full = len(types) - n_swa
        norms = Norms(self.layer_norms, bias=self.norm_bias, **self.norm_kw)
        kinds = [("layers" if not n_swa else "full_layers", n_full, None, sym.L_full),
                 ("layers" if not n_full else "swa_layers", n_swa, sym.W, sym.L_swa)]
        kinds = [k for k in kinds if k[1]]
        groups = tuple(
            LayerGroup(name, sym.L if len(kinds) == 1 else count_sym,
                       (norms, self.attention(window), self.ffn()))
            for name, n, window, count_sym in kinds)
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                      H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h,
                      d_ff=self.intermediate_size)
        if n_swa:
            vals.update(values(W=self.sliding_window))
        if len(kinds) > 1:
            vals.update(values(L_full=n_full, L_swa=n_swa))
        return Model(self.name, self.model_type, (self.embedding(),), groups,
                     (Norms((self.final_norm,), bias=self.norm_bias, **self.norm_kw), self.head()), vals,
                     layer_order=window_order(types))


@register("mistral")
class MistralAdapter(LlamaAdapter):
    """Mistral: Llama wiring; when ``sliding_window`` is set (default 4096) every layer uses it."""

    reference: ClassVar[str] = "MistralForCausalLM"
    num_key_value_heads: PosInt | None = 8  # MistralConfig's defaults
    sliding_window: Int | None = 4096

    def resolved_layer_types(self) -> list[str]:
        kind = "full_attention" if self.sliding_window is None else "sliding_attention"
        return [kind] * self.num_hidden_layers


@register("qwen2")
class Qwen2Adapter(LlamaAdapter):
    """Qwen2: q/k/v biases (o_proj none); sliding layers only with ``use_sliding_window``."""

    reference: ClassVar[str] = "Qwen2ForCausalLM"
    qkv_bias_always: ClassVar[bool] = True
    switches: ClassVar[dict] = {"use_sliding_window": ("sliding_window",)}
    num_key_value_heads: PosInt | None = 32
    use_sliding_window: bool = False
    sliding_window: Int | None = 4096
    max_window_layers: Int = 28

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        return ["sliding_attention" if self.use_sliding_window and self.sliding_window is not None
                and i >= self.max_window_layers else "full_attention"
                for i in range(self.num_hidden_layers)]

    def attention(self, window) -> Attention:
        return Attention(W=window, qkv_bias=True, o_bias=False, qk_norm=self.qk_norm)


@register("qwen3")
class Qwen3Adapter(Qwen2Adapter):
    """Qwen3: per-head q/k RMSNorm, ``attention_bias`` (default off) on q/k/v/o; head_dim 128."""

    reference: ClassVar[str] = "Qwen3ForCausalLM"
    qk_norm: ClassVar[bool] = True
    head_dim: PosInt | None = 128

    def attention(self, window) -> Attention:
        return Attention(W=window, qkv_bias=self.attention_bias, o_bias=self.attention_bias,
                         qk_norm=True)


@register("phi3")
class Phi3Adapter(LlamaAdapter):
    """Phi-3: fused qkv_proj and gate_up_proj (the same weights as Llama), no biases."""

    reference: ClassVar[str] = "Phi3ForCausalLM"

    def resolved_layer_types(self) -> list[str]:
        kind = "full_attention" if self.sliding_window is None else "sliding_attention"
        return [kind] * self.num_hidden_layers

    def attention(self, window) -> Attention:
        return Attention(W=window, saves=AttentionSaves(fused_qkv=True))

    def ffn(self) -> FFN:
        return FFN()
