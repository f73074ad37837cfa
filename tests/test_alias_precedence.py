"""A config holding two spellings of one field: symcost reads the value transformers keeps.

An adapter field with several accepted spellings (pydantic ``AliasChoices``, nested config models
and sub-adapters of a wrapper's ``text_config`` included) reads the first spelling present. The
family's transformers config class resolves the same spellings through its ``attribute_map`` (or
reads other alternate names); when a ``config.json`` holds both, it keeps one of them — usually the
alias, not always. For every registered model_type transformers has a config class for, starting
from the family's tiny config (``tests.tiny.cases()``, so families added later are covered without
editing this file), every pair of spellings of every such field is tried:

* a second valid value ``v_b`` for spelling ``b`` is found (the config with only ``b = v_b`` must be
  accepted by symcost and by transformers);
* the pair counts only if transformers reads both spellings into one attribute (``a = v_a`` alone
  gives ``v_a``, ``b = v_b`` alone gives ``v_b``): those are the spellings that must agree;
* the config holding both (in either key order) then gives transformers' value of that attribute,
  and symcost's resolved field must equal it, with the parameter count and symbol values of the
  config holding only the winning spelling.

And each spelling alone: where the class declares one of the spellings (a field of its own or an
``attribute_map`` name), a config holding only spelling ``s`` with a value other than the default
must give symcost the value the class reads — so a spelling the class ignores (left as a stray
attribute, the declared field at its default) is not read by symcost either, unless the config
model declares it in ``remote_code_names`` (the Hub file's names its remote code reads).
"""
from __future__ import annotations

import copy
import dataclasses
from contextlib import contextmanager
from functools import lru_cache

import pytest
from pydantic import AliasChoices, BaseModel
from transformers import CONFIG_MAPPING

import symcost
from symcost import architectures
from symcost.architectures.base import Adapter
from tests import oracle
from tests.tiny import cases

MISSING = object()


def _first_tiny() -> dict[str, dict]:
    first = {}
    for _id, raw, _mod in cases():
        first.setdefault(raw["model_type"], raw)
    return first


def _models(annotation):
    for arg in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            yield arg


def _groups(cls, path=()) -> list[tuple]:
    """(path, field, spellings, model) of every field of ``cls`` with several spellings, nested models too."""
    out = []
    for name, field in cls.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            names = [c for c in alias.choices if isinstance(c, str)]
            if len(names) > 1:
                out.append((path, name, tuple(names), cls))
        key = alias if isinstance(alias, str) else (field.alias or name)
        for sub in _models(field.annotation):
            out += _groups(sub, path + (key,))
    return out


@contextmanager
def _recording():
    """Every adapter validated inside the block: (class, input dict, instance)."""
    seen = []
    validate = BaseModel.model_validate.__func__

    def record(cls, obj, *args, **kwargs):
        out = validate(cls, obj, *args, **kwargs)
        seen.append((cls, obj, out))
        return out

    Adapter.model_validate = classmethod(record)
    try:
        yield seen
    finally:
        del Adapter.model_validate


def _sub_adapters(raw: dict) -> list[tuple]:
    """(key, class) of each nested dict of ``raw`` that a wrapper validates with an adapter of its own."""
    with _recording() as seen:
        symcost.load_config(copy.deepcopy(raw))
    out = []
    for key, sub in raw.items():
        if not isinstance(sub, dict):
            continue
        for cls, obj, _ in seen:
            if isinstance(obj, dict) and obj.get(key) is not sub and all(
                    obj.get(k) == v for k, v in sub.items() if k != "model_type"):
                out.append((key, cls))
                break
    return out


def _node(d, path):
    for k in path:
        d = d.setdefault(k, {})
    return d


def _tf_value(cfg, path, attr):
    for k in path:
        cfg = getattr(cfg, k)
    return getattr(cfg, attr, MISSING)


