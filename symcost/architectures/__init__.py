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

from ..errors import SymcostError

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


def get(model_type: str):
    if model_type not in _MODULE_OF:
        from .base import quote
        raise SymcostError(f"field 'model_type': unsupported architecture {quote(model_type)} "
                           f"(supported: {', '.join(sorted(_MODULE_OF))})")
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
