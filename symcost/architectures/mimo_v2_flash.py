"""MiMo-V2-Flash (transformers ``MiMoV2FlashForCausalLM``): hybrid sliding/full GQA, dense + MoE layers.

Each layer: RMSNorm → attention → RMSNorm → MLP. Attention is GQA with a query/key head dim D_h
(``head_dim``) and a smaller value head dim D_v (``v_head_dim``): q_proj d·H_q·D_h, k_proj
d·H_kv·D_h, v_proj d·H_kv·D_v (+ biases with ``attention_bias``), o_proj H_q·D_v·d, no bias.
Sliding-window layers double the KV heads (2·H_kv, as ``MiMoV2FlashAttention`` hard-codes) and carry
one learned sink logit per query head (H_q, concatenated to the scores: a parameter, no matmul);
full layers have H_kv KV heads and no sinks. The window is ``sliding_window`` = W, or the hub's
``sliding_window_size`` + 1 when that is given (the query plus 128 previous keys: W = 129 for the
released model); a sliding layer's cache keeps min(T, W − 1) tokens. RoPE is partial and weightless.
The MLP is a dense SwiGLU of ``intermediate_size`` or an MoE (DeepSeek-V3 router d·E, no bias, +
``e_score_correction_bias`` [E] buffer; E experts of ``moe_intermediate_size``, k per token; no
shared expert). Untied head by default.

Layout, as ``MiMoV2FlashConfig`` resolves it: ``layer_types`` (default: full on layer 0 and on every
6th layer, sliding elsewhere) and ``mlp_layer_types`` (default: layer 0 dense, the rest MoE). The hub
file states the layout in its own fields, which transformers does not read: ``hybrid_layer_pattern``
(1 = sliding), ``moe_layer_freq`` (1 = MoE), ``swa_num_attention_heads`` / ``swa_num_key_value_heads``
/ ``swa_head_dim`` / ``swa_v_head_dim`` and ``add_swa_attention_sink_bias`` /
``add_full_attention_sink_bias``. Each is checked against what the class builds, and a disagreement
is an error naming the field (the class cannot build the model the file describes), never a silent
choice of one side. The checkpoint's MTP weights (``model.mtp.*``) are dropped by transformers on load
and are not counted.
"""
from __future__ import annotations

from typing import ClassVar

import sympy
from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention, AttentionSaves
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.moe import MoE, MoESaves
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, kind_order
from . import register
from .base import Adapter, LayerCount, NonNegInt, PosInt, values
from .llama import LAYER_NORMS

#: the eager core: softmax in the compute dtype after a row-max subtraction (its int64 index
#: kept); one RoPE table per layer type (saved tensors only)
SAVES = AttentionSaves(softmax_fp32=False, row_max=True)

FULL, SWA = "full_attention", "sliding_attention"
DENSE, SPARSE = "dense", "sparse"


def default_layer_types(n: int) -> list[str]:
    """``MiMoV2FlashConfig``'s default: full attention on layer 0 and every 6th layer."""
    return [FULL if (i == 0 or not (i + 1) % 6) else SWA for i in range(n)]


