"""Dense feed-forward blocks: gated (SwiGLU/GeGLU, 3 matrices) or plain (GELU, ReLU², 2 matrices).

Parameters (seed 000 §1.3, transformers ``LlamaMLP`` / ``GPT2MLP`` / ``NemotronHMLP``):
    gated: gate_proj and up_proj d·d_ff each, down_proj d_ff·d   -> 3·d·d_ff
    plain: up_proj d·d_ff, down_proj d_ff·d                      -> 2·d·d_ff  (+ biases)
    Apertus' xIELU activation adds two learned scalars (alpha_p, alpha_n) and two scalar buffers.
FLOPs: 2·tokens per weight (activations count 0).
Elementwise (``symcost.core.elementwise``): the activation over d_ff per token (``act``: SiLU 4 by
    default when gated, GELU-tanh 8 when plain; ReLU² 2, GELU 5), the gate product 1·d_ff when
    gated, and one residual add d. Bias adds are not counted.

>>> FFN().params().total
3*d*d_ff
>>> FFN(gated=False).params().total
2*d*d_ff
>>> from symcost.core.conventions import Phase
>>> FFN().elementwise(Phase(kind="decode")).total
B*d + 5*B*d_ff
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST, act_cost
from ..core.notation import sym
from ..core.primitives import Linear, Param, Saved
from ..core.terms import Terms
from .base import Component


def clamped_glu_saved(prefix: str, width, rows=None, split: str = "tp") -> list:
    """What the clamped SwiGLU ``(up.clamp(-l, l) + 1) · (g · σ(α·g))``, g = gate.clamp(max=l), keeps
    per row (MiniMax-M3's ``_apply_gate`` and dense MLP on a fused gate_up): the gate_up output
    ``b_a·2·width`` (both clamps read their half of it), σ(α·g), g, g·σ(α·g), up + 1 and their
    product (the down projection's input), ``b_a·width`` each: ``b_a·7·width``."""
    a = sym.b_a
    return [Saved(f"{prefix}gate_up", 2 * width, a, split, rows, "fused gate_up output (the clamps read it)"),
            Saved(f"{prefix}sigmoid", width, a, split, rows, "σ(α·g)"),
            Saved(f"{prefix}gate_clamped", width, a, split, rows, "g = gate.clamp(max=l)"),
            Saved(f"{prefix}glu", width, a, split, rows, "g·σ(α·g)"),
            Saved(f"{prefix}up_plus_one", width, a, split, rows, "up.clamp(-l, l) + 1"),
            Saved(f"{prefix}down_input", width, a, split, rows, "(up + 1)·glu")]


def clamped_silu_saved(prefix: str, width, rows=None, split: str = "tp") -> list:
    """What DeepSeek-V4's clamped SwiGLU ``silu(gate.clamp(max=l)) · up.clamp(-l, l)`` keeps per row
    (``DeepseekV4Experts._apply_gate``, ``DeepseekV4MLP``): the gate and up projections before the
    clamps ``b_a·2·width`` (what the clamps read), the clamped gate, its SiLU, the clamped up and
    their product (the down projection's input), ``b_a·width`` each: ``b_a·6·width``."""
    a = sym.b_a
    return [Saved(f"{prefix}gate_up", 2 * width, a, split, rows, "gate and up before the clamps"),
            Saved(f"{prefix}gate_clamped", width, a, split, rows, "gate.clamp(max=l)"),
            Saved(f"{prefix}act", width, a, split, rows, "silu(clamped gate)"),
            Saved(f"{prefix}up_clamped", width, a, split, rows, "up.clamp(-l, l)"),
            Saved(f"{prefix}down_input", width, a, split, rows, "act·up")]


@dataclass(frozen=True)
class FFN(Component):
    key = "mlp"
    d: sympy.Expr = sym.d
    d_ff: sympy.Expr = sym.d_ff
    gated: bool = True
    bias: bool = False
    act: str | None = None  # activation (table or hidden_act name); None: silu if gated, else gelu_tanh
    act_params: bool = False  # a learned activation: xIELU's alpha_p, alpha_n (+ buffers beta, eps)
    #: the clamped SwiGLU of MiniMax-M3 (``(up.clamp(±l) + 1) · g·σ(α·g)``, g = gate.clamp(max=l), on a
    #: fused gate_up): what its backward keeps (``saved`` only; ``clamped_glu_saved``)
    clamped_glu: bool = False
    #: a parallel block (attention and MLP read one norm's output: Cohere, GPT-NeoX): the input is
    #: the tensor attention already keeps, not saved a second time (saved tensors only)
    shared_input: bool = False
    #: Gemma 3n's activation sparsity (``_gaussian_topk``, activation_sparsity > 0): the gate becomes
    #: relu(gate − (mean + std·Φ⁻¹(s))) before the activation; elementwise, saved tensors only
    gaussian_topk: bool = False

    @property
    def activation(self) -> str:
        return self.act or ("silu" if self.gated else "gelu_tanh")

    def elementwise(self, ph: Phase) -> Terms:
        rows = ph.tokens
        t = Terms({"act": act_cost(self.activation) * rows * self.d_ff},
                  {"act": f"{self.activation} over d_ff"})
        if self.gated:
            t.add("gate_mul", COST["gate_mul"] * rows * self.d_ff, "act(gate) · up")
        t.add("residual", COST["residual"] * rows * self.d, "residual add")
        return t

    def primitives(self, ph: Phase | None = None):
        d, d_ff = self.d, self.d_ff
        prims = []
        if self.gated:
            prims.append(Linear("gate_proj", d, d_ff, self.bias, tp="col", doc="[d, d_ff]"))
        prims += [Linear("up_proj", d, d_ff, self.bias, tp="col", doc="[d, d_ff]"),
                  Linear("down_proj", d_ff, d, self.bias, tp="row", doc="[d_ff, d]")]
        if self.act_params:
            prims += [Param("act_fn.alpha_p", sympy.Integer(1), doc="xIELU scalar [1]"),
                      Param("act_fn.alpha_n", sympy.Integer(1), doc="xIELU scalar [1]")]
        return prims

    def saved(self, bw) -> list:
        """Input ``b_a·d``; gated: gate, act(gate), up and their product, ``b_a·4·d_ff`` (with
        ``gaussian_topk`` the gate is the relu'd one, and the raw gate ``b_a·d_ff``, its std ``b_a``
        and the one-element Φ⁻¹(s) per layer are kept too);
        plain: the up projection and its activation, ``b_a·2·d_ff``, plus three more ``b_a·d_ff``
        intermediates of the composite tanh GELU (``gelu_new``, GPT-2's default), or xIELU's three
        ``b_a·d_ff``, its ``d_ff``-byte mask and four scalars per layer (Apertus)."""
        a = sym.b_a
        out = [] if self.shared_input else [Saved("input", self.d, a, "seq", doc="gate/up_proj input")]
        if self.clamped_glu:
            return out + clamped_glu_saved("", self.d_ff)
        if self.gated and self.gaussian_topk:
            # std(gate) keeps the gate and its result; × Φ⁻¹(s) keeps that one-element tensor; relu keeps
            # its output, the activation's input
            out += [Saved("topk/gate", self.d_ff, a, doc="gate_proj output, std's input"),
                    Saved("topk/std", 1, a, doc="std(gate) [.., 1]"),
                    Saved("topk/std_multiplier", 1, a, "none", sympy.Integer(1), "Φ⁻¹(s) [], per layer")]
        if self.gated:
            return out + [Saved("gate", self.d_ff, a), Saved("act", self.d_ff, a),
                          Saved("up", self.d_ff, a), Saved("down_input", self.d_ff, a, doc="act·up")]
        out.append(Saved("up", self.d_ff, a))
        if self.act in (None, "gelu_new", "gelu_tanh") and not self.gated:
            # transformers' NewGELUActivation (GPT-2's gelu_new) is composite:
            # 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) keeps tanh's output, 0.5·x and 1 + tanh
            out += [Saved("gelu_tanh_out", self.d_ff, a), Saved("gelu_half_x", self.d_ff, a),
                    Saved("gelu_one_plus_tanh", self.d_ff, a)]
        if self.act == "xielu":
            # XIELUActivation's Python path (the CPU one): alpha_p·x, expm1(min(x, eps)) and
            # expm1(..) − x (b_a·3·d_ff), torch.where's bool condition (d_ff bytes), and per layer the
            # softplus'd alpha_p, alpha_n and the beta, eps buffers the products read (4 scalars)
            out += [Saved("xielu/intermediates", 3 * self.d_ff, a), Saved("xielu/positive_mask", self.d_ff, 1),
                    Saved("xielu/scalars", sympy.Integer(4), a, "none", sympy.Integer(1),
                          "alpha_p, alpha_n, beta, eps [1] / [] per layer")]
        return out + [Saved("down_input", self.d_ff, a, doc="act(up)")]

    def buffers(self) -> Terms:
        if self.act_params:  # XIELUActivation's beta and eps: persistent scalar buffers
            return Terms({"act_fn.beta": sympy.Integer(1), "act_fn.eps": sympy.Integer(1)},
                         {"act_fn.beta": "[] buffer", "act_fn.eps": "[] buffer"})
        return Terms()

    def label(self) -> str:
        return "gated FFN" if self.gated else "FFN"
