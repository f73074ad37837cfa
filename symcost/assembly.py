"""Assembly: a model is embedding + Σ_groups count × layer + final norm + head.

Adapters describe a model as a few ``LayerGroup(name, count, components)``; heterogeneous stacks
become several groups with symbolic counts (``L_dense``, ``L_moe``), never one entry per layer.
This module only multiplies and sums ``Terms``; the math lives in the components.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from .components.base import Component
from .conventions import Phase
from .notation import sym
from .terms import Terms


@dataclass(frozen=True)
class LayerGroup:
    """``count`` identical layers, each made of ``components``."""

    name: str
    count: sympy.Expr
    components: tuple[Component, ...]


@dataclass
class Model:
    """The architecture-neutral description every adapter produces."""

    name: str
    model_type: str
    pre: tuple[Component, ...]  # embeddings
    groups: tuple[LayerGroup, ...]
    post: tuple[Component, ...]  # final norm, LM head
    values: dict[sympy.Symbol, int]  # the config's value of every symbol used
    extras: Terms = field(default_factory=Terms)  # checkpoint parts transformers doesn't build (MTP)
    notes: list[str] = field(default_factory=list)
    #: cache element bytes that differ from the KV dtype, by cache key (e.g. Mamba fp32 state)
    state_dtype: dict[str, str] = field(default_factory=dict)
    #: the vision tower + projector, if any, for per-image questions: ``image_tokens()`` (text tokens
    #: one image fills) and ``image_flops()`` (Terms); never walked by the totals above
    vision: Component | None = None

    # -- the shared walk over parts -----------------------------------------------------------
    def _collect(self, fn) -> Terms:
        out = Terms()
        for c in self.pre:  # embeddings, final norm, head: their weights sit at the top level
            out.merge(fn(c))
        for g in self.groups:
            layer = Terms()
            for c in g.components:
                sub = fn(c)
                if sub:
                    layer.add(c.key, sub, c.label())
            if layer:
                out.add(g.name, layer.scale(g.count), f"{g.count} layers")
        for c in self.post:
            out.merge(fn(c))
        return out

    # -- the questions ------------------------------------------------------------------------
    def params(self) -> Terms:
        """Parameters exactly as the reference transformers class registers them (tied once)."""
        return self._collect(lambda c: c.params())

    def active_params(self) -> Terms:
        """Parameters touched per token: all non-expert + router + k routed + shared experts."""
        return self._collect(lambda c: c.active_params())

    def routed_params(self) -> Terms:
        """The routed-expert part of ``params()`` (what expert parallelism splits)."""
        return self._collect(lambda c: c.routed_params())

    def buffers(self) -> Terms:
        return self._collect(lambda c: c.buffers())

    def flops(self, ph: Phase) -> Terms:
        """Forward matmul FLOPs of one pass (``conventions``), batch ``B``."""
        return self._collect(lambda c: c.flops(ph))

    def elementwise(self, ph: Phase) -> Terms:
        """Elementwise FLOPs (norms, activations, softmax, RoPE, residuals; ``symcost.elementwise``):
        a separate, optional group, never part of ``flops``."""
        return self._collect(lambda c: c.elementwise(ph))

    def cache(self) -> Terms:
        """Cache elements held after ``T`` tokens for batch ``B`` (KV, conv and SSM state)."""
        return self._collect(lambda c: c.cache())

    def components(self):
        yield from self.pre
        for g in self.groups:
            yield from g.components
        yield from self.post

    def values_with(self, **inputs: int) -> dict:
        """Config values plus user inputs such as ``T=4096, B=1``."""
        vals = dict(self.values)
        for name, v in inputs.items():
            vals[getattr(sym, name)] = sympy.Integer(v)
        return vals
