"""Config fields symcost does not read: which are listed, and which are worth a warning.

An adapter reads the fields it declares (their names and aliases, in nested sub-configs too)
and knows the ones its reference class does not use (``unused``, with the reason);
a few are read outside it (``symcost/data/unread_fields.json``, ``read_elsewhere``: positions
by ``symcost.architectures.limits``, ``quantization_config`` by ``symcost.serving.quant``). Every other key of
the config is *unread*. An unread field can change the architecture only when it is switched
on, so a field whose value is off (``false``, ``0``, ``null``, empty) is never a warning, and
neither is one the data file classes as cost-neutral (token ids, dropout, norm epsilons,
initialisation, output flags, Hub metadata, loss and routing-score settings, RoPE constants —
each class with its reason). What is left is worth one warning line; ``--verbose`` lists every
unread field.
"""
from __future__ import annotations

import json
import re
import typing
from functools import lru_cache
from importlib.resources import files

from pydantic import BaseModel


@lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(files("symcost.data").joinpath("unread_fields.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _elsewhere() -> frozenset[str]:
    return frozenset(_data()["read_elsewhere"]["fields"])


@lru_cache(maxsize=1)
def _neutral() -> tuple[frozenset[str], re.Pattern]:
    """(the plain names, one pattern of the rest): a set lookup first, as most are plain names and
    compiling all of them into one alternation costs more than the whole check."""
    patterns = [p for c in _data()["neutral"] for p in c["patterns"]]
    plain = frozenset(p for p in patterns if re.fullmatch(r"\w+", p))
    return plain, re.compile("|".join(f"(?:{p})" for p in patterns if p not in plain))


def neutral(key: str) -> bool:
    """True when the data file classes this (last-component) key as cost-neutral."""
    plain, rest = _neutral()
    return key in plain or rest.fullmatch(key) is not None


def _sub_adapter(annotation) -> type[BaseModel] | None:
    """The pydantic model a field holds (``Sub``, ``Sub | None``, ``Optional[Sub]``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for a in typing.get_args(annotation):
        sub = _sub_adapter(a)
        if sub is not None:
            return sub
    return None


def _declared(cls: type[BaseModel]) -> dict[str, str]:
    """Every key an adapter reads → the field that reads it (names, aliases, alias choices)."""
    out: dict[str, str] = {}
    for name, f in cls.model_fields.items():
        out[name] = name
        for alias in (f.alias, f.validation_alias):
            if isinstance(alias, str):
                out[alias] = name
            else:
                for choice in getattr(alias, "choices", ()):
                    key = choice if isinstance(choice, str) else getattr(choice, "path", [None])[0]
                    if isinstance(key, str):
                        out[key] = name
    for key in getattr(cls, "unused", {}):  # known to the adapter, not used by the reference class
        out[key] = key
    return out


def unread(cls: type[BaseModel], raw: dict, prefix: str = "") -> list[str]:
    """Dotted paths of the keys of ``raw`` that the adapter class ``cls`` does not declare."""
    known = _declared(cls)
    out = []
    for key, value in raw.items():
        field = known.get(key)
        if field is None:
            if key not in _elsewhere():
                out.append(prefix + key)
            continue
        sub = _sub_adapter(cls.model_fields[field].annotation) if field in cls.model_fields else None
        if sub is not None and isinstance(value, dict):
            out += unread(sub, value, f"{prefix}{key}.")
    return out


def _off(value) -> bool:
    return value is None or value is False or value == 0 or value in ("", [], {})


def _get(raw: dict, path: str):
    for part in path.split("."):
        raw = raw.get(part) if isinstance(raw, dict) else None
    return raw


def flagged(cls: type[BaseModel], raw: dict) -> list[str]:
    """Unread fields that are switched on and not classed as cost-neutral."""
    return [p for p in unread(cls, raw) if not neutral(p.rsplit(".", 1)[-1]) and not _off(_get(raw, p))]