def _spelled(raw, path, spellings, assign: dict) -> dict:
    """``raw`` with the field at ``path`` held under exactly the spellings of ``assign``, in its order."""
    out = copy.deepcopy(raw)
    node = _node(out, path)
    for s in spellings:
        node.pop(s, None)
    node.update(assign)
    return out


def _resolved(raw, path, field, sub_class):
    """symcost's value of ``field`` for ``raw``: the adapter (or a wrapper's sub-adapter) validated."""
    with _recording() as seen:
        top = symcost.load_config(raw)
    if sub_class is not None:
        target = _node(copy.deepcopy(raw), path)
        obj = next(out for cls, inp, out in seen if cls is sub_class and all(
            inp.get(k) == v for k, v in target.items() if k != "model_type"))
    else:
        obj = top
        for k in path:
            obj = getattr(obj, k)
    return getattr(obj, field)


def _costs(raw) -> tuple:
    m = symcost.build(copy.deepcopy(raw))
    return m.params().total_at(m.values), m.values


def _others(v) -> list:
    """Other values of the same kind to try for the second spelling."""
    if isinstance(v, bool):
        return [not v]
    if isinstance(v, int):
        return [c for c in (2 * v, v + 1, v - 1, 3 * v, v + 2) if c > 0 and c != v]
    if isinstance(v, list) and len(v) > 1:
        return [w for w in (v[::-1], v[1:] + v[:1], v[-1:] + v[:-1]) if w != v]
    return []


def _accepted(raw) -> bool:
    try:
        _costs(raw)
        oracle.hf_config(raw)
    except Exception:  # noqa: BLE001 - a value either side refuses is no test value
        return False
    return True


def _hf(raw):
    """transformers' config object for ``raw``, or None when the class refuses it."""
    try:
        return oracle.hf_config(raw)
    except Exception:  # noqa: BLE001 - a form the class refuses has nothing to agree with
        return None


def _families():
    """(model_type, first tiny config, its spelling groups (with the sub-adapter class of each),
    transformers' config object) for every type transformers has a config class for."""
    for mt, raw in sorted(_first_tiny().items()):
        if oracle.ORACLE_TYPE.get(mt, mt) not in CONFIG_MAPPING:
            continue
        groups = [g + (None,) for g in _groups(architectures.get(mt))]
        for key, cls in _sub_adapters(raw):
            groups += [g + (cls,) for g in _groups(cls, (key,))]
        yield mt, raw, groups, oracle.hf_config(raw)


@lru_cache(maxsize=1)
def _pairs() -> tuple:
    """(id, raw, path, field, sub-adapter class, spellings, a, v_a, b, v_b, transformers' attribute)."""
    out = []
    for mt, raw, groups, base in _families():
        for path, field, spellings, _owner, sub_class in groups:
            node = _node(copy.deepcopy(raw), path)
            unset = _hf(_spelled(raw, path, spellings, {}))  # the class's default
            if unset is None:  # the class cannot build the config without the field (its derived
                continue       # default contradicts another field, e.g. a 54-entry layer_types)
            for i, a in enumerate(spellings):
                present = [s for s in spellings if s in node]
                v_a = node[present[0]] if present else _tf_value(base, path, a)
                if v_a is MISSING or v_a is None:
                    continue  # the class has no such attribute: nothing to agree with
                for b in spellings[i + 1:]:
                    # v_b differs from the default too: a spelling the class ignores must not pass
                    # for one it reads because the value it was given happens to be the default
                    v_b = next((v for v in _others(v_a) if v != _tf_value(unset, path, a)
                                and v != _tf_value(unset, path, b)
                                and _accepted(_spelled(raw, path, spellings, {b: v}))), MISSING)
                    if v_b is MISSING:
                        continue
                    only_a = _hf(_spelled(raw, path, spellings, {a: v_a}))
                    only_b = _hf(_spelled(raw, path, spellings, {b: v_b}))
                    if only_a is None or only_b is None:
                        continue
                    attrs = [t for t in (a, b)
                             if _tf_value(only_a, path, t) == v_a and _tf_value(only_b, path, t) == v_b]
                    if not attrs:
                        continue  # transformers does not read these two as one field
                    ident = f"{mt}-{'.'.join(path + (field,))}-{a}-{b}"
                    out.append((ident, raw, path, field, sub_class, spellings, a, v_a, b, v_b, attrs[0]))
    return tuple(out)


