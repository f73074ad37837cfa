"""Mixture of experts: router, E routed experts of which k run per token, optional shared experts.

Parameters (seed 000 §1.4, seed 002; transformers ``MixtralSparseMoeBlock``,
``Qwen2MoeSparseMoeBlock``, ``DeepseekV3MoE``, ``GptOssMLP``, ``NemotronHMoE``):
    router d·E (+E bias)
    routed experts E·(3·d_x·d_moe) gated or E·(2·d_x·d_moe) ungated (ReLU²),
        d_x = d, or the latent size d_lat in LatentMoE, which adds d·d_lat + d_lat·d projections
    shared experts: one gated (or ungated) MLP of width d_sh (E_s shared experts: d_sh = E_s·d_moe),
        plus an optional sigmoid gate d·1
Active parameters per token: router + k of E routed experts + shared experts (+ latent projections).
FLOPs: router 2·tokens·d·E, routed experts 2·tokens·k·(per-expert weights) — what eager expert
dispatch computes, exactly k experts per token — and the shared experts over every token.
Buffers: ``correction_bias``, an ``e_score_correction_bias`` [E] added to the scores for the
    choice, is a buffer, not a parameter.
Elementwise (``symcost.core.elementwise``), per token: router scores 5·E (softmax, or sigmoid +
    correction bias; top-k selection and weight renormalisation not counted); the routed experts'
    activation over k·d_moe (+ gate product k·d_moe when gated; ``act`` as in ``FFN``); the combine
    2·k·d (scale by the routing weight, add into the sum, as eager dispatch does); the shared
    expert's activation over d_sh (+ gate product), its add to the routed sum d, and with a
    shared gate sigmoid 4 + product d; one residual add d.
Family quirks live with the family. What one ``transformers`` implementation keeps for backward
    (which router tensors stay fp32, copies, noise tensors, a clamped SwiGLU) is a ``MoESaves``
    value its adapter passes in (``saves``). An implementation that computes or stores something
    else — every expert on every token, the correction bias held as a parameter or under another
    name — is a subclass of ``MoE`` in the family's adapter module (``runs``, ``primitives``,
    ``buffers``).

>>> from symcost.core.notation import sym
>>> MoE().params().total
3*E*d*d_moe + E*d
>>> MoE().active_params().total
E*d + 3*d*d_moe*k
>>> from symcost.core.conventions import Phase
>>> MoE().elementwise(Phase(kind="decode")).total
5*B*E + 2*B*d*k + B*d + 5*B*d_moe*k
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST, act_cost
from ..core.notation import sym
from ..core.primitives import Linear, Saved
from ..core.terms import Terms
from .base import Component
from .ffn import clamped_glu_saved, clamped_silu_saved

#: how the experts' SwiGLU is written, ``MoESaves.glu`` (the math of ``act`` is the same; saved tensors only)
GLUS = ("plain", "clamped", "clamped_silu")


@dataclass(frozen=True)
class MoESaves:
    """What a family's reference MoE block keeps for backward beyond what the mechanism fixes.

    None of these fields changes a parameter, a FLOP or a cache byte: they describe one
    ``transformers`` implementation (which router tensors stay fp32, a copy, a noise tensor, a
    clamp), so each family's adapter supplies its value (``WEIGHTS_CAST`` is the common one) and
    ``MoE``'s fields stay the mechanism. A value rather than a subclass: families combine these
    freely (an fp32 router copy with a clamped sum and cast-back weights).
    """
    weights_fp32: bool = True  # the top-k routing weights stay fp32; False: cast back to the compute dtype
    #: the softmax router runs in fp32 (``softmax(dtype=float)``); False: in the compute dtype, its
    #: top-k weights and renormalisation too
    router_fp32: bool = True
    #: the softmax router computes ``F.linear(x.float(), weight.float())``: below fp32 both fp32
    #: copies are kept, as sigmoid_group's are
    router_upcast: bool = False
    #: the renormalising sum is clamped (``clamp(sum, min=...)``): the division keeps the clamped sum too
    norm_clamp: bool = False
    #: the softmax scores outside the top groups are zeroed by ``masked_fill`` before top-k, whose
    #: bool mask [E] per token the backward keeps (group-limited greedy top-k)
    group_mask: bool = False
    weighted_fp32: bool = False  # the weighted expert output is promoted to fp32 (an fp32 accumulator)
    #: noise tensors the input is multiplied by in place before routing, which the products keep
    #: (``b_a·d`` each per token)
    input_jitter: int = 0
    #: below fp32 nothing keeps the block input itself: the router reads an fp32 copy of it and no
    #: shared-expert module exists. A zero-width shared expert still reads it: not this case
    input_copied: bool = False
    #: the experts' and shared expert's SwiGLU (``GLUS``): ``clamped`` (``ffn.clamped_glu_saved``),
    #: ``clamped_silu`` (``ffn.clamped_silu_saved``)
    glu: str = "plain"

    def __post_init__(self):
        if self.glu not in GLUS:
            raise ValueError(f"MoESaves.glu: {self.glu!r} is not one of {GLUS}")


#: routing weights cast back to the compute dtype, the most common declaration
WEIGHTS_CAST = MoESaves(weights_fp32=False)


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
    d_lat: sympy.Expr | None = None  # latent width the experts run in (LatentMoE; None: d)
    d_sh: sympy.Expr | None = None  # shared expert width (None = no shared expert)
    shared_gated: bool = True
    shared_gate: bool = False  # sigmoid gate d -> 1 on the shared expert
    correction_bias: bool = False  # e_score_correction_bias buffer [E], added to the scores for the choice
    proj_bias: bool = False  # bias on shared-expert and latent projections
    act: str | None = None  # expert activation; None: silu if gated, else gelu_tanh (see FFN)
    #: the scoring function: "softmax" | "sigmoid_group" (group-limited sigmoid, fp32) | "sigmoid"
    #: (sigmoid scores in the compute dtype) | "topk_softmax" (softmax over the top-k fp32 logits
    #: only) | "sparsemixer" (two masked softmaxes, one expert from each) | "sqrt_softplus"
    router: str = "softmax"
    norm_topk: bool = True  # top-k weights renormalised to sum 1 (norm_topk_prob)
    saves: MoESaves = MoESaves()  # the family's implementation: saved tensors only

    def runs(self, ph: Phase | None) -> sympy.Expr:
        """Routed experts each token runs through: k (eager dispatch computes exactly k)."""
        return self.k

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
        d, E, d_moe = self.d, self.E, self.d_moe
        d_x = d if self.d_lat is None else self.d_lat
        prims = [Linear("router", d, E, self.router_bias, doc="[d, E] scores over all experts")]
        if self.d_lat is not None:
            prims.append(Linear("latent_down", d, d_x, self.proj_bias, doc="[d, d_lat] fc1_latent_proj"))
        up = 2 * d_moe if self.gated else d_moe
        runs = self.runs(ph)
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
        int64 top-k indices 8·k, with renormalisation the fp32 sum 4 and weights 4·k; sigmoid_group:
        below fp32 the fp32 copies of the input 4·d and of the router weight 4·d·E (once per layer),
        sigmoid scores 4·E and the top-k indices 8·k gather reads, with renormalisation 4 + 4·k (the
        group selection runs on tensors that need no gradient: what it saves is freed with its
        branch); sparsemixer: two bool masks E, two softmaxes ``b_a·E``, two multipliers ``b_a`` and
        two int64 indices. Per routed assignment (k·B·T rows, each expert's tokens gathered): an
        int64 (position, token) pair 16, the gathered input ``b_a·d``, gate_up ``b_a·2·d_moe``
        (ungated ``b_a·d_moe``), the activation and the product ``b_a·d_moe`` each (ungated: the
        activation), the routing weight (4 or ``b_a``), the expert output ``b_a·d`` and the weighted
        output ``b_a·d`` index_add keeps. Shared expert: a gated FFN ``b_a·4·d_sh`` (plain
        ``2·d_sh``); with a sigmoid gate its output ``b_a`` and the shared output ``b_a·d``.

        The family's implementation (``saves``, a ``MoESaves``): ``router_fp32=False`` keeps the
        router tensors in the compute dtype, ``router_upcast`` the fp32 copies below fp32,
        ``group_mask`` a bool mask E, ``norm_clamp`` the clamped sum, ``input_jitter`` its noise
        tensors, ``glu="clamped"`` ``b_a·4·d_moe`` in place of the activation, ``input_copied`` no
        block input, ``weights_fp32`` / ``weighted_fp32`` the dtypes of the routing weight and of
        the weighted output.
        """
        a, d = sym.b_a, self.d
        if self.router not in ("softmax", "sigmoid_group", "sigmoid", "topk_softmax", "sparsemixer",
                               "sqrt_softplus"):
            raise NotImplementedError(f"{self.label()} ({self.router} router) declares no saved tensors yet")
        out = [Saved("input", d, a, "seq", doc="router / shared-expert input")]
        if bw.upcast and self.saves.input_copied:
            out = []  # the router reads an fp32 copy and the experts gather rows: the input itself is not kept
        if self.saves.input_jitter:
            out.append(Saved("jitter_noise", self.saves.input_jitter * d, a, "seq",
                             doc="uniform noise the input is scaled by"))
        return out + self._saved_routed(bw) + self._saved_shared()

    def _saved_routed(self, bw) -> list:
        """The router's and the routed experts' saved tensors (eager dispatch of k experts)."""
        a, d, E, k, f = sym.b_a, self.d, self.E, self.k, self.d_moe
        d_x = d if self.d_lat is None else self.d_lat  # the experts' width (LatentMoE: d_lat)
        impl = self.saves
        out = []
        if self.router == "sigmoid_group":
            if bw.upcast:  # F.linear(x.float(), weight.float()): both fp32 copies are kept
                out += [Saved("router/input_fp32", d, 4, "seq"),
                        Saved("router/weight_fp32", d * E, 4, "none", sympy.Integer(1),
                              "fp32 copy of a compute-dtype router weight (per layer, batch-free)")]
            out += [Saved("router/scores_fp32", E, 4, "seq"),
                    Saved("router/topk_indices", k, 8, "seq", doc="read by gather")]
        elif self.router == "sparsemixer":
            # sparsemixer, twice (top-1, then top-2 with top-1 masked out): the masked_fill's bool
            # mask E, the softmax E in the compute dtype, the gathered multiplier (its autograd
            # Function keeps it) and the Gumbel-sampled expert index (int64)
            out += [Saved("router/masks", 2 * E, 1, "seq", doc="bool masks of masked_fill"),
                    Saved("router/masked_softmax", 2 * E, a, "seq"),
                    Saved("router/multipliers", 2, a, "seq"), Saved("router/selected", 2, 8, "seq")]
        elif self.router == "topk_softmax":  # top-k of the fp32 logits, softmax over those k
            # (router_fp32=False: top-k and softmax of the logits in the compute dtype)
            out += [Saved("router/topk_indices", k, 8, "seq"),
                    Saved("router/topk_softmax", k, 4 if impl.router_fp32 else a, "seq")]
        elif self.router in ("sigmoid", "sqrt_softplus"):  # scores in the compute dtype
            if self.router == "sqrt_softplus":  # sqrt(softplus(logits)) keeps the logits too
                out.append(Saved("router/logits", E, a, "seq", doc="softplus input"))
            out += [Saved("router/scores", E, a, "seq"), Saved("router/topk_indices", k, 8, "seq")]
            if self.norm_topk:
                out += [Saved("router/topk_sum", 1, a, "seq"), Saved("router/topk_weights", k, a, "seq")]
        else:
            if impl.router_upcast and bw.upcast:
                out += [Saved("router/input_fp32", d, 4, "seq"),
                        Saved("router/weight_fp32", d * E, 4, "none", sympy.Integer(1),
                              "fp32 copy of a compute-dtype router weight (per layer, batch-free)")]
            out += [Saved("router/probs_fp32" if impl.router_fp32 else "router/probs", E,
                          4 if impl.router_fp32 else a, "seq"), Saved("router/topk_indices", k, 8, "seq")]
            if impl.group_mask:
                out.append(Saved("router/group_mask", E, 1, "seq", doc="bool mask of masked_fill (groups left out)"))
        if self.norm_topk and self.router not in ("sigmoid", "topk_softmax", "sparsemixer", "sqrt_softplus"):
            r = 4 if impl.router_fp32 else a
            out += [Saved("router/topk_sum", 1, r, "seq"), Saved("router/topk_weights", k, r, "seq")]
            if impl.norm_clamp:
                out.append(Saved("router/topk_sum_clamped", 1, 4, "seq", doc="clamp(sum, min=norm_min)"))
        rows = k * sym.B * sym.T
        out += [Saved("experts/index_pairs", 2, 8, "seq", rows, "torch.where(expert_mask): int64 pairs"),
                Saved("experts/input", d_x, a, "seq", rows, "hidden_states[token_idx]")]
        if impl.glu == "clamped":
            out += clamped_glu_saved("experts/", f, rows)
        elif impl.glu == "clamped_silu":
            out += clamped_silu_saved("experts/", f, rows)
        elif self.gated:
            out += [Saved("experts/gate_up", 2 * f, a, rows=rows), Saved("experts/act", f, a, rows=rows),
                    Saved("experts/down_input", f, a, rows=rows)]
        else:
            out += [Saved("experts/up", f, a, rows=rows), Saved("experts/down_input", f, a, rows=rows)]
        out += [Saved("experts/weight", 1, 4 if impl.weights_fp32 else a, "seq", rows),
                Saved("experts/output", d_x, a, "seq", rows),
                Saved("experts/weighted", d_x, 4 if impl.weighted_fp32 else a, "seq", rows)]
        if self.d_lat is not None:  # fc1_latent_proj reads the block input (kept above)
            out.append(Saved("latent_up_input", d_x, a, "seq", doc="fc2_latent_proj input [.., d_lat]"))
        return out

    def _saved_shared(self) -> list:
        a, d = sym.b_a, self.d
        out = []
        if self.d_sh is not None and self.saves.glu == "clamped":
            out += clamped_glu_saved("shared/", self.d_sh)
        elif self.d_sh is not None and self.saves.glu == "clamped_silu":
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
            return Terms({"e_score_correction_bias": self.E}, {"e_score_correction_bias": "[E] buffer"})
        return Terms()

    def label(self) -> str:
        return "MoE" + (" (LatentMoE)" if self.d_lat is not None else "")
