"""RWKV-4: token shift, the time-mix (WKV) recurrence and the channel mix, as transformers 5.24 runs
them (``RwkvSelfAttention``, ``RwkvFeedForward``, ``rwkv_linear_attention_cpu``).

Time mix (``RwkvTimeMix``), per layer: the input x and x shifted one token back (the previous token,
or the state's last one) are interpolated per channel with ``time_mix_key/value/receptance`` [d];
``key``, ``value``, ``receptance`` d → d_att, σ(receptance); the WKV recurrence per channel with
``time_decay`` w and ``time_first`` u [d_att] (numerator, denominator and running maximum, all
elementwise); ``output`` d_att → d on σ(r)·wkv. Parameters 4·d·d_att + 2·d_att + 3·d; FLOPs
2·tokens·4·d·d_att (the recurrence is elementwise: 0 matmul FLOPs, so RWKV's FLOPs are linear in T).
Channel mix (``RwkvChannelMix``): the same token shift with ``time_mix_key/receptance`` [d];
``key`` d → d_ff, relu², ``value`` d_ff → d, ``receptance`` d → d, σ(r)·v. Parameters
2·d·d_ff + d² + 2·d; FLOPs 2·tokens·(2·d·d_ff + d²).
State (the five tensors ``RwkvModel`` allocates, each [B, d, L]): the channel mix's and the time
mix's last input (``ffn_shift``, ``att_shift``, the model dtype) and the WKV numerator, denominator
and maximum (``wkv_num``, ``wkv_den``, ``wkv_max``, float32): 5·B·d per layer, independent of T.
transformers allocates them d wide, so with ``attention_hidden_size`` ≠ ``hidden_size`` its cached
forward fails (the WKV state does not fit); the uncached forward and the weights are fine.
Decode under ``impl="reference"``: transformers 5.24's one-token path takes the shift state
``state[i][:, :, layer]`` ([B, d]) as the previous token without a time axis, so it broadcasts
against the [B, 1, d] input to [B, B, d] (measured: logits [B, B, V]); every later op, the head
included, then runs on B² rows — B²·(per-token FLOPs) per step, exact for B = 1 and a bug for B > 1.
the time mix, the channel mix and ``RwkvHead`` count that (``batch_squared``); ``minimal``
(default) counts the B rows a correct implementation runs.
Elementwise, per token: time mix 3·3·d interpolation, σ 4·d_att, WKV 25·d_att (the loop's adds,
maxima, exps, products and the division, exp counted 1), σ(r)·wkv d_att, residual d; channel mix
2·3·d interpolation, relu² 2·d_ff, σ 4·d, product d, residual d.

>>> RwkvTimeMix().params().total
4*d*d_att + 3*d + 2*d_att
>>> RwkvChannelMix().params().total
d**2 + 2*d*d_ff + 2*d
>>> RwkvTimeMix().cache().total + RwkvChannelMix().cache().total
5*B*d
>>> from symcost.core.conventions import Phase
>>> RwkvChannelMix().flops(Phase(kind="decode", impl="reference")).total
2*B**2*d**2 + 4*B**2*d*d_ff
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Linear, Param, Saved
from ..core.terms import Terms
from .base import Component
from .embedding import LMHead
from .norm import Norms

WKV_STEP = 25  # elementwise FLOPs of one WKV step per channel in rwkv_linear_attention_cpu
STATE_FP32 = ("wkv_num", "wkv_den", "wkv_max")


@dataclass(frozen=True)
class RwkvTimeMix(Component):
    key = "attention"
    d: sympy.Expr = sym.d
    d_att: sympy.Expr = sym.d_att

    def primitives(self, ph: Phase | None = None):
        d, a = self.d, self.d_att
        rows = None if ph is None else batch_squared(ph).tokens
        return [Param("time_decay", a, doc="[d_att] w (float32)"),
                Param("time_first", a, doc="[d_att] u (float32)"),
                Param("time_mix", 3 * d, doc="time_mix_key, _value, _receptance [1, 1, d] each"),
                Linear("key", d, a, rows=rows, doc="[d, d_att]"),
                Linear("value", d, a, rows=rows, doc="[d, d_att]"),
                Linear("receptance", d, a, rows=rows, doc="[d, d_att]"),
                Linear("output", a, d, rows=rows, doc="[d_att, d]")]

    def elementwise(self, ph: Phase) -> Terms:
        rows, d, a = batch_squared(ph).tokens, self.d, self.d_att
        return Terms({"token_shift_mix": 3 * 3 * rows * d, "sigmoid": COST["sigmoid"] * rows * a,
                      "wkv": WKV_STEP * rows * a, "gate": rows * a, "residual": COST["residual"] * rows * d},
                     {"token_shift_mix": "x·μ + x_prev·(1 − μ) for k, v, r", "sigmoid": "σ(receptance)",
                      "wkv": "the WKV recurrence, 25 per channel per token", "gate": "σ(r)·wkv",
                      "residual": "residual add"})

    def saved(self, bw) -> list:
        """Saved for backward (transformers' ``RwkvSelfAttention`` and ``rwkv_linear_attention_cpu``),
        per token row: the normed input x and its shift x_prev (d each), the three mixed inputs of
        key/value/receptance (d each), the key and value outputs (d_att each, read by the loop), σ(r)
        (d_att), the WKV output buffer and the output projection's input (d_att each); the loop's
        fp32 tensors, 11 per token and channel: per step k+u, e1, e2, the numerator and denominator,
        m+w, e1', e2' and the three states it reads (numerator, denominator, maximum; the final
        step's m+w, e1', e2' stay alive with its unused state); below fp32 each step's
        ``current_key.float()`` copy too, which the loop reads instead of the key output (not kept then). Batch-free: the three (1 − μ) [d] and exp(time_decay) [d_att].
        Measured exact in fp32 (tests/test_activations.py); in bf16 it equals the measurement but for
        CPU LayerNorm keeping its mean and rstd in bf16 (the engine counts them fp32, as CUDA keeps
        them; tests/test_rwkv_xlstm.py pins that difference).
        """
        a, d, A = sym.b_a, self.d, self.d_att
        one = sympy.Integer(1)
        loop = 12 if bw.upcast else 11
        return [Saved("normed_input", d, a, "seq"), Saved("shifted", d, a, "seq"),
                Saved("mixed_kvr", 3 * d, a, "seq", doc="x·μ + x_prev·(1 − μ) for key, value, receptance"),
                Saved("key_value", (1 if bw.upcast else 2) * A, a,
                      doc="value (and in fp32 key) outputs, read by the loop"),
                Saved("receptance_sigmoid", A, a), Saved("wkv_output", A, a), Saved("output_input", A, a),
                Saved("wkv_loop_fp32", loop * A, 4, doc=f"{loop} fp32 [B, d_att] tensors per step"),
                Saved("one_minus_mix", 3 * d, a, "none", one, "(1 − μ) [1, 1, d], three (batch-free)"),
                Saved("exp_time_decay", A, a, "none", one, "exp(time_decay) [d_att] (batch-free)")]

    def cache(self) -> Terms:
        B, d = sym.B, self.d
        return Terms({"att_shift": B * d, "wkv_num": B * d, "wkv_den": B * d, "wkv_max": B * d},
                     {"att_shift": "state[1][:, :, layer] [B, d]: the last input",
                      "wkv_num": "state[2][:, :, layer] [B, d] float32", "wkv_den": "state[3][:, :, layer] [B, d] float32",
                      "wkv_max": "state[4][:, :, layer] [B, d] float32"})

    def label(self) -> str:
        return "RWKV-4 time mix"


@dataclass(frozen=True)
class RwkvChannelMix(Component):
    key = "feed_forward"
    d: sympy.Expr = sym.d
    d_ff: sympy.Expr = sym.d_ff

    def primitives(self, ph: Phase | None = None):
        d, f = self.d, self.d_ff
        rows = None if ph is None else batch_squared(ph).tokens
        return [Param("time_mix", 2 * d, doc="time_mix_key, _receptance [1, 1, d] each"),
                Linear("key", d, f, rows=rows, doc="[d, d_ff], then relu²"),
                Linear("receptance", d, d, rows=rows, doc="[d, d]"),
                Linear("value", f, d, rows=rows, doc="[d_ff, d]")]

    def elementwise(self, ph: Phase) -> Terms:
        rows, d, f = batch_squared(ph).tokens, self.d, self.d_ff
        return Terms({"token_shift_mix": 2 * 3 * rows * d, "relu2": COST["relu2"] * rows * f,
                      "sigmoid": COST["sigmoid"] * rows * d, "gate": rows * d, "residual": COST["residual"] * rows * d},
                     {"token_shift_mix": "x·μ + x_prev·(1 − μ) for k, r", "relu2": "relu(key)²",
                      "sigmoid": "σ(receptance)", "gate": "σ(r)·value", "residual": "residual add"})

    def saved(self, bw) -> list:
        """Saved for backward (``RwkvFeedForward``), per token row: the normed input and its shift
        (d each), the mixed inputs of key and receptance (d each), relu(key) and its square
        (d_ff each), σ(receptance) and the value output (d each). Batch-free: the two (1 − μ) [d]."""
        a, d, f = sym.b_a, self.d, self.d_ff
        return [Saved("normed_input", d, a, "seq"), Saved("shifted", d, a, "seq"),
                Saved("mixed_kr", 2 * d, a, "seq"), Saved("relu", f, a), Saved("relu_squared", f, a),
                Saved("receptance_sigmoid", d, a, "seq"), Saved("value_output", d, a, "seq"),
                Saved("one_minus_mix", 2 * d, a, "none", sympy.Integer(1), "(1 − μ) [1, 1, d], two (batch-free)")]

    def cache(self) -> Terms:
        return Terms({"ffn_shift": sym.B * self.d}, {"ffn_shift": "state[0][:, :, layer] [B, d]: the last input"})

    def label(self) -> str:
        return "RWKV-4 channel mix"


class _BatchSquaredPhase:
    """A reference decode phase whose token rows are B² (see the module docstring)."""

    def __init__(self, ph: Phase):
        self._ph = ph

    def __getattr__(self, name):
        return getattr(self._ph, name)

    @property
    def tokens(self):
        return sym.B * sym.B

    @property
    def logit_rows(self):
        return sym.B * sym.B if self._ph.logits == "all" else sym.B


def batch_squared(ph: Phase | None):
    """The phase RWKV's layers and head see: B² rows in a reference decode, else ``ph``."""
    if ph is not None and ph.kind == "decode" and ph.impl == "reference":
        return _BatchSquaredPhase(ph)
    return ph


@dataclass(frozen=True)
class RwkvHead(LMHead):
    """The LM head after RWKV's blocks: B² rows in a reference decode."""

    def primitives(self, ph: Phase | None = None):
        return super().primitives(batch_squared(ph))


@dataclass(frozen=True)
class RwkvPreLN(Norms):
    """``pre_ln``, the LayerNorm inside the first block only: counted once, at the top; under full
    recomputation it is recomputed with that block, so it keeps nothing of its own."""

    names: tuple[str, ...] = ("pre_ln",)
    bias: bool = True

    def saved(self, bw) -> list:
        return [] if bw.recompute == "full" else super().saved(bw)
