"""DeepSeek-V4 (``deepseek_v4``; transformers ``DeepseekV4ForCausalLM``).

Each layer: hyper-connected residual (n_hc streams, ``components/hyper_connections.py``) →
RMSNorm → shared-KV attention with a grouped low-rank output (``components/compressed_attention.py``)
of one of three kinds — sliding window only, CSA (overlapping compression by m_csa + a lightning
indexer keeping k_I entries, ``components/compressed_indexer.py``) or HCA (compression by m_hca) —
→ RMSNorm → MoE (router d·E, E experts of width d_moe, k per token, and ONE shared SwiGLU MLP of
width d_moe: transformers ignores ``n_shared_experts``). The stack ends in the hyper-connection
head, the final norm and the LM head.

Layers are grouped by attention kind (L_swa, L_csa, L_hca): hash-routed MoE layers (the first
``num_hash_layers``, or ``mlp_layer_types``) cost exactly what top-k layers cost, so they differ
only in their routing buffers, reported once by ``components/hash_routing.py``.
The layer kinds come from ``layer_types``, else the legacy per-layer ``compress_ratios``
(0 / 4 / 128 select the kind; it may list one more entry, for the MTP layer), else transformers'
default (2 HCA, then alternating HCA / CSA); the ratios themselves from ``compress_rates``
(legacy ``compress_rate_csa`` / ``compress_rate_hca``), default 4 and 128.

MTP (``num_nextn_predict_layers``) is not built by transformers; its weights go to
``Model.extras["mtp"]`` as DeepSeek's reference ``MTPBlock`` holds them: one V4 block (its kind
from ``compress_ratios[L]``, a top-k MoE with its e_score_correction_bias) plus e_proj and
h_proj [d, d], enorm, hnorm and norm d, and an hc head (n_hc²·d + n_hc + 1); embedding and
head are shared.
"""
from __future__ import annotations

from typing import ClassVar

import sympy
from pydantic import AliasChoices, Field, model_validator

from ..components.compressed_attention import CompressedAttention
from ..components.compressed_indexer import CompressedIndexer
from ..components.embedding import Embedding, LMHead
from ..components.hash_routing import RouterBuffers
from ..components.hyper_connections import HyperConnections, HyperHead
from ..components.moe import MoE, MoESaves
from ..components.norm import Norms
from ..core.notation import sym
from ..core.terms import Terms
from ..model.assembly import LayerGroup, Model, layer_order
from . import register
from .base import Adapter, Int, LayerCount, NonNegInt, PosInt, quote, values

SWA, CSA, HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"
RATIO_KIND = {0: SWA, 4: CSA, 128: HCA}  # transformers' _COMPRESS_RATIO_TO_LAYER_TYPE
LAYER_NORMS = ("input_layernorm", "post_attention_layernorm")


