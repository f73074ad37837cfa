"""symcost's own model description: cost a hypothetical model or a "what if" without a HF config.

A JSON file with ``"model_type": "symcost"``::

    {"model_type": "symcost", "name": "llama-like",
     "values": {"d": 4096, "V": 128256, "L": 32, "H_q": 32, "H_kv": 8, "D_h": 128, "d_ff": 14336},
     "tie_word_embeddings": false,
     "groups": [{"name": "layers", "count": "L", "components": [
         {"type": "Norms", "names": ["input_layernorm", "post_attention_layernorm"]},
         {"type": "Attention"},
         {"type": "FFN", "gated": true}]}]}

``values`` gives the integer of every notation symbol used. A component ``type`` is the class
name of any component in ``symcost.components`` (``Attention``, ``FFN``, ``MoE``, ``Norms``,
``MLA``, ``Mamba2``, ...); its other keys are that class's fields: booleans, integers, lists, or
expressions in the notation as strings (``"2*d_ff"``, ``"W"``), parsed by the whitelist parser.
A ``count`` is a notation symbol or an integer. The seeds' "what if all 60 layers were full
attention?" is this file with one group where the real model has two.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, ClassVar

import sympy
from pydantic import BaseModel, ConfigDict, Field

from .. import components as components_pkg
from ..components.base import Component
from ..components.embedding import Embedding, LMHead
from ..components.norm import Norms
from ..core.errors import SymcostError
from ..core.exprparse import parse
from ..core.notation import ENTRIES, by_name
from ..model.assembly import LayerGroup, Model
from . import register
from .base import Adapter, Int, NonNegInt, quote


def component_classes() -> dict[str, type]:
    """Every concrete Component subclass in symcost.components, by class name."""
    found = {}
    for module in components_pkg.modules(base=True):
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Component) and obj is not Component and obj.__module__ == module.__name__:
                found[name] = obj
    return found


def _expr(value, where: str):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return sympy.Integer(value)
    if isinstance(value, str):
        try:
            return parse(value)
        except SymcostError as e:
            raise SymcostError(f"field '{where}': {e}") from None
    if isinstance(value, list):
        return tuple(value)
    raise SymcostError(f"field '{where}': expected a number, boolean, list or expression, got {quote(value)}")


class GroupSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    count: NonNegInt | str
    components: list[dict[str, Any]] = Field(min_length=1)


@register("symcost")
class SpecAdapter(Adapter):
    reference: ClassVar[str] = ""
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    values: dict[str, Int]
    groups: list[GroupSpec] = Field(min_length=1)
    tie_word_embeddings: bool = False
    final_norm: bool = True

    def _component(self, spec: dict, where: str) -> Component:
        classes = component_classes()
        kind = spec.get("type")
        if kind not in classes:
            raise SymcostError(f"field '{where}.type': unknown component {quote(kind)} "
                               f"(known: {', '.join(sorted(classes))})")
        cls = classes[kind]
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {}
        for key, value in spec.items():
            if key == "type":
                continue
            if key not in names:
                raise SymcostError(f"field '{where}.{key}': {kind} has no field {quote(key)} "
                                   f"(fields: {', '.join(sorted(names))})")
            kwargs[key] = _expr(value, f"{where}.{key}")
        try:
            return cls(**kwargs)
        except (TypeError, ValueError) as e:
            raise SymcostError(f"field '{where}': {e}") from None

    def to_model(self) -> Model:
        vals = {}
        for name, v in self.values.items():
            if name not in ENTRIES:
                raise SymcostError(f"field 'values.{name}': not a notation symbol")
            if v <= 0:
                raise SymcostError(f"field 'values.{name}': must be positive, got {v}")
            vals[by_name(name)] = sympy.Integer(v)
        groups = []
        for i, g in enumerate(self.groups):
            count = _expr(g.count, f"groups.{i}.count")
            comps = tuple(self._component(c, f"groups.{i}.components.{j}")
                          for j, c in enumerate(g.components))
            groups.append(LayerGroup(g.name, count, comps))
        post = ((Norms(("norm",)),) if self.final_norm else ()) + (LMHead(tied=self.tie_word_embeddings),)
        model = Model(self.name, self.model_type, (Embedding(),), tuple(groups), post, vals)
        used = set()
        for c in model.components():
            for f in dataclasses.fields(c):
                v = getattr(c, f.name)
                if isinstance(v, sympy.Expr):
                    used |= v.free_symbols
        for g in groups:
            used |= sympy.sympify(g.count).free_symbols
        missing = sorted(str(s) for s in used if s not in vals)
        if missing:
            raise SymcostError(f"field 'values': no value for {', '.join(missing)}")
        return model
