"""LongCat-Flash (``longcat_flash``): MLA, dense SwiGLU and a shortcut-connected MoE with zero experts.

Each of the ``num_layers`` decoder layers (transformers ``LongcatFlashDecoderLayer``) is a double
block: two sublayers, each input RMSNorm → MLA (``components/mla.py``; always with a q LoRA, the
LoRA scales are elementwise) → post-attention RMSNorm → dense SwiGLU of ``ffn_hidden_size``; the
first sublayer's post-attention output also feeds one MoE (``components/zero_experts.py``:
``n_routed_experts`` real experts of ``expert_ffn_hidden_size``, ``zero_expert_num`` identity
experts, ``moe_topk`` slots per token) whose output is added after the second sublayer. So the
stack is two groups: ``sublayers`` (2·L of them, norms + MLA + FFN) and ``shortcut_moe`` (L), with
L = ``num_layers``; transformers' ``num_hidden_layers`` = 2·L is a property (``num_hidden_layers``
in a config sets ``num_layers`` = its half, floored, and wins over ``num_layers``). The cache holds
one MLA latent per sublayer: 2·L layers.

Config names and aliases (``LongcatFlashConfig.attribute_map``, read first as transformers' setattr
order does): ``num_local_experts`` → ``n_routed_experts``, ``num_experts_per_tok`` → ``moe_topk``,
``intermediate_size`` → ``ffn_hidden_size``, ``moe_intermediate_size`` → ``expert_ffn_hidden_size``.
``router_bias`` is no declared field but the router reads it (``getattr``). MTP modules
(``model.mtp.*``) are ignored on load and not built; the config says nothing of their shape, so
no extras are reported.
"""
from __future__ import annotations

from typing import ClassVar

import sympy
from pydantic import AliasChoices, Field, model_validator

from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.mla import MLA
from ..components.norm import Norms
from ..components.zero_experts import ZeroExpertMoE
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model
from . import register
from .base import MAX_LAYERS, Adapter, LayerCount, NonNegInt, PosInt, values
from .deepseek import check_mla_heads
from .llama import LAYER_NORMS


def _alias(default, *names: str):
    return Field(default, validation_alias=AliasChoices(*names))


@register("longcat_flash")
class LongcatFlashAdapter(Adapter):
    reference: ClassVar[str] = "LongcatFlashForCausalLM"

    vocab_size: PosInt = 131072
    hidden_size: PosInt = 6144
    num_layers: LayerCount = 28
    num_attention_heads: PosInt = 64
    num_key_value_heads: PosInt | None = None
    ffn_hidden_size: PosInt = _alias(12288, "intermediate_size", "ffn_hidden_size")
    q_lora_rank: PosInt = 1536
    kv_lora_rank: PosInt = 512
    qk_nope_head_dim: PosInt = 128
    qk_rope_head_dim: PosInt = 64
    v_head_dim: PosInt = 128
    qk_head_dim: PosInt | None = None
    head_dim: PosInt = 64  # the rotary table's width (no weight reads it)
    moe_topk: PosInt = _alias(12, "num_experts_per_tok", "moe_topk")
    n_routed_experts: PosInt = _alias(512, "num_local_experts", "n_routed_experts")
    zero_expert_num: NonNegInt = 256
    expert_ffn_hidden_size: PosInt = _alias(2048, "moe_intermediate_size", "expert_ffn_hidden_size")
    attention_bias: bool = False
    router_bias: bool = False
    tie_word_embeddings: bool = False

    @model_validator(mode="before")
    @classmethod
    def _half_layers(cls, data):
        """``num_hidden_layers`` is transformers' property 2·num_layers; given, it sets num_layers (a null,
        as the original remote config class writes it, is read as absent)."""
        if isinstance(data, dict) and data.get("num_hidden_layers", None) is not None:
            n = data["num_hidden_layers"]
            if type(n) is int and 0 <= n <= 2 * MAX_LAYERS:
                data = {**data, "num_layers": n // 2}
            else:
                cls.fail("num_hidden_layers", f"must be a positive integer (got {n!r:.80})")
            if n // 2 == 0:
                cls.fail("num_hidden_layers", f"num_hidden_layers={n} gives num_layers = {n} // 2 = 0 "
                         "double blocks")
        return data

    @model_validator(mode="after")
    def _consistent(self):
        check_mla_heads(self)
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        if self.qk_head_dim not in (None, qk):
            self.fail("qk_head_dim", f"the query splits into qk_nope_head_dim + qk_rope_head_dim = {qk} "
                      f"per head (got {self.qk_head_dim})")
        pool = self.n_routed_experts + self.zero_expert_num
        if self.moe_topk > pool:
            self.fail("moe_topk", f"moe_topk={self.moe_topk} exceeds n_routed_experts + zero_expert_num = {pool}")
        return self

    def to_model(self) -> Model:
        E, Z, k = self.n_routed_experts, self.zero_expert_num, self.moe_topk
        moe = ZeroExpertMoE(E_z=sym.E_z if Z else sympy.Integer(0), k_r=sym.k if k <= E else sym.E,
                            router_bias=self.router_bias)
        sub = (Norms(LAYER_NORMS), MLA(bias=self.attention_bias), FFN())
        # full recomputation checkpoints each decoder layer (two sublayers and their shortcut MoE) once
        groups = (LayerGroup("sublayers", 2 * sym.L, sub, checkpoints=sym.L),
                  LayerGroup("shortcut_moe", sym.L, (moe,), checkpoints=sympy.Integer(0)))
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_layers, H_q=self.num_attention_heads,
                      d_q=self.q_lora_rank, d_kv=self.kv_lora_rank, D_nope=self.qk_nope_head_dim,
                      D_rope=self.qk_rope_head_dim, D_v=self.v_head_dim, d_ff=self.ffn_hidden_size,
                      E=E, k=k, d_moe=self.expert_ffn_hidden_size, E_z=Z or None)
        # one decoder layer = two sublayers and the shortcut MoE beside them (never split by a pipeline)
        model = Model(self.name, self.model_type, (Embedding(),), groups,
                      (Norms(("norm",)), LMHead(tied=self.tie_word_embeddings)), vals,
                      layer_order=(("sublayers", "sublayers", "shortcut_moe"),) * self.num_layers)
        model.notes.append(
            f"zero experts: the router picks {k} of {E} real + {Z} identity experts; active parameters and "
            f"FLOPs count min(k, E) = {min(k, E)} real experts per token, the most a token can run (eager "
            "transformers runs a real expert only for the slots the router gives one)")
        if Z:
            extra = 2 * Z * self.num_layers * self.hidden_size * self.expert_ffn_hidden_size
            model.notes.append(f"transformers allocates gate_up_proj rows for the {Z} zero experts too "
                               "(experts_gate_up_zero, counted in the total as the class registers it; "
                               f"never read, absent from the checkpoint, which holds {extra:,} parameters fewer)")
        if self.head_dim != self.qk_rope_head_dim:
            model.notes.append(f"head_dim={self.head_dim} differs from qk_rope_head_dim={self.qk_rope_head_dim}: "
                               "transformers builds its rotary table head_dim wide and its forward then fails; "
                               "the weights are as counted")
        return model
