"""Chunked local attention (Llama 4): the sequence is cut into chunks of C_att tokens and a query
attends only to the keys of its own chunk, causally; with ``C=None`` the same layer is global.

Parameters: those of GQA attention (``components/attention.py``, transformers ``Llama4TextAttention``):
    q_proj d·H_q·D_h, k_proj and v_proj d·H_kv·D_h, o_proj H_q·D_h·d (+ biases with attention_bias).
    Llama 4's q/k norm is ``Llama4TextL2Norm``, a weightless L2 norm: 0 parameters.
(Query, key) pairs per sequence and head (``conventions``), QKᵀ and PV 2·B·H_q·D_h per pair each:
    full, prefill   T²: eager attention multiplies the whole rectangle, the chunk mask is added after
    full, decode    min(T, C_att − 1) + 1: transformers keeps chunked layers in a sliding-window
                    cache of C_att − 1 tokens (``DynamicSlidingWindowLayer``) and the new token
                    multiplies every key held plus its own
    causal, prefill Σ_{i<T} (i mod C_att + 1) = q·C_att(C_att + 1)/2 + r(r + 1)/2,
                    q = ⌊T/C_att⌋ whole chunks, r = T − q·C_att tokens in the last one
    causal, decode  the new token at position T sees r + 1 = T − C_att·⌊T/C_att⌋ + 1 keys
Cache: K and V, 2·B·H_kv·D_h per kept token, min(T, C_att − 1) kept (T for a global layer).
Elementwise (``symcost.core.elementwise``): as GQA attention (softmax over the pairs above, RoPE where
    the layer has it, one residual), plus the weightless L2 q/k norm 3·tokens·(H_q + H_kv)·D_h on
    RoPE layers with use_qk_norm, and on NoPE layers with attn_temperature_tuning the per-position
    temperature scaling of q, 1·tokens·H_q·D_h (the scale itself is once per position: not counted).

>>> from symcost.core.conventions import Phase
>>> ChunkedAttention().pairs(Phase(kind="decode", attention="causal"))
-C_att*floor(T/C_att) + T + 1
>>> ChunkedAttention().cache().total
2*B*D_h*H_kv*Min(T, C_att - 1)
>>> ChunkedAttention().pairs(Phase(attention="causal")).subs({sym.T: 10, sym.C_att: 4})
23
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Saved
from ..core.terms import Terms
from .attention import Attention


@dataclass(frozen=True)
class ChunkedAttention(Attention):
    C: sympy.Expr | None = sym.C_att  # chunk size (None: a global, full-attention layer)
    qk_l2norm: bool = False  # weightless L2 norm on q and k (Llama4TextL2Norm)
    temperature: bool = False  # attention temperature tuning of q on NoPE layers

    def pairs(self, ph: Phase) -> sympy.Expr:
        C, T = self.C, sym.T
        if C is None:
            return ph.pairs(None)
        if ph.attention == "full":
            return ph.pairs(C)  # the window buffer of C_att − 1 keys, as a sliding-window layer keeps
        whole = sympy.floor(T / C)
        rest = T - C * whole
        if ph.kind == "decode":
            return rest + 1
        return whole * C * (C + 1) / 2 + rest * (rest + 1) / 2

    def kept_tokens(self) -> sympy.Expr:
        return sym.T if self.C is None else sympy.Min(sym.T, self.C - 1)

    def elementwise(self, ph: Phase) -> Terms:
        t = super().elementwise(ph)
        rows = ph.tokens
        if self.qk_l2norm:
            t.add("qk_l2norm", COST["l2norm"] * rows * (self.H_q + self.H_kv) * self.D_h,
                  "weightless L2 norm on q and k")
        if self.temperature:
            t.add("temperature", COST["gate_mul"] * rows * self.H_q * self.D_h,
                  "q scaled by the per-position attention temperature")
        return t

    def saved(self, bw) -> list:
        """GQA attention's set (``Attention.saved``) plus what ``Llama4TextAttention`` adds, per token:
        RoPE layers rotate in complex fp32 (``view_as_complex(x.float())`` × freqs_cis, which needs no
        gradient: only the shared table is kept); the weightless L2 norm
        keeps its fp32 input 4·(H_q + H_kv)·D_h and rsqrt 4·(H_q + H_kv); NoPE layers with temperature
        tuning keep the fp32 scales [1, T, 1, 1] (4·T, batch-free, per layer)."""
        out = super().saved(bw)
        if bw.recompute == "full":
            return out
        H = self.H_q + self.H_kv
        if self.qk_l2norm:
            out += [Saved("l2norm/input_fp32", H * self.D_h, 4), Saved("l2norm/rsqrt", H, 4)]
        if self.temperature:
            out.append(Saved("attn_scales", 1, 4, "none", sym.T, "fp32 temperature per position [1, T, 1, 1]"))
        return out

    def saved_shared(self, bw) -> list:
        if not self.rope or bw.recompute == "full":
            return []
        return [Saved("rope_freqs_cis", 4 * self.D_h, 1, "none", sym.T,
                      "complex64 freqs_cis [1, T, D_h/2] (8 bytes each), computed once, read by every layer")]

    def label(self) -> str:
        kind = "chunked local attention" if self.C is not None else "global attention"
        return f"GQA {kind}" + ("" if self.rope else " (NoPE)")
