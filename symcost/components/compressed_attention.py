"""DeepSeek-V4 attention: shared-KV MQA over a sliding window plus compressed long-range entries.

Every layer: q = q_b(RMSNorm(q_a(x))) (LoRA rank d_q), one K=V head kv_proj [d, D_h] shared by all
H_q heads, a learned sink per head, and a grouped low-rank output projection: the H_q·D_h output
is split into g_o groups, each projected to d_o (o_a_proj, block-diagonal, H_q·D_h·d_o weights),
then mixed to d by o_b_proj [g_o·d_o, d]. A sliding-window layer attends to its window only; a
compressed layer also attends to ⌊T/m⌋ entries, each the softmax-gated sum of m consecutive
tokens' projections (kv_proj and gate_proj [d, D_h], position_bias [m, D_h], kv_norm D_h):
HCA (m = m_hca) to all of them; CSA (m = m_csa) uses two overlapping series (kv/gate
projections 2·D_h wide, position_bias [m, 2·D_h], window 2m, stride m) and keeps the top-k_I
entries a lightning indexer picks (``components/compressed_indexer.py``).

FLOPs: q_a, q_b, kv_proj, o_a, o_b (and the compressor's kv/gate projections) at 2·tokens·in·out;
QKᵀ and PV each 2·B·H_q·D_h·pairs, pairs = window pairs + compressed pairs, where
  ``full`` (what transformers computes: every compressed entry is concatenated onto the keys and
  the top-k choice is only a mask): prefill T·T + T·⌊T/m⌋, decode (min(T, W−1) + 1) + ⌊(T+1)/m⌋;
  ``causal`` (what the masks keep): Σ_i min(i, W) + Σ_{i=1..T} min(k_I, ⌊i/m⌋) (no cap for HCA),
  decode min(T+1, W) + min(k_I, ⌊(T+1)/m⌋).
The compressor's softmax pooling, norms and RoPE are elementwise (0 FLOPs); with no cache a
prompt's trailing T mod m tokens are not compressed. Source: transformers ``DeepseekV4Attention``,
``DeepseekV4HCACompressor``, ``DeepseekV4CSACompressor``, ``DeepseekV4GroupedLinear``.

Cache (what ``DeepseekV4HCACache`` / ``DeepseekV4CSACache`` / ``DynamicSlidingWindowLayer`` hold
after T tokens): the window's last min(T, W−1) K=V rows [B, 1, ·, D_h] — once in compressed
layers, but twice (keys and values, the same data) in sliding-only layers, whose plain
sliding-window cache layer copies both; the ⌊T/m⌋ compressed entries [B, ·, D_h]; the uncompressed
tail, kv and gate [B, T mod m, D_h] (2·D_h for CSA); and for CSA the previous window's overlap
series, kv and gate [B, m, D_h], once at least one window closed. In a bf16 model the overlap gate
is fp32 (the fp32 position_bias promotes it).

>>> CompressedAttention().params().total
D_h*H_q*d_o + D_h*H_q*d_q + D_h*d + D_h + H_q + d*d_o*g_o + d*d_q + d_q
>>> CompressedAttention(m=sym.m_hca).cache()["compressed"]
B*D_h*floor(T/m_hca)
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import sympy

from ..core.conventions import Phase
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Norm, Param, Saved, is_one, saved_norm
from ..core.terms import Terms
from .base import Component


def compressed_pairs(ph: Phase, m: sympy.Expr, cap: sympy.Expr | None = None) -> sympy.Expr:
    """(query, compressed entry) pairs per sequence: all ⌊·/m⌋ entries (``full``) or, ``causal``,
    the Σ_i min(cap, ⌊i/m⌋) the mask keeps (query i sees the entries of windows it has passed)."""
    T = sym.T
    if ph.kind == "decode":
        n = sympy.floor((T + 1) / m)
        return n if cap is None or ph.attention == "full" else sympy.Min(cap, n)
    if ph.attention == "full":
        return T * sympy.floor(T / m)
    q = sympy.floor(T / m)
    below = m * q * (q - 1) / 2 + q * (T - m * q + 1)  # Σ_{i=1..T} ⌊i/m⌋
    if cap is None:
        return below
    return sympy.Piecewise((below, T < cap * m), (m * cap * (cap - 1) / 2 + cap * (T - cap * m + 1), True))


def compressor_primitives(prefix: str, d, D, m, overlap: bool) -> list:
    """The weights of one token compressor: C = x·W_kv, Z = x·W_z, entry = Σ softmax(Z + bias) ⊙ C."""
    w = 2 if overlap else 1
    width = "2·" if overlap else ""
    return [Linear(f"{prefix}kv_proj", d, w * D, doc=f"[d, {width}D] compressor values"),
            Linear(f"{prefix}gate_proj", d, w * D, doc=f"[d, {width}D] compressor gate logits"),
            Param(f"{prefix}position_bias", m * w * D, doc=f"[m, {width}D] gate bias per window slot"),
            Norm(f"{prefix}kv_norm", D, doc="RMSNorm [D] on each compressed entry")]


def compressor_cache(prefix: str, D, m, overlap: bool) -> Terms:
    """Compressor state after T tokens: entries, the uncompressed tail, the CSA overlap series."""
    T, B = sym.T, sym.B
    w = 2 if overlap else 1
    tail = sympy.Mod(T, m)
    t = Terms()
    t.add(f"{prefix}compressed", B * sympy.floor(T / m) * D, "[B, ⌊T/m⌋, D] compressed entries")
    t.add(f"{prefix}buffer_kv", B * tail * w * D, "[B, T mod m, w·D] tail not yet compressed")
    t.add(f"{prefix}buffer_gate", B * tail * w * D, "[B, T mod m, w·D] its gate logits")
    if overlap:
        closed = sympy.Min(1, sympy.floor(T / m))  # set once the first window closes
        t.add(f"{prefix}overlap_kv", B * m * D * closed, "[B, m, D] last window's first series")
        t.add(f"{prefix}overlap_gate", B * m * D * closed, "[B, m, D] its gate (fp32)")
    return t


@dataclass(frozen=True)
class CompressedAttention(Component):
    key = "self_attn"
    d: sympy.Expr = sym.d
    H_q: sympy.Expr = sym.H_q
    D_h: sympy.Expr = sym.D_h
    d_q: sympy.Expr = sym.d_q
    g_o: sympy.Expr = sym.g_o
    d_o: sympy.Expr = sym.d_o
    W: sympy.Expr = sym.W
    m: sympy.Expr | None = None  # compression ratio (None: sliding window only)
    overlap: bool = False  # CSA: two overlapping series (compressor projections 2·D_h wide)
    top_k: sympy.Expr | None = None  # CSA: entries the indexer keeps per query (causal convention)
    #: the RoPE slice of each head (``saved`` only: the rotations' cos/sin copies); None: not declared
    D_rope: sympy.Expr | None = None

    def primitives(self, ph: Phase | None = None):
        d, H, D, g = self.d, self.H_q, self.D_h, self.g_o
        prims = [
            Linear("q_a_proj", d, self.d_q, doc="[d, d_q]"),
            Norm("q_a_norm", self.d_q),
            Linear("q_b_proj", self.d_q, H * D, doc="[d_q, H_q·D_h]"),
            Linear("kv_proj", d, D, doc="[d, D_h] one head, K = V"),
            Norm("kv_norm", D),
            Linear("o_a_proj", H * D / g, self.d_o, copies=g, doc="g_o × [H_q·D_h/g_o, d_o] block-diagonal"),
            Linear("o_b_proj", g * self.d_o, d, doc="[g_o·d_o, d]"),
            Param("sinks", H, doc="[H_q] attention sink logits"),
        ]
        if self.m is not None:
            prims += compressor_primitives("compressor_", d, D, self.m, self.overlap)
        if ph is not None:
            pairs = ph.pairs(self.W)
            if self.m is not None:
                pairs += compressed_pairs(ph, self.m, self.top_k)
            prims += [
                Matmul("scores", 2 * sym.B * H * D * pairs, "QKᵀ over window + compressed entries"),
                Matmul("values", 2 * sym.B * H * D * pairs, "PV over window + compressed entries"),
            ]
        return prims

    def keys(self) -> sympy.Expr:
        """Keys per query row of the eager attention: the T window rows plus ⌊T/m⌋ compressed entries."""
        return sym.T + (0 if self.m is None else sympy.floor(sym.T / self.m))

    def saved(self, bw) -> list:
        """What ``DeepseekV4Attention`` keeps for backward (eager kernel), per token: the input
        ``b_a·d``; q_a_norm and kv_norm (``DeepseekV4RMSNorm`` multiplies its weight in fp32: fp32
        input, rstd and normed x̂) with the compute-dtype outputs (the q_b_proj input ``b_a·d_q``,
        the K = V head ``b_a·D_h``, with the compressed entries ⌊T/m⌋ more rows); q_b_norm (the
        weightless ``x·rsqrt(mean(x²)+ε)``: q before it ``b_a·H_q·D_h`` and the rsqrt ``b_a·H_q``,
        below fp32 also their fp32 copies 4·(H_q·D_h + H_q)); the rotated q ``b_a·H_q·D_h``; with
        ``D_rope``, the cos and sin each rotation repeats to the full slice (q, K = V and the
        output's un-rotation: ``b_a·6·D_rope``); eagerly, the int64 arg-max of the logits with the
        sink column ``8·H_q`` and the softmax over ``keys() + 1`` (sinks) in the compute dtype;
        the o_a/o_b inputs. The compressor and indexer declare their own
        (``CompressedAttention.saved_compressor``)."""
        a, H, D, T = sym.b_a, self.H_q, self.D_h, sym.T
        out = [Saved("input", self.d, a, "seq")]
        fp32_normed = lambda recs: [replace(r, nbytes=4, doc="x̂, fp32 (the weight multiplies in fp32)")
                                    if r.name.endswith("/normed") else r for r in recs]
        out += fp32_normed(saved_norm("q_a_norm", self.d_q, split="seq"))
        out += [Saved("q_b_input", self.d_q, a, "seq"),
                Saved("q_b_norm/input", H * D, a, doc="q before the weightless RMSNorm"),
                Saved("q_b_norm/rstd", H, a, doc="rsqrt(mean(q²)+ε) in the compute dtype")]
        if bw.upcast:
            out += [Saved("q_b_norm/input_fp32", H * D, 4, doc="q.float()"),
                    Saved("q_b_norm/rstd_fp32", H, 4, doc="fp32 rsqrt")]
        out.append(Saved("q", H * D, a))
        out += fp32_normed(saved_norm("kv_norm", D, split="seq"))
        rows_kv = 1 + (0 if self.m is None else sympy.floor(T / self.m) / T)  # window + compressed entries
        if bw.kernel != "flash" and bw.recompute != "selective":
            # eager: repeat_kv's expand is a view; the batched matmuls copy it to H_q heads (K and
            # V each) unless B = 1, where it stays a view of the one K = V tensor
            one = is_one(sym.B)
            out.append(Saved("kv_repeated", rows_kv * (2 * H * D - (2 * H - 1) * D * one), a, "seq",
                             doc="K and V repeated to H_q heads for the matmuls (B = 1: the K = V head)"))
        else:
            out.append(Saved("kv", D * rows_kv, a, "seq", doc="K = V rows: window + compressed entries"))
        if self.D_rope is not None:
            out.append(Saved("rope_cos_sin", 6 * self.D_rope, a, "seq", T,
                             doc="cos, sin repeat_interleave'd per rotation (q, K = V, output); batch-free"))
        if bw.kernel == "flash" and bw.recompute != "selective":
            out += [Saved("lse", H, 4)]
        elif bw.recompute != "selective":
            out += [Saved("logits_argmax", H, 8, doc="max over keys + sink (int64)"),
                    Saved("probs", H * (self.keys() + 1), a, doc="softmax over keys + sink column")]
        out += [Saved("o_a_input", H * D, a), Saved("o_b_input", self.g_o * self.d_o, a, "seq")]
        return out + self.saved_compressor(bw)

    def saved_compressor(self, bw) -> list:
        """The compressor's gated pooling (``DeepseekV4HCACompressor`` / ``DeepseekV4CSACompressor``)
        over n_w = ⌊T/m⌋ windows per sequence (rows B·n_w): the pooled values — HCA: the kv_proj
        output itself ``b_a·D_h`` per token once T ≥ m (its first n_w·m tokens are a view of it); CSA: the
        overlapped [2m, D_h] window rebuilt from both series ``b_a·2m·D_h`` per window — and the
        softmax of the gates over the window (fp32, ``4·m·D_h`` or ``4·2m·D_h``; below fp32 also
        its compute-dtype cast); the pooled sum's kv_norm (fp32 input, rstd and normed
        ``4·(2·D_h + 1)``) and, with ``D_rope``, the cos and sin of its rotation ``b_a·2·D_rope``."""
        if self.m is None:
            return []
        a, D, B, T = sym.b_a, self.D_h, sym.B, sym.T
        rows = B * sympy.floor(T / self.m)
        span = 2 * self.m if self.overlap else self.m  # gate / value rows pooled per window
        out = ([Saved("compressor/window_kv", span * D, a, "seq", rows, "overlapped [2m, D_h] windows")]
               if self.overlap else [Saved("compressor/kv", D * sympy.Min(1, sympy.floor(T / self.m)), a, "seq",
                                           doc="kv_proj output (pooled; not kept when T < m: no window)")])
        out.append(Saved("compressor/gate_softmax_fp32", span * D, 4, "seq", rows, "softmax over the window"))
        if bw.upcast:
            out.append(Saved("compressor/gate_softmax", span * D, a, "seq", rows, "cast to the compute dtype"))
        out += [Saved("compressor/kv_norm/input_fp32", D, 4, "seq", rows),
                Saved("compressor/kv_norm/rstd", 1, 4, "seq", rows),
                Saved("compressor/kv_norm/normed", D, 4, "seq", rows)]
        if self.D_rope is not None:
            out.append(Saved("compressor/rope_cos_sin", 2 * self.D_rope, a, "seq", rows))
        return out

    def cache_tp_share(self, tp: int, values: dict):
        """One cached head shared by all query heads: every tensor-parallel rank holds all of it."""
        return 1

    def cache(self) -> Terms:
        B, D = sym.B, self.D_h
        window = B * D * sympy.Min(sym.T, self.W - 1)
        if self.m is None:
            return Terms({"keys": window, "values": window},
                         {"keys": "[B, 1, min(T, W−1), D_h]",
                          "values": "[B, 1, min(T, W−1), D_h] (a copy of keys: K = V)"})
        t = Terms({"keys": window}, {"keys": "[B, 1, min(T, W−1), D_h] K = V, stored once"})
        return t.merge(compressor_cache("", D, self.m, self.overlap))

    def label(self) -> str:
        if self.m is None:
            return "sliding-window shared-KV attention"
        return ("compressed sparse attention (CSA)" if self.overlap
                else "heavily compressed attention (HCA)")
