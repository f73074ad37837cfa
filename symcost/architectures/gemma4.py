"""Gemma 4: text-only ``gemma4_text`` and the multimodal wrapper ``gemma4``, dense and MoE from one adapter.

A layer (transformers 5.24 ``Gemma4TextDecoderLayer``) is Gemma 3's: input_layernorm → attention →
post_attention_layernorm, pre_feedforward_layernorm → GeGLU FFN → post_feedforward_layernorm, with
per-head q/k RMSNorm (and a scale-free v norm). What Gemma 4 adds, each switched by the config:

* **Sliding and global layers with their own shapes.** ``layer_types`` (default: five sliding, one
  full, repeated; the last layer is forced to full attention as the config class does). Full layers
  have head dim ``global_head_dim`` (D_g, default 512) and, with ``attention_k_eq_v``, key/value heads
  ``num_global_key_value_heads`` (H_kv,g) and no v_proj (``components/kv_sharing.py``). A serialised
  config states these as ``per_layer_config`` overrides (``head_dim``, ``num_key_value_heads``) instead.
* **KV-shared layers** (``num_kv_shared_layers``): the last layers reuse the KV of the last earlier
  layer of their type. They have no k/v weights and no cache, and their FFN is twice as wide with
  ``use_double_wide_mlp`` (``components/kv_sharing.py``).
* **Per-layer inputs** (``hidden_size_per_layer_input`` d_pl > 0): a [V_pl, L·d_pl] table, a d → L·d_pl
  projection, and a gate/projection pair per layer (``components/per_layer_input.py``).
* **MoE beside the dense FFN** (``enable_moe_block``): E = ``num_experts``, k = ``top_k_experts``, d_moe
  = ``moe_intermediate_size``, with three more norms of d per layer (``components/parallel_moe.py``).
* A ``layer_scalar`` buffer [1] per layer (``components/layer_scale.py``). The embedding is scaled by √d
  and the PLE table by √d_pl (non-persistent buffers). The head is tied by default. Final logit
  soft-capping is elementwise (0 FLOPs).

Layers are grouped by type and KV sharing (head dim and KV heads are one per type, as transformers
requires): ``swa_layers`` (L_swa), ``full_layers`` (L_full), ``shared_swa_layers`` (L_sh,swa),
``shared_full_layers`` (L_sh,full), or one ``layers`` group (L).
``gemma4`` (``Gemma4ForConditionalGeneration``) wraps the text model. Its tying follows the top-level
``tie_word_embeddings``. When ``vision_config`` / ``audio_config`` are given (both optional), it adds the
vision tower (``components/gemma4_vision.py``: patch embedder, ``vision_layers`` × L_vis, embedder) and the
audio Conformer (``components/gemma4_audio.py``: subsampling stem, ``audio_layers`` × L_aud, output
projection, embedder). Their weights are counted under their own names, and they do no work in a
text pass, as for Kimi K2.5's tower. ``--images`` adds the vision tower's FLOPs per image.
"""
from __future__ import annotations

import collections
from typing import ClassVar

import sympy
from pydantic import BaseModel, ConfigDict, model_validator

from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.kv_sharing import POW_NORMS, LastPosition, SharedKVAttention
from ..components.layer_scale import LayerScalar
from ..components.norm import Norms
from ..components.parallel_moe import ParallelMoE
from ..components.per_layer_input import PerLayerEmbedding, PerLayerInputGate
from ..components.towers.gemma4_audio import Gemma4AudioBlock, Gemma4AudioEmbedder, Gemma4AudioStem
from ..components.towers.gemma4_vision import Gemma4Vision, Gemma4VisionBlock, Gemma4VisionEmbedder, Gemma4VisionStem
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, layer_order
from . import register
from .base import Adapter, LayerCount, NonNegInt, PosInt, nested, values
from .gemma import GEMMA_NORMS, Gemma2Adapter

MOE_NORMS = ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2")
LAYER_OVERRIDES = {"head_dim", "num_key_value_heads"}  # what Gemma4TextAttention reads per layer
IMAGE_SOFT_TOKENS = 280  # Gemma4ImageProcessor.max_soft_tokens
KINDS = {("sliding_attention", False): ("swa_layers", sym.L_swa),
         ("full_attention", False): ("full_layers", sym.L_full),
         ("sliding_attention", True): ("shared_swa_layers", sym.L_sh_swa),
         ("full_attention", True): ("shared_full_layers", sym.L_sh_full)}


