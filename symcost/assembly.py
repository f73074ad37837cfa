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
    #: the checkpointed layers (transformers' decoder layers, each one gradient-checkpointing unit)
    #: these ``count`` layers make under full recomputation; None: one per layer. LongCat-Flash's
    #: double blocks: 2·L sublayers and L shortcut MoEs make L checkpointed decoder layers
    checkpoints: sympy.Expr | None = None


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

    def __repr__(self) -> str:
        layers = " + ".join(f"{g.count}" for g in self.groups)
        return f"<Model {self.name!r} ({self.model_type}): {layers} layers, {len(self.values)} values>"

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
        out.bound = dict(self.values)  # total_at(T=..., B=...) needs only the user's inputs
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

    def cache_bytes(self, kv_dtype: str = "bf16") -> Terms:
        """Cache bytes: every KV leaf × ``b_kv``, every leaf kept in its own dtype (``state_dtype``,
        e.g. fp32 Mamba/DeltaNet state) × ``b_state``; both bound (``kv_dtype``; the state's dtype).

        >>> m = Model("x", "t", (), (), (), {})
        >>> m.cache_bytes().bound[sym.b_kv]
        2
        """
        from .units import dtype_bytes
        state = {dtype_bytes(dt) for dt in self.state_dtype.values()}
        if len(state) > 1:  # one symbol per dtype would be needed; no family has two yet
            raise ValueError(f"{self.name}: cache state leaves in several dtypes {sorted(state)}")
        out = Terms()
        for path, expr in self.cache().flatten().items():
            own = path.rsplit("/", 1)[-1] in self.state_dtype
            out.add(path, expr * (sym.b_state if own else sym.b_kv))
        out.bound = {**self.values, sym.b_kv: _whole(dtype_bytes(kv_dtype, "--kv-dtype"), "b_kv")}
        if state:
            out.bound[sym.b_state] = _whole(state.pop(), "b_state")
        return out

    def weights_bytes(self, dtype: str = "bf16") -> Terms:
        """Weight bytes as ``b_w`` × each parameter term (one dtype for all; quantized checkpoints
        with per-module dtypes and scale tensors are the serving layer's account)."""
        out = self.params().scale(sym.b_w)
        b = _rational_bytes(dtype)
        out.bound = {**self.values, sym.b_w: b}
        return out

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


def _whole(b, name: str) -> sympy.Integer:
    if b.denominator != 1:
        raise ValueError(f"{name}: {b} bytes is not a whole number per element")
    return sympy.Integer(int(b))


def _rational_bytes(dtype: str) -> sympy.Rational:
    from .units import dtype_bytes
    b = dtype_bytes(dtype, "--weights-dtype")
    return sympy.Rational(b.numerator, b.denominator)
