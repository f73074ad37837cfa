"""A routed MoE beside the dense FFN (Gemma 4 ``enable_moe_block``): both branches on every layer, summed.

transformers ``Gemma4TextDecoderLayer`` (5.24): the dense ``mlp`` (``ffn.FFN``, GeGLU d → d_ff) runs on
``pre_feedforward_layernorm(x)``. Beside it the router reads the raw residual x: ``Gemma4TextRouter`` is a
scale-free RMSNorm, a learned ``scale`` [d], ``proj`` d → E and softmax, then top-k renormalised and
multiplied by a learned ``per_expert_scale`` [E]. The experts (``Gemma4TextExperts``, gated, fused
gate_up [E, 2·d_moe, d] and down [E, d, d_moe]) run on ``pre_feedforward_layernorm_2(x)``. Each branch
has its own post-norm (``post_feedforward_layernorm_1`` / ``_2``) before the sum, and
``post_feedforward_layernorm`` follows the sum; those three norms of d are with the layer's norms.

Parameters: router d·E + d + E, routed experts E·3·d·d_moe. Active: router + k of E experts.
FLOPs: router 2·tokens·d·E, experts 2·tokens·k·3·d·d_moe (eager dispatch runs exactly k per token).
Elementwise: as ``moe.MoE``, plus the router's RMSNorm (4·d per token) and its scale (1·d).

>>> ParallelMoE().params().total
3*E*d*d_moe + E*d + E + d
>>> ParallelMoE().active_params().total
E*d + E + 3*d*d_moe*k + d
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Param, Saved
from ..core.terms import Terms
from .moe import MoE
from .norm import pow_rms_saved


@dataclass(frozen=True)
class ParallelMoE(MoE):
    key = "moe"
    act: str | None = "gelu_pytorch_tanh"

    def primitives(self, ph: Phase | None = None):
        return [*super().primitives(ph),
                Param("router_scale", self.d, doc="[d] learned scale after the router's RMSNorm"),
                Param("per_expert_scale", self.E, doc="[E] scales each chosen expert's weight")]

    def elementwise(self, ph: Phase) -> Terms:
        t = super().elementwise(ph)
        t.add("router_norm", (COST["rmsnorm"] + 1) * ph.tokens * self.d, "scale-free RMSNorm + scale")
        return t

    def saved(self, bw) -> list:
        """``MoE.saved`` (softmax router, eager experts) with ``Gemma4TextRouter`` in front, per token:
        no block input of its own (the raw residual x is read through the ``x.float()`` of the
        router's norm and of ``pre_feedforward_layernorm_2``: in fp32 the tensor
        ``pre_feedforward_layernorm`` keeps, below fp32 a copy each, the norms' own); the router's
        scale-free Gemma4RMSNorm (``norm.pow_rms_saved``, its fp32 input only below fp32), its
        output ``b_a·d`` (the product with ``scale`` keeps it), ``proj``'s input ``b_a·d``; after the
        fp32 softmax and top-k, the in-place renormalisation ``/=`` keeps a clone of the top-k
        weights 4·k, and the product with ``per_expert_scale[top_k_index]`` keeps that gathered
        scale ``b_a·k`` beside the renormalised weights."""
        a, d, k = sym.b_a, self.d, self.k
        norm = pow_rms_saved("router/norm", d, bw, scale=False)
        if not bw.upcast:  # x.float() is x: pre_feedforward_layernorm's input
            norm = [s for s in norm if not s.name.endswith("/input_fp32")]
        router = norm + [Saved("router/normed", d, a, "seq", doc="norm(x), read by × scale"),
                         Saved("router/proj_input", d, a, "seq", doc="norm(x)·scale·d^-1/2"),
                         Saved("router/topk_clone", k, 4, "seq", doc="top-k weights before the in-place /="),
                         Saved("router/expert_scale", k, a, "seq", doc="per_expert_scale[top_k_index]")]
        return router + [s for s in super().saved(bw) if s.name != "input"]

    def label(self) -> str:
        return "MoE beside the dense FFN"
