"""Counting conventions, frozen and passed with every FLOPs question.

* A multiply-accumulate is 2 FLOPs: a weight GEMM over ``n`` token rows costs ``2·n·in·out``.
  Bias adds, norms, activations, softmax and RoPE are not matmuls and count 0 (what
  ``torch.utils.flop_counter.FlopCounterMode`` measures).
* ``attention="full"``: every query against every key in the attention buffer, as eager
  attention computes it (the mask is applied after the matmul). Prefill: ``T·T`` pairs per head;
  decode at context ``T``: ``T+1`` keys, or ``min(T, W-1) + 1`` for a sliding-window layer
  whose cache keeps ``W-1`` tokens.
* ``attention="causal"``: only the (query, key) pairs the causal and window masks keep, exactly:
  ``T(T+1)/2`` in prefill, ``Σ_i min(i, W)`` with a window ``W``.
* ``logits="all"``: the LM head runs on every new position; ``"last"``: only on the last one.
* ``mla="auto"`` (default): expanded for prefill, absorbed for decode — how vLLM's and SGLang's
  MLA backends run it (prefill decompresses the latents once and runs ordinary attention; decode
  attends in the latent space). ``"expand"``: every pass re-expands the cached latents through
  ``kv_b_proj`` (transformers' reference code, what the oracle tests measure); ``"absorb"``:
  the up-projections are folded into the query and output in both phases.
* ``impl="minimal"`` (default): what the mathematics needs — chunked scans over exactly ``T``
  tokens with a linear pass of states between chunks, the recurrent decode update counted as
  the matrix-vector products it is. ``impl="reference"``: what the transformers torch path
  computes and FlopCounterMode measures (prompt padded to the chunk size, the all-pairs chunk
  state einsum, broadcast-multiply recurrences that count 0, the decode conv over K_c+1 columns).
* Prefill of ``T`` tokens has context ``T``; decode at ``T`` has ``T`` cached tokens and one new
  token.
* Training activations (``Backward``): the tensors autograd saves for backward in transformers'
  reference modules (what the oracle tests measure), each storage once, parameters
  excluded, dropout off. ``kernel="eager"`` materialises the fp32 softmax probabilities
  (``H_q·T`` per token, plus their copy in the compute dtype); ``"flash"`` (SDPA /
  FlashAttention) saves q, k, v, the output and an fp32 log-sum-exp per head instead.
  ``recompute="selective"`` checkpoints the attention core (QKᵀ, softmax, PV: its inputs q, k, v
  are kept); ``"full"`` checkpoints every layer (its input is kept).
"""
from __future__ import annotations

from typing import Literal

import sympy
from pydantic import BaseModel, ConfigDict

from .notation import sym


class Backward(BaseModel):
    """What one training forward keeps for backward: attention kernel, recomputation, dtype."""

    model_config = ConfigDict(frozen=True)

    kernel: Literal["eager", "flash"] = "flash"
    recompute: Literal["none", "selective", "full"] = "none"
    act_dtype: Literal["bf16", "fp16", "fp32"] = "bf16"
    #: the recurrent mixers' training kernels (Mamba-1/2, Gated DeltaNet): ``fused`` — the CUDA/Triton
    #: kernels a GPU run dispatches to (mamba_ssm, fla), which keep little more than their inputs and
    #: recompute the scan in backward; ``reference`` — transformers' torch fallback (the chunked scans
    #: written in einsums, what a CPU run executes and ``tests/test_activations.py`` measures)
    scan: Literal["fused", "reference"] = "fused"

    @property
    def upcast(self) -> bool:
        """True when fp32 intermediates (softmax, norm input) are copies, not the activation itself."""
        return self.act_dtype != "fp32"

    def describe(self) -> str:
        return (f"saved for backward: attention kernel={self.kernel}, recompute={self.recompute}, "
                f"activations {self.act_dtype} (b_a bytes), fp32 softmax/norm statistics, int64 indices; "
                f"{self.scan} recurrent scans; "
                f"dropout off")


class Phase(BaseModel):
    """One forward pass: what runs, over how many tokens, under which convention."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    kind: Literal["prefill", "decode"] = "prefill"
    attention: Literal["full", "causal"] = "full"
    logits: Literal["all", "last"] = "all"
    mla: Literal["auto", "expand", "absorb"] = "auto"
    impl: Literal["minimal", "reference"] = "minimal"

    @property
    def absorbed(self) -> bool:
        """Whether MLA runs absorbed in this pass (``mla="auto"``: decode only)."""
        return self.mla == "absorb" or (self.mla == "auto" and self.kind == "decode")

    @property
    def mla_mode(self) -> str:
        """The MLA form this pass actually uses: ``"absorb"`` or ``"expand"``."""
        return "absorb" if self.absorbed else "expand"

    @property
    def new(self) -> sympy.Expr:
        """New tokens per sequence: ``T`` in prefill, 1 in decode."""
        return sym.T if self.kind == "prefill" else sympy.Integer(1)

    @property
    def tokens(self) -> sympy.Expr:
        """Token rows every weight GEMM runs over: ``B·T`` (prefill) or ``B`` (decode)."""
        return sym.B * self.new

    @property
    def context(self) -> sympy.Expr:
        """Keys visible to the last new token: ``T`` (prefill) or ``T+1`` (decode)."""
        return sym.T if self.kind == "prefill" else sym.T + 1

    @property
    def logit_rows(self) -> sympy.Expr:
        return self.tokens if self.logits == "all" else sym.B

    def pairs(self, W: sympy.Expr | None = None) -> sympy.Expr:
        """(query, key) pairs per sequence and head that attention multiplies."""
        T = sym.T
        if self.kind == "decode":
            if W is None:
                return T + 1
            # The window buffer keeps W-1 cached keys, plus the new one.
            return sympy.Min(T, W - 1) + 1 if self.attention == "full" else sympy.Min(T + 1, W)
        if self.attention == "full":
            return T * T  # eager attention multiplies the whole rectangle, window or not
        if W is None:
            return T * (T + 1) / 2
        # Σ_{i=1..T} min(i, W): the triangle until the window fills, then W keys per query.
        return sympy.Piecewise((T * (T + 1) / 2, T <= W), (T * W - W * (W - 1) / 2, True))

    def describe(self) -> str:
        return (f"phase={self.kind}, attention={self.attention}, logits={self.logits}, "
                f"mla={self.mla}{'' if self.mla != 'auto' else ' (' + self.mla_mode + 'ed in ' + self.kind + ')'}, impl={self.impl}; 1 multiply-accumulate = 2 FLOPs; matmuls only")