@register("gemma4_text")
class Gemma4TextAdapter(Gemma2Adapter):
    """Every field defaults as in ``Gemma4TextConfig`` (5.24)."""

    reference: ClassVar[str] = "Gemma4ForCausalLM"
    qk_norm: ClassVar[bool] = True

    model_type: str = "gemma4_text"
    vocab_size: PosInt = 262_144
    hidden_size: PosInt = 2304
    intermediate_size: PosInt = 9216
    num_hidden_layers: LayerCount = 30
    num_attention_heads: PosInt = 8
    num_key_value_heads: PosInt | None = 4
    head_dim: PosInt | None = 256
    hidden_activation: str = "gelu_pytorch_tanh"
    tie_word_embeddings: bool = True
    attention_bias: bool = False
    sliding_window: PosInt | None = 512
    use_bidirectional_attention: str | None = None
    vocab_size_per_layer_input: PosInt = 262_144
    hidden_size_per_layer_input: NonNegInt = 256
    attention_k_eq_v: bool = False
    num_kv_shared_layers: NonNegInt = 0
    enable_moe_block: bool = False
    use_double_wide_mlp: bool = False
    num_experts: PosInt | None = None
    top_k_experts: PosInt | None = None
    moe_intermediate_size: PosInt | None = None
    global_head_dim: PosInt = 512
    num_global_key_value_heads: PosInt | None = None
    per_layer_config: dict | None = None
    final_logit_softcapping: float | None = None  # Gemma4TextConfig: no soft-capping unless stated

    @model_validator(mode="after")
    def _gemma_consistent(self):  # replaces Gemma 2's check: Gemma 4 does not need d % H_q == 0
        if self.use_bidirectional_attention == "all":
            self.fail("use_bidirectional_attention", "bidirectional (encoder) Gemma is not modelled")
        if self.use_bidirectional_attention not in (None, "vision"):
            self.fail("use_bidirectional_attention", f"{self.use_bidirectional_attention!r} is not one of "
                      "'all', 'vision' or null")
        L = self.num_hidden_layers
        if self.num_kv_shared_layers >= L:
            self.fail("num_kv_shared_layers", f"num_kv_shared_layers={self.num_kv_shared_layers} leaves no layer "
                      f"of the num_hidden_layers={L} to compute the keys and values they reuse")
        types = self.resolved_layer_types()
        if set(types[:L - self.num_kv_shared_layers]) != set(types):
            self.fail("num_kv_shared_layers", "a KV-shared layer's type (layer_types) has no earlier layer "
                      "of the same type to reuse the keys and values of")
        if self.enable_moe_block:
            for f in ("num_experts", "top_k_experts", "moe_intermediate_size"):
                if getattr(self, f) is None:
                    self.fail(f, "required when enable_moe_block is true")
            if self.top_k_experts > self.num_experts:
                self.fail("top_k_experts", f"top_k_experts={self.top_k_experts} is more than "
                          f"num_experts={self.num_experts}")
        self.type_shapes()
        for i, (hd, kv) in enumerate(self.layer_shapes()):
            if self.num_attention_heads % kv:
                self.fail("per_layer_config" if self._explicit_layers() else "num_global_key_value_heads",
                          f"layer {i}: num_attention_heads={self.num_attention_heads} is not divisible by "
                          f"its {kv} key/value heads")
        return self

    # -- the per-layer structure, as Gemma4TextConfig derives it ------------------------------
    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            types = list(self.layer_types)
        else:
            types = ["sliding_attention" if (i + 1) % 6 else "full_attention"
                     for i in range(self.num_hidden_layers)]
        if types:
            types[-1] = "full_attention"  # Gemma4TextConfig forces the last layer to full attention
        return types

    def kv_consumers(self) -> list[bool]:
        """``kv_sharing_modes == "reuse"``: the last ``num_kv_shared_layers`` layers."""
        first = self.num_hidden_layers - self.num_kv_shared_layers
        return [i >= first for i in range(self.num_hidden_layers)]

    def _explicit_layers(self) -> bool:
        return "per_layer_config" in self.model_fields_set

    def layer_shapes(self) -> list[tuple[int, int]]:
        """(head dim, KV heads) of every layer: ``per_layer_config`` when the config states it (as
        ``to_dict`` writes it), else full layers take ``global_head_dim`` and, with
        ``attention_k_eq_v``, ``num_global_key_value_heads`` (Gemma4TextConfig.__post_init__)."""
        L, hd, kv = self.num_hidden_layers, self.D_h, self.H_kv
        if self._explicit_layers():
            overrides: dict[int, dict] = {}
            for key, o in (self.per_layer_config or {}).items():
                try:
                    i = int(key)
                except (TypeError, ValueError):
                    self.fail("per_layer_config", f"key {key!r} is not a layer index")
                if not 0 <= i < L or not isinstance(o, dict):
                    self.fail("per_layer_config", f"key {key!r} is not a layer index below "
                              f"num_hidden_layers={L} mapping to overrides")
                unknown = set(o) - LAYER_OVERRIDES
                if unknown:
                    self.fail("per_layer_config", f"layer {i}: overrides {sorted(unknown)} are not read "
                              f"per layer by Gemma4TextAttention (only {sorted(LAYER_OVERRIDES)})")
                for f in LAYER_OVERRIDES & set(o):
                    if not isinstance(o[f], int) or isinstance(o[f], bool) or o[f] <= 0:
                        self.fail("per_layer_config", f"layer {i}: {f}={o[f]!r} is not a positive integer")
                overrides[i] = o
            return [(overrides.get(i, {}).get("head_dim", hd),
                     overrides.get(i, {}).get("num_key_value_heads", kv)) for i in range(L)]
        g_kv = (self.num_global_key_value_heads if self.attention_k_eq_v and self.num_global_key_value_heads
                else kv)
        return [(self.global_head_dim, g_kv) if t == "full_attention" else (hd, kv)
                for t in self.resolved_layer_types()]

    # -- the model -----------------------------------------------------------------------------
    def type_shapes(self) -> dict[str, tuple[int, int]]:
        """(head dim, KV heads) per layer type; transformers requires them equal within a type (its
        rotary tables and masks are built per type from ``per_layer_config[layer_type]``)."""
        out: dict[str, tuple[int, int]] = {}
        for i, (t, s) in enumerate(zip(self.resolved_layer_types(), self.layer_shapes())):
            if out.setdefault(t, s) != s:
                self.fail("per_layer_config", f"layer {i} ({t}) has head_dim, num_key_value_heads = {s}, other "
                          f"{t} layers {out[t]}: transformers needs one shape per layer type")
        return out

    def _dims(self) -> dict[str, tuple]:
        """Symbols per layer type: sliding layers D_h, H_kv; full layers D_g, H_kv,g where they differ."""
        shapes = self.type_shapes()
        swa = shapes.get("sliding_attention", (self.D_h, self.H_kv))
        full = shapes.get("full_attention", swa)
        hd = {"sliding_attention": (sym.D_h, swa[0]),
              "full_attention": (sym.D_h, swa[0]) if full[0] == swa[0] else (sym.D_g, full[0])}
        kv = {"sliding_attention": (sym.H_kv, swa[1]),
              "full_attention": (sym.H_kv, swa[1]) if full[1] == swa[1] else (sym.H_kvg, full[1])}
        return {t: (hd[t], kv[t]) for t in shapes}

    def layer_components(self, kind: str, consumer: bool, hd, kv) -> tuple:
        norms = GEMMA_NORMS + (MOE_NORMS if self.enable_moe_block else ())
        wide = self.use_double_wide_mlp and consumer
        attn = SharedKVAttention(D_h=hd, H_kv=kv, W=sym.W if kind == "sliding_attention" else None,
                                 qkv_bias=self.attention_bias, o_bias=self.attention_bias,
                                 k_eq_v=self.attention_k_eq_v and kind == "full_attention", consumer=consumer,
                                 saves=POW_NORMS.with_rope(name=kind))  # Gemma4TextRotaryEmbedding: one cos/sin per layer type
        parts = [Norms(norms, kind="pow_rstd", same_input=MOE_NORMS[2:] if self.enable_moe_block else ()), attn,
                 FFN(d_ff=2 * sym.d_ff if wide else sym.d_ff, act=self.hidden_activation)]
        if self.enable_moe_block:
            parts.append(ParallelMoE(act=self.hidden_activation))
        if self.hidden_size_per_layer_input:
            parts.append(PerLayerInputGate(act=self.hidden_activation))
        parts.append(LayerScalar())
        return tuple(LastPosition(c) for c in parts) if consumer else tuple(parts)

    def to_model(self, tied: bool | None = None) -> Model:
        types, consumers = self.resolved_layer_types(), self.kv_consumers()
        if "sliding_attention" in types and self.sliding_window is None:
            self.fail("sliding_window", "sliding-attention layers need a sliding_window")
        dims = self._dims()
        counts = collections.Counter(zip(types, consumers))
        vals, groups = {}, []
        for kind in KINDS:  # swa, full, shared swa, shared full
            if counts[kind]:
                name, count = KINDS[kind]
                (hd, hd_v), (kv, kv_v) = dims[kind[0]]
                vals.update({count: counts[kind], hd: hd_v, kv: kv_v})
                groups.append(LayerGroup(name, count, self.layer_components(kind[0], kind[1], hd, kv)))
        order = layer_order(zip(types, consumers), lambda k: "layers" if len(groups) == 1 else KINDS[k][0])
        if len(groups) == 1:
            vals.pop(groups[0].count)
            groups = [LayerGroup("layers", sym.L, groups[0].components)]
        vals = {k: sympy.Integer(v) for k, v in vals.items()}
        vals.update(values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                           H_q=self.num_attention_heads, d_ff=self.intermediate_size))
        if "sliding_attention" in types:
            vals.update(values(W=self.sliding_window))
        pre = [Embedding(scaled=True)]
        if self.hidden_size_per_layer_input:
            pre.append(PerLayerEmbedding())
            vals.update(values(d_pl=self.hidden_size_per_layer_input, V_pl=self.vocab_size_per_layer_input))
        if self.enable_moe_block:
            vals.update(values(E=self.num_experts, k=self.top_k_experts, d_moe=self.moe_intermediate_size))
        tied = self.tie_word_embeddings if tied is None else tied
        notes = ["embedding scaled by √d (and the per-layer table by √d_pl): non-persistent buffers, no "
                 "parameters; final logit soft-capping is elementwise (0 FLOPs)",
                 "layer_scalar: one persistent buffer element per layer (a checkpoint tensor, not a parameter)"]
        if self.layer_types is not None and self.layer_types[-1] != "full_attention":
            notes.append("layer_types ends with a sliding layer; Gemma4TextConfig forces the last layer to "
                         "full attention, and so does this count")
        if self.num_kv_shared_layers:
            notes.append(f"the last {self.num_kv_shared_layers} layers reuse an earlier layer's keys and values "
                         "(no k/v weights, no cache); with --logits last a prefill runs them on the last "
                         "position only, as transformers does for generate (logits_to_keep=1)")
        return Model(self.name, self.model_type, tuple(pre), tuple(groups),
                     (Norms(("norm",), kind="pow_rstd"),
                      LMHead(tied=tied, softcap=self.final_logit_softcapping is not None)), vals, notes=notes,
                     layer_order=order)