@register("mimo_v2_flash")
class MiMoV2FlashAdapter(Adapter):
    reference: ClassVar[str] = "MiMoV2FlashForCausalLM"

    hidden_size: PosInt
    vocab_size: PosInt
    num_hidden_layers: LayerCount
    num_attention_heads: PosInt
    num_key_value_heads: PosInt = 4
    head_dim: PosInt | None = 192
    v_head_dim: PosInt = 128
    intermediate_size: PosInt = 16384
    moe_intermediate_size: PosInt = 2048
    n_routed_experts: PosInt = Field(256, validation_alias=AliasChoices("num_local_experts", "n_routed_experts"))
    num_experts_per_tok: PosInt = 8
    n_group: PosInt | None = 1
    topk_group: PosInt | None = 1
    attention_bias: bool = False
    tie_word_embeddings: bool = False
    sliding_window: int | None = 129  # 0 / null allowed when no layer slides
    sliding_window_size: NonNegInt | None = None
    layer_types: list[str] | None = None
    mlp_layer_types: list[str] | None = None
    # the hub file's own layout fields (transformers does not read them): checked, never preferred
    hybrid_layer_pattern: list[int] | None = None
    moe_layer_freq: list[int] | None = None
    swa_num_attention_heads: PosInt | None = None
    swa_num_key_value_heads: PosInt | None = None
    swa_head_dim: PosInt | None = None
    swa_v_head_dim: PosInt | None = None
    add_swa_attention_sink_bias: bool | None = None
    add_full_attention_sink_bias: bool | None = None
    n_shared_experts: NonNegInt | None = None
    num_nextn_predict_layers: NonNegInt | None = None
    norm_topk_prob: bool = True  # renormalise the top-k routing weights (training activations only)
    rope_parameters: dict | None = None  # per layer type; read for partial_rotary_factor (activations only)

    # -- derived, as transformers derives them ---------------------------------------------------------
    @property
    def D_h(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def W(self) -> int | None:
        """``sliding_window``, or ``sliding_window_size`` + 1 (``MiMoV2FlashConfig.__post_init__``)."""
        return self.sliding_window_size + 1 if self.sliding_window_size is not None else self.sliding_window

    def rope_width(self, kind: str) -> int:
        """Width of a layer type's cos/sin table: int(D_h·partial_rotary_factor) rounded up to even
        (``MiMoV2FlashRotaryEmbedding``: inv_freq over arange(0, dim, 2), the frequencies doubled)."""
        rp = self.rope_parameters if isinstance(self.rope_parameters, dict) else {}
        own = rp.get(kind) if isinstance(rp.get(kind), dict) else None
        factor = (own or {}).get("partial_rotary_factor", 0.334)
        dim = int(self.D_h * factor)
        return 2 * ((dim + 1) // 2)

    def attention_kinds(self) -> list[str]:
        return list(self.layer_types) if self.layer_types is not None else default_layer_types(self.num_hidden_layers)

    def mlp_kinds(self) -> list[str]:
        if self.mlp_layer_types is not None:
            return list(self.mlp_layer_types)
        return [DENSE] + [SPARSE] * (self.num_hidden_layers - 1)

    @model_validator(mode="after")
    def _consistent(self):
        L = self.num_hidden_layers
        attn, mlp = self.attention_kinds(), self.mlp_kinds()
        for field, kinds, allowed in (("layer_types", attn, {FULL, SWA}), ("mlp_layer_types", mlp, {DENSE, SPARSE})):
            if len(kinds) != L:
                self.fail(field, f"has {len(kinds)} entries for num_hidden_layers={L}")
            if set(kinds) - allowed:
                self.fail(field, f"unknown entries {sorted(set(kinds) - allowed)} (allowed: {sorted(allowed)})")
        for field, pattern, want, source in (
                ("hybrid_layer_pattern", self.hybrid_layer_pattern, [int(k == SWA) for k in attn], "layer_types"),
                ("moe_layer_freq", self.moe_layer_freq, [int(k == SPARSE) for k in mlp], "mlp_layer_types")):
            if pattern is None:
                continue
            if len(pattern) != L:
                self.fail(field, f"has {len(pattern)} entries for num_hidden_layers={L}")
            if set(pattern) - {0, 1}:
                self.fail(field, f"unknown entries {sorted(set(pattern) - {0, 1})} (allowed: 0, 1)")
            if list(pattern) != want:
                layers = [i for i, (a, b) in enumerate(zip(pattern, want)) if a != b]
                self.fail(field, f"disagrees on layers {layers} with the {source} transformers builds "
                          f"({'given' if getattr(self, source) is not None else 'its default'}); transformers "
                          f"does not read {field}: state {source}")
        H_q, H_kv = self.num_attention_heads, self.num_key_value_heads
        if H_q % H_kv:
            self.fail("num_key_value_heads", f"num_attention_heads={H_q} is not divisible by "
                      f"num_key_value_heads={H_kv}")
        if SWA in attn:
            if self.W is None or self.W < 1:
                self.fail("sliding_window", f"sliding-attention layers need a positive window (got {self.W})")
            if H_q % (2 * H_kv):
                self.fail("num_key_value_heads", f"sliding layers have 2·num_key_value_heads={2 * H_kv} KV heads, "
                          f"which must divide num_attention_heads={H_q}")
            for field, want in (("swa_num_attention_heads", H_q), ("swa_num_key_value_heads", 2 * H_kv),
                                ("swa_head_dim", self.D_h), ("swa_v_head_dim", self.v_head_dim),
                                ("add_swa_attention_sink_bias", True)):
                if getattr(self, field) is not None and getattr(self, field) != want:
                    self.fail(field, f"is {getattr(self, field)}, but transformers' MiMoV2FlashAttention builds "
                              f"{want} on sliding layers (it does not read {field})")
        if FULL in attn and self.add_full_attention_sink_bias:
            self.fail("add_full_attention_sink_bias", "transformers' MiMoV2FlashAttention builds no sinks on "
                      "full-attention layers (it does not read this field)")
        if SPARSE in mlp:
            E, k = self.n_routed_experts, self.num_experts_per_tok
            if k > E:
                self.fail("num_experts_per_tok", f"{k} exceeds n_routed_experts={E}")
            g, tg = self.n_group or 1, self.topk_group or 1
            if E % g:
                self.fail("n_group", f"n_routed_experts={E} is not divisible by n_group={g}")
            if tg > g:
                self.fail("topk_group", f"{tg} exceeds n_group={g}")
            if k > tg * (E // g):
                self.fail("num_experts_per_tok", f"{k} exceeds the {tg * (E // g)} experts of the topk_group={tg} "
                          f"selected groups")
            if self.n_shared_experts:
                self.fail("n_shared_experts", f"is {self.n_shared_experts}, but transformers' MiMoV2FlashMoE "
                          "builds no shared expert")
        return self

    def source(self, field: str, hub: str) -> str:
        if getattr(self, field) is not None:
            return f"{field} as given"
        agree = f", which the file's {hub} states too" if getattr(self, hub) is not None else ""
        return f"{field}: transformers' default{agree}"

    # -- the model ---------------------------------------------------------------------------------------
    def layer(self, attn: str, mlp: str) -> tuple:
        swa = attn == SWA
        # saved tensors: the eager core's softmax runs in the compute dtype after a row-max subtraction;
        # each layer type has its own partial RoPE table (MiMoV2FlashRotaryEmbedding)
        attention = Attention(H_kv=2 * sym.H_kv if swa else sym.H_kv, D_v=sym.D_v, W=sym.W if swa else None,
                              qkv_bias=self.attention_bias, sinks=swa,
                              saves=SAVES.with_rope(D_rot=sympy.Integer(self.rope_width(attn)), name=attn))
        # MiMoV2FlashTopkRouter is DeepSeek-V3's group-limited sigmoid router (training activations only)
        ffn = FFN() if mlp == DENSE else MoE(correction_bias=True, router="sigmoid_group",
                                             norm_topk=self.norm_topk_prob, saves=MoESaves(input_copied=True))
        return (Norms(LAYER_NORMS), attention, ffn)

    def to_model(self) -> Model:
        attn, mlp = self.attention_kinds(), self.mlp_kinds()
        per_layer = list(zip(attn, mlp))
        combos = list(dict.fromkeys(per_layer))  # distinct (attention, MLP) kinds, in layer order
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                      H_q=self.num_attention_heads, H_kv=self.num_key_value_heads, D_h=self.D_h,
                      D_v=self.v_head_dim)
        by_attn = len({a for a, _ in combos}) == len(combos)
        by_mlp = len({m for _, m in combos}) == len(combos)
        count_sym = {FULL: sym.L_full, SWA: sym.L_swa, DENSE: sym.L_dense, SPARSE: sym.L_moe}
        groups = []
        for a, m in combos:
            n = per_layer.count((a, m))
            if len(combos) == 1:
                count = sym.L
            elif by_attn or by_mlp:
                count = count_sym[a if by_attn else m]
                vals[count] = sympy.Integer(n)
            else:  # an irregular mix: an integer count per (attention, MLP) kind
                count = sympy.Integer(n)
            name = f"{'swa' if a == SWA else 'full'}_{'moe' if m == SPARSE else 'dense'}_layers"
            groups.append(LayerGroup(name, count, self.layer(a, m)))
        if SWA in attn:
            vals.update(values(W=self.W))
        if DENSE in mlp:
            vals.update(values(d_ff=self.intermediate_size))
        if SPARSE in mlp:
            vals.update(values(E=self.n_routed_experts, k=self.num_experts_per_tok, d_moe=self.moe_intermediate_size))
        model = Model(self.name, self.model_type, (Embedding(),), tuple(groups),
                      (Norms(("norm",)), LMHead(tied=self.tie_word_embeddings)), vals,
                      layer_order=kind_order(per_layer, groups))
        model.notes.append(
            "layers: " + ", ".join(f"{per_layer.count(c)} × {'sliding' if c[0] == SWA else 'full'} attention + "
                                   f"{'MoE' if c[1] == SPARSE else 'dense MLP'}" for c in combos)
            + f" ({self.source('layer_types', 'hybrid_layer_pattern')}; "
            f"{self.source('mlp_layer_types', 'moe_layer_freq')})")
        if SWA in attn:
            src = (f"sliding_window_size={self.sliding_window_size} + 1" if self.sliding_window_size is not None
                   else f"sliding_window={self.W}" + ("" if "sliding_window" in self.model_fields_set
                                                      else " (transformers' default)"))
            model.notes.append(f"sliding layers: window W = {self.W} ({src}: the query and W − 1 previous keys; "
                               f"the cache keeps min(T, W − 1) tokens), 2·H_kv = {2 * self.num_key_value_heads} "
                               f"KV heads and H_q sinks; full layers: H_kv = {self.num_key_value_heads}, no sinks")
        if self.num_nextn_predict_layers:
            model.notes.append(f"MTP: num_nextn_predict_layers={self.num_nextn_predict_layers} module(s) in the "
                               "checkpoint are not built by transformers (model.mtp.* is dropped on load) and are "
                               "not counted; the config does not state their structure")
        else:
            model.notes.append("MTP: the released checkpoint's model.mtp.* weights are not built by transformers "
                               "(dropped on load) and not counted; the config states no MTP count")
        return model
