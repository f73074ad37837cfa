"""Multi-head attention with grouped KV heads (MHA: H_kv = H_q, GQA, MQA: H_kv = 1).

Parameters (seed 000 §1.2, transformers ``LlamaAttention``):
    q_proj d·H_q·D_h, k_proj and v_proj d·H_kv·D_h each, o_proj H_q·D_h·d (+ biases), + q/k norms:
    per head of D_h (``qk_norm``; a LayerNorm with ``qk_norm_bias``, 2·D_h) or over the whole
    projection, H_q·D_h and H_kv·D_h (``qk_norm_full``), + per-head sinks H_q. With a value head
    dim D_v ≠ D_h, v_proj is d·H_kv·D_v and o_proj H_q·D_v·d. An output gate doubles q_proj to
    2·H_q·D_h.
FLOPs (seed 001 §2.1): the four projections 2·tokens·in·out, and QKᵀ and PV each
    2·B·H_q·D_h·pairs (PV: D_v in place of D_h), where ``pairs`` follows the convention
    (``conventions.Phase.pairs``):
    KV heads are repeated to H_q before the matmul, so GQA saves cache, not score FLOPs.
Cache: K and V, B·H_kv·(D_h + D_v) per kept token (2·B·H_kv·D_h when D_v = D_h); a
    sliding-window layer keeps min(T, W-1).
Elementwise (``symcost.core.elementwise``, a separate group): softmax 5 per score over the same
    (query, key) pairs as QKᵀ, B·H_q·pairs scores; RoPE 3·tokens·(H_q+H_kv)·D_h (``rope=False``:
    no rotary; partial rotary is counted over the whole D_h); q/k RMSNorm
    4·tokens·(H_q+H_kv)·D_h; output gate (sigmoid + product) 5·tokens·H_q·D_h; one residual add
    tokens·d. Sinks (one extra logit per row) are not counted.
Family quirks live with the family. What one ``transformers`` implementation keeps for backward
    (a cast, a fused qkv_proj, an in-place clamp, how its q/k norms or its rotary table are
    written) is an ``AttentionSaves`` value its adapter passes in (``saves``); an implementation
    that changes what is computed — a cache that keeps every token although the mask has a
    window — is a subclass of ``Attention`` in the family's adapter module.

>>> from symcost.core.notation import sym
>>> Attention().params().total
2*D_h*H_kv*d + 2*D_h*H_q*d
>>> Attention().cache().total
2*B*D_h*H_kv*T
>>> from symcost.core.conventions import Phase
>>> Attention().elementwise(Phase(kind="decode"))["softmax"]
5*B*H_q*(T + 1)
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Norm, Param, Saved, is_one, saved_norm
from ..core.terms import Terms, exact
from .base import Component
from .norm import pow_rms_saved


@dataclass(frozen=True)
class RopeTable:
    """The cos/sin table a rotary implementation holds for backward (saved tensors only).

    The rotation's math is ``Attention.rope``; how the implementation stores its table is a value
    each family's adapter declares. By default one table ``[1, T, D_h]`` in the compute dtype is
    computed once per forward and read by every layer.
    """
    D_rot: sympy.Expr | None = None  # rotated dims per head when RoPE is partial (None: all D_h)
    fp32: bool = False  # the table stays float32
    per_sequence: bool = False  # position ids per sequence (multimodal RoPE): [B, T, D_rot], not [1, T, D_rot]
    #: each layer computes (or re-interleaves) its own cos/sin, [1, T, D_rot] kept by every layer;
    #: no shared table
    per_layer: bool = False
    half: bool = False  # the table is D_rot/2 wide, each half of q and k rotated by it
    #: the layer type whose table this layer reads, when layer types have their own (one kept per type)
    name: str | None = None


#: q/k norm implementations ``AttentionSaves.qk_norm`` names; the parameters are ``Attention``'s
#: (per-head ``qk_norm`` or whole-projection ``qk_norm_full``), only the saved tensors differ
QK_NORMS = (
    "rms",  # transformers' RMSNorm (``primitives.saved_norm``; with ``qk_norm_bias`` its LayerNorm)
    "offset",  # per head: the zero-centred RMSNorm, x̂·(1 + w) in fp32 (``saved_norm(offset=True)``)
    "pow_rstd",  # per head: rstd as pow(mean(x²) + ε, −0.5), weight in fp32 (``norm.pow_rms_saved``)
    "fp32_normed",  # whole projection: the normed output kept in fp32 ((weight · x̂).to(dtype))
    "per_head_layernorm",  # whole projection: one nn.LayerNorm per head, applied head by head
    "centred_fp32",  # whole projection: a LayerNorm over [heads, D_h] written out in fp32
)


@dataclass(frozen=True)
class AttentionSaves:
    """What a family's reference attention keeps for backward beyond what the mechanism fixes.

    None of these fields changes a parameter, a FLOP or a cache byte: they describe one
    ``transformers`` implementation (a cast, a fused projection, an in-place clamp, how its norm
    or rotary table is written), so each family's adapter supplies its value and the mechanism's
    fields stay the mechanism. A value, not a subclass: families combine these freely (a fused
    qkv_proj with a clamp, an fp32 table with fp32 norms), which a subclass per quirk could not.
    """
    softmax_fp32: bool = True  # eager softmax in fp32 (``softmax(dtype=float32)``), else the compute dtype
    #: the eager core subtracts the row max before the softmax: max() keeps its int64 index, 8·H_q
    #: per query row (with ``sinks`` always)
    row_max: bool = False
    clip_qkv: bool = False  # q, k, v clamped in place (0 FLOPs): backward keeps them once more
    fused_qkv: bool = False  # q, k, v are slices of one qkv_proj output: a saved v keeps all of it
    qk_norm: str = "rms"  # how the q/k norms are written (``QK_NORMS``)
    rope: RopeTable = RopeTable()

    def __post_init__(self):
        if self.qk_norm not in QK_NORMS:
            raise ValueError(f"AttentionSaves.qk_norm: {self.qk_norm!r} is not one of {QK_NORMS}")

    def with_rope(self, **table) -> AttentionSaves:
        """The same declaration with these ``RopeTable`` fields changed."""
        return replace(self, rope=replace(self.rope, **table))


@dataclass(frozen=True)
class Attention(Component):
    key = "self_attn"
    d: sympy.Expr = sym.d
    H_q: sympy.Expr = sym.H_q
    H_kv: sympy.Expr = sym.H_kv
    D_h: sympy.Expr = sym.D_h
    W: sympy.Expr | None = None  # sliding window (None = full attention)
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False  # a norm of D_h on each head of q and of k
    qk_norm_bias: bool = False  # the q/k norms are LayerNorms (scale and bias, 2·D_h)
    qk_norm_full: bool = False  # one norm over all of q (H_q·D_h) and of k (H_kv·D_h)
    sinks: bool = False  # one learned sink logit per head, an extra column of the softmax
    output_gate: bool = False  # sigmoid(x·W_g) gates the attention output (q_proj twice as wide)
    rope: bool = True  # rotary embedding on q and k (False: learned or no positions)
    D_v: sympy.Expr | None = None  # value head dim, if not D_h
    #: attention logit soft-capping, cap·tanh(scores/cap): eager keeps tanh's output [.., H_q, T]
    #: in the compute dtype (FlashAttention caps inside the kernel); saved tensors only
    softcap: bool = False
    saves: AttentionSaves = AttentionSaves()  # the family's implementation: saved tensors only

    @property
    def D_val(self) -> sympy.Expr:
        return self.D_h if self.D_v is None else self.D_v

    def primitives(self, ph: Phase | None = None):
        d, H_q, H_kv, D_h, D_v = self.d, self.H_q, self.H_kv, self.D_h, self.D_val
        Dv = "D_h" if self.D_v is None else "D_v"  # for the shape docs
        q_out = (2 if self.output_gate else 1) * H_q * D_h
        prims = [
            Linear("q_proj", d, q_out, self.qkv_bias, tp="col", doc="[d, H_q·D_h]"),
            Linear("k_proj", d, H_kv * D_h, self.qkv_bias, tp="col", doc="[d, H_kv·D_h]"),
            Linear("v_proj", d, H_kv * D_v, self.qkv_bias, tp="col", doc=f"[d, H_kv·{Dv}]"),
            Linear("o_proj", H_q * D_v, d, self.o_bias, tp="row", doc=f"[H_q·{Dv}, d]"),
        ]
        if self.qk_norm:
            kind = "LayerNorm" if self.qk_norm_bias else "RMSNorm"
            prims += [Norm("q_norm", D_h, self.qk_norm_bias, doc=f"per-head {kind} [D_h]"),
                      Norm("k_norm", D_h, self.qk_norm_bias, doc=f"per-head {kind} [D_h]")]
        if self.qk_norm_full:
            prims += [Norm("q_norm", H_q * D_h, doc="RMSNorm over the whole q [H_q·D_h]"),
                      Norm("k_norm", H_kv * D_h, doc="RMSNorm over the whole k [H_kv·D_h]")]
        if self.sinks:
            prims.append(Param("sinks", H_q, doc="one learned sink logit per head [H_q]"))
        if ph is not None:
            pairs = self.pairs(ph)
            prims += [
                Matmul("scores", 2 * sym.B * H_q * D_h * pairs, "QKᵀ: 2·B·H_q·D_h per (query, key)"),
                Matmul("values", 2 * sym.B * H_q * D_v * pairs, f"PV: 2·B·H_q·{Dv} per (query, key)"),
            ]
        return prims

    def pairs(self, ph: Phase) -> sympy.Expr:
        """(query, key) pairs per sequence and head QKᵀ and PV multiply (``Phase.pairs``)."""
        return ph.pairs(self.W)

    def elementwise(self, ph: Phase) -> Terms:
        rows, H_q, H_kv, D_h = ph.tokens, self.H_q, self.H_kv, self.D_h
        scores = next(p for p in self.primitives(ph) if p.name == "scores").flops_expr / (2 * D_h)
        t = Terms()
        if self.qk_norm or self.qk_norm_full:
            t.add("qk_norm", COST["rmsnorm"] * rows * (H_q + H_kv) * D_h, "RMSNorm on q and k")
        if self.rope:
            t.add("rope", COST["rope"] * rows * (H_q + H_kv) * D_h, "3 per rotated element of q and k")
        t.add("softmax", COST["softmax"] * scores, "5 per score, the (query, key) pairs of QKᵀ × H_q")
        if self.output_gate:
            t.add("output_gate", (COST["sigmoid"] + COST["gate_mul"]) * rows * H_q * D_h,
                  "sigmoid gate times the attention output")
        t.add("residual", COST["residual"] * rows * self.d, "residual add")
        return t

    def saved(self, bw) -> list:
        """Saved for backward, per token row (``conventions.Backward``; measured in tests/test_activations.py).

        Every kernel: the layer input ``b_a·d`` (read by q/k/v_proj), the q/k norms
        (``primitives.saved_norm``) and the o_proj input ``b_a·H_q·D_h``. ``flash`` (SDPA):
        q ``H_q·D_h``, k and v ``H_kv·D_h`` each, an fp32 log-sum-exp per head (4·H_q); the output
        is the o_proj input. ``eager``: q, and k and v repeated to ``H_q`` heads (``repeat_kv``),
        ``b_a·3·H_q·D_h``, the fp32 probabilities ``4·H_q·T`` per query row (full rectangle, a
        window only masks them) and, below fp32, their copy in the compute dtype ``b_a·H_q·T``.
        ``selective`` keeps the checkpointed core's inputs: q, and k and v before the repeat.
        ``sinks``: the eager softmax runs in the compute dtype over T + 1 logits after a row-max
        subtraction, ``b_a·H_q·(T + 1)`` and the max's int64 index ``8·H_q``. ``softcap``: eager
        keeps tanh(scores/cap), ``b_a·H_q·T``.

        The family's implementation (``saves``, an ``AttentionSaves``): ``clip_qkv`` keeps q, k and
        v once more, ``b_a·(H_q + 2·H_kv)·D_h``; ``row_max`` the max's index without sinks;
        ``softmax_fp32=False`` keeps the probabilities in the compute dtype only; with
        ``fused_qkv`` a v that is kept as a view (flash, selective, and eager's repeat_kv when it
        is a view, or no repeat at all with H_kv = H_q and B = 1) keeps the whole projection
        output, ``(H_q + 2·H_kv)·D_h``; ``qk_norm`` names how the q/k norms are written
        (``QK_NORMS``); ``rope`` the cos/sin table (``RopeTable``: its width, dtype, and whether
        each layer keeps its own, ``b_a·2·D_rot`` per position, batch-free).
        """
        a, H_q, H_kv, D_h, T = sym.b_a, self.H_q, self.H_kv, self.D_h, sym.T
        D_v = self.D_val  # value (and o_proj input) head dim: D_h unless the model sets D_v
        impl = self.saves
        # a fused qkv_proj: v is a view of the whole [.., (H_q + 2·H_kv)·D_h] output, which a saved v keeps
        fused = (H_q + H_kv) * D_h if impl.fused_qkv else 0
        out = [Saved("input", self.d, a, "seq", doc="q/k/v_proj input [.., d]")]
        if impl.clip_qkv:
            out.append(Saved("clip_qkv", (H_q + 2 * H_kv) * D_h, a, doc="q, k, v as clamp_ keeps them"))
        out += self._saved_qk_norms(bw)
        if bw.kernel == "flash" and bw.recompute != "selective":
            out += [Saved("q", H_q * D_h, a), Saved("k", H_kv * D_h, a), Saved("v", H_kv * D_v + fused, a),
                    Saved("lse", H_q, 4, doc="fp32 log-sum-exp per head"),
                    Saved("out", H_q * D_v, a, doc="attention output = o_proj input")]
            return out + self._rope_table(bw)
        if bw.recompute == "selective":
            out += [Saved("q", H_q * D_h, a), Saved("k", H_kv * D_h, a), Saved("v", H_kv * D_v + fused, a)]
        else:
            # repeat_kv copies K and V to H_q heads; with one KV head and B = 1 the reshape is a view
            is_view = is_one(H_kv) * is_one(sym.B)
            view = (H_q - 1) * is_view
            # a viewed v of a fused qkv_proj keeps the whole projection output once; a fused qkv with
            # H_kv = H_q (> 1): nothing to repeat, and with B = 1 PV's matmul flattens v without a
            # copy, so v stays a view of the whole projection too
            same = is_one(H_q / H_kv) * is_one(sym.B) * (1 - is_one(H_kv)) * fused if impl.fused_qkv else 0
            out += [Saved("q", H_q * D_h, a), Saved("k_repeated", (H_q - view) * D_h, a, doc="repeat_kv to H_q"),
                    Saved("v_repeated", (H_q - view) * D_v + is_view * fused + same, a, doc="repeat_kv to H_q"),
                    ]
            if self.softcap:
                out.append(Saved("softcap_tanh", H_q * T, a, doc="tanh(scores / cap) [.., H_q, T keys]"))
            if self.sinks:
                # the eager core with sinks: softmax over [scores, sink] (T + 1 logits) in the compute
                # dtype, after subtracting the row max, whose int64 index max() keeps
                out += [Saved("probs_sinks", H_q * (T + 1), a, doc="softmax over T keys and the sink"),
                        Saved("row_max_index", H_q, 8, doc="max(dim=-1) indices, int64")]
            elif impl.softmax_fp32:
                out.append(Saved("probs_fp32", H_q * T, 4, doc="softmax(dtype=float32) [.., H_q, T keys]"))
            if impl.row_max and not self.sinks:
                out.append(Saved("row_max_index", H_q, 8, doc="max(dim=-1) indices, int64"))
            if not self.sinks and (bw.upcast or not impl.softmax_fp32):
                out.append(Saved("probs", H_q * T, a, doc="probabilities in the compute dtype, for PV"))
        out.append(Saved("o_proj_input", H_q * D_v, a, doc="transpose(1, 2).contiguous()"))
        return out + self._rope_table(bw)

    def _saved_qk_norms(self, bw) -> list:
        """The q/k norms' saved tensors, as ``saves.qk_norm`` says they are written."""
        a, H_q, H_kv, D_h, kind = sym.b_a, self.H_q, self.H_kv, self.D_h, self.saves.qk_norm
        out = []
        if self.qk_norm and kind == "pow_rstd":
            out += pow_rms_saved("q_norm", D_h, bw, heads=H_q, split="tp")
            out += pow_rms_saved("k_norm", D_h, bw, heads=H_kv, split="tp")
        elif self.qk_norm:
            offset = kind == "offset"
            out += saved_norm("q_norm", D_h, self.qk_norm_bias, heads=H_q, split="tp", offset=offset)
            out += saved_norm("k_norm", D_h, self.qk_norm_bias, heads=H_kv, split="tp", offset=offset)
        if not self.qk_norm_full:
            return out
        if kind == "per_head_layernorm":  # each keeps the projection output and an fp32 mean and rstd per head
            out += [Saved("q_norm/input", H_q * D_h, a, doc="q_proj output, the per-head LayerNorms' input"),
                    Saved("q_norm/mean_rstd", 2 * H_q, 4, doc="fp32 mean and rstd per head"),
                    Saved("k_norm/input", H_kv * D_h, a, doc="k_proj output, the per-head LayerNorms' input"),
                    Saved("k_norm/mean_rstd", 2 * H_kv, 4, doc="fp32 mean and rstd per head")]
        elif kind == "centred_fp32":  # as ``Norms.centred_fp32``, per head
            for n, H in (("q_norm", H_q), ("k_norm", H_kv)):
                out += [Saved(f"{n}/centred", 2 * H * D_h, 4, doc="x − mean, fp32, computed twice"),
                        Saved(f"{n}/rstd", H, 4, doc="fp32 rsqrt(var + ε) per head"),
                        Saved(f"{n}/normed", H * D_h, 4, doc="(x − mean)·rstd, fp32")]
                if bw.upcast:
                    out.append(Saved(f"{n}/weight_fp32", H * D_h, 4, "none", sympy.Integer(1),
                                     "weight.float() [heads, D_h], per layer"))
        else:
            qk = saved_norm("q_norm", H_q * D_h, split="tp") + saved_norm("k_norm", H_kv * D_h, split="tp")
            if kind == "fp32_normed":
                qk = [replace(n, nbytes=4) if n.name.endswith("/normed") else n for n in qk]
            out += qk
        return out

    def _rope_table(self, bw) -> list:
        """The cos/sin a layer computing its own table (``RopeTable.per_layer``) keeps."""
        table = self.saves.rope
        if not (self.rope and table.per_layer):
            return []
        D_rot = self.D_h if table.D_rot is None else table.D_rot
        nbytes = 4 if table.fp32 else sym.b_a
        return [Saved("rope_cos_sin", 2 * D_rot, nbytes, "none", sym.T, "this layer's cos and sin [1, T, D_rot]")]

    def saved_shared(self, bw) -> list:
        table = self.saves.rope
        if not self.rope or bw.recompute == "full" or table.per_layer:
            return []  # under full recompute the table is held by the checkpoint's closure
        D_rot = self.D_h if table.D_rot is None else table.D_rot  # partial RoPE: the table is D_rot wide
        if table.half:
            D_rot = D_rot / 2
        nbytes = 4 if table.fp32 else sym.b_a
        if table.name is not None:  # a table per layer type: each kept once
            return [Saved(f"rope_cos_sin/{table.name}", 2 * D_rot, nbytes, "none", sym.T,
                          f"{table.name} layers' cos and sin [1, T, D_rot], computed once")]
        if table.per_sequence:  # position ids [3, B, T] give a table per sequence
            return [Saved("rope_cos_sin", 2 * D_rot, nbytes, "none", sym.B * sym.T,
                          "cos and sin [B, T, D_h] (multimodal positions), computed once, read by every layer")]
        return [Saved("rope_cos_sin", 2 * D_rot, nbytes, "none", sym.T,
                      "cos and sin [1, T, D_rot], computed once, read by every layer")]

    def kept_tokens(self) -> sympy.Expr:
        return sym.T if self.W is None else sympy.Min(sym.T, self.W - 1)

    def cache_tp_share(self, tp: int, values: dict):
        """⌈H_kv/tp⌉ of the H_kv KV heads per rank (replicated once tp exceeds H_kv)."""
        H_kv = exact(self.H_kv, values)
        return Fraction(-(-H_kv // tp), H_kv)

    def cache(self) -> Terms:
        kept = self.kept_tokens()
        return Terms({"keys": sym.B * self.H_kv * self.D_h * kept,
                      "values": sym.B * self.H_kv * self.D_val * kept},
                     {"keys": "[B, H_kv, T, D_h]",
                      "values": f"[B, H_kv, T, {'D_h' if self.D_v is None else 'D_v'}]"})

    def label(self) -> str:
        kind = "sliding-window attention" if self.W is not None else "attention"
        return f"GQA {kind}"
