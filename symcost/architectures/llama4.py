"""Llama 4: ``llama4_text`` (transformers ``Llama4ForCausalLM``) and the multimodal ``llama4``
(``Llama4ForConditionalGeneration``: that text model plus the vision tower and projector).

Each layer (``Llama4TextDecoderLayer``): RMSNorm → GQA attention → RMSNorm → feed-forward. Per layer:
* attention kind from ``layer_types``, else derived as transformers does: ``chunked_attention``
  (``components/chunked_attention.py``, chunks of ``attention_chunk_size``) where the layer uses
  RoPE and a chunk size is set, ``full_attention`` otherwise;
* RoPE or NoPE from ``no_rope_layers`` (1 = RoPE), else NoPE every ``no_rope_layer_interval``-th
  layer. RoPE layers with ``use_qk_norm`` apply a weightless L2 norm to q and k; NoPE layers with
  ``attn_temperature_tuning`` scale q by a per-position temperature — both elementwise: 0 FLOPs,
  0 parameters;
* MoE on the layers of ``moe_layers``, else every ``interleave_moe_layer_step``-th layer
  (``Llama4TextMoe``: router d·E, E experts gate_up [d, 2·d_moe] and down [d_moe, d] with
  d_moe = intermediate_size, one shared expert, a SwiGLU MLP of the same d_moe); the other layers
  are a dense SwiGLU MLP of d_ff = ``intermediate_size_mlp``.
Layers with the same (attention, RoPE, feed-forward) kind form one group. Untied head by default
(the wrapper's head follows ``text_config.tie_word_embeddings``, not the top-level flag).

Routed experts: transformers' eager ``Llama4TextExperts`` runs every token through all E experts
(scaled by a router score that is 0 for the unchosen ones); ``impl="reference"`` counts that, the
default ``impl="minimal"`` counts the k routed experts per token as a serving engine does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import sympy
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from ..components.attention import AttentionSaves
from ..components.chunked_attention import ChunkedAttention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.moe import MoE
from ..components.norm import Norms
from ..components.towers.llama4_vision import Llama4Vision, Llama4VisionAdapter, Llama4VisionBlock, Llama4VisionStem
from ..core.conventions import Phase
from ..core.notation import sym
from ..core.primitives import Saved
from ..model.assembly import LayerGroup, Model, kind_order
from . import register
from .base import Adapter, GQAHeads, LayerCount, PosInt, values
from .llama import LAYER_NORMS

CHUNKED, FULL = "chunked_attention", "full_attention"


@dataclass(frozen=True)
class Llama4TextMoe(MoE):
    """``Llama4TextMoe`` + ``Llama4Router`` + ``Llama4TextExperts``: under ``impl="reference"`` the
    routed experts run on every token for all E experts, 2·tokens·E·(per-expert weights), as
    ``Llama4TextExperts`` computes it (each token, pre-scaled by its router score, 0 for the
    unchosen experts, through one bmm per projection); under ``impl="minimal"`` the k routed
    experts, as a serving engine dispatches them. A subclass: it changes what is computed."""

    def runs(self, ph: Phase | None) -> sympy.Expr:
        return self.E if ph is not None and ph.impl == "reference" else self.k

    def _saved_routed(self, bw) -> list:
        """Per token: the top-k indices of the logits 8·k (topk and the scatter into a −inf row), the
        fp32 sigmoid of the scattered scores 4·E and their transposed copy ``b_a·E`` the scaling
        reads; then, for all E experts on every token (E·B·T rows): the repeated input and the
        scaled input ``b_a·d`` each, gate_up ``b_a·2·d_moe``, the activation and the product
        ``b_a·d_moe`` each."""
        a, d, E, k, f = sym.b_a, self.d, self.E, self.k, self.d_moe
        rows = E * sym.B * sym.T
        return [Saved("router/topk_indices", k, 8, "seq"), Saved("router/sigmoid_fp32", E, 4, "seq"),
                Saved("router/scores", E, a, "seq", doc="scores.transpose(0, 1).reshape(-1, 1): a copy"),
                Saved("experts/repeated_input", d, a, "seq", rows, "hidden_states.repeat(E, 1)"),
                Saved("experts/input", d, a, "seq", rows, "repeated input × its router score"),
                Saved("experts/gate_up", 2 * f, a, rows=rows), Saved("experts/act", f, a, rows=rows),
                Saved("experts/down_input", f, a, rows=rows)]

@register("llama4_text")
class Llama4TextAdapter(GQAHeads, Adapter):
    """Every field defaults as ``Llama4TextConfig`` does (released wrappers nest it in ``text_config``)."""

    reference: ClassVar[str] = "Llama4ForCausalLM"

    model_type: str = "llama4_text"
    vocab_size: PosInt = 202048
    hidden_size: PosInt = 5120
    intermediate_size: PosInt = 8192
    intermediate_size_mlp: PosInt = 16384
    num_hidden_layers: LayerCount = 48
    num_attention_heads: PosInt = 40
    num_key_value_heads: PosInt | None = 8
    head_dim: PosInt | None = 128
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    num_experts_per_tok: PosInt = 1
    num_local_experts: PosInt = 16
    moe_layers: list[int] | None = None
    interleave_moe_layer_step: int = 1
    use_qk_norm: bool = True
    no_rope_layers: list[int] | None = None
    no_rope_layer_interval: int = 4
    attention_chunk_size: PosInt | None = 8192
    layer_types: list[str] | None = None
    attn_temperature_tuning: bool = True

    @model_validator(mode="after")
    def _consistent(self):
        L = self.num_hidden_layers
        if self.num_attention_heads % self.H_kv:
            self.fail("num_key_value_heads", f"num_attention_heads={self.num_attention_heads} is not "
                      f"divisible by num_key_value_heads={self.H_kv}")
        if self.moe_layers is None and self.interleave_moe_layer_step < 1:
            self.fail("interleave_moe_layer_step", f"must be >= 1 (got {self.interleave_moe_layer_step}); "
                      "transformers places MoE on every step-th layer")
        if self.no_rope_layers:
            if set(self.no_rope_layers) - {0, 1}:
                self.fail("no_rope_layers", "entries must be 1 (RoPE) or 0 (NoPE)")
            if len(self.no_rope_layers) < L or (self.layer_types is None and len(self.no_rope_layers) != L):
                self.fail("no_rope_layers", f"has {len(self.no_rope_layers)} entries for num_hidden_layers={L}")
        if self.no_rope_layer_interval == 0:  # transformers derives its default list even when one is given
            self.fail("no_rope_layer_interval", "must not be 0 (transformers takes layer_idx + 1 modulo it)")
        types = self.resolved_layer_types()
        if len(types) != L:
            self.fail("layer_types", f"has {len(types)} entries for num_hidden_layers={L}")
        if set(types) - {CHUNKED, FULL}:
            self.fail("layer_types", f"unknown entries {sorted(set(types) - {CHUNKED, FULL})} "
                      f"(Llama 4 builds {CHUNKED!r} and {FULL!r} layers)")
        if CHUNKED in types and self.attention_chunk_size is None:
            self.fail("attention_chunk_size", "chunked_attention layers need an attention_chunk_size")
        if any(self.moe_kinds()) and self.num_experts_per_tok > self.num_local_experts:
            self.fail("num_experts_per_tok", f"{self.num_experts_per_tok} exceeds "
                      f"num_local_experts={self.num_local_experts}")
        return self


    def rope_kinds(self) -> list[bool]:
        """Per layer: does it apply RoPE (``no_rope_layers[i] == 1``)."""
        if self.no_rope_layers:
            return [bool(x) for x in self.no_rope_layers[:self.num_hidden_layers]]
        return [(i + 1) % self.no_rope_layer_interval != 0 for i in range(self.num_hidden_layers)]

    def resolved_layer_types(self) -> list[str]:
        if self.layer_types is not None:
            return list(self.layer_types)
        rope = [bool(x) for x in self.no_rope_layers] if self.no_rope_layers else self.rope_kinds()
        return [CHUNKED if r and self.attention_chunk_size is not None else FULL for r in rope]

    def moe_kinds(self) -> list[bool]:
        """Per layer: is its feed-forward the MoE."""
        L = self.num_hidden_layers
        if self.moe_layers is not None:
            chosen = set(self.moe_layers)
        else:
            step = self.interleave_moe_layer_step
            chosen = set(range(step - 1, L, step))
        return [i in chosen for i in range(L)]

    # -- the model ---------------------------------------------------------------------------------------
    def attention(self, kind: str, rope: bool) -> ChunkedAttention:
        return ChunkedAttention(C=sym.C_att if kind == CHUNKED else None, qkv_bias=self.attention_bias,
                                o_bias=self.attention_bias, rope=rope, qk_l2norm=rope and self.use_qk_norm,
                                temperature=not rope and self.attn_temperature_tuning,
                                saves=AttentionSaves(softmax_fp32=False))  # eager softmax in the compute dtype

    def to_model(self) -> Model:
        layers = list(zip(self.resolved_layer_types(), self.rope_kinds(), self.moe_kinds()))
        combos = list(dict.fromkeys(layers))  # distinct (attention, RoPE, MoE) kinds, in layer order
        counts = {c: layers.count(c) for c in combos}
        axes = ((0, {CHUNKED: sym.L_chunk, FULL: sym.L_full}), (2, {False: sym.L_dense, True: sym.L_moe}))
        # one count symbol per group when one axis (attention kind, or dense/MoE) tells the groups apart
        axis = next(((i, syms) for i, syms in axes if len({c[i] for c in combos}) == len(combos)), None)
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                      H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h)
        groups = []
        for combo in combos:
            kind, rope, moe = combo
            if len(combos) == 1:
                count = sym.L
            elif axis is not None:
                count = axis[1][combo[axis[0]]]
                vals[count] = sympy.Integer(counts[combo])
            else:  # an irregular mix (Maverick: chunked dense, chunked MoE, global NoPE MoE): integer counts
                count = sympy.Integer(counts[combo])
            name = "layers" if len(combos) == 1 else \
                f"{'chunked' if kind == CHUNKED else 'full'}{'' if rope else '_nope'}_{'moe' if moe else 'dense'}_layers"
            ffn = Llama4TextMoe(d_sh=sym.d_moe) if moe else FFN()
            groups.append(LayerGroup(name, count, (Norms(LAYER_NORMS), self.attention(kind, rope), ffn)))
        if any(not m for _, _, m in layers):
            vals.update(values(d_ff=self.intermediate_size_mlp))
        if any(m for _, _, m in layers):
            vals.update(values(E=self.num_local_experts, k=self.num_experts_per_tok, d_moe=self.intermediate_size))
        if any(t == CHUNKED for t, _, _ in layers):
            vals.update(values(C_att=self.attention_chunk_size))
        model = Model(self.name, self.model_type, (Embedding(),), tuple(groups),
                      (Norms(("norm",)), LMHead(tied=self.tie_word_embeddings)), vals,
                      layer_order=kind_order(layers, groups))
        model.notes += self.notes(layers, combos, counts)
        return model

    def notes(self, layers, combos, counts) -> list[str]:
        out = []
        if len(combos) > 1:
            out.append("layer groups: " + ", ".join(
                f"{counts[c]} × {'chunked' if c[0] == CHUNKED else 'global'} attention"
                f"{'' if c[1] else ' (NoPE)'} + {'MoE' if c[2] else 'dense MLP'}" for c in combos))
        if any(t == CHUNKED for t, _, _ in layers):
            out.append(f"chunked attention (attention_chunk_size={self.attention_chunk_size}): attention='causal' "
                       "counts the pairs inside each chunk exactly; 'full' counts what eager attention computes "
                       "(T² in prefill, the chunk mask added after the matmul; in decode the C_att−1 keys of the "
                       "sliding-window cache transformers keeps for these layers, plus the new one)")
        if any(m for _, _, m in layers):
            out.append("routed experts: impl='minimal' (default) counts the k routed experts per token, as a serving "
                       "engine dispatches them; impl='reference' counts what transformers' eager Llama4TextExperts "
                       "computes — all E experts on every token (the oracle tests' count)")
        if self.no_rope_layers and len(self.no_rope_layers) > self.num_hidden_layers:
            out.append(f"no_rope_layers has {len(self.no_rope_layers)} entries: the first "
                       f"{self.num_hidden_layers} are used, as transformers uses them")
        if self.moe_layers is not None and set(self.moe_layers) - set(range(self.num_hidden_layers)):
            out.append("moe_layers entries outside 0..num_hidden_layers-1 are ignored, as transformers ignores them")
        out.append("q/k L2 norm (use_qk_norm, RoPE layers) and attention temperature tuning (NoPE layers) have no "
                   "weights and are elementwise (0 FLOPs)")
        return out


class Llama4VisionConfig(BaseModel):
    """``vision_config`` of the wrapper (``Llama4VisionConfig``; defaults = its defaults)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    hidden_size: PosInt = 768
    num_hidden_layers: LayerCount = 34
    num_attention_heads: PosInt = 16
    num_channels: PosInt = 3
    intermediate_size: PosInt = 5632
    vision_output_dim: PosInt = 7680
    image_size: PosInt = 448
    patch_size: PosInt = 14
    pixel_shuffle_ratio: float = 0.5
    projector_input_dim: PosInt = 4096
    projector_output_dim: PosInt = 4096


