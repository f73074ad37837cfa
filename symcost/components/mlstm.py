"""mLSTM (xLSTM's matrix-memory cell), as transformers 5.24 runs it natively (``xLSTMLayer``,
``xLSTMBackend``, ``mlstm_recurrent_step_native``, ``mlstm_chunkwise_native_autograd``,
``wrap_chunkwise_arbitrary_sequence_length``).

Weights, per layer (``weight_mode`` ``single``; ``fused`` packs the same weights into
``qkv_opreact`` [d, 2·H_ml·D_mk + 2·H_ml·D_mv] and ``ifgate_preact`` [d, 2·H_ml]):
    q, k       d → H_ml·D_mk        v, ogate_preact  d → H_ml·D_mv     (bias with ``use_bias``)
    igate_preact, fgate_preact  d → H_ml with bias (always)
    multihead_norm  a per-head LayerNorm, weight H_ml·D_mv (+ bias with ``use_bias``)
    out_proj   H_ml·D_mv → d (bias with ``use_bias``)
The cell keeps, per head, a matrix memory C [D_mk, D_mv], a normaliser n [D_mk] and a stabiliser m.
One recurrent step (per token, per head): C ← f·C + i·k vᵀ (an outer product, a matmul of inner
size 1: 2·D_mk·D_mv), h_num = q·C (2·D_mk·D_mv), q·n (2·D_mk); so 2·(2·D_mk·D_mv + D_mk).
FLOPs of the cell, ``impl="reference"`` (mode ``inference``, what transformers computes): a prompt of
T > 1 tokens runs the chunkwise kernel on T_c = C_ml·⌊T/C_ml⌋ tokens — per token the chunk-state
update kᵀv 2·D_mk·D_mv, the intra-chunk scores Q·Kᵀ 2·C_ml·D_mk and M·V 2·C_ml·D_mv, the inter-chunk
q·C 2·D_mk·D_mv and q·n 2·D_mk — and the recurrent step on the T − T_c left over; one token
(decode, or T = 1) runs the step: 2·B·H_ml·(2·D_mk·D_mv + D_mk). (chunk_size 1 makes a T = 1
prompt take the step kernel, not the chunkwise form this counts.)
``impl="minimal"``: every token through the recurrent step, 2·B·T·H_ml·(2·D_mk·D_mv + D_mk), the
fewest FLOPs the cell needs (the chunkwise form trades FLOPs for parallelism).
State (``xLSTMCache.rnn_state``, in the model's dtype): C B·H_ml·D_mk·D_mv, n B·H_ml·D_mk, m B·H_ml
per layer, independent of T. transformers allocates these with head dims rounded up
(``qk_head_dim`` from ⌈hidden_size·qk_dim_factor⌉₆₄) and copies the cell's states into them, so when
int(hidden_size·factor) is not a multiple of 64 the cached forward fails; the weights and the
uncached forward are as counted.
Elementwise per token and head: gates (soft cap, log-sigmoid, exp) ~10, the state decay and update
3·D_mk·D_mv + 3·D_mk, the normalisation D_mv + 3, the per-head norm 7·D_mv and the output gate
sigmoid and product 5·D_mv (the chunkwise form's masks and exps over C_ml² per chunk are not counted).

The LM head of ``xLSTMForCausalLM`` takes no ``logits_to_keep``: under ``impl="reference"`` it runs on
every position even when only the last logits are wanted (``XlstmHead``); ``minimal`` follows ``--logits``.

>>> MLSTMLayer().params().total
2*D_mk*H_ml*d + 3*D_mv*H_ml*d + D_mv*H_ml + 2*H_ml*d + 2*H_ml
>>> MLSTMLayer().cache().total
B*D_mk*D_mv*H_ml + B*D_mk*H_ml + B*H_ml
>>> from symcost.core.conventions import Phase
>>> MLSTMLayer().flops(Phase(kind="decode"))["recurrent"]
2*B*H_ml*(2*D_mk*D_mv + D_mk)
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Param, Saved, is_one
from ..core.terms import Terms
from .base import Component
from .embedding import LMHead


@dataclass(frozen=True)
class MLSTMLayer(Component):
    key = "mlstm_layer"
    d: sympy.Expr = sym.d
    H: sympy.Expr = sym.H_ml
    D_k: sympy.Expr = sym.D_mk
    D_v: sympy.Expr = sym.D_mv
    C: sympy.Expr = sym.C_ml
    bias: bool = False  # use_bias
    fused: bool = False  # weight_mode "fused"
    gate_softcap: bool = True  # gate_soft_cap set: i and f pre-activations are cap·tanh(x/cap)
    mode: str = "inference"  # the backend's mode (``saved`` follows "inference", the default)

    def _cell(self, ph: Phase) -> list:
        B, T, H, Dk, Dv, C = sym.B, sym.T, self.H, self.D_k, self.D_v, self.C
        step = 2 * Dk * Dv + Dk
        if ph.kind == "decode":
            return [Matmul("recurrent", 2 * B * H * step, "one recurrent step: C update, q·C, q·n")]
        if ph.impl != "reference":
            return [Matmul("recurrent", 2 * B * T * H * step, "every token through the recurrent step")]
        chunked = C * sympy.floor(T / C)
        return [Matmul("chunkwise", 2 * B * H * chunked * (2 * Dk * Dv + C * Dk + C * Dv + Dk),
                       "C_ml·⌊T/C_ml⌋ tokens: kᵀv, Q·Kᵀ, M·V, q·C, q·n"),
                Matmul("recurrent", 2 * B * H * (T - chunked) * step, "the T mod C_ml tokens left, step by step")]

    def primitives(self, ph: Phase | None = None):
        d, H, Dk, Dv, b = self.d, self.H, self.D_k, self.D_v, self.bias
        if self.fused:
            prims = [Linear("qkv_opreact", d, 2 * H * Dk + 2 * H * Dv, b, doc="[d, 2·H_ml·D_mk + 2·H_ml·D_mv]"),
                     Linear("ifgate_preact", d, 2 * H, True, doc="[d, 2·H_ml] with bias")]
        else:
            prims = [Linear("q", d, H * Dk, b, doc="[d, H_ml·D_mk]"), Linear("k", d, H * Dk, b, doc="[d, H_ml·D_mk]"),
                     Linear("v", d, H * Dv, b, doc="[d, H_ml·D_mv]"),
                     Linear("ogate_preact", d, H * Dv, b, doc="[d, H_ml·D_mv]"),
                     Linear("igate_preact", d, H, True, doc="[d, H_ml] with bias"),
                     Linear("fgate_preact", d, H, True, doc="[d, H_ml] with bias")]
        prims.append(Param("multihead_norm", (2 if b else 1) * H * Dv, norm="layer",
                           doc="per-head LayerNorm [H_ml·D_mv]" + (" + bias" if b else "")))
        prims.append(Linear("out_proj", H * Dv, d, b, doc="[H_ml·D_mv, d]"))
        if ph is not None:
            prims += self._cell(ph)
        return prims

    def elementwise(self, ph: Phase) -> Terms:
        rows, H, Dk, Dv = ph.tokens, self.H, self.D_k, self.D_v
        return Terms({"gates": 10 * rows * H, "state": rows * H * (3 * Dk * Dv + 3 * Dk),
                      "normalise": rows * H * (Dv + 3), "multihead_norm": 7 * rows * H * Dv,
                      "output_gate": 5 * rows * H * Dv},
                     {"gates": "soft cap, log-sigmoid, exp of i and f", "state": "f·C + i·kvᵀ, f·n + i·k",
                      "normalise": "h_num / max(|q·n|, e^-m)", "multihead_norm": "per-head LayerNorm",
                      "output_gate": "σ(o)·h"})

    def saved(self, bw) -> list:
        """Saved for backward, one layer: transformers' native kernels (``scan="reference"``) in
        mode ``inference`` (the default; training takes that path too), fp32 — all measured in
        tests/test_activations.py. Per token (rows B·T): the projections' input ``b_a·d``; the two
        gate soft caps' tanh 2·H_ml; the multi-head LayerNorm over h (written out in fp32: h itself,
        rstd, x − mean, the normed copy) and the output gate σ(o), h_norm and the out_proj input.

        The cell, per sequence and head (rows B), with N = ⌊T/C_ml⌋ chunks, T_c = C_ml·N, R = T − T_c
        recurrent steps: the kernel's contiguous inputs — q over T_c, k and v over T, f over T, i
        over R (a slice that is already contiguous is a view: it keeps the whole projection, T); the
        chunk pass (``mlstm_chunkwise_recurrent_fw_C`` + ``_parallel_fw_H``): per chunk the passed
        state C [D_mk, D_mv] and n [D_mk] and two scalars, the all-chunk states buffer
        (N+1)·(D_mk·D_mv + D_mk) — with B·H_ml > 1 and N > 1 batched matmul copies the first N chunks' —
        per chunk token the gated k, q, the numerator, nine scalars and the int64 max indices, per
        (token, key) pair in a chunk the decay, scores and M (C_ml each), and the C_ml² causal mask
        (bool, per layer); each recurrent step (``mlstm_recurrent_step_native``): C cloned, the
        outer product k vᵀ and the new C (3·D_mk·D_mv), n cloned, the scaled q and the new n
        (3·D_mk), h_num D_mv and eight scalars; and the output h (concatenated) H_ml·D_mv per token.

        Below fp32 transformers' native chunkwise kernel fails (its fp32 initial states meet bf16
        keys in one matmul: "expected m1 and m2 to have the same dtype"), and the fused mlstm_kernels
        path keeps another set: neither is declared.
        """
        if bw.scan != "reference":
            raise NotImplementedError(f"{self.label()}: the fused (mlstm_kernels) training kernels' saved "
                                      "tensors are not declared (use --scan reference, transformers' native path)")
        if bw.upcast:
            raise NotImplementedError(f"{self.label()}: transformers' native chunkwise kernel fails below fp32 "
                                      "(fp32 initial states meet compute-dtype keys in one matmul), so its saved "
                                      "set below fp32 is not declared")
        if self.mode != "inference":
            raise NotImplementedError(f"{self.label()}: saved tensors are declared for mode 'inference' "
                                      f"(the default), not {self.mode!r}")
        a, B, T, H, Dk, Dv, C = sym.b_a, sym.B, sym.T, self.H, self.D_k, self.D_v, self.C
        N = sympy.floor(T / C)
        Tc = C * N
        R = T - Tc
        has_chunks, has_steps = sympy.Min(1, N), sympy.Min(1, R)
        # Which input slices ``.contiguous()`` copies. x[..., a:b, :] of the head-major view of a
        # [B, T, H_ml, D] projection is already contiguous — a view of the whole projection, T tokens —
        # for the chunk slice when H_ml = 1 and (B = 1 or R = 0), for the remainder when B = 1 and
        # (H_ml = 1 or R = 1) (C_ml ≥ 2 assumed)
        chunk_view = is_one(H) * (1 - (1 - is_one(B)) * has_steps)
        step_view = is_one(B) * has_steps * (1 - (1 - is_one(H)) * (1 - is_one(R)))
        both = T + (1 - chunk_view) * step_view * Tc  # k, v, f: chunk slice + remainder slice
        inputs = H * ((Tc + chunk_view * R * has_chunks) * Dk + both * (Dk + Dv + 1) + R + step_view * Tc)
        # batched matmul over the chunk states copies their first N chunks unless B·H_ml = 1 or N = 1
        state_slots = N + 1 - (1 - is_one(B) * is_one(H)) * (1 - is_one(N))
        state = Dk * Dv + Dk
        out = [Saved("input", self.d, a, "seq", doc="q/k/v/gate projections' input")]
        if self.gate_softcap:
            out.append(Saved("gate_softcap_tanh", 2 * H, a, doc="tanh of the i and f soft caps"))
        out += [
            Saved("kernel_inputs", inputs, 4, rows=B,
                  doc="q over T_c, k, v, f over T, i over R (or the whole projections their slices are views of)"),
            Saved("chunks/passed_states", H * N * (state + 2), 4, rows=B,
                  doc="per chunk: the state C, n it starts from and two scalars"),
            Saved("chunks/chunk_max", 3 * H * N, 4, rows=B, doc="int64 max indices and fp32 maxima per chunk"),
            Saved("chunks/states", H * state_slots * state * has_chunks, 4, rows=B,
                  doc="all-chunk C and n buffers, N + 1 slots (their first N copied by matmul when B·H > 1, N > 1)"),
            Saved("chunks/per_token", H * Tc * (2 * Dk + Dv + 11), 4, rows=B,
                  doc="gated k, q, numerator; decays, maxima, denominators; int64 max indices"),
            Saved("chunks/pairs", 3 * H * Tc * C, 4, rows=B, doc="decay, scores and M per (token, key) in a chunk"),
            Saved("chunks/causal_mask", C ** 2 * has_chunks, 1, "none", sympy.Integer(1), "bool tril [C_ml, C_ml], per layer"),
            Saved("steps", H * R * (3 * Dk * Dv + 3 * Dk + Dv + 8), 4, rows=B,
                  doc="per recurrent step: C clone, k vᵀ, new C, n clone, scaled q, new n, h_num, 8 scalars"),
            Saved("h", H * Dv, 4, doc="the cell's output (concatenated chunks and steps)"),
            Saved("multihead_norm", H * (Dv + 1), 4, doc="x − mean, rstd: fp32"),
            Saved("multihead_norm/normed", H * Dv, a, doc="normed copy the weight multiplies"),
            Saved("output_gate", 3 * H * Dv, a, doc="σ(o), h_norm and the out_proj input")]
        return out

    def cache(self) -> Terms:
        B, H = sym.B, self.H
        return Terms({"c_state": B * H * self.D_k * self.D_v, "n_state": B * H * self.D_k, "m_state": B * H},
                     {"c_state": "[B, H_ml, D_mk, D_mv] matrix memory", "n_state": "[B, H_ml, D_mk] normaliser",
                      "m_state": "[B, H_ml, 1] stabiliser"})

    def label(self) -> str:
        return "mLSTM"


class _AllRows:
    """A phase whose logits run on every new token (``logits="last"`` ignored)."""

    def __init__(self, ph: Phase):
        self._ph = ph

    def __getattr__(self, name):
        return getattr(self._ph, name)

    @property
    def logit_rows(self):
        return self._ph.tokens


@dataclass(frozen=True)
class XlstmHead(LMHead):
    """xLSTM's LM head: every position under ``impl="reference"`` (no ``logits_to_keep`` in transformers)."""

    def primitives(self, ph: Phase | None = None):
        if ph is not None and ph.impl == "reference":
            ph = _AllRows(ph)
        return super().primitives(ph)
