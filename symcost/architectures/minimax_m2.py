"""MiniMax M2 / M2.5 (transformers ``MiniMaxM2ForCausalLM``): GQA with whole-projection q/k norm, MoE.

Each layer: RMSNorm → attention (no biases; ``q_norm`` is one RMSNorm over all of q, H_q·D_h, and
``k_norm`` over all of k, H_kv·D_h — not per head; partial RoPE on ``rotary_dim`` of D_h costs
no parameters and no matmul) → RMSNorm → MoE (sigmoid router d·E without bias, E SwiGLU experts of
width d_moe = ``intermediate_size``, k per token, no shared expert) with an
``e_score_correction_bias`` [E] buffer per layer. Untied head.
transformers ignores ``use_qk_norm``, ``attn_type_list``, ``shared_intermediate_size`` and the MTP
fields; so does this adapter (the MTP modules of the checkpoint are not built, hence not counted).
A ``quantization_config`` (NVFP4, FP8, ...) changes bytes per weight, not the parameter count.
"""
from __future__ import annotations

from typing import Any, ClassVar

import sympy
from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention, AttentionSaves
from ..components.embedding import Embedding, LMHead
from ..components.moe import MoE
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model
from . import register
from .base import Int, PosInt, values
from .llama import LAYER_NORMS, LlamaAdapter


@register("minimax_m2")
class MiniMaxM2Adapter(LlamaAdapter):
    reference: ClassVar[str] = "MiniMaxM2ForCausalLM"
    #: switches of the Hub file that MiniMaxM2ForCausalLM builds one way only (symcost.architectures.fields)
    unused: ClassVar[dict[str, str]] = {
        "use_qk_norm": "QK norm is always built", "qk_norm_type": "always per layer over all heads",
        "use_routing_bias": "the routing bias buffer is always built",
        "attn_type_list": "every layer is full attention in the reference class"}

    num_local_experts: PosInt = Field(validation_alias=AliasChoices("num_experts", "num_local_experts"))
    num_experts_per_tok: PosInt = 8
    num_key_value_heads: PosInt = 8
    head_dim: PosInt = 128
    num_mtp_modules: Int = 0
    # partial RoPE, as MiniMaxM2Config resolves it (read by training activations: the cos/sin width)
    rope_parameters: Any = None
    partial_rotary_factor: float | None = None
    rotary_dim: PosInt | None = None

    def rotated_dims(self) -> int:
        factor = None
        if isinstance(self.rope_parameters, dict):
            factor = self.rope_parameters.get("partial_rotary_factor")
        if factor is None:
            factor = self.partial_rotary_factor
        if factor is None and self.rotary_dim is not None:
            factor = self.rotary_dim / self.D_h
        return int(self.D_h * (1.0 if factor is None else factor))

    @model_validator(mode="after")
    def _router(self):
        self.check_top_k("num_local_experts")
        return self

    def to_model(self) -> Model:
        rot = self.rotated_dims()
        layer = (Norms(LAYER_NORMS), Attention(qk_norm_full=True, saves=AttentionSaves().with_rope(
                     D_rot=None if rot == self.D_h else sympy.Integer(rot))),
                 MoE(correction_bias=True))
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers,
                      H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.D_h,
                      E=self.num_local_experts, k=self.num_experts_per_tok,
                      d_moe=self.intermediate_size)
        notes = ["weight bytes depend on the checkpoint dtype (quantization_config); "
                 "the parameter count does not"]
        if self.num_mtp_modules:
            notes.append(f"{self.num_mtp_modules} MTP modules in the checkpoint are not built by "
                         "transformers and not counted")
        return Model(self.name, self.model_type, (Embedding(),),
                     (LayerGroup("layers", sym.L, layer),),
                     (Norms(("norm",)), LMHead(tied=self.tie_word_embeddings)), vals, notes=notes)
