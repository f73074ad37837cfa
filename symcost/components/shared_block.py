"""Shared transformer blocks (Zamba, Zamba2): one attention + MLP block whose weights are stored once
and run at every hybrid layer, with per-invocation LoRA adapters (Zamba2) and output linear.

transformers ``Zamba2AttentionDecoderLayer`` / ``Zamba2HybridLayer`` / ``Zamba2MLP``: at each
hybrid layer the block reads the concatenation [hidden states, original embeddings] (width
d_att = 2·d), then
    input_layernorm RMSNorm(d_att) → attention: q_proj d_att·H_q·D_h, k_proj and v_proj
    d_att·H_kv·D_h each, o_proj H_q·D_h·d (no biases; D_h = attention_head_dim, 2·d/H_q by default)
    → pre_ff_layernorm RMSNorm(d) → MLP: gate_up_proj d·2·d_ff, down_proj d_ff·d (biases with
    ``add_bias_linear``), activation of the gate half times the up half
and its output goes through the hybrid layer's own ``linear`` d·d (no bias) into the residual
stream ahead of that layer's Mamba-2 mixer. There are no residual adds inside the block.
Weights: when the checkpoint ties its embeddings (``tie_word_embeddings``, transformers' switch for
every ``_tied_weights_keys`` entry), N_blk = min(num_mem_blocks, L_hyb) distinct blocks (hybrid
layer j runs block j mod num_mem_blocks; the others are tied to it); untied, every hybrid layer
keeps its own copy, N_blk = L_hyb. A block holds a LoRA adapter set for every hybrid layer that
runs block j mod num_mem_blocks = b (k_b of them), used or not:
    MLP   gate_up adapter d·r_a + r_a·2·d_ff (always)
    attention (``use_shared_attention_adapter``) q, k and v adapters d_att·r_a + r_a·d_att each
so N_ad adapter sets are stored: one per hybrid layer when tied (N_ad = L_hyb), Σ_b k_b² untied.
Parameters: N_blk·(d_att + d_att·(H_q + 2·H_kv)·D_h + H_q·D_h·d + d + 3·d·d_ff (+ biases))
    + N_ad·(d·r_a + 2·r_a·d_ff (+ 6·d_att·r_a)) + L_hyb·d·d.
Here the stored weights are ``SharedBlockWeights`` (a top-level component: N_blk blocks and N_ad
adapter sets, no FLOPs: they run only through the invocations) and each hybrid layer holds a
``SharedBlockCall`` (the block's and its adapter's GEMMs over its tokens, weights counted there,
its own ``linear``, the attention KV cache).
FLOPs per invocation: 2·tokens per weight entry of every projection above (each adapter runs once,
the rank-r_a down then up projection), QKᵀ and PV 2·B·H_q·D_h per (query, key) pair each
(``conventions.Phase.pairs``; full attention, KV heads repeated).
Cache: the attention's K and V, [B, H_kv, T, D_h] each, per hybrid layer (beside the Mamba state).
Zamba (v1, ``ZambaAttentionDecoderLayer`` / ``ZambaHybridLayer``): the same block without any
adapter (``mlp_adapter=False``), gate_proj and up_proj d·d_ff each in place of gate_up_proj (the
same weights), no MLP biases, no RoPE, and one stored block for all hybrid layers when tied
(N_blk = 1; untied, L_hyb).
Elementwise (``symcost.core.elementwise``): the two RMSNorms over d_att and d, softmax 5 per score,
RoPE on q and k with ``use_mem_rope``, the activation over d_ff and the gate product, the adapter
adds (q, k, v and gate_up outputs) and the add of the block's output into the residual stream.

>>> SharedBlockCall(attn_adapters=True).params().total
d**2
>>> SharedBlockWeights(attn_adapters=True).params()["shared_transformer"].total - SharedBlockWeights().params()["shared_transformer"].total
12*N_ad*d*r_a
>>> SharedBlockCall().cache().total
2*B*D_h*H_kv*T
>>> SharedBlockWeights().params().total.subs({sym.d: 4, sym.H_q: 2, sym.H_kv: 2, sym.D_h: 4, sym.d_ff: 8, sym.N_blk: 1, sym.N_ad: 1, sym.r_a: 2})
372
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST, act_cost
from ..core.notation import sym
from ..core.primitives import ONE, ZERO, Linear, Matmul, Param, Saved, saved_norm
from ..core.terms import Terms
from .attention import Attention
from .base import Component
from .ffn import FFN


@dataclass(frozen=True)
class _SharedBlock:
    """The dimensions and stored layout both parts share (not a component by itself)."""

    d: sympy.Expr = sym.d
    H_q: sympy.Expr = sym.H_q
    H_kv: sympy.Expr = sym.H_kv
    D_h: sympy.Expr = sym.D_h
    d_ff: sympy.Expr = sym.d_ff
    r_a: sympy.Expr = sym.r_a
    mlp_bias: bool = False  # add_bias_linear: gate_up_proj and down_proj biases
    fused_gate_up: bool = True  # Zamba2's gate_up_proj; Zamba's gate_proj and up_proj (same weights)
    attn_adapters: bool = False  # use_shared_attention_adapter: LoRA on q, k and v
    mlp_adapter: bool = True  # Zamba2's gate_up adapter (always there); Zamba has none

    @property
    def d_att(self) -> sympy.Expr:
        """The block's input: [hidden states, original embeddings], 2·d."""
        return 2 * self.d

    def _block(self, tied: bool, rows, copies) -> list:
        """The stored block: its two norms and six projections."""
        d, A, H_q, H_kv, D_h, f, b = self.d, self.d_att, self.H_q, self.H_kv, self.D_h, self.d_ff, self.mlp_bias
        kw = dict(tied=tied, rows=rows, copies=copies)
        prims = [] if tied else [Param("input_layernorm", A, copies, doc="RMSNorm [2·d]", norm="rms")]
        prims += [Linear("self_attn.q_proj", A, H_q * D_h, tp="col", doc="[2·d, H_q·D_h]", **kw),
                  Linear("self_attn.k_proj", A, H_kv * D_h, tp="col", doc="[2·d, H_kv·D_h]", **kw),
                  Linear("self_attn.v_proj", A, H_kv * D_h, tp="col", doc="[2·d, H_kv·D_h]", **kw),
                  Linear("self_attn.o_proj", H_q * D_h, d, tp="row", doc="[H_q·D_h, d]", **kw)]
        if not tied:
            prims.append(Param("pre_ff_layernorm", d, copies, doc="RMSNorm [d]", norm="rms"))
        if self.fused_gate_up:
            prims.append(Linear("feed_forward.gate_up_proj", d, 2 * f, b, tp="col", doc="[d, 2·d_ff]", **kw))
        else:
            prims += [Linear("feed_forward.gate_proj", d, f, b, tp="col", doc="[d, d_ff]", **kw),
                      Linear("feed_forward.up_proj", d, f, b, tp="col", doc="[d, d_ff]", **kw)]
        prims.append(Linear("feed_forward.down_proj", f, d, b, tp="row", doc="[d_ff, d]", **kw))
        return prims

    def _adapters(self, tied: bool, rows, copies) -> list:
        """One LoRA adapter set: the rank-r_a down and up projections of q, k, v and gate_up."""
        d, A, r, f = self.d, self.d_att, self.r_a, self.d_ff
        kw = dict(tied=tied, rows=rows, copies=copies)
        prims = []
        if self.attn_adapters:
            for x in "qkv":
                prims += [Linear(f"self_attn.{x}_adapter.down", A, r, doc="LoRA [2·d, r_a]", **kw),
                          Linear(f"self_attn.{x}_adapter.up", r, A, doc="LoRA [r_a, 2·d]", **kw)]
        if self.mlp_adapter:
            prims += [Linear("feed_forward.gate_up_adapter.down", d, r, doc="LoRA [d, r_a]", **kw),
                      Linear("feed_forward.gate_up_adapter.up", r, 2 * f, doc="LoRA [r_a, 2·d_ff]", **kw)]
        return prims


