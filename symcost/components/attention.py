"""Multi-head attention with grouped KV heads (MHA: H_kv = H_q, GQA, MQA: H_kv = 1).

Parameters (seed 000 §1.2, transformers ``LlamaAttention``):
    q_proj d·H_q·D_h, k_proj and v_proj d·H_kv·D_h each, o_proj H_q·D_h·d (+ biases where the
    family has them, + per-head q/k RMSNorm of D_h (a LayerNorm, 2·D_h, in Phi) — or MiniMax M2's q/k RMSNorm over the whole
    projection, H_q·D_h and H_kv·D_h —, + per-head sinks H_q in gpt-oss). With a value head dim
    D_v ≠ D_h (MiMo-V2-Flash ``v_head_dim``) v_proj is d·H_kv·D_v and o_proj H_q·D_v·d.
FLOPs (seed 001 §2.1): the four projections 2·tokens·in·out, and QKᵀ and PV each
    2·B·H_q·D_h·pairs (PV: D_v in place of D_h), where ``pairs`` follows the convention
    (``conventions.Phase.pairs``):
    KV heads are repeated to H_q before the matmul, so GQA saves cache, not score FLOPs.
Cache: K and V, B·H_kv·(D_h + D_v) per kept token (2·B·H_kv·D_h when D_v = D_h); a
    sliding-window layer keeps min(T, W-1) (``window_cache=False``, MiniMax: all T, the window
    only masks).
An optional output gate (Qwen3-Next) doubles q_proj to 2·H_q·D_h.
Elementwise (``symcost.elementwise``, a separate group): softmax 5 per score over the same
    (query, key) pairs as QKᵀ, B·H_q·pairs scores; RoPE 3·tokens·(H_q+H_kv)·D_h (``rope=False``:
    GPT-2, Nemotron-H; partial rotary is counted over the whole D_h); q/k RMSNorm
    4·tokens·(H_q+H_kv)·D_h; output gate (sigmoid + product) 5·tokens·H_q·D_h; one residual add
    tokens·d. Sinks (one extra logit per row) are not counted.

>>> from symcost.notation import sym
>>> Attention().params().total
2*D_h*H_kv*d + 2*D_h*H_q*d
>>> Attention().cache().total
2*B*D_h*H_kv*T
>>> from symcost.conventions import Phase
>>> Attention().elementwise(Phase(kind="decode"))["softmax"]
5*B*H_q*(T + 1)
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import sympy

from ..conventions import Phase
from ..notation import sym
from ..elementwise import COST
from ..primitives import Linear, Matmul, Norm, Param, Saved, is_one, saved_norm
from ..terms import Terms
from .base import Component


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
    qk_norm: bool = False
    qk_norm_bias: bool = False  # the q/k norms are LayerNorms (scale and bias): Phi qk_layernorm
    qk_norm_offset: bool = False  # the per-head q/k norms are Gemma RMSNorms ((x·rsqrt)·(1 + w) in fp32); saved only
    qk_norm_full: bool = False  # one RMSNorm over all of q (H_q·D_h) and of k (H_kv·D_h): MiniMax M2
    sinks: bool = False
    output_gate: bool = False
    rope: bool = True  # rotary embedding on q and k (False: GPT-2, Nemotron-H)
    D_v: sympy.Expr | None = None  # value head dim, if not D_h (MiMo-V2-Flash)
    softmax_fp32: bool = True  # eager softmax in fp32 (Llama family) or in the compute dtype (GPT-2)
    #: False: the mask has the window but the cache keeps every token (MiniMax's ``MiniMaxCache`` is a
    #: config-less DynamicCache), so decode under ``full`` multiplies all T + 1 keys
    window_cache: bool = True
    clip_qkv: bool = False  # q, k, v clamped in place (OLMo clip_qkv): 0 FLOPs; backward keeps them
    rope_fp32: bool = False  # the RoPE cos/sin table stays float32 (OLMo's rotary embedding)
    fused_qkv: bool = False  # q, k, v are slices of one qkv_proj output (Phi-3): v's storage is all of it
    D_rot: sympy.Expr | None = None  # rotated dims per head when RoPE is partial (None: all D_h); saved tensors only
    rope_batched: bool = False  # cos/sin per sequence [B, T, D_h] (multimodal RoPE: Qwen3-VL), not [1, T, D_h]
    #: each layer computes or re-interleaves its own cos/sin (RecurrentGemma; Helium's
    #: ``repeat_interleave``; fp32 with rope_fp32: ERNIE 4.5): each layer keeps its own [1, T, D_rot] cos and sin, the shared table is not saved
    rope_per_layer: bool = False
    #: the q/k norms are one ``nn.LayerNorm`` per head applied head by head (StableLM's
    #: ``StableLmLayerNormPerHead``): each keeps the projection output as its input and an fp32
    #: mean and rstd per head (parameters as ``qk_norm_full``); saved tensors only
    qk_norm_per_head_ln: bool = False
    #: attention logit soft-capping, cap·tanh(scores/cap) (Gemma 2): eager keeps tanh's output
    #: [.., H_q, T] in the compute dtype (FlashAttention caps inside the kernel); saved tensors only
    softcap: bool = False
    #: the q/k norms are CohereLayerNorms over [heads, D_h] (Cohere ``use_qk_norm``), written out
    #: in fp32 as ``Norms.centred_fp32`` per head (parameters as ``qk_norm_full``); saved tensors only
    qk_norm_centred: bool = False
    #: the cos/sin table is D_h/2 wide, each half of q and k rotated by it (GPT-OSS's _apply_rotary_emb)
    rope_half_table: bool = False
    #: the eager core subtracts the row max before the softmax (MiMo-V2-Flash; with sinks always):
    #: max() keeps its int64 index, 8·H_q per query row
    row_max: bool = False
    #: the RoPE table this layer reads, when layer types have their own (MiMo-V2-Flash: one per type)
    rope_table: str | None = None
    #: the q/k norms keep their normed output in fp32 (FlexOlmo's RMSNorm: ``(weight · x̂).to(dtype)``)
    qk_norm_fp32_normed: bool = False
    #: the per-head q/k norms are Gemma4RMSNorms (``norm.pow_rms_saved``: the fp32 mean square kept
    #: beside the rstd, the weight multiplied in fp32); saved tensors only
    qk_norm_pow: bool = False

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
        if not self.window_cache and ph.kind == "decode" and ph.attention == "full":
            return ph.pairs(None)
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

        Every kernel: the layer input ``b_a·d`` (read by q/k/v_proj), the per-head q/k norms
        (``primitives.saved_norm``) and the o_proj input ``b_a·H_q·D_h``. ``flash`` (SDPA):
        q ``H_q·D_h``, k and v ``H_kv·D_h`` each, an fp32 log-sum-exp per head (4·H_q); the output
        is the o_proj input. ``eager``: q, and k and v repeated to ``H_q`` heads (``repeat_kv``),
        ``b_a·3·H_q·D_h``, the fp32 probabilities ``4·H_q·T`` per query row (full rectangle, a
        window only masks them) and, below fp32, their copy in the compute dtype ``b_a·H_q·T``.
        ``selective`` keeps the checkpointed core's inputs: q, and k and v before the repeat.
        ``clip_qkv`` (OLMo's in-place clamp) keeps q, k and v once more, ``b_a·(H_q + 2·H_kv)·D_h``;
        ``rope_fp32`` holds the shared cos/sin table in float32; ``rope_per_layer``: each layer's own
        cos/sin ``b_a·2·D_rot`` per position (batch-free) instead of one shared table.
        ``sinks`` (GPT-OSS, MiMo-V2-Flash's sliding layers): the eager softmax runs in the compute dtype over
        T + 1 logits after a row-max subtraction, ``b_a·H_q·(T + 1)`` and the max's int64 index ``8·H_q``
        (``row_max``: the same index without sinks); ``rope_half_table`` / ``rope_table``: a D_h/2-wide
        table (GPT-OSS) / one table per layer type (MiMo-V2-Flash).
        With a fused qkv_proj (``fused_qkv``) a v that is kept as a view (flash, selective, and eager's
        repeat_kv when it is a view, or no repeat at all with H_kv = H_q and B = 1) keeps the whole
        projection output, ``(H_q + 2·H_kv)·D_h``. Family variants: ``softcap`` (eager keeps
        tanh(scores/cap), ``b_a·H_q·T``), ``rope_per_layer`` (each layer's own re-interleaved
        cos/sin), ``qk_norm_per_head_ln`` / ``qk_norm_centred`` (StableLM's and Cohere's q/k norms).
        """
        a, H_q, H_kv, D_h, T = sym.b_a, self.H_q, self.H_kv, self.D_h, sym.T
        D_v = self.D_val  # value (and o_proj input) head dim: D_h unless the model sets D_v
        # a fused qkv_proj: v is a view of the whole [.., (H_q + 2·H_kv)·D_h] output, which a saved v keeps
        fused = (H_q + H_kv) * D_h if self.fused_qkv else 0
        out = [Saved("input", self.d, a, "seq", doc="q/k/v_proj input [.., d]")]
        if self.clip_qkv:
            out.append(Saved("clip_qkv", (H_q + 2 * H_kv) * D_h, a, doc="q, k, v as clamp_ keeps them"))
        if self.qk_norm and self.qk_norm_pow:
            from .norm import pow_rms_saved
            out += pow_rms_saved("q_norm", D_h, bw, heads=H_q, split="tp")
            out += pow_rms_saved("k_norm", D_h, bw, heads=H_kv, split="tp")
        elif self.qk_norm:
            out += saved_norm("q_norm", D_h, self.qk_norm_bias, heads=H_q, split="tp", offset=self.qk_norm_offset)
            out += saved_norm("k_norm", D_h, self.qk_norm_bias, heads=H_kv, split="tp", offset=self.qk_norm_offset)
        if self.qk_norm_per_head_ln:
            out += [Saved("q_norm/input", H_q * D_h, a, doc="q_proj output, the per-head LayerNorms' input"),
                    Saved("q_norm/mean_rstd", 2 * H_q, 4, doc="fp32 mean and rstd per head"),
                    Saved("k_norm/input", H_kv * D_h, a, doc="k_proj output, the per-head LayerNorms' input"),
                    Saved("k_norm/mean_rstd", 2 * H_kv, 4, doc="fp32 mean and rstd per head")]
        elif self.qk_norm_centred:
            for n, H in (("q_norm", H_q), ("k_norm", H_kv)):
                out += [Saved(f"{n}/centred", 2 * H * D_h, 4, doc="x − mean, fp32, computed twice"),
                        Saved(f"{n}/rstd", H, 4, doc="fp32 rsqrt(var + ε) per head"),
                        Saved(f"{n}/normed", H * D_h, 4, doc="(x − mean)·rstd, fp32")]
                if bw.upcast:
                    out.append(Saved(f"{n}/weight_fp32", H * D_h, 4, "none", sympy.Integer(1),
                                     "weight.float() [heads, D_h], per layer"))
        elif self.qk_norm_full:
            qk = saved_norm("q_norm", H_q * D_h, split="tp") + saved_norm("k_norm", H_kv * D_h, split="tp")
            if self.qk_norm_fp32_normed:
                qk = [replace(n, nbytes=4) if n.name.endswith("/normed") else n for n in qk]
            out += qk
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
            same = is_one(H_q / H_kv) * is_one(sym.B) * (1 - is_one(H_kv)) * fused if self.fused_qkv else 0
            out += [Saved("q", H_q * D_h, a), Saved("k_repeated", (H_q - view) * D_h, a, doc="repeat_kv to H_q"),
                    Saved("v_repeated", (H_q - view) * D_v + is_view * fused + same, a, doc="repeat_kv to H_q"),
                    ]
            if self.softcap:
                out.append(Saved("softcap_tanh", H_q * T, a, doc="tanh(scores / cap) [.., H_q, T keys]"))
            if self.sinks:
                # GPT-OSS's eager core: softmax over [scores, sink] (T + 1 logits) in the compute dtype,
                # after subtracting the row max, whose int64 index max() keeps
                out += [Saved("probs_sinks", H_q * (T + 1), a, doc="softmax over T keys and the sink"),
                        Saved("row_max_index", H_q, 8, doc="max(dim=-1) indices, int64")]
            elif self.softmax_fp32:
                out.append(Saved("probs_fp32", H_q * T, 4, doc="softmax(dtype=float32) [.., H_q, T keys]"))
            if self.row_max and not self.sinks:
                out.append(Saved("row_max_index", H_q, 8, doc="max(dim=-1) indices, int64"))
            if not self.sinks and (bw.upcast or not self.softmax_fp32):
                out.append(Saved("probs", H_q * T, a, doc="probabilities in the compute dtype, for PV"))
        out.append(Saved("o_proj_input", H_q * D_v, a, doc="transpose(1, 2).contiguous()"))
        return out + self._rope_table(bw)

    def _rope_table(self, bw) -> list:
        """The cos/sin a layer computing its own table (``rope_per_layer``) keeps."""
        if not (self.rope and self.rope_per_layer):
            return []
        D_rot = self.D_h if self.D_rot is None else self.D_rot
        nbytes = 4 if self.rope_fp32 else sym.b_a  # ERNIE 4.5: fp32 cos/sin interleaved in every layer
        return [Saved("rope_cos_sin", 2 * D_rot, nbytes, "none", sym.T, "this layer's cos and sin [1, T, D_rot]")]

    def saved_shared(self, bw) -> list:
        if not self.rope or bw.recompute == "full" or self.rope_per_layer:
            return []  # under full recompute the table is held by the checkpoint's closure
        D_rot = self.D_h if self.D_rot is None else self.D_rot  # partial RoPE: the table is D_rot wide
        if self.rope_half_table:
            D_rot = D_rot / 2
        nbytes = 4 if self.rope_fp32 else sym.b_a
        if self.rope_table is not None:  # a table per layer type: each kept once
            return [Saved(f"rope_cos_sin/{self.rope_table}", 2 * D_rot, nbytes, "none", sym.T,
                          f"{self.rope_table} layers' cos and sin [1, T, D_rot], computed once")]
        if self.rope_batched:  # position ids [3, B, T] give a table per sequence
            return [Saved("rope_cos_sin", 2 * D_rot, nbytes, "none", sym.B * sym.T,
                          "cos and sin [B, T, D_h] (multimodal positions), computed once, read by every layer")]
        return [Saved("rope_cos_sin", 2 * D_rot, nbytes, "none", sym.T,
                      "cos and sin [1, T, D_rot], computed once, read by every layer")]

    def kept_tokens(self) -> sympy.Expr:
        return sym.T if self.W is None or not self.window_cache else sympy.Min(sym.T, self.W - 1)

    def cache_tp_share(self, tp: int, values: dict):
        """⌈H_kv/tp⌉ of the H_kv KV heads per rank (replicated once tp exceeds H_kv)."""
        from fractions import Fraction
        from ..terms import exact
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
