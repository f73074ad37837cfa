"""KV sharing: attention layers that reuse keys and values instead of projecting their own.

Two mechanisms of transformers' ``Gemma4TextAttention`` (5.24), both on top of ``attention.Attention``
(per-head q/k RMSNorm of D_h, o_proj; H_kv KV heads of D_h):

* **K = V** (``attention_k_eq_v``, full-attention layers only): the value states are the raw
  ``k_proj`` output, so there is no ``v_proj``. Parameters lose d·H_kv·D_h; the cache still holds keys
  and values (values pass through a scale-free RMSNorm ``v_norm`` and skip RoPE), 2·B·H_kv·D_h per token.
* **Cross-layer KV sharing** (``num_kv_shared_layers``): the last ``L_sh`` layers build no k/v of their
  own. Each reads the key/value states of the last earlier layer of its type (sliding or full) that does
  project them, the ``"store"`` layer of ``Gemma4TextConfig.kv_sharing_modes``. A consumer layer keeps
  q_proj d·H_q·D_h, q_norm D_h and o_proj H_q·D_h·d, and drops k_proj, v_proj, k_norm (and v_norm, which
  has no weight). Its cache is nothing (a ``"dummy"`` layer of the ``DynamicCache``). Its QKᵀ and PV run
  over the producer's buffer, which has the same pairs as its own layer type (``Phase.pairs``).
  In a prefill that keeps only the last logits (``logits="last"``: ``generate`` passes
  ``logits_to_keep=1``), ``Gemma4TextModel._maybe_slice_kv_shared_inputs`` cuts the hidden states to the
  last position before the first consumer layer. Those layers then run on one row per sequence
  (B rows), and each query meets the producer's T keys: T pairs under ``full`` (the whole key buffer),
  min(T, W) under ``causal``. ``LastPosition`` wraps any of a consumer layer's components so that they
  see that phase.

Elementwise: RoPE and RMSNorm only on q for a consumer layer; v_norm 4·tokens·H_kv·D_h on a producer.

>>> from symcost.core.notation import sym
>>> SharedKVAttention(consumer=True).params().total
2*D_h*H_q*d + D_h
>>> SharedKVAttention(k_eq_v=True).params().total - 2*sym.D_h
D_h*H_kv*d + 2*D_h*H_q*d
>>> SharedKVAttention(consumer=True).cache().total
0
>>> from symcost.core.conventions import Phase
>>> LastPosition(SharedKVAttention(consumer=True)).flops(Phase(logits="last"))["scores"]
2*B*D_h*H_q*T
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import is_one
from ..core.terms import Terms
from .attention import Attention, AttentionSaves
from .base import Component
from .norm import pow_rms_saved

_CONSUMER_DROPS = {"k_proj", "v_proj", "k_norm"}


#: Gemma4RMSNorm / Gemma3nRMSNorm q/k norms (``norm.pow_rms_saved``): what these layers keep
POW_NORMS = AttentionSaves(qk_norm="pow_rstd")


@dataclass(frozen=True)
class SharedKVAttention(Attention):
    """GQA attention with Gemma-4 q/k/v norms, optionally K = V, optionally a KV consumer."""

    qk_norm: bool = True
    saves: AttentionSaves = POW_NORMS
    k_eq_v: bool = False  # values are the k_proj output (no v_proj)
    consumer: bool = False  # reuses an earlier layer's K/V: no k/v weights, no cache

    def primitives(self, ph: Phase | None = None):
        prims = super().primitives(ph)
        drop = _CONSUMER_DROPS if self.consumer else ({"v_proj"} if self.k_eq_v else set())
        return [p for p in prims if p.name not in drop]

    def elementwise(self, ph: Phase) -> Terms:
        t = super().elementwise(ph)
        if not self.consumer:
            t.add("v_norm", COST["rmsnorm"] * ph.tokens * self.H_kv * self.D_h, "scale-free RMSNorm on v")
            return t
        rows, q = ph.tokens, self.H_q * self.D_h
        out = Terms()
        for key in t:
            if key == "qk_norm":
                out.add(key, COST["rmsnorm"] * rows * q, "RMSNorm on q (k is reused)")
            elif key == "rope":
                out.add(key, COST["rope"] * rows * q, "3 per rotated element of q (k is reused)")
            else:
                out.add(key, t[key], t.docs.get(key))
        return out

    def saved(self, bw) -> list:
        """``Attention.saved`` with Gemma4RMSNorm q/k norms (``POW_NORMS``) and, on a producer,
        the scale-free ``v_norm`` over H_kv heads of D_h (``pow_rms_saved(scale=False)``: its
        output is the v attention keeps). With K = V in fp32 the v_norm's input is the k_proj output
        the k_norm already keeps (``.float()`` is the tensor itself): not counted twice."""
        out = super().saved(bw)
        if self.consumer:
            return self._consumer_saved(out, bw)
        v_norm = pow_rms_saved("v_norm", self.D_h, bw, heads=self.H_kv, split="tp", scale=False)
        if self.k_eq_v and not bw.upcast:
            v_norm = [s for s in v_norm if not s.name.endswith("/input_fp32")]
        return out + v_norm

    def _consumer_saved(self, out: list, bw) -> list:
        """A consumer layer keeps q's side only: no k_norm, and the producer's k and v are the
        tensors its attention reads. SDPA / FlashAttention and the checkpointed core (selective)
        keep them as they are: the producer's storages, nothing new. Eager repeats them to H_q
        heads again (``repeat_kv``, then QKᵀ's and PV's batch reshapes): a fresh copy of
        ``H_q·D_h`` each, unless the producer's saved k and v are views of the un-repeated
        tensors — one head (H_q = 1), or B = 1 with one KV head or nothing to repeat (H_kv = H_q) — and
        then the same storages."""
        out = [s for s in out if not s.name.startswith("k_norm/")]
        if bw.kernel == "flash" or bw.recompute == "selective":
            return [s for s in out if s.name not in ("k", "v")]
        one = is_one(self.H_q)  # a single head: every batch reshape is a view
        view = one + (1 - one) * is_one(sym.B) * (is_one(self.H_kv) + is_one(self.H_q / self.H_kv))
        copies = {"k_repeated": self.H_q * self.D_h * (1 - view), "v_repeated": self.H_q * self.D_val * (1 - view)}
        return [replace(s, width=copies[s.name], doc="the producer's k/v repeated again (a copy unless a view)")
                if s.name in copies else s for s in out]

    def cache(self) -> Terms:
        return Terms() if self.consumer else super().cache()

    def label(self) -> str:
        base = super().label()
        if self.consumer:
            return base + ", reusing an earlier layer's KV"
        return base + (", K = V" if self.k_eq_v else "")


class _LastPositionPhase:
    """A prefill phase seen by layers that run on the last position only (B rows, one query per
    sequence against the producer's T keys); every other property is the wrapped phase's."""

    def __init__(self, ph: Phase):
        self._ph = ph

    def __getattr__(self, name):
        return getattr(self._ph, name)

    @property
    def new(self):
        return sympy.Integer(1)

    @property
    def tokens(self):
        return sym.B

    @property
    def logit_rows(self):
        return sym.B

    def pairs(self, W=None):
        if self._ph.attention == "full" or W is None:
            return sym.T
        return sympy.Min(sym.T, W)


def last_position(ph: Phase | None):
    """The phase a KV-consumer layer sees: the last position only in a ``logits="last"`` prefill."""
    if ph is not None and ph.kind == "prefill" and ph.logits == "last":
        return _LastPositionPhase(ph)
    return ph


@dataclass(frozen=True)
class LastPosition(Component):
    """Any component of a KV-consumer layer: the same weights and cache, FLOPs under ``last_position``."""

    inner: Component = SharedKVAttention(consumer=True)

    @property
    def key(self) -> str:  # type: ignore[override]
        return self.inner.key

    def primitives(self, ph: Phase | None = None):
        return self.inner.primitives(last_position(ph))

    def params(self) -> Terms:
        return self.inner.params()

    def active_params(self) -> Terms:
        return self.inner.active_params()

    def routed_params(self) -> Terms:
        return self.inner.routed_params()

    def flops(self, ph: Phase) -> Terms:
        return self.inner.flops(last_position(ph))

    def elementwise(self, ph: Phase) -> Terms:
        return self.inner.elementwise(last_position(ph))

    def cache(self) -> Terms:
        return self.inner.cache()

    def saved(self, bw) -> list:
        return self.inner.saved(bw)  # training computes logits for every position: all rows run

    def saved_shared(self, bw) -> list:
        return self.inner.saved_shared(bw)

    def residual_width(self):
        return self.inner.residual_width()

    def buffers(self) -> Terms:
        return self.inner.buffers()

    def cache_tp_share(self, tp: int, values: dict):
        return self.inner.cache_tp_share(tp, values)

    def check(self, values: dict) -> None:
        self.inner.check(values)

    def label(self) -> str:
        return self.inner.label()

    def __getattr__(self, name):  # dimensions (d, d_ff, ...) read by analyses
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
