"""Registry of config adapters, one module per model family, discovered automatically.

``@register("llama", "mistral")`` on an adapter class; a duplicate ``model_type`` raises.
Adding a family never edits a list: every module of this package is found by pkgutil, and the
model types it declares are read from its ``@register(...)`` lines, so a command imports only
the one family it needs (a fast CLI); ``load_all()`` imports every module.
"""
from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

from ..core.errors import SymcostError
from .base import quote

_REGISTRY: dict[str, type] = {}
_DECORATOR = re.compile(r"^@register\(([^)]*)\)", re.M)


def _declared() -> dict[str, str]:
    """model_type -> module name, from each module's ``@register(...)`` lines."""
    out: dict[str, str] = {}
    for mod in pkgutil.iter_modules(__path__):
        if mod.name == "base":
            continue
        text = (Path(__path__[0]) / f"{mod.name}.py").read_text(encoding="utf-8")
        for args in _DECORATOR.findall(text):
            for mt in ast.literal_eval(f"({args},)"):
                if mt in out:
                    raise RuntimeError(f"model_type {mt!r} registered twice ({out[mt]}, {mod.name})")
                out[mt] = mod.name
    return out


_MODULE_OF = _declared()


def register(*model_types: str):
    def deco(cls):
        for mt in model_types:
            if mt in _REGISTRY and _REGISTRY[mt] is not cls:
                raise RuntimeError(f"model_type {mt!r} registered twice "
                                   f"({_REGISTRY[mt].__name__}, {cls.__name__})")
            _REGISTRY[mt] = cls
        cls.model_types = model_types
        return cls
    return deco


def closest(raw: dict, n: int = 3) -> list[str]:
    """The supported model types whose adapters' fields (and their aliases) best match ``raw``'s
    keys (Jaccard similarity, ties by name); named when a model_type is unsupported."""
    keys = set(raw) - {"model_type", "name"}
    scored = []
    for mt, cls in load_all().items():
        own = set()
        for field, info in cls.model_fields.items():
            own.add(field)
            own.update(str(c) for c in getattr(info.validation_alias, "choices", ()) or ())
        own -= {"model_type", "name"}
        if own | keys:
            scored.append((len(keys & own) / len(keys | own), mt))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [mt for _, mt in scored[:n]]


#: model types transformers registers that symcost refuses on purpose, with what is missing (the
#: families whose text model is supported say which model_type to use instead)
NOT_MODELLED = {
    "gemma3n": "Gemma 3n's vision tower (a timm MobileNetV5, vision_config.architecture, whose shapes "
               "the config does not hold) and its audio tower (a USM Conformer, audio_config) are not "
               "modelled; the text model is: cost text_config as model_type 'gemma3n_text'",
}


def get(model_type: str, raw: dict | None = None):
    if model_type in NOT_MODELLED and model_type not in _MODULE_OF:
        raise SymcostError(f"field 'model_type': {model_type!r} is not supported: {NOT_MODELLED[model_type]}")
    if model_type not in _MODULE_OF:
        near = f"closest by config fields: {', '.join(closest(raw))}; " if raw else ""
        raise SymcostError(f"field 'model_type': unsupported architecture {quote(model_type)} "
                           f"({near}{len(_MODULE_OF)} types are supported, listed in the README's "
                           "families table; see its 'Adding an architecture')")
    if model_type not in _REGISTRY:
        importlib.import_module(f"{__name__}.{_MODULE_OF[model_type]}")
    return _REGISTRY[model_type]


def all_model_types() -> list[str]:
    return sorted(_MODULE_OF)


def load_all() -> dict[str, type]:
    for mt in _MODULE_OF:
        get(mt)
    return dict(_REGISTRY)


def families_table() -> str:
    """Supported model types as a Markdown table (the README's table is generated from this)."""
    registry = load_all()
    rows = ["| model_type | adapter | reference class (transformers) |", "| --- | --- | --- |"]
    for mt in all_model_types():
        cls = registry[mt]
        rows.append(f"| `{mt}` | `{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}` | "
                    f"`{getattr(cls, 'reference', '') or '-'}` |")
    return "\n".join(rows)