@register("llama4")
class Llama4Adapter(Adapter):
    """Llama 4 multimodal: the ``llama4_text`` model from ``text_config`` plus the vision tower + projector."""

    reference: ClassVar[str] = "Llama4ForConditionalGeneration"

    text_config: dict | None = None
    vision_config: Llama4VisionConfig | None = None
    tie_word_embeddings: bool = False

    @model_validator(mode="after")
    def _consistent(self):
        self.text()
        v = self.vision
        if v.hidden_size % v.num_attention_heads:
            self.fail("vision_config.num_attention_heads", f"must divide vision_config.hidden_size={v.hidden_size}")
        if v.image_size < v.patch_size:
            self.fail("vision_config.image_size", f"image_size={v.image_size} is smaller than "
                      f"patch_size={v.patch_size}")
        return self

    @property
    def vision(self) -> Llama4VisionConfig:
        return self.vision_config or Llama4VisionConfig()

    def text(self) -> Llama4TextAdapter:
        raw = {**(self.text_config or {}), "model_type": "llama4_text", "name": self.name}
        try:
            return Llama4TextAdapter.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            loc, msg = ".".join(str(p) for p in err["loc"]), err["msg"]
            if not loc and "field '" in msg:  # a consistency check of the text adapter
                msg = msg.split("field '", 1)[1]
                loc, msg = msg.split("'", 1)[0], msg.split("': ", 1)[-1]
            self.fail(f"text_config.{loc}", msg)

    def image_plan(self) -> tuple[int, int] | str:
        """(patches merged per token m_vis, tokens per tile), or why this tower cannot embed an image:
        the shapes ``pixel_shuffle`` and the adapter MLP need, checked as their ``view``s and Linears do."""
        v = self.vision
        side, r, h = v.image_size // v.patch_size, v.pixel_shuffle_ratio, v.hidden_size
        if r <= 0:
            return f"vision_config.pixel_shuffle_ratio={r} is not positive"
        w2, c2 = int(side * r), int(h / r)
        c3 = int(h / r ** 2)
        if side * h != w2 * c2 or side * c2 != int(side * r) * c3 or not w2:
            return f"pixel_shuffle_ratio={r} does not reshape a {side}×{side}×{h} patch grid"
        if c3 != v.intermediate_size:
            return (f"pixel shuffle makes {c3} features per token but vision_adapter fc1 takes "
                    f"vision_config.intermediate_size={v.intermediate_size}")
        if v.projector_input_dim != v.projector_output_dim:
            return (f"vision_adapter fc2 takes projector_output_dim={v.projector_output_dim} but fc1 gives "
                    f"projector_input_dim={v.projector_input_dim}")
        if v.projector_output_dim != v.vision_output_dim:
            return (f"the projector takes vision_output_dim={v.vision_output_dim} but the adapter gives "
                    f"projector_output_dim={v.projector_output_dim}")
        tokens = w2 * int(side * r)
        if (side * side) % tokens:
            return f"{side * side} patches do not merge evenly into {tokens} tokens"
        return (side * side) // tokens, tokens

    def to_model(self) -> Model:
        text, v = self.text(), self.vision
        m = text.to_model()
        m.wrapping(self.model_type)
        m.pre = m.pre + (Llama4VisionStem(), Llama4VisionAdapter())
        m.groups = (LayerGroup("vision_layers", sym.L_vis, (Llama4VisionBlock(),)),) + m.groups
        n_pat = (v.image_size // v.patch_size) ** 2
        m.values.update(values(d_vis=v.hidden_size, d_ff_vis=v.intermediate_size, L_vis=v.num_hidden_layers,
                               p_vis=v.patch_size, C_img=v.num_channels, N_pat=n_pat, d_proj=v.projector_input_dim,
                               d_pout=v.projector_output_dim, d_vout=v.vision_output_dim))
        src = "the file's vision_config" if self.vision_config is not None else \
            "no vision_config in the file: transformers' Llama4VisionConfig defaults"
        m.notes.append(f"vision tower + pixel-shuffle adapter + projector ({src}): weights exact against "
                       "Llama4ForConditionalGeneration; they run only on image tiles, so text prefill/decode "
                       "FLOPs hold none of them")
        if self.tie_word_embeddings != text.tie_word_embeddings:
            m.notes.append(f"the head follows text_config.tie_word_embeddings={text.tie_word_embeddings}; the "
                           f"top-level tie_word_embeddings={self.tie_word_embeddings} is ignored, as transformers "
                           "ignores it")
        plan = self.image_plan()
        if isinstance(plan, str):
            m.notes.append(f"--images unavailable: this tower cannot embed an image ({plan}); transformers builds "
                           "its weights but its forward on pixels fails")
            return m
        merge, tokens = plan
        m.values.update(values(m_vis=merge))
        m.vision = Llama4Vision()
        m.notes.append(f"one image (--images) is one tile of vision_config.image_size={v.image_size}² px = {n_pat} "
                       f"patches (+ a class token in the tower) = {tokens} text tokens after pixel shuffle "
                       f"(ratio {v.pixel_shuffle_ratio}); Llama4ImageProcessor splits larger images into up to "
                       "max_patches tiles plus a global tile, each that many tokens")
        return m
