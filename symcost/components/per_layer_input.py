"""Per-layer inputs (PLE, Gemma 4): a second, narrow residual signal of width d_pl fed into every layer.

transformers ``Gemma4TextModel`` / ``Gemma4TextDecoderLayer`` (5.24), when ``hidden_size_per_layer_input``
(d_pl) is not 0:

* once per model (``PerLayerEmbedding``): ``embed_tokens_per_layer`` a [V_pl, L·d_pl] lookup table
  (all layers packed into one row, scaled by √d_pl: a buffer, no parameter); the context part
  ``per_layer_model_projection`` d → L·d_pl over every new token, then ``per_layer_projection_norm``
  RMSNorm(d_pl), shared by all layers. Parameters V_pl·L·d_pl + d·L·d_pl + d_pl; FLOPs 2·tokens·d·L·d_pl.
* in every layer (``PerLayerInputGate``), after the FFN residual: ``per_layer_input_gate`` d → d_pl,
  the activation times that layer's d_pl slice of the per-layer input, ``per_layer_projection``
  d_pl → d, ``post_per_layer_input_norm`` RMSNorm(d), one more residual add. Parameters 2·d·d_pl + d;
  FLOPs 2·tokens·2·d·d_pl.

Elementwise: the two norms, the projections' scaling and the mean of the two parts (2 per element of
L·d_pl); in a layer the activation and product over d_pl and one residual add.

>>> PerLayerEmbedding().params().total
L*V_pl*d_pl + L*d*d_pl + d_pl
>>> from symcost.core.conventions import Phase
>>> PerLayerInputGate().flops(Phase(kind="decode")).total
4*B*d*d_pl
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST, act_cost, norm_terms
from ..core.notation import sym
from ..core.primitives import Linear, Norm, Param, Saved
from ..core.terms import Terms
from .base import Component
from .norm import pow_rms_saved


@dataclass(frozen=True)
class PerLayerEmbedding(Component):
    key = "per_layer_inputs"
    d: sympy.Expr = sym.d
    d_pl: sympy.Expr = sym.d_pl
    V_pl: sympy.Expr = sym.V_pl
    L: sympy.Expr = sym.L
    #: the projection reads the tensor the first layer takes as its input (Gemma 4); False: Gemma 3n,
    #: whose first layer reads the AltUp streams, so the embedding output is the projection's own
    first_layer_input: bool = True
    #: Gemma 3n: the per-layer table looks up its own clamped ids (``torch.where``: int64), and the
    #: projection and the combination are scaled by one-element buffers (Gemma 4: Python floats)
    own_ids_and_scales: bool = False

    def primitives(self, ph: Phase | None = None):
        width = self.L * self.d_pl
        return [Param("embed_tokens_per_layer", self.V_pl * width, doc="[V_pl, L·d_pl] lookup table"),
                Linear("per_layer_model_projection", self.d, width, doc="[d, L·d_pl]"),
                Norm("per_layer_projection_norm", self.d_pl, doc="RMSNorm [d_pl], every layer's slice")]

    def elementwise(self, ph: Phase) -> Terms:
        t = norm_terms(self.primitives(ph), ph.tokens * self.L)  # the norm runs on L slices per token
        t.add("combine", 2 * ph.tokens * self.L * self.d_pl, "(projection + embedding)·2^-1/2")
        return t

    def saved(self, bw) -> list:
        """Per token (measured, tests/test_activations.py): the scaled lookup's one-element scale
        (the ids are the main embedding's); below fp32 the projection's input, the embedding output
        ``b_a·d`` (in fp32 it is the tensor the first layer's norm keeps as its ``x.float()``, and under
        full recomputation the first layer's checkpointed input: counted there; ``first_layer_input``
        False: always its own); ``own_ids_and_scales`` (Gemma 3n): the table's clamped int64 ids and
        the two one-element scale buffers; projection_norm, a Gemma4RMSNorm over L slices of d_pl (``norm.pow_rms_saved``); the
        combined per-layer inputs ``b_a·L·d_pl``, read by every layer's gate product."""
        a = sym.b_a
        out = [Saved("embed_scale", 1, a, "none", sympy.Integer(1), "√d_pl scale []")]
        if not self.first_layer_input or (bw.upcast and bw.recompute != "full"):
            out.append(Saved("projection_input", self.d, a, "seq", doc="the embedding output"))
        if self.own_ids_and_scales:
            one = sympy.Integer(1)
            out += [Saved("ids", 1, 8, "seq", doc="torch.where(in_table, ids, 0), int64"),
                    Saved("scales", 2, a, "none", one, "per_layer_projection_scale, per_layer_input_scale []")]
        return (out + pow_rms_saved("per_layer_projection_norm", self.d_pl, bw, heads=self.L)
                + [Saved("per_layer_inputs", self.L * self.d_pl, a, "seq", doc="[.., L, d_pl], sliced by each layer")])

    def label(self) -> str:
        return "per-layer input embeddings"


@dataclass(frozen=True)
class PerLayerInputGate(Component):
    key = "per_layer_input"
    d: sympy.Expr = sym.d
    d_pl: sympy.Expr = sym.d_pl
    act: str = "gelu_pytorch_tanh"

    def primitives(self, ph: Phase | None = None):
        return [Linear("per_layer_input_gate", self.d, self.d_pl, doc="[d, d_pl]"),
                Linear("per_layer_projection", self.d_pl, self.d, doc="[d_pl, d]"),
                Norm("post_per_layer_input_norm", self.d, doc="RMSNorm [d]")]

    def elementwise(self, ph: Phase) -> Terms:
        rows = ph.tokens
        t = norm_terms(self.primitives(ph), rows)
        t.add("act", act_cost(self.act) * rows * self.d_pl, f"{self.act} over d_pl")
        t.add("gate_mul", COST["gate_mul"] * rows * self.d_pl, "act(gate) · per-layer input")
        t.add("residual", COST["residual"] * rows * self.d, "residual add")
        return t

    def saved(self, bw) -> list:
        """Measured (tests/test_activations.py): the gate's input ``b_a·d``, its output and activation
        ``b_a·d_pl`` each, the product (per_layer_projection's input) ``b_a·d_pl``, and
        post_per_layer_input_norm, a Gemma4RMSNorm of d (``norm.pow_rms_saved``); the per-layer
        input slice is a view of ``PerLayerEmbedding``'s tensor, counted there."""
        a = sym.b_a
        return ([Saved("input", self.d, a, "seq"), Saved("gate", self.d_pl, a, "seq"),
                 Saved("act", self.d_pl, a, "seq"), Saved("projection_input", self.d_pl, a, "seq")]
                + pow_rms_saved("post_per_layer_input_norm", self.d, bw))

    def label(self) -> str:
        return "per-layer input gate"
