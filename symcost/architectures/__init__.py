"""Registry of config adapters, one module per model family, discovered automatically.

``@register("llama", "mistral")`` on an adapter class; a duplicate ``model_type`` raises at import.
Every module of this package is imported here (pkgutil), so adding a family never edits a list.
"""
from __future__ import annotations

import importlib
import pkgutil

from ..errors import SymcostError

_REGISTRY: dict[str, type] = {}


def register(*model_types: str):
    def deco(cls):
        for mt in model_types:
            if mt in _REGISTRY:
                raise RuntimeError(f"model_type {mt!r} registered twice "
                                   f"({_REGISTRY[mt].__name__}, {cls.__name__})")
            _REGISTRY[mt] = cls
        cls.model_types = model_types
        return cls
    return deco


def get(model_type: str):
    try:
        return _REGISTRY[model_type]
    except KeyError:
        raise SymcostError(f"field 'model_type': unsupported architecture {model_type!r} "
                           f"(supported: {', '.join(sorted(_REGISTRY))})") from None


def all_model_types() -> list[str]:
    return sorted(_REGISTRY)


for _mod in pkgutil.iter_modules(__path__):
    if _mod.name != "base":
        importlib.import_module(f"{__name__}.{_mod.name}")


def families_table() -> str:
    """Supported model types as a Markdown table (the README's table is generated from this)."""
    rows = ["| model_type | adapter | reference class (transformers) |", "| --- | --- | --- |"]
    for mt in all_model_types():
        cls = _REGISTRY[mt]
        rows.append(f"| `{mt}` | `{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}` | "
                    f"`{getattr(cls, 'reference', '') or '-'}` |")
    return "\n".join(rows)