def _declared(cfg, path, spellings) -> str | None:
    """The spelling the class declares as a field (or maps through ``attribute_map``), if any."""
    for k in path:
        cfg = getattr(cfg, k)
    if not dataclasses.is_dataclass(cfg):
        return None
    own = {f.name for f in dataclasses.fields(cfg)} | set(type(cfg).attribute_map)
    return next((s for s in spellings if s in own), None)


@lru_cache(maxsize=1)
def _singles() -> tuple:
    """(id, raw, path, field, sub-adapter class, spellings, s, value, declared attribute)."""
    out = []
    for mt, raw, groups, base in _families():
        for path, field, spellings, owner, sub_class in groups:
            attr = _declared(base, path, spellings)
            if attr is None:
                continue  # the class has no such field: nothing to agree with
            node = _node(copy.deepcopy(raw), path)
            present = [s for s in spellings if s in node]
            v0 = node[present[0]] if present else _tf_value(base, path, attr)
            unset = _hf(_spelled(raw, path, spellings, {}))
            if unset is None:  # the class cannot build the config without the field
                continue
            default = _tf_value(unset, path, attr)
            for s in spellings:
                if s in getattr(owner, "remote_code_names", ()):
                    continue  # read as the Hub file's remote code reads it, declared by the model
                v = next((w for w in [v0, *_others(v0)] if w != default and w is not None
                          and _accepted(_spelled(raw, path, spellings, {s: w}))), MISSING)
                if v is not MISSING:
                    ident = f"{mt}-{'.'.join(path + (field,))}-{s}"
                    out.append((ident, raw, path, field, sub_class, spellings, s, v, attr))
    return tuple(out)


PAIRS = _pairs()
SINGLES = _singles()


def test_pairs_found():
    """The search finds the spellings transformers maps onto one attribute (a broken search would
    leave the test below with nothing to check): at least one pair per family that declares one."""
    families = {p[0].split("-")[0] for p in PAIRS}
    assert len(PAIRS) >= 20 and {"mixtral", "gpt2", "deepseek_v3"} <= families
    assert len(SINGLES) >= 2 * len(PAIRS) - 10


@pytest.mark.parametrize("pair", PAIRS, ids=[p[0] for p in PAIRS])
@pytest.mark.parametrize("order", ["a_first", "b_first"])
def test_both_spellings_resolve_as_transformers(pair, order):
    _, raw, path, field, sub_class, spellings, a, v_a, b, v_b, attr = pair
    assign = {a: v_a, b: v_b} if order == "a_first" else {b: v_b, a: v_a}
    both = _spelled(raw, path, spellings, assign)
    expected = _tf_value(oracle.hf_config(both), path, attr)
    assert expected in (v_a, v_b)
    winner = a if expected == v_a else b
    got = _resolved(copy.deepcopy(both), path, field, sub_class)
    assert got == expected, f"{'.'.join(path + (field,))}: symcost read {got!r}, transformers keeps {winner}={expected!r}"
    alone = _spelled(raw, path, spellings, {winner: expected})
    assert _costs(both) == _costs(alone)


@pytest.mark.parametrize("single", SINGLES, ids=[p[0] for p in SINGLES])
def test_each_spelling_alone_reads_as_transformers(single):
    _, raw, path, field, sub_class, spellings, s, v, attr = single
    alone = _spelled(raw, path, spellings, {s: v})
    expected = _tf_value(oracle.hf_config(alone), path, attr)
    got = _resolved(copy.deepcopy(alone), path, field, sub_class)
    assert got == expected, (f"{'.'.join(path + (s,))}={v!r} alone: symcost read {got!r}, "
                             f"transformers' {attr} is {expected!r}")
