"""Qwen3.5 / Qwen3.6: the Qwen3-Next hybrid (Gated DeltaNet + gated full attention) with a dense or an
all-MoE FFN, as a text model or behind the Qwen ViT tower.

Each layer (transformers ``Qwen3_5DecoderLayer`` / ``Qwen3_5MoeDecoderLayer``): RMSNorm → mixer →
RMSNorm → FFN, the mixer following ``layer_types`` (default every ``full_attention_interval``-th layer,
4, is full attention). Differences from Qwen3-Next (``qwen3_next.py``), read from the 5.24 classes:
  * Gated DeltaNet (``Qwen3_5GatedDeltaNet``): the same weights, split into four projections
    (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a) instead of in_proj_qkvz / in_proj_ba; conv without
    bias, the same chunked scan and cache.
  * Full attention = ``Qwen3NextAttention``: q_proj 2·H_q·D_h wide (sigmoid output gate; the config's
    ``attn_output_gate`` is not read), per-head q/k RMSNorm, ``attention_bias`` on q/k/v/o; partial
    interleaved M-RoPE (no weights).
  * Norms are zero-centred RMSNorms ((1 + w)·x̂): the same d weights.
  * ``qwen3_5_text``: every FFN is a dense SwiGLU of ``intermediate_size`` (the config has no MoE fields).
    ``qwen3_5_moe_text``: every FFN is the Qwen3-Next MoE (router d·E, E experts of
    ``moe_intermediate_size``, one shared expert of ``shared_expert_intermediate_size`` with a sigmoid
    gate d → 1); ``mlp_only_layers`` and ``decoder_sparse_step`` are not read by the class.
  * The wrappers ``qwen3_5`` / ``qwen3_5_moe`` (``Qwen3_5ForConditionalGeneration`` /
    ``Qwen3_5MoeForConditionalGeneration``) add the Qwen3-VL vision tower without deepstack mergers
    (``components/qwen_vit.py``); the top-level ``tie_word_embeddings`` (default false) ties the head.
The checkpoint's MTP layers (``mtp_num_hidden_layers``, ``mtp.*``) are not built by transformers and
not counted. Every default is transformers' (``Qwen3_5TextConfig``, ``Qwen3_5MoeTextConfig``).
"""
from __future__ import annotations

from typing import Any, ClassVar

from pydantic import model_validator

from . import register
from .base import Adapter, LayerCount, PosInt
from .qwen3_next import Qwen3NextAdapter
from .qwen3_vl import QwenVLWrapper


class Qwen35Base(Qwen3NextAdapter):
    """The Qwen3.5 text fields (``Qwen3_5TextConfig`` defaults) over the Qwen3-Next layer layout."""

    split_proj: ClassVar[bool] = True

    vocab_size: PosInt = 248320
    hidden_size: PosInt = 4096
    num_hidden_layers: LayerCount = 32
    num_attention_heads: PosInt = 16
    num_key_value_heads: PosInt = 4
    linear_key_head_dim: PosInt = 128
    linear_value_head_dim: PosInt = 128
    linear_num_key_heads: PosInt = 16
    linear_num_value_heads: PosInt = 32
    # not read by the Qwen3.5 classes: every layer has the one FFN kind of its model type
    mlp_only_layers: Any = None
    decoder_sparse_step: Any = None
    norm_topk_prob: Any = None  # not read: Qwen3.5's router always renormalises the top-k weights

    def to_model(self):
        m = super().to_model()
        m.notes.append("Qwen3.5 MTP layers (mtp_num_hidden_layers) are not built by transformers and not counted")
        return m


@register("qwen3_5_text")
class Qwen35TextAdapter(Qwen35Base):
    reference: ClassVar[str] = "Qwen3_5ForCausalLM"

    model_type: str = "qwen3_5_text"
    intermediate_size: PosInt = 12288
    # Qwen3_5TextConfig has no MoE fields: ignored
    num_experts: Any = None
    num_experts_per_tok: Any = None
    moe_intermediate_size: Any = None
    shared_expert_intermediate_size: Any = None

    def ffn_kind(self, i: int) -> str:
        return "dense"


@register("qwen3_5_moe_text")
class Qwen35MoeTextAdapter(Qwen35Base):
    reference: ClassVar[str] = "Qwen3_5MoeForCausalLM"

    model_type: str = "qwen3_5_moe_text"
    hidden_size: PosInt = 2048
    num_hidden_layers: LayerCount = 40
    num_key_value_heads: PosInt = 2
    num_experts: PosInt = 256
    num_experts_per_tok: PosInt = 8
    moe_intermediate_size: PosInt = 512
    shared_expert_intermediate_size: PosInt = 512
    intermediate_size: Any = None  # not read: every layer is MoE

    @model_validator(mode="after")
    def _experts(self):
        if self.num_experts_per_tok > self.num_experts:
            self.fail("num_experts_per_tok", f"num_experts_per_tok={self.num_experts_per_tok} exceeds "
                      f"num_experts={self.num_experts}")
        return self

    def ffn_kind(self, i: int) -> str:
        return "moe"


@register("qwen3_5")
class Qwen35Adapter(QwenVLWrapper):
    reference: ClassVar[str] = "Qwen3_5ForConditionalGeneration"
    text_adapter: ClassVar[type[Adapter]] = Qwen35TextAdapter
    text_type: ClassVar[str] = "qwen3_5_text"
    deepstack: ClassVar[bool] = False


@register("qwen3_5_moe")
class Qwen35MoeAdapter(QwenVLWrapper):
    reference: ClassVar[str] = "Qwen3_5MoeForConditionalGeneration"
    text_adapter: ClassVar[type[Adapter]] = Qwen35MoeTextAdapter
    text_type: ClassVar[str] = "qwen3_5_moe_text"
    deepstack: ClassVar[bool] = False
