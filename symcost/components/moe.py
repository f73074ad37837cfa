"""Mixture of experts: router, E routed experts of which k run per token, optional shared experts.

Parameters (seed 000 §1.4, seed 002; transformers ``MixtralSparseMoeBlock``,
``Qwen2MoeSparseMoeBlock``, ``DeepseekV3MoE``, ``GptOssMLP``, ``NemotronHMoE``):
    router d·E (+E bias in gpt-oss)
    routed experts E·(3·d_x·d_moe) gated or E·(2·d_x·d_moe) ungated (ReLU², Nemotron-H),
        d_x = d, or the latent size d_lat in LatentMoE, which adds d·d_lat + d_lat·d projections
    shared experts: one gated (or ReLU²) MLP of width d_sh (DeepSeek: d_sh = E_s·d_moe),
        plus a sigmoid gate d·1 in Qwen2-MoE/Qwen3-Next
Active parameters per token: router + k of E routed experts + shared experts (+ latent projections).
FLOPs: router 2·tokens·d·E, routed experts 2·tokens·k·(per-expert weights) — what eager expert
dispatch computes, exactly k experts per token — and the shared experts over every token.
``all_experts=True`` (Llama 4): under ``impl="reference"`` the routed experts run on every token for
all E experts, 2·tokens·E·(per-expert weights), as ``Llama4TextExperts`` computes it (each token,
pre-scaled by its router score, 0 for the unchosen experts, through one bmm per projection);
under ``impl="minimal"`` the k routed experts, as a serving engine dispatches them.
Buffers: DeepSeek-V3 / Nemotron-H ``e_score_correction_bias`` [E] (LFM2-MoE: ``expert_bias``) is a buffer, not a
parameter
(ERNIE 4.5 holds the same vector as a frozen parameter, ``moe_statics``: E parameters).
Elementwise (``symcost.elementwise``), per token: router scores 5·E (softmax, or sigmoid +
    correction bias; top-k selection and weight renormalisation not counted); the routed experts'
    activation over k·d_moe (+ gate product k·d_moe when gated; ``act`` as in ``FFN``); the combine
    2·k·d (scale by the routing weight, add into the sum, as eager dispatch does); the shared
    expert's activation over d_sh (+ gate product), its add to the routed sum d, and with a
    shared gate sigmoid 4 + product d; one residual add d.

>>> from symcost.notation import sym
>>> MoE().params().total
3*E*d*d_moe + E*d
>>> MoE().active_params().total
E*d + 3*d*d_moe*k
>>> from symcost.conventions import Phase
>>> MoE().elementwise(Phase(kind="decode")).total
5*B*E + 2*B*d*k + B*d + 5*B*d_moe*k
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..conventions import Phase
from ..notation import sym
from ..elementwise import COST, act_cost
from ..primitives import Linear, Param, Saved
from ..terms import Terms
from .base import Component


@dataclass(frozen=True)
class MoE(Component):
    key = "mlp"
    d: sympy.Expr = sym.d
    E: sympy.Expr = sym.E
    k: sympy.Expr = sym.k
    d_moe: sympy.Expr = sym.d_moe
    gated: bool = True
    router_bias: bool = False
    expert_bias: bool = False
    d_lat: sympy.Expr | None = None
    d_sh: sympy.Expr | None = None  # shared expert width (None = no shared expert)
    shared_gated: bool = True
    shared_gate: bool = False  # sigmoid gate d -> 1 on the shared expert (Qwen2-MoE)
    correction_bias: bool = False  # e_score_correction_bias buffer [E]
    correction_bias_name: str = "e_score_correction_bias"  # its name in the class (LFM2-MoE: expert_bias)
    correction_bias_param: bool = False  # the same [E] vector held as a parameter (ERNIE 4.5 moe_statics)
    proj_bias: bool = False  # bias on shared-expert and latent projections (Nemotron-H mlp_bias)
    act: str | None = None  # expert activation; None: silu if gated, else gelu_tanh (see FFN)
    # -- how the reference router computes (what its backward keeps; ``saved``) --
    router: str = "softmax"  # "softmax" (Mixtral, Qwen) | "sigmoid_group" (DeepSeek-V3 group-limited, fp32)
    #: | "sigmoid" (LFM2-MoE: sigmoid scores in the compute dtype, optional bias for the choice only)
    #: | "topk_softmax" (Granite MoE: softmax over the top-k fp32 logits only)
    #: | "sparsemixer" (Phi-3.5-MoE: two masked softmaxes in the compute dtype, one expert from each)
    norm_topk: bool = True  # top-k weights renormalised to sum 1 (norm_topk_prob)
    weights_fp32: bool = True  # routing weights stay fp32 (Mixtral, DeepSeek) or are cast back (Qwen)
    all_experts: bool = False  # impl="reference" runs all E experts on every token (Llama 4)
    weighted_fp32: bool = False  # the weighted expert output is promoted to fp32 (Nemotron-H: fp32 accumulator)
    #: the softmax router computes ``F.linear(x.float(), weight.float())`` (ERNIE 4.5): below fp32 both
    #: fp32 copies are kept, as sigmoid_group's are
    router_upcast: bool = False
    #: the renormalising sum is clamped (``clamp(sum, min=moe_norm_min)``, ERNIE 4.5): the division
    #: keeps the clamped sum too (4 per token)
    norm_clamp: bool = False
    #: noise tensors the input is multiplied by in place before routing, which the products keep
    #: (``b_a·d`` each per token): Phi-3.5-MoE's ``input_jitter_noise`` > 0, 2 (block and router);
    #: DBRX's ``moe_jitter_eps``, 1
    input_jitter: int = 0
    #: the softmax router runs in fp32 (``softmax(dtype=float)``); False: in the compute dtype, its
    #: top-k weights and renormalisation too (DBRX)
    router_fp32: bool = True
    #: below fp32 nothing keeps the block input itself: the router reads an fp32 copy of it and no
    #: shared-expert module exists (MiMo-V2-Flash; ERNIE 4.5 without shared experts). A zero-width
    #: shared expert still reads it (GLM-4.5 with n_shared_experts 0): not this case
    input_copied: bool = False
    #: experts and shared expert run MiniMax-M3's (and GPT-OSS's) clamped SwiGLU (``ffn.clamped_glu_saved``; saved only)
    clamped_glu: bool = False
    #: experts and shared expert run DeepSeek-V4's clamped SiLU SwiGLU (``ffn.clamped_silu_saved``; saved only)
    clamped_silu: bool = False
    #: the softmax scores outside the top groups are zeroed by ``masked_fill`` before top-k, whose
    #: bool mask [E] per token the backward keeps (DeepSeek-V2's ``group_limited_greedy``)
    group_mask: bool = False

    def elementwise(self, ph: Phase) -> Terms:
        rows, d, k = ph.tokens, self.d, self.k
        act = self.act or ("silu" if self.gated else "gelu_tanh")
        per = act_cost(act) + (COST["gate_mul"] if self.gated else 0)
        t = Terms({"router": COST["router"] * rows * self.E,
                   "experts_act": per * rows * k * self.d_moe,
                   "combine": COST["moe_combine"] * rows * k * d},
                  {"router": "5 per expert logit", "experts_act": f"{act} (+ gate product) over k·d_moe",
                   "combine": "routing weight × expert output, summed"})
        if self.d_sh is not None:
            per_sh = act_cost(act) + (COST["gate_mul"] if self.shared_gated else 0)
            t.add("shared_act", per_sh * rows * self.d_sh, f"{act} (+ gate product) over d_sh")
            t.add("shared_add", rows * d, "shared output added to the routed sum")
            if self.shared_gate:
                t.add("shared_gate", rows * (COST["sigmoid"] + COST["gate_mul"] * d), "sigmoid(x·w) · shared")
        t.add("residual", COST["residual"] * rows * d, "residual add")
        return t

    def primitives(self, ph: Phase | None = None):
        d, E, k, d_moe = self.d, self.E, self.k, self.d_moe
        d_x = d if self.d_lat is None else self.d_lat
        prims = [Linear("router", d, E, self.router_bias, doc="[d, E] scores over all experts")]
        if self.correction_bias_param:
            prims.append(Param("e_score_correction_bias", E, doc="[E] parameter (not trained), "
                               "added to the scores before top-k"))
        if self.d_lat is not None:
            prims.append(Linear("latent_down", d, d_x, self.proj_bias, doc="[d, d_lat] fc1_latent_proj"))
        up = 2 * d_moe if self.gated else d_moe
        runs = E if self.all_experts and ph is not None and ph.impl == "reference" else k
        prims += [
            Linear("experts_gate_up" if self.gated else "experts_up", d_x, up, self.expert_bias,
                   copies=E, active=runs, doc=f"E × [{'d_lat' if self.d_lat is not None else 'd'}, "
                   f"{'2·' if self.gated else ''}d_moe], {runs} run per token"),
            Linear("experts_down", d_moe, d_x, self.expert_bias, copies=E, active=runs,
                   doc=f"E × [d_moe, d], {runs} run per token"),
        ]
        if self.d_lat is not None:
            prims.append(Linear("latent_up", d_x, d, self.proj_bias, doc="[d_lat, d] fc2_latent_proj"))
        if self.d_sh is not None:
            if self.shared_gated:
                prims.append(Linear("shared_gate_proj", d, self.d_sh, self.proj_bias, doc="[d, d_sh]"))
            prims += [Linear("shared_up_proj", d, self.d_sh, self.proj_bias, doc="[d, d_sh]"),
                      Linear("shared_down_proj", self.d_sh, d, self.proj_bias, doc="[d_sh, d]")]
            if self.shared_gate:
                prims.append(Linear("shared_expert_gate", d, 1, doc="[d, 1] sigmoid gate"))
        return prims

    def saved(self, bw) -> list:
        """Saved for backward with eager expert dispatch (transformers' ``*Experts`` loop).

        Per token: the block input ``b_a·d``; the router — softmax: fp32 probabilities 4·E and the
        int64 top-k indices 8·k, with renormalisation the fp32 sum 4 and weights 4·k; sigmoid_group
        (DeepSeek-V3): below fp32 the fp32 copies of the input 4·d and of the router weight 4·d·E
        (once per layer), sigmoid scores 4·E and the top-k
        indices 8·k gather reads, with renormalisation 4 + 4·k (the group selection runs on tensors
        that need no gradient: what it saves is freed with its branch). Per routed assignment (k·B·T rows, each expert's
        tokens gathered): an int64 (position, token) pair 16, the gathered input ``b_a·d``, gate_up
        ``b_a·2·d_moe`` (ungated ``b_a·d_moe``), the activation and the product ``b_a·d_moe`` each
        (ungated: the activation), the routing weight (4 or ``b_a``), the expert output ``b_a·d``
        and the weighted output ``b_a·d`` index_add keeps. Variants (fields): ``sparsemixer`` (Phi-3.5-MoE: two bool
        masks E, two softmaxes ``b_a·E``, two multipliers ``b_a`` and two int64 indices), ``router_fp32``
        False (DBRX, GPT-OSS: router tensors in the compute dtype), ``router_upcast`` (ERNIE, DeepSeek-V2:
        fp32 copies below fp32), ``group_mask`` (DeepSeek-V2's group-limited top-k: a bool mask E), ``norm_clamp``, ``input_jitter`` noise tensors, ``clamped_glu`` (GPT-OSS experts:
        ``b_a·4·d_moe`` in place of the activation), ``input_copied``. Shared expert: a gated FFN ``b_a·4·d_sh``
        (plain ``2·d_sh``); with a sigmoid gate its output ``b_a`` and the shared output ``b_a·d``.
        """
        a, d, E, k, f = sym.b_a, self.d, self.E, self.k, self.d_moe
        d_x = d if self.d_lat is None else self.d_lat  # the experts' width (LatentMoE: d_lat)
        if self.router not in ("softmax", "sigmoid_group", "sigmoid", "topk_softmax", "sparsemixer",
                               "sqrt_softplus"):
            raise NotImplementedError(f"{self.label()} ({self.router} router) declares no saved tensors yet")
        out = [Saved("input", d, a, "seq", doc="router / shared-expert input")]
        if bw.upcast and self.input_copied:
            out = []  # the router reads an fp32 copy and the experts gather rows: the input itself is not kept
        if self.input_jitter:
            out.append(Saved("jitter_noise", self.input_jitter * d, a, "seq", doc="uniform noise the input is scaled by"))
        if self.all_experts:
            return out + self._saved_all_experts(bw) + self._saved_shared()
        if self.router == "sigmoid_group":
            if bw.upcast:  # F.linear(x.float(), weight.float()): both fp32 copies are kept
                out += [Saved("router/input_fp32", d, 4, "seq"),
                        Saved("router/weight_fp32", d * E, 4, "none", sympy.Integer(1),
                              "fp32 copy of a compute-dtype router weight (per layer, batch-free)")]
            out += [Saved("router/scores_fp32", E, 4, "seq"),
                    Saved("router/topk_indices", k, 8, "seq", doc="read by gather")]
        elif self.router == "sparsemixer":
            # PhimoeSparseMoeBlock's sparsemixer, twice (top-1, then top-2 with top-1 masked out): the
            # masked_fill's bool mask E, the softmax E in the compute dtype, the gathered multiplier
            # (PhimoeMultiplier keeps it) and the Gumbel-sampled expert index (int64)
            out += [Saved("router/masks", 2 * E, 1, "seq", doc="bool masks of masked_fill"),
                    Saved("router/masked_softmax", 2 * E, a, "seq"),
                    Saved("router/multipliers", 2, a, "seq"), Saved("router/selected", 2, 8, "seq")]
        elif self.router == "topk_softmax":  # Granite: top-k of the fp32 logits, softmax over those k
            # (router_fp32=False: GPT-OSS, top-k and softmax of the logits in the compute dtype)
            out += [Saved("router/topk_indices", k, 8, "seq"),
                    Saved("router/topk_softmax", k, 4 if self.router_fp32 else a, "seq")]
        elif self.router in ("sigmoid", "sqrt_softplus"):  # LFM2-MoE: sigmoid scores in the compute dtype
            if self.router == "sqrt_softplus":  # DeepSeek-V4: sqrt(softplus(logits)) keeps the logits too
                out.append(Saved("router/logits", E, a, "seq", doc="softplus input"))
            out += [Saved("router/scores", E, a, "seq"), Saved("router/topk_indices", k, 8, "seq")]
            if self.norm_topk:
                out += [Saved("router/topk_sum", 1, a, "seq"), Saved("router/topk_weights", k, a, "seq")]
        else:
            if self.router_upcast and bw.upcast:
                out += [Saved("router/input_fp32", d, 4, "seq"),
                        Saved("router/weight_fp32", d * E, 4, "none", sympy.Integer(1),
                              "fp32 copy of a compute-dtype router weight (per layer, batch-free)")]
            out += [Saved("router/probs_fp32" if self.router_fp32 else "router/probs", E,
                          4 if self.router_fp32 else a, "seq"), Saved("router/topk_indices", k, 8, "seq")]
            if self.group_mask:
                out.append(Saved("router/group_mask", E, 1, "seq", doc="bool mask of masked_fill (groups left out)"))
        if self.norm_topk and self.router not in ("sigmoid", "topk_softmax", "sparsemixer", "sqrt_softplus"):
            r = 4 if self.router_fp32 else a
            out += [Saved("router/topk_sum", 1, r, "seq"), Saved("router/topk_weights", k, r, "seq")]
            if self.norm_clamp:
                out.append(Saved("router/topk_sum_clamped", 1, 4, "seq", doc="clamp(sum, min=norm_min)"))
        rows = k * sym.B * sym.T
        out += [Saved("experts/index_pairs", 2, 8, "seq", rows, "torch.where(expert_mask): int64 pairs"),
                Saved("experts/input", d_x, a, "seq", rows, "hidden_states[token_idx]")]
        if self.clamped_glu:  # MiniMax-M3's and GPT-OSS's _apply_gate
            from .ffn import clamped_glu_saved
            out += clamped_glu_saved("experts/", f, rows)
        elif self.clamped_silu:
            from .ffn import clamped_silu_saved
            out += clamped_silu_saved("experts/", f, rows)
        elif self.gated:
            out += [Saved("experts/gate_up", 2 * f, a, rows=rows), Saved("experts/act", f, a, rows=rows),
                    Saved("experts/down_input", f, a, rows=rows)]
        else:
            out += [Saved("experts/up", f, a, rows=rows), Saved("experts/down_input", f, a, rows=rows)]
        out += [Saved("experts/weight", 1, 4 if self.weights_fp32 else a, "seq", rows),
                Saved("experts/output", d_x, a, "seq", rows),
                Saved("experts/weighted", d_x, 4 if self.weighted_fp32 else a, "seq", rows)]
        if self.d_lat is not None:  # fc1_latent_proj reads the block input (kept above)
            out.append(Saved("latent_up_input", d_x, a, "seq", doc="fc2_latent_proj input [.., d_lat]"))
        return out + self._saved_shared()

    def _saved_all_experts(self, bw) -> list:
        """Llama 4 (``Llama4Router`` + ``Llama4TextMoe`` + ``Llama4TextExperts``), per token: the
        top-k indices of the logits 8·k (topk and the scatter into a −inf row), the fp32 sigmoid of
        the scattered scores 4·E and their transposed copy ``b_a·E`` the scaling reads; then, for all
        E experts on every token (E·B·T rows): the repeated input and the scaled input ``b_a·d``
        each, gate_up ``b_a·2·d_moe``, the activation and the product ``b_a·d_moe`` each."""
        a, d, E, k, f = sym.b_a, self.d, self.E, self.k, self.d_moe
        rows = E * sym.B * sym.T
        return [Saved("router/topk_indices", k, 8, "seq"), Saved("router/sigmoid_fp32", E, 4, "seq"),
                Saved("router/scores", E, a, "seq", doc="scores.transpose(0, 1).reshape(-1, 1): a copy"),
                Saved("experts/repeated_input", d, a, "seq", rows, "hidden_states.repeat(E, 1)"),
                Saved("experts/input", d, a, "seq", rows, "repeated input × its router score"),
                Saved("experts/gate_up", 2 * f, a, rows=rows), Saved("experts/act", f, a, rows=rows),
                Saved("experts/down_input", f, a, rows=rows)]

    def _saved_shared(self) -> list:
        a, d = sym.b_a, self.d
        out = []
        if self.d_sh is not None and self.clamped_glu:
            from .ffn import clamped_glu_saved
            out += clamped_glu_saved("shared/", self.d_sh)
        elif self.d_sh is not None and self.clamped_silu:
            from .ffn import clamped_silu_saved
            out += clamped_silu_saved("shared/", self.d_sh)
        elif self.d_sh is not None:
            sh = self.d_sh
            out += ([Saved("shared/gate", sh, a), Saved("shared/act", sh, a), Saved("shared/up", sh, a),
                     Saved("shared/down_input", sh, a)] if self.shared_gated else
                    [Saved("shared/up", sh, a), Saved("shared/down_input", sh, a)])
            if self.shared_gate:
                out += [Saved("shared/gate_sigmoid", 1, a, "seq"), Saved("shared/output", d, a, "seq")]
        return out

    def buffers(self) -> Terms:
        if self.correction_bias:
            return Terms({self.correction_bias_name: self.E}, {self.correction_bias_name: "[E] buffer"})
        return Terms()

    def label(self) -> str:
        return "MoE" + (" (LatentMoE)" if self.d_lat is not None else "")
