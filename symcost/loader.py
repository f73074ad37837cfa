"""Load a model: a path to a ``config.json`` (or its directory), or a bundled reference name.

Bad input becomes one ``SymcostError`` naming the problem and the field; nothing else escapes.
"""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from . import architectures
from .architectures.base import Adapter, quote, validation_message
from .assembly import Model
from .errors import SymcostError

BUNDLED = resources.files("symcost") / "configs"


def bundled_names() -> list[str]:
    return sorted(p.name[:-5] for p in BUNDLED.iterdir() if p.name.endswith(".json"))


def read_json(source: str) -> tuple[str, dict]:
    """(name, raw dict) for a path, a directory holding config.json, or a bundled name."""
    path = Path(source)
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        name = path.parent.name if path.name == "config.json" else path.stem
        text = path.read_text(encoding="utf-8", errors="replace")
    elif source in bundled_names():
        name, text = source, (BUNDLED / f"{source}.json").read_text(encoding="utf-8")
    else:
        raise SymcostError(f"no such config file or bundled model: {quote(source)} "
                           f"(see `symcost models`)")
    try:
        raw = json.loads(text)  # Infinity / NaN literals are read, as transformers writes them
    except json.JSONDecodeError as e:
        raise SymcostError(f"{path}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except ValueError as e:  # an integer literal past Python's 4,300-digit conversion limit
        raise SymcostError(f"{path}: invalid JSON: {str(e).split(':')[0]}") from None
    except RecursionError:
        raise SymcostError(f"{path}: invalid JSON: nested too deeply") from None
    if not isinstance(raw, dict):
        raise SymcostError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    return name, raw


def load_config(source: str | dict, name: str | None = None):
    """The validated adapter for ``source`` (path, bundled name, or an already-parsed dict)."""
    if isinstance(source, dict):
        raw, name = source, name or "model"
    else:
        default_name, raw = read_json(source)
        name = name or default_name
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        raise SymcostError("field 'model_type': missing (every Hugging Face config.json names one)")
    cls = architectures.get(model_type)
    try:
        return cls.model_validate({**raw, "name": name})
    except ValidationError as e:
        raise SymcostError(validation_message(e)) from None
    except RecursionError:
        raise SymcostError("config: nested too deeply") from None


def build(config) -> Model:
    """The architecture-neutral ``Model`` for an adapter (or anything ``load_config`` takes)."""
    if not isinstance(config, Adapter):
        config = load_config(config)
    return config.to_model()
