"""Multi-head Latent Attention (MLA): keys and values come from a shared low-rank latent.

Parameters (seed 001 §2.3; transformers ``DeepseekV3Attention`` / ``DeepseekV2Attention``):
    query   q_proj d·H_q·(D_nope+D_rope)                       when q_lora_rank is null (V2-Lite)
            or q_a_proj d·d_q, q_a_layernorm d_q, q_b_proj d_q·H_q·(D_nope+D_rope)
    kv      kv_a_proj_with_mqa d·(d_kv+D_rope), kv_a_layernorm d_kv, kv_b_proj d_kv·H_q·(D_nope+D_v)
    output  o_proj H_q·D_v·d
    ``attention_bias`` puts biases on q_a_proj, kv_a_proj_with_mqa and o_proj only.
FLOPs, expanded (``mla="expand"``, and prefill under the default ``"auto"``; what transformers
    computes): every weight 2·rows·in·out over the new tokens, except kv_b_proj, which
    re-expands the whole cache every step: rows = B·T in prefill, B·(T+1) in decode. Scores 2·B·H_q·(D_nope+D_rope)·pairs, values 2·B·H_q·D_v·pairs.
FLOPs, absorbed (``mla="absorb"``, and decode under the default ``"auto"``: serving engines;
    DeepSeek's own inference code): kv_b_proj splits into W_UK [d_kv → H_q·D_nope] folded into the query (q_nope → latent, per head) and W_UV
    [d_kv → H_q·D_v] applied after attention, both over the new tokens only; scores run in the
    latent space, 2·B·H_q·(d_kv+D_rope)·pairs, and values 2·B·H_q·d_kv·pairs. Same weights, same
    cache; absorbing saves 2·B·T·H_q·d_kv·(D_nope+D_v) per decode step and costs more per pair
    whenever d_kv > D_nope (tests/test_components_mla.py pins the difference).
Cache (what the transformers 5.24 ``DynamicCache`` holds, measured): the latent, not K/V —
    ``keys`` [B, 1, T, d_kv] (the normalised kv latent) and ``values`` [B, 1, T, D_rope] (the
    rotated shared key), d_kv + D_rope per token per layer. ``cache_expanded()`` gives the
    alternative an engine without MLA support holds: B·T·H_q·(D_nope+D_rope+D_v).
With a sparse indexer (DeepSeek-V3.2 DSA, ``k_sel``), eager attention still multiplies the whole
    rectangle (the top-k mask is applied after the matmul): ``full`` counts it; ``causal`` counts only
    the pairs the causal and top-k masks keep, Σ_i min(i, k_I), like a window of k_I.
Elementwise (``symcost.core.elementwise``): q_a_layernorm 4·tokens·d_q and kv_a_layernorm
    4·tokens·d_kv (new tokens only: the cache holds the normalised latent), softmax 5 per score
    over the same pairs as the scores, B·H_q·pairs, RoPE 3·tokens·(H_q + 1)·D_rope (every query
    head and the one shared rotary key), one residual add tokens·d; the same under both ``mla`` modes.
``rope_complex`` (DeepSeek-V2): RoPE as a complex product by ``freqs_cis``; the same FLOPs and
    elementwise count, and for training the complex64 table (4·D_rope bytes per position) is kept
    in place of cos/sin.
``rope=False`` (Kimi Linear's ``KimiLinearAttention``): no rotary embedding is applied, the
    D_rope part of the shared key stays as a plain shared key dim; weights, FLOPs and cache as above,
    no RoPE elementwise term and no cos/sin table.

>>> MLA().cache().total
B*D_rope*T + B*T*d_kv
>>> MLA(d_q=None).params()["q_proj"]
H_q*d*(D_nope + D_rope)
>>> MLA().elementwise(Phase(kind="decode"))["rope"]
3*B*D_rope*(H_q + 1)
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST, norm_terms
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Norm, Saved, is_one, saved_norm
from ..core.terms import Terms
from .base import Component


@dataclass(frozen=True)
class MLA(Component):
    key = "self_attn"
    d: sympy.Expr = sym.d
    H_q: sympy.Expr = sym.H_q
    d_q: sympy.Expr | None = sym.d_q  # None: a plain q_proj (q_lora_rank null)
    d_kv: sympy.Expr = sym.d_kv
    D_nope: sympy.Expr = sym.D_nope
    D_rope: sympy.Expr = sym.D_rope
    D_v: sympy.Expr = sym.D_v
    bias: bool = False  # attention_bias
    k_sel: sympy.Expr | None = None  # keys kept per query by a sparse indexer (DSA)
    rope: bool = True  # False: no rotary embedding at all (Kimi Linear's MLA; the D_rope part stays)
    #: the rotation is a complex multiplication by ``freqs_cis`` (DeepSeek-V2's ``apply_rotary_emb``),
    #: whose table [1, T, D_rope/2] is complex64 in every dtype, 8 bytes per pair: 4·D_rope per
    #: position, in place of the cos/sin pair 2·D_rope·b_a
    rope_complex: bool = False

    def pairs(self, ph: Phase) -> sympy.Expr:
        if self.k_sel is not None and ph.attention == "causal":
            return ph.pairs(self.k_sel)
        return ph.pairs(None)

    def primitives(self, ph: Phase | None = None):
        d, H, d_kv, Dn, Dr, Dv = self.d, self.H_q, self.d_kv, self.D_nope, self.D_rope, self.D_v
        if self.d_q is None:
            prims = [Linear("q_proj", d, H * (Dn + Dr), tp="col", doc="[d, H_q·(D_nope+D_rope)]")]
        else:
            prims = [Linear("q_a_proj", d, self.d_q, self.bias, doc="[d, d_q]"),
                     Norm("q_a_layernorm", self.d_q, doc="RMSNorm [d_q]"),
                     Linear("q_b_proj", self.d_q, H * (Dn + Dr), tp="col", doc="[d_q, H_q·(D_nope+D_rope)]")]
        prims += [Linear("kv_a_proj_with_mqa", d, d_kv + Dr, self.bias, doc="[d, d_kv+D_rope]"),
                  Norm("kv_a_layernorm", d_kv, doc="RMSNorm [d_kv]")]
        if ph is not None and ph.absorbed:
            prims += [Linear("kv_b_proj_k", d_kv, H * Dn, tp="col",
                             doc="W_UK half of kv_b_proj, folded into the query: [d_kv, H_q·D_nope]"),
                      Linear("kv_b_proj_v", d_kv, H * Dv, tp="col",
                             doc="W_UV half of kv_b_proj, after attention: [d_kv, H_q·D_v]")]
        else:
            rows = None if ph is None else sym.B * ph.context  # re-expands every cached latent
            prims.append(Linear("kv_b_proj", d_kv, H * (Dn + Dv), rows=rows, tp="col",
                                doc="[d_kv, H_q·(D_nope+D_v)], run over the whole context"))
        prims.append(Linear("o_proj", H * Dv, d, self.bias, tp="row", doc="[H_q·D_v, d]"))
        if ph is not None:
            pairs = self.pairs(ph)
            if ph.absorbed:
                prims += [Matmul("scores", 2 * sym.B * H * (d_kv + Dr) * pairs,
                                 "QKᵀ in the latent: 2·B·H_q·(d_kv+D_rope) per (query, key)"),
                          Matmul("values", 2 * sym.B * H * d_kv * pairs,
                                 "P·latent: 2·B·H_q·d_kv per (query, key)")]
            else:
                prims += [Matmul("scores", 2 * sym.B * H * (Dn + Dr) * pairs,
                                 "QKᵀ: 2·B·H_q·(D_nope+D_rope) per (query, key)"),
                          Matmul("values", 2 * sym.B * H * Dv * pairs, "PV: 2·B·H_q·D_v per (query, key)")]
        return prims

    def elementwise(self, ph: Phase) -> Terms:
        rows = ph.tokens
        t = norm_terms(self.primitives(ph), rows)
        if self.rope:
            t.add("rope", COST["rope"] * rows * (self.H_q + 1) * self.D_rope,
                  "3 per rotated element: H_q query heads and the shared key")
        t.add("softmax", COST["softmax"] * sym.B * self.H_q * self.pairs(ph), "5 per score")
        t.add("residual", COST["residual"] * rows * self.d, "residual add")
        return t

    def saved(self, bw) -> list:
        """Saved for backward (transformers ``DeepseekV3Attention``), per token row.

        The input ``b_a·d``; with a q LoRA: q_a_layernorm (``saved_norm`` of d_q) and the q_b_proj
        input ``b_a·d_q``; kv_a_layernorm: its fp32 input — below fp32 a copy of the d_kv latent
        (4·d_kv), in fp32 the whole kv_a_proj output it is a view of (4·(d_kv+D_rope)) — its rstd
        and normalised latent, and the kv_b_proj input ``b_a·d_kv``; q and k ``b_a·H_q·(D_nope+D_rope)``
        each (concatenated after RoPE); v is a view of kv_b_proj's output, which is kept whole,
        ``b_a·H_q·(D_nope+D_v)``; eager: fp32 probabilities ``4·H_q·T`` (+ their ``b_a`` copy below
        fp32); flash: an fp32 log-sum-exp 4·H_q; the o_proj input ``b_a·H_q·D_v``. ``selective``
        keeps the core's inputs (q, k, v) and drops the probabilities. Latents are replicated on
        every TP rank (not split); per-head tensors are.
        """
        a, H, T = sym.b_a, self.H_q, sym.T
        Dqk = self.D_nope + self.D_rope
        out = [Saved("input", self.d, a, "seq")]
        if self.d_q is not None:
            out += saved_norm("q_a_layernorm", self.d_q, split="seq")
            out.append(Saved("q_b_input", self.d_q, a, "seq"))
        kv_in = 4 * self.d_kv if bw.upcast else 4 * (self.d_kv + self.D_rope)
        out += [Saved("kv_a_layernorm/input_fp32", kv_in, 1, "seq"),
                Saved("kv_a_layernorm/rstd", 1, 4, "seq"),
                Saved("kv_a_layernorm/normed", self.d_kv, a, "seq"),
                Saved("kv_b_input", self.d_kv, a, "seq"),
                Saved("q", H * Dqk, a), Saved("k", H * Dqk, a),
                Saved("v", self._v_width(bw), a, doc="v, a view of kv_b_proj's output")]
        if bw.recompute == "selective":
            pass
        elif bw.kernel == "flash":
            out.append(Saved("lse", H, 4))
        else:
            out.append(Saved("probs_fp32", H * T, 4))
            if bw.upcast:
                out.append(Saved("probs", H * T, a))
        out.append(Saved("o_proj_input", H * self.D_v, a))
        return out

    def _v_width(self, bw):
        """The storage v keeps: kv_b_proj's whole output H_q·(D_nope+D_v) it is a view of — except
        when eager's matmul(probs, v) folds [B, H_q] into one batch dim, which copies v to
        H_q·D_v unless B = 1 or H_q = 1."""
        whole = self.H_q * (self.D_nope + self.D_v)
        if bw.kernel != "eager" or bw.recompute == "selective":
            return whole
        copy = (1 - is_one(sym.B)) * (1 - is_one(self.H_q))  # 1 when v is copied
        return whole - copy * self.H_q * self.D_nope

    def saved_shared(self, bw) -> list:
        if bw.recompute == "full" or not self.rope:
            return []
        if self.rope_complex:  # the product keeps freqs_cis (q and k need no other operand: it is constant)
            return [Saved("rope_freqs_cis", self.D_rope, 4, "none", sym.T,
                          "complex64 freqs_cis [1, T, D_rope/2], 8 bytes per rotated pair")]
        return [Saved("rope_cos_sin", 2 * self.D_rope, sym.b_a, "none", sym.T, "cos and sin [1, T, D_rope]")]

    def cache_tp_share(self, tp: int, values: dict):
        """One cached head shared by all query heads: every tensor-parallel rank holds all of it."""
        return 1

    def cache(self) -> Terms:
        return Terms({"kv_latent": sym.B * sym.T * self.d_kv, "k_rope": sym.B * sym.T * self.D_rope},
                     {"kv_latent": "[B, 1, T, d_kv] (DynamicCache keys)",
                      "k_rope": "[B, 1, T, D_rope] (DynamicCache values)"})

    def cache_expanded(self) -> Terms:
        """The alternative: expanded per-head K and V, as an engine without MLA support caches them."""
        return Terms({"keys": sym.B * sym.T * self.H_q * (self.D_nope + self.D_rope),
                      "values": sym.B * sym.T * self.H_q * self.D_v},
                     {"keys": "[B, H_q, T, D_nope+D_rope]", "values": "[B, H_q, T, D_v]"})

    def label(self) -> str:
        return "MLA" + (" (sparse, DSA)" if self.k_sel is not None else "") + ("" if self.rope else " (NoPE)")
