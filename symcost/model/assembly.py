"""Assembly: a model is embedding + Σ_groups count × layer + final norm + head.

Adapters describe a model as a few ``LayerGroup(name, count, components)``; heterogeneous stacks
become several groups with symbolic counts (``L_dense``, ``L_moe``), never one entry per layer.
Which group each layer index belongs to (Jamba's attention every 8th layer, Gemma's local/global
pattern) is ``Model.layer_order``, read only where the order matters: pipeline stages.
This module only multiplies and sums ``Terms``; the math lives in the components.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import sympy

from ..components.base import Component
from ..core.conventions import Phase
from ..core.errors import SymcostError
from ..core.notation import sym
from ..core.terms import Terms, exact
from ..core.units import dtype_bytes


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

    @property
    def tower(self) -> bool:
        """A vision/audio encoder's own blocks (no text component, ``Component.modality``): not
        decoder layers, never in ``Model.layer_order``."""
        return not any(c.modality == "text" for c in self.components)


#: one decoder layer: the name of its group, or the names of the groups it is built from (a name
#: repeated once per unit of that group the layer holds: LongCat's two sublayers)
Layer = str | tuple[str, ...]


def layer_order(per_layer: Iterable[Hashable], names: Mapping | Callable) -> tuple[str, ...]:
    """``Model.layer_order`` from what an adapter computes per layer (its ``layer_types``, pattern
    or per-layer kinds): the group name of each layer's kind (``names[kind]``, or ``names(kind)``),
    in layer order.

    >>> layer_order(["swa", "swa", "full"], {"swa": "swa_layers", "full": "full_layers"})
    ('swa_layers', 'swa_layers', 'full_layers')
    """
    name = names.__getitem__ if isinstance(names, Mapping) else names
    return tuple(name(k) for k in per_layer)


def kind_order(per_layer: Sequence[Hashable], groups: Sequence[LayerGroup]) -> tuple[str, ...]:
    """``layer_order`` when ``groups`` hold one group per distinct kind of ``per_layer``, in order
    of first occurrence (``qwen_moe.group_layers``, ``jamba.kind_groups``)."""
    kinds = list(dict.fromkeys(per_layer))
    if len(kinds) != len(groups):
        raise ValueError(f"{len(kinds)} layer kinds for {len(groups)} groups")
    return layer_order(per_layer, dict(zip(kinds, (g.name for g in groups))))


def as_phase(ph, inputs: dict) -> tuple[Phase, dict]:
    """(the ``Phase``, the remaining inputs) for a Phase or a kind string plus convention keywords."""
    inputs = dict(inputs)
    conv = {k: inputs.pop(k) for k in list(inputs) if k in Phase.model_fields}
    if isinstance(ph, Phase):
        return (ph.model_copy(update=conv) if conv else ph), inputs
    if not isinstance(ph, str):
        raise SymcostError(f"phase: expected a Phase or 'prefill' / 'decode', got {type(ph).__name__}")
    try:
        return Phase(kind=ph.strip().lower(), **conv), inputs
    except ValueError as e:  # pydantic's ValidationError: name the field and the choices
        err = e.errors()[0] if hasattr(e, "errors") else {"loc": ("kind",), "msg": str(e)}
        raise SymcostError(f"phase {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def bind_inputs(terms: Terms, inputs: Mapping) -> Terms:
    """``terms`` with user inputs (``T=4096, B=8``, by notation name, whole numbers) added to its
    bound values; unknown names and non-integers are refused with the name."""
    if not inputs:
        return terms
    bound = dict(terms.bound)
    for name, v in inputs.items():
        s = getattr(sym, name, None)
        if not isinstance(s, sympy.Symbol):
            raise SymcostError(f"input {name!r}: not a notation symbol (T, B, ... : symcost.sym)")
        if isinstance(v, bool) or not isinstance(v, (int, sympy.Integer)) or int(v) < 0:
            raise SymcostError(f"input {name}: expected a whole number >= 0, got {v!r}")
        bound[s] = sympy.Integer(int(v))
    out = terms.copy()
    out.bound = bound
    return out


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
    #: the group(s) of each decoder layer, by layer index (``Layer``; ``layer_order()`` builds it);
    #: None: the non-tower groups in sequence, count × one layer each (one group, or dense layers
    #: first). Tower groups (``LayerGroup.tower``) are not decoder layers and appear nowhere here.
    layer_order: tuple[Layer, ...] | None = None
    #: weights in ``pre`` that decoder layers run rather than the first stage alone (Zamba's shared
    #: transformer blocks), by component key: for each decoder layer, None or the copy of those
    #: weights it runs and that copy's own values of the component's symbols (one block: N_blk = 1,
    #: its N_ad adapter sets); a pipeline stage holds once each copy its layers run
    shared_copies: dict[str, tuple[tuple[Hashable, dict] | None, ...]] = field(default_factory=dict)
    #: the wrapped text model's type when this is a multimodal wrapper (``wrapping``), else ""
    text_model_type: str = ""

    def wrapping(self, model_type: str) -> Model:
        """This text model relabelled as the multimodal ``model_type`` that wraps it; the text
        model's own type stays in ``text_model_type`` (what the text-only oracles measured)."""
        self.text_model_type, self.model_type = self.model_type, model_type
        return self

    def __repr__(self) -> str:
        layers = " + ".join(f"{g.count}" for g in self.groups)
        return f"<Model {self.name!r} ({self.model_type}): {layers} layers, {len(self.values)} values>"

    def layers(self) -> list[tuple[LayerGroup, ...]]:
        """The decoder layers in the model's own order, each as the groups it is built from (one
        per unit: a LongCat layer is two ``sublayers`` and one ``shortcut_moe``). Checks that the
        order names exactly the non-tower groups, each as many times as its count (ValueError:
        an adapter's internal inconsistency, not bad input)."""
        by_name = {g.name: g for g in self.groups}
        stack = [g for g in self.groups if not g.tower]
        if len(by_name) != len(self.groups):
            raise ValueError(f"{self.name}: two layer groups share a name")
        if self.layer_order is None:
            return [(g,) for g in stack for _ in range(exact(g.count, self.values))]
        order = [(x,) if isinstance(x, str) else tuple(x) for x in self.layer_order]
        seen = Counter(n for layer in order for n in layer)
        want = {g.name: n for g in stack if (n := exact(g.count, self.values))}
        if dict(seen) != want:
            raise ValueError(f"{self.name}: layer_order holds {dict(seen)} layers of each group, the "
                             f"groups' counts are {want}")
        layers = [tuple(by_name[n] for n in layer) for layer in order]
        self._check_shared_copies(len(layers))
        return layers

    def _check_shared_copies(self, L: int) -> None:
        """Each shared component's copies, each counted once, make up its stored total."""
        keys = {c.key for c in self.pre}
        for key, per_layer in self.shared_copies.items():
            if key not in keys or len(per_layer) != L:
                raise ValueError(f"{self.name}: shared_copies[{key!r}] needs a pre component and one "
                                 f"entry per layer")
            copies = dict(x for x in per_layer if x is not None)
            for s in {s for cv in copies.values() for s in cv}:
                got = sum(int(cv.get(s, 0)) for cv in copies.values())
                if got != int(self.values[s]):
                    raise ValueError(f"{self.name}: the copies of {key!r} hold {s} = {got}, the model "
                                     f"{self.values[s]}")

    def n_layers(self) -> int:
        """Decoder layers (what a pipeline splits; towers and sub-layer groups not counted apart): the
        groups' counts summed, or the stated order's length (``layers`` checks it) — never a list of a
        spec's million layers only to count it."""
        if self.layer_order is None:
            return sum(exact(g.count, self.values) for g in self.groups if not g.tower)
        return len(self.layers())

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

    @property
    def has_towers(self) -> bool:
        """Whether any part reads another modality than text (a vision/audio encoder, its projector)."""
        parts = [*self.pre, *self.post, *(c for g in self.groups for c in g.components)]
        return any(c.modality != "text" for c in parts)

    def text_params(self) -> Terms:
        """``params()`` without the towers (``Component.modality`` not ``"text"``): the text model a
        model card quotes beside the full count (Gemma-4-26B-A4B: 25.2 B of 25.8 B)."""
        return self._collect(lambda c: c.params() if c.modality == "text" else Terms())

    def text_active_params(self) -> Terms:
        """``active_params()`` without the towers (Gemma-4-26B-A4B: 3.8 B active text-only, 4.4 B with them)."""
        return self._collect(lambda c: c.active_params() if c.modality == "text" else Terms())

    def routed_params(self) -> Terms:
        """The routed-expert part of ``params()`` (what expert parallelism splits)."""
        return self._collect(lambda c: c.routed_params())

    def buffers(self) -> Terms:
        return self._collect(lambda c: c.buffers())

    def flops(self, ph: Phase | str = "prefill", /, **inputs) -> Terms:
        """Forward matmul FLOPs of one pass (``conventions``), batch ``B``.

        ``ph`` is a ``Phase`` or its kind as people type it (``"decode"``); the Phase's conventions
        may follow as keywords (``attention="causal"``) and inputs by notation name are bound into
        the tree (``m.flops("decode", T=4096).total_at()``)."""
        ph, inputs = as_phase(ph, inputs)
        return bind_inputs(self._collect(lambda c: c.flops(ph)), inputs)

    def elementwise(self, ph: Phase) -> Terms:
        """Elementwise FLOPs (norms, activations, softmax, RoPE, residuals; ``symcost.core.elementwise``):
        a separate, optional group, never part of ``flops``."""
        return self._collect(lambda c: c.elementwise(ph))

    def cache(self, **inputs) -> Terms:
        """Cache elements held after ``T`` tokens for batch ``B`` (KV, conv and SSM state); inputs by
        notation name are bound into the tree (``m.cache(T=4096, B=8).total_at()``)."""
        return bind_inputs(self._collect(lambda c: c.cache()), inputs)

    def cache_bytes(self, kv_dtype: str = "bf16") -> Terms:
        """Cache bytes: every KV leaf × ``b_kv``, every leaf kept in its own dtype (``state_dtype``,
        e.g. fp32 Mamba/DeltaNet state) × ``b_state``; both bound (``kv_dtype``; the state's dtype).

        >>> m = Model("x", "t", (), (), (), {})
        >>> m.cache_bytes().bound[sym.b_kv]
        2
        """
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
    b = dtype_bytes(dtype, "--weights-dtype")
    return sympy.Rational(b.numerator, b.denominator)
