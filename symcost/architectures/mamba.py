"""Mamba and Falcon-Mamba: a pure Mamba-1 stack, each layer one RMSNorm and one selective-scan mixer.

transformers ``MambaForCausalLM`` / ``FalconMambaForCausalLM``: ``backbone.embeddings``,
L × (``norm`` → mixer), ``norm_f``, ``lm_head`` tied to the embedding when
``tie_word_embeddings`` (default True). The mixer is ``components.mamba`` with
d_ssm = ``intermediate_size``, which the config class sets to ``expand``·``hidden_size`` unless
the config gives one (a written-out value wins, as in transformers) and R_dt = ``time_step_rank`` (``"auto"``: ⌈hidden_size/16⌉,
as the config class derives it). Falcon-Mamba adds weightless RMSNorms on dt, B and C
(``FalconMambaWeightlessRMSNorm``: no parameters). The torch scan keeps the recurrent state in
float32 (``Model.state_dtype``).
"""
from __future__ import annotations

import math
from typing import ClassVar

from pydantic import model_validator

from ..components.embedding import Embedding, LMHead
from ..components.mamba import Mamba
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model
from . import register
from .base import Adapter, LayerCount, PosInt, values


def dt_rank(field: str, rank: int | str, hidden_size: int) -> int:
    """``time_step_rank`` as transformers resolves it: ``"auto"`` is ⌈hidden_size / 16⌉; anything
    else must be a positive integer (the mixer calls ``int()`` on it)."""
    if rank == "auto":
        return math.ceil(hidden_size / 16)
    if isinstance(rank, bool) or not isinstance(rank, int) or rank <= 0:
        Adapter.fail(field, f"must be a positive integer or \"auto\" (got {rank!r})")
    return rank


@register("mamba")
class MambaAdapter(Adapter):
    reference: ClassVar[str] = "MambaForCausalLM"
    bcdt_norm: ClassVar[str | None] = None

    vocab_size: PosInt = 50280
    hidden_size: PosInt = 768
    state_size: PosInt = 16
    num_hidden_layers: LayerCount = 32
    expand: PosInt = 2
    conv_kernel: PosInt = 4
    use_bias: bool = False
    use_conv_bias: bool = True
    intermediate_size: PosInt | None = None  # the config class sets expand·hidden_size; a given value wins
    time_step_rank: int | str = "auto"
    tie_word_embeddings: bool = True
    residual_in_fp32: bool = True  # the residual stream in fp32: the final norm returns fp32

    @model_validator(mode="after")
    def _consistent(self):
        dt_rank("time_step_rank", self.time_step_rank, self.hidden_size)
        return self

    @property
    def d_ssm(self) -> int:
        return self.intermediate_size or self.expand * self.hidden_size

    def to_model(self) -> Model:
        mixer = Mamba(bias=self.use_bias, conv_bias=self.use_conv_bias, bcdt_norm=self.bcdt_norm)
        vals = values(d=self.hidden_size, V=self.vocab_size, L=self.num_hidden_layers, N=self.state_size,
                      d_ssm=self.d_ssm, K_c=self.conv_kernel,
                      R_dt=dt_rank("time_step_rank", self.time_step_rank, self.hidden_size))
        return Model(self.name, self.model_type, (Embedding(name="embeddings"),),
                     (LayerGroup("layers", sym.L, (Norms(("norm",)), mixer)),),
                     (Norms(("norm_f",), kind="fp32_stream" if self.residual_in_fp32 else "standard"), LMHead(tied=self.tie_word_embeddings)), vals,
                     state_dtype={"recurrent_states": "float32"})


@register("falcon_mamba")
class FalconMambaAdapter(MambaAdapter):
    reference: ClassVar[str] = "FalconMambaForCausalLM"
    bcdt_norm: ClassVar[str | None] = "weightless"