@register("deepseek_v4")
class DeepseekV4Adapter(Adapter):
    reference: ClassVar[str] = "DeepseekV4ForCausalLM"

    hidden_size: PosInt
    vocab_size: PosInt
    num_hidden_layers: LayerCount
    num_attention_heads: PosInt
    head_dim: PosInt = 512
    q_lora_rank: PosInt = 1024
    moe_intermediate_size: PosInt = Field(2048, validation_alias=AliasChoices(
        "intermediate_size", "moe_intermediate_size"))
    n_routed_experts: PosInt = Field(256, validation_alias=AliasChoices("num_local_experts", "n_routed_experts"))
    n_shared_experts: NonNegInt = 1
    num_experts_per_tok: PosInt = 6
    hc_mult: PosInt = 4
    hc_sinkhorn_iters: PosInt = 20  # read by training activations only (what the Sinkhorn loop saves)
    # the RoPE slice of each head (training activations only: what the rotations keep):
    # head_dim · partial_rotary_factor, else the legacy qk_rope_head_dim, else head_dim / 8
    partial_rotary_factor: float | None = None
    qk_rope_head_dim: PosInt | None = None
    sliding_window: PosInt = 128
    o_groups: PosInt = 8
    o_lora_rank: PosInt = 1024
    index_n_heads: PosInt = 64
    index_head_dim: PosInt = 128
    index_topk: PosInt = 512
    num_nextn_predict_layers: NonNegInt = 1
    tie_word_embeddings: bool = False
    mlp_bias: bool = False
    attention_bias: bool = False
    layer_types: list[str] | None = None
    compress_ratios: list[Int] | None = None
    compress_rates: dict[str, PosInt] | None = None
    compress_rate_csa: PosInt | None = None
    compress_rate_hca: PosInt | None = None
    mlp_layer_types: list[str] | None = None
    num_hash_layers: NonNegInt = 3

    @model_validator(mode="after")
    def _consistent(self):
        n = self.num_hidden_layers
        if self.layer_types is not None:
            if len(self.layer_types) < n:
                self.fail("layer_types", f"has {len(self.layer_types)} entries for num_hidden_layers={n}")
            bad = set(self.layer_types) - {SWA, CSA, HCA}
            if bad:
                self.fail("layer_types", f"unknown layer type(s) {quote(sorted(bad))}")
        elif self.compress_ratios is not None:
            if len(self.compress_ratios) < n:
                self.fail("compress_ratios", f"has {len(self.compress_ratios)} entries for num_hidden_layers={n}")
            bad = set(self.compress_ratios) - set(RATIO_KIND)
            if bad:
                self.fail("compress_ratios", f"entries must be 0, 4 or 128 (they select the layer kind; "
                          f"the ratios come from compress_rates), got {quote(sorted(bad))}")
        if self.mlp_layer_types is not None:
            if len(self.mlp_layer_types) < n:
                self.fail("mlp_layer_types", f"has {len(self.mlp_layer_types)} entries for num_hidden_layers={n}")
            if set(self.mlp_layer_types) - {"hash_moe", "moe"}:
                self.fail("mlp_layer_types", "entries must be 'hash_moe' or 'moe'")
        if self.num_experts_per_tok > self.n_routed_experts:
            self.fail("num_experts_per_tok", f"exceeds n_routed_experts={self.n_routed_experts}")
        if (self.num_attention_heads * self.head_dim) % self.o_groups:
            self.fail("o_groups", f"num_attention_heads·head_dim={self.num_attention_heads * self.head_dim} "
                      f"does not split into o_groups={self.o_groups} groups")
        if self.sliding_window < 2:
            self.fail("sliding_window", "must be >= 2 (the cache keeps sliding_window - 1 tokens)")
        if CSA in self.kinds() and self.index_topk < 1:
            self.fail("index_topk", "must be >= 1")
        return self

    # -- the schedule, as transformers' DeepseekV4Config.__post_init__ derives it ----------------
    def kinds(self) -> list[str]:
        n = self.num_hidden_layers
        if self.layer_types is not None:
            return list(self.layer_types[:n])
        if self.compress_ratios is not None:
            return [RATIO_KIND[r] for r in self.compress_ratios[:n]]
        return [HCA] * min(n, 2) + [CSA if i % 2 else HCA for i in range(max(n - 2, 0))]

    def mlp_kinds(self) -> list[str]:
        n = self.num_hidden_layers
        if self.mlp_layer_types is not None:
            return list(self.mlp_layer_types[:n])
        return ["hash_moe"] * min(n, self.num_hash_layers) + ["moe"] * max(0, n - self.num_hash_layers)

    def rates(self) -> dict[str, int]:
        rates = {CSA: 4, HCA: 128, **(self.compress_rates or {})}
        if self.compress_rate_csa is not None:
            rates[CSA] = self.compress_rate_csa
        if self.compress_rate_hca is not None:
            rates[HCA] = self.compress_rate_hca
        return rates

    # -- the model --------------------------------------------------------------------------------
    def mixer(self, kind: str) -> tuple:
        if kind == SWA:
            return (CompressedAttention(D_rope=sym.D_rope),)
        if kind == HCA:
            return (CompressedAttention(m=sym.m_hca, D_rope=sym.D_rope),)
        return (CompressedAttention(m=sym.m_csa, overlap=True, top_k=sym.k_I, D_rope=sym.D_rope), CompressedIndexer())

    def rope_dim(self) -> int:
        if self.partial_rotary_factor is not None:
            return int(self.head_dim * self.partial_rotary_factor)
        if self.qk_rope_head_dim is not None:
            return self.qk_rope_head_dim
        return int(self.head_dim * 64 / 512)

    def moe(self) -> MoE:
        # transformers' scoring_func default sqrtsoftplus; the clamped SiLU SwiGLU (swiglu_limit)
        return MoE(d_sh=sym.d_moe, proj_bias=self.mlp_bias, router="sqrt_softplus",
                   saves=MoESaves(weights_fp32=False, glu="clamped_silu"))

    def layer(self, kind: str) -> tuple:
        return (HyperConnections(sinkhorn_iters=sympy.Integer(self.hc_sinkhorn_iters)), Norms(LAYER_NORMS, kind="fp32_normed"), *self.mixer(kind), self.moe())

    def to_model(self) -> Model:
        kinds, mlp = self.kinds(), self.mlp_kinds()
        n_hash = mlp.count("hash_moe")
        spec = [(SWA, "swa_layers", sym.L_swa), (CSA, "csa_layers", sym.L_csa), (HCA, "hca_layers", sym.L_hca)]
        present = [(k, name, s) for k, name, s in spec if k in kinds]
        single = len(present) == 1
        groups = tuple(LayerGroup("layers" if single else name, sym.L if single else s, self.layer(k))
                       for k, name, s in present)
        rates = self.rates()
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                      H_q=self.num_attention_heads, D_h=self.head_dim, d_q=self.q_lora_rank,
                      g_o=self.o_groups, d_o=self.o_lora_rank, W=self.sliding_window,
                      E=self.n_routed_experts, k=self.num_experts_per_tok, d_moe=self.moe_intermediate_size,
                      n_hc=self.hc_mult, D_rope=self.rope_dim())
        if not single:
            vals.update(values(**{s.name: kinds.count(k) for k, _, s in present}))
        if CSA in kinds:
            vals.update(values(m_csa=rates[CSA], H_I=self.index_n_heads, D_I=self.index_head_dim,
                               k_I=self.index_topk))
        if HCA in kinds:
            vals.update(values(m_hca=rates[HCA]))
        if n_hash:
            vals.update(values(L_hash=n_hash))
        n_topk = self.num_hidden_layers - n_hash
        routing = RouterBuffers(hash_layers=sym.L_hash if n_hash else 0,
                                topk_layers=(sym.L - sym.L_hash if n_hash else sym.L) if n_topk else 0)
        model = Model(self.name, self.model_type, (Embedding(),), groups,
                      (HyperHead(), Norms(("norm",), kind="fp32_normed"), LMHead(tied=self.tie_word_embeddings), routing), vals,
                      # chunk_gate + the fp32 position_bias: the saved overlap gate is fp32 in a bf16 model
                      state_dtype={"overlap_gate": "float32", "index_overlap_gate": "float32"} if CSA in kinds else {},
                      layer_order=layer_order(kinds, {k: "layers" if single else name for k, name, _ in present}))
        if self.n_shared_experts != 1:
            model.notes.append(f"n_shared_experts={self.n_shared_experts} is ignored, as transformers ignores "
                               "it: one shared SwiGLU MLP of width moe_intermediate_size")
        if self.attention_bias:
            model.notes.append("attention_bias is ignored, as transformers ignores it: V4 attention has no biases")
        self.add_mtp(model, rates)
        return model

    def add_mtp(self, model: Model, rates: dict) -> None:
        n = self.num_nextn_predict_layers
        if not n:
            return
        L = self.num_hidden_layers
        if self.compress_ratios is not None and len(self.compress_ratios) > L:
            kind, source = RATIO_KIND.get(self.compress_ratios[L], SWA), f"compress_ratios[{L}]"
        else:
            kind, source = SWA, "assumed: the config lists no compress_ratios entry for it"
        layer = Terms()
        for c in self.layer(kind):
            layer.add(c.key, c.params(), c.label())
        layer.add("e_score_correction_bias", sym.E, "[E] router bias (a checkpoint tensor)")
        d, nh = sym.d, sym.n_hc
        mtp = Terms({"e_proj": d * d, "h_proj": d * d, "enorm": d, "hnorm": d, "norm": d,
                     "hc_head": nh * nh * d + nh + 1, "layer": layer},
                    {"e_proj": "[d, d] on the embedding", "h_proj": "[d, d] on the hidden streams",
                     "hc_head": "hc_head_fn, hc_head_base, hc_head_scale",
                     "layer": f"one V4 block, {kind} ({source}), top-k MoE"})
        model.extras.add("mtp", mtp.scale(sym.L_mtp), f"{n} multi-token-prediction module(s)")
        model.values.update(values(L_mtp=n))
        if kind == CSA:
            model.values.update(values(m_csa=rates[CSA], H_I=self.index_n_heads, D_I=self.index_head_dim,
                                       k_I=self.index_topk))
        if kind == HCA:
            model.values.update(values(m_hca=rates[HCA]))
        model.notes.append(f"MTP modules (extras, not in the total): DeepSeek's reference MTPBlock — one "
                           f"{kind} V4 block ({source}) + e_proj, h_proj [d, d] + enorm, hnorm, norm + an "
                           "hc head; embedding and LM head shared with the main model")
