"""The component contract.

A component is one mechanism of a layer (an attention, an FFN, a norm). It is a frozen dataclass
whose fields are its dimensions (SymPy expressions, by default the notation symbols) and it
answers one required question, ``primitives(phase)``: the weights and matmul ops it runs. The
generic derivations here turn that list into parameters, active parameters and FLOPs, each a
``Terms`` tree keyed by primitive name. Cache and fixed state are not derivable from the
primitives and are declared by the components that hold any.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import sympy

from ..core.conventions import Phase
from ..core.elementwise import norm_terms
from ..core.primitives import Primitive
from ..core.terms import Terms


@dataclass(frozen=True)
class Component:
    key: ClassVar[str] = "component"
    #: what the component's forward reads: ``"text"`` (every token of a text pass) or a tower's
    #: own input (``"image"``, ``"audio"``: vision/audio encoders and their projectors), which a
    #: text-only pass never feeds — such a component runs no text FLOPs and saves nothing
    modality: ClassVar[str] = "text"

    def primitives(self, ph: Phase | None = None) -> list[Primitive]:
        raise NotImplementedError

    def params(self) -> Terms:
        """Parameters, one term per weight."""
        t = Terms()
        for p in self.primitives(None):
            value = p.params()
            if value != 0:
                t.add(p.name, value, p.doc)
        return t

    def active_params(self) -> Terms:
        """Parameters a token touches (routed experts: ``k`` of ``E``)."""
        t = Terms()
        for p in self.primitives(None):
            value = p.active_params()
            if value != 0:
                t.add(p.name, value, p.doc)
        return t

    def routed_params(self) -> Terms:
        """Parameters of weights of which only some copies run per token (routed experts)."""
        t = Terms()
        for p in self.primitives(None):
            if getattr(p, "active", None) is not None and p.params() != 0:
                t.add(p.name, p.params(), p.doc)
        return t

    def flops(self, ph: Phase) -> Terms:
        """Forward matmul FLOPs of one layer for the phase (batch ``B`` included)."""
        t = Terms()
        for p in self.primitives(ph):
            value = p.flops(ph.tokens)
            if value != 0:
                t.add(p.name, value, p.doc)
        return t

    def elementwise(self, ph: Phase) -> Terms:
        """Elementwise FLOPs of one layer (``symcost.core.elementwise``; never part of ``flops``).

        Default: the norms among the primitives, each over the phase's token rows. Components with
        more elementwise work (activations, softmax, RoPE, residual adds) override this.
        """
        return norm_terms(self.primitives(ph), ph.tokens)

    def saved(self, bw) -> list:
        """Tensors one layer's backward keeps (``primitives.Saved``) under ``conventions.Backward``.

        Not derivable from the weights alone (it depends on which intermediates each op needs),
        so each component declares it; one that has not raises, and the training layer says so.
        A tower (``modality`` not ``"text"``) saves nothing: training on text tokens never runs it
        (the convention of ``training.activations``; images in training are not modelled).
        """
        if self.modality != "text":
            return []
        raise NotImplementedError(f"{self.label()} declares no saved-for-backward tensors")

    def residual_width(self):
        """Width of the residual stream a layer holding this component passes on (None: d); what
        full recomputation checkpoints per token (hyper-connections: n_hc·d)."""
        return None

    def saved_shared(self, bw) -> list:
        """Saved tensors computed once per forward and shared by every layer (the RoPE table)."""
        return []

    def checkpoint_shared(self, bw) -> list:
        """Under full recomputation: tensors besides the layer input that every checkpointed layer
        holding this component takes as an input, one tensor for all of them (Zamba's original
        embeddings); counted once, by name."""
        return []

    def cache(self) -> Terms:
        """Cache elements held after ``T`` tokens, batch ``B`` (default: none)."""
        return Terms()

    def cache_tp_share(self, tp: int, values: dict):
        """Fraction of this component's cache one of ``tp`` tensor-parallel ranks holds
        (default: split evenly by heads)."""
        return Fraction(1, tp)

    def buffers(self) -> Terms:
        """Checkpoint tensors the reference class registers as buffers, not parameters."""
        return Terms()

    def label(self) -> str:
        return type(self).__name__

    @classmethod
    def mechanism(cls) -> type:
        """The mechanism this component is: its class, or — for a family's refinement of a
        mechanism written in the family's adapter module — the nearest ``components`` class."""
        return next((k for k in cls.__mro__ if k.__module__.startswith(__package__ + ".")), cls)

    def check(self, values: dict) -> None:
        """Validate the dimensions once numbers are known (override where it matters)."""


def as_expr(value) -> sympy.Expr:
    return sympy.sympify(value)