@dataclass(frozen=True)
class SharedBlockWeights(_SharedBlock, Component):
    """The N_blk stored blocks and N_ad adapter sets: parameters only (their FLOPs are in each
    ``SharedBlockCall``)."""

    key = "shared_transformer"
    copies: sympy.Expr = sym.N_blk
    adapter_copies: sympy.Expr = sym.N_ad

    def primitives(self, ph: Phase | None = None):
        return (self._block(tied=False, rows=ZERO, copies=self.copies)
                + self._adapters(tied=False, rows=ZERO, copies=self.adapter_copies))

    def params(self) -> Terms:
        return Terms().add(self.key, super().params(), f"{self.copies} stored blocks, {self.adapter_copies} adapter sets")

    def active_params(self) -> Terms:
        return Terms().add(self.key, super().active_params(), f"{self.copies} stored blocks, {self.adapter_copies} adapter sets")

    def saved(self, bw) -> list:
        return []  # the weights run only inside the hybrid layers' invocations

    def label(self) -> str:
        return "shared transformer blocks (stored weights)"


@dataclass(frozen=True)
class SharedBlockCall(_SharedBlock, Component):
    """One invocation of a shared block at a hybrid layer: the block's GEMMs on tied weights, its
    LoRA adapter set (both stored in ``SharedBlockWeights``), its own output linear and the
    attention KV cache."""

    key = "shared_transformer"
    rope: bool = False  # use_mem_rope (elementwise only)
    act: str = "gelu"  # hidden_act of the MLP (elementwise only)

    def primitives(self, ph: Phase | None = None):
        prims = self._block(tied=True, rows=None, copies=ONE) + self._adapters(tied=True, rows=None, copies=ONE)
        prims.append(Linear("linear", self.d, self.d, tp=None, doc="the hybrid layer's own output linear [d, d]"))
        if ph is not None:
            pairs = ph.pairs(None)
            prims += [Matmul("self_attn.scores", 2 * sym.B * self.H_q * self.D_h * pairs,
                             "QKᵀ: 2·B·H_q·D_h per (query, key)"),
                      Matmul("self_attn.values", 2 * sym.B * self.H_q * self.D_h * pairs,
                             "PV: 2·B·H_q·D_h per (query, key)")]
        return prims

    def elementwise(self, ph: Phase) -> Terms:
        rows, H_q, H_kv, D_h, f = ph.tokens, self.H_q, self.H_kv, self.D_h, self.d_ff
        t = Terms()
        t.add("input_layernorm", COST["rmsnorm"] * rows * self.d_att, "RMSNorm over [h, embeddings]")
        if self.rope:
            t.add("rope", COST["rope"] * rows * (H_q + H_kv) * D_h, "3 per rotated element of q and k")
        t.add("softmax", COST["softmax"] * sym.B * H_q * ph.pairs(None), "5 per score")
        t.add("pre_ff_layernorm", COST["rmsnorm"] * rows * self.d, "RMSNorm")
        t.add("act", act_cost(self.act) * rows * f, f"{self.act} over d_ff")
        t.add("gate_mul", COST["gate_mul"] * rows * f, "act(gate) · up")
        adds = (2 * f if self.mlp_adapter else 0) + ((H_q + 2 * H_kv) * D_h if self.attn_adapters else 0)
        if adds != 0:
            t.add("adapter_adds", rows * adds, "each adapter's output added to its projection")
        t.add("residual", COST["residual"] * rows * self.d, "block output added ahead of the Mamba layer")
        return t

    def _attention(self):
        return Attention(d=self.d_att, H_q=self.H_q, H_kv=self.H_kv, D_h=self.D_h, rope=self.rope)

    def saved(self, bw) -> list:
        """Saved for backward, one invocation (measured in tests/test_activations.py): the
        input_layernorm over the concatenation [h, embeddings] (``primitives.saved_norm`` of width
        2·d), the attention of ``components.attention`` over that 2·d-wide input, each LoRA
        adapter's rank-r_a intermediate ``b_a·r_a`` (its input is the projection's own), the
        pre_ff_layernorm over d, the gated MLP of ``components.ffn`` (with the fused gate_up_proj
        the gate and up halves are views of one 2·d_ff output: the same bytes), and the input of
        the hybrid layer's own ``linear`` ``b_a·d``."""
        a = sym.b_a
        out = saved_norm("input_layernorm", self.d_att)
        out += [Saved(f"self_attn/{s.name}", s.width, s.nbytes, s.split, s.rows, s.doc)
                for s in self._attention().saved(bw)]
        if self.attn_adapters:
            out += [Saved(f"self_attn.{x}_adapter/down_out", self.r_a, a, "none", doc="LoRA intermediate [.., r_a]")
                    for x in "qkv"]
        out += saved_norm("pre_ff_layernorm", self.d)
        out += [Saved(f"feed_forward/{s.name}", s.width, s.nbytes, s.split, s.rows, s.doc)
                for s in FFN(d=self.d, d_ff=self.d_ff, gated=True, bias=self.mlp_bias, act=self.act).saved(bw)]
        if self.mlp_adapter:
            out.append(Saved("feed_forward.gate_up_adapter/down_out", self.r_a, a, "none",
                             doc="LoRA intermediate [.., r_a]"))
        out.append(Saved("linear_input", self.d, a, "seq", doc="the block's output, read by the hybrid layer's linear"))
        return out

    def saved_shared(self, bw) -> list:
        return self._attention().saved_shared(bw)

    def checkpoint_shared(self, bw) -> list:
        """Full recomputation checkpoints each hybrid layer with the original embeddings as a
        second input: one [B, T, d] tensor (the model's clone of the embeddings) for all layers."""
        return [Saved("original_embeddings", self.d, sym.b_a, "seq",
                      doc="clone of the embeddings every checkpointed hybrid layer takes")]

    def cache(self) -> Terms:
        kept = sym.B * self.H_kv * self.D_h * sym.T
        return Terms({"keys": kept, "values": kept},
                     {"keys": "[B, H_kv, T, D_h]", "values": "[B, H_kv, T, D_h]"})

    def label(self) -> str:
        return "shared transformer block (one invocation)"