class Gemma4VisionConfig(BaseModel):
    """``vision_config``: the fields the tower's shapes read, with ``Gemma4VisionConfig``'s defaults."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    hidden_size: PosInt = 768
    intermediate_size: PosInt = 3072
    num_hidden_layers: LayerCount = 16
    num_attention_heads: PosInt = 12
    num_key_value_heads: PosInt = 12
    head_dim: PosInt = 64
    patch_size: PosInt = 16
    pooling_kernel_size: PosInt = 3
    position_embedding_size: PosInt = 10 * 1024
    use_clipped_linears: bool = False
    standardize: bool = False
    default_output_length: PosInt | None = None  # hub configs: the soft tokens per image


class Gemma4AudioConfig(BaseModel):
    """``audio_config``: the fields the tower's shapes read, with ``Gemma4AudioConfig``'s defaults."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    hidden_size: PosInt = 1024
    num_hidden_layers: LayerCount = 12
    num_attention_heads: PosInt = 8
    subsampling_conv_channels: tuple[PosInt, PosInt] = (128, 32)
    conv_kernel_size: PosInt = 5
    use_clipped_linears: bool = True
    output_proj_dims: PosInt = 1536


@register("gemma4")
class Gemma4Adapter(Adapter):
    """``Gemma4ForConditionalGeneration``: the Gemma 4 text model from ``text_config`` (defaults as
    ``Gemma4TextConfig``), tied as the top-level ``tie_word_embeddings`` says, and the vision and audio
    towers when their configs are given (both are optional in ``Gemma4Config``)."""

    reference: ClassVar[str] = "Gemma4ForConditionalGeneration"

    text_config: dict | None = None
    vision_config: Gemma4VisionConfig | None = None
    audio_config: Gemma4AudioConfig | None = None
    tie_word_embeddings: bool = True
    vision_soft_tokens_per_image: PosInt | None = None

    @model_validator(mode="after")
    def _consistent(self):
        self.text()
        a = self.audio_config
        if a is not None and a.num_attention_heads > a.hidden_size:
            self.fail("audio_config.num_attention_heads", f"{a.num_attention_heads} heads leave a head dim of "
                      f"0 for audio_config.hidden_size={a.hidden_size}")
        return self

    def text(self) -> Gemma4TextAdapter:
        return nested(Gemma4TextAdapter, self.text_config, "text_config", model_type="gemma4_text",
                      name=self.name)

    def soft_tokens(self) -> int:
        """Soft tokens of one image: the config's stated budget, else the processor's default (280)."""
        v = self.vision_config
        return self.vision_soft_tokens_per_image or v.default_output_length or IMAGE_SOFT_TOKENS

    def to_model(self) -> Model:
        m = self.text().to_model(tied=self.tie_word_embeddings)
        m.wrapping(self.model_type)
        pre, groups = list(m.pre), list(m.groups)
        if (v := self.vision_config) is not None:
            k = v.pooling_kernel_size
            n_img = self.soft_tokens()
            pre += [Gemma4VisionStem(standardize=v.standardize), Gemma4VisionEmbedder()]
            block = Gemma4VisionBlock(clipped=v.use_clipped_linears)
            groups.insert(0, LayerGroup("vision_layers", sym.L_vis, (block,)))
            m.values.update(values(d_vis=v.hidden_size, d_ff_vis=v.intermediate_size, L_vis=v.num_hidden_layers,
                                   H_vis=v.num_attention_heads, H_kv_vis=v.num_key_value_heads, D_vis=v.head_dim,
                                   p_vis=v.patch_size, P_axis=v.position_embedding_size,
                                   N_pat=n_img * k * k, N_img=n_img))
            m.vision = Gemma4Vision(pooled=k > 1)
            m.notes.append(f"vision tower: weights exact against Gemma4ForConditionalGeneration; it runs only on "
                           f"images (0 FLOPs in a text pass). One image (--images) fills the patch budget: "
                           f"{n_img} soft tokens (vision_soft_tokens_per_image / default_output_length, else the "
                           f"processor's 280) from {n_img * k * k} patches of {v.patch_size} px (the "
                           f"processor pads every image to that many; pooling {k}×{k})")
        if (a := self.audio_config) is not None:
            c0, c1 = a.subsampling_conv_channels
            at = groups.index(next(g for g in groups if g.name != "vision_layers"))
            pre += [Gemma4AudioStem(), Gemma4AudioEmbedder()]
            block = Gemma4AudioBlock(clipped=a.use_clipped_linears)
            groups.insert(at, LayerGroup("audio_layers", sym.L_aud, (block,)))
            m.values.update(values(d_aud=a.hidden_size, L_aud=a.num_hidden_layers, H_aud=a.num_attention_heads,
                                   D_aud=a.hidden_size // a.num_attention_heads, K_aud=a.conv_kernel_size,
                                   c_aud0=c0, c_aud1=c1, d_aud_out=a.output_proj_dims))
            m.notes.append("audio tower: weights exact against Gemma4ForConditionalGeneration; it runs only on "
                           "audio (0 FLOPs in a text pass); the FLOPs of one audio clip are not modelled")
        m.pre, m.groups = tuple(pre), tuple(groups)
        return m

