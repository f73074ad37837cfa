"""Every config form transformers writes: a round trip through the family's own config class.

For every tiny config of every family (``tests.tiny.cases()``, so families added later are covered
without editing this file), the transformers config class is instantiated from the raw dict the
way the oracle does (``AutoConfig.for_model``), then serialised both with ``to_dict()`` and with
``save_pretrained`` (the ``config.json`` written to disk, read back through symcost's loader).
symcost must accept each form and give the parameter count of the class on the meta device.

Then configs that hold only some fields: each tiny config with one field left out (the class's
default fills it) and with only a few fields kept. Where transformers builds the model, symcost
must agree — both on the serialised form (the class wrote the default out) and on the sparse raw
dict itself, which only works when every adapter default equals the config class default.
"""
import json
import random

import pytest

import symcost
from symcost import architectures, loader
from symcost.errors import SymcostError
from tests import oracle
from tests.tiny import cases

TINY = cases()
IDS = [c[0] for c in TINY]


def _supported_type(serialised: dict, original: str) -> dict:
    """The serialised dict, with its ``model_type`` kept when symcost registers it; else the
    original one (the oracle builds kimi_k2 as deepseek_v3, minimax_m3 as minimax_m3_vl_text)."""
    out = dict(serialised)
    if out.get("model_type") not in architectures.all_model_types():
        out["model_type"] = original
    return out


def _forms(raw: dict, tmp_path) -> dict[str, dict]:
    cfg = oracle.hf_config(raw)
    forms = {"to_dict": _supported_type(cfg.to_dict(), raw["model_type"])}
    cfg.save_pretrained(tmp_path)
    path = tmp_path / "config.json"
    written = json.loads(path.read_text())
    fixed = _supported_type(written, raw["model_type"])
    if fixed != written:
        path.write_text(json.dumps(fixed, indent=2))
    forms["save_pretrained"] = str(path)  # read back through the loader (Infinity/NaN literals too)
    return forms


def _params(source) -> int:
    m = symcost.build(source)
    return m.params().total_at(m.values)


@pytest.mark.parametrize("case", TINY, ids=IDS)
def test_round_trip_through_the_config_class(case, tmp_path):
    _, raw, _ = case
    expected = oracle.params(raw)
    for form, source in _forms(raw, tmp_path).items():
        assert _params(source) == expected, form


def _transformers_params(raw: dict) -> int | None:
    """The class's count for a (sparse) raw dict, or None when transformers itself refuses it."""
    try:
        return oracle.params(raw)
    except Exception:  # noqa: BLE001 - a config transformers refuses is not a symcost case
        return None


def _leaves(raw: dict, prefix=()) -> list[tuple]:
    """Paths of every field (nested ``*_config`` dicts included), ``model_type`` excepted."""
    out = []
    for k, v in raw.items():
        if k == "model_type" and not prefix:
            continue
        if isinstance(v, dict) and k.endswith("_config"):
            out += _leaves(v, prefix + (k,))
        out.append(prefix + (k,))
    return out


def _without(raw: dict, path: tuple) -> dict:
    out = json.loads(json.dumps(raw))
    node = out
    for k in path[:-1]:
        node = node[k]
    node.pop(path[-1])
    return out


def _check_sparse(raw: dict, what: str) -> bool:
    """symcost equals the class on a sparse dict and on its serialised form; False if HF refuses it."""
    expected = _transformers_params(raw)
    if expected is None:
        return False
    serialised = _supported_type(oracle.hf_config(raw).to_dict(), raw["model_type"])
    assert _params(serialised) == expected, f"{what}: serialised"
    assert _params(dict(raw)) == expected, f"{what}: symcost's default differs from the class's"
    return True


# every family, its first tiny config: one field at a time left to the class default
FIRST = {}
for _id, _raw, _mod in TINY:
    FIRST.setdefault(_raw["model_type"], (_id, _raw))


@pytest.mark.parametrize("model_type", sorted(FIRST))
def test_each_field_left_to_the_class_default(model_type):
    _, raw = FIRST[model_type]
    checked = [p for p in _leaves(raw) if _check_sparse(_without(raw, p), "without " + ".".join(p))]
    assert checked, "transformers refused every variant: the test checked nothing"


@pytest.mark.parametrize("model_type", sorted(FIRST))
def test_a_few_fields_the_rest_class_defaults(model_type):
    """Random small subsets of the tiny fields kept; everything else the config class's default."""
    _, raw = FIRST[model_type]
    rng = random.Random(f"few-{model_type}")
    leaves = [p for p in _leaves(raw) if len(p) == 1]
    checked = 0
    for _ in range(6):
        keep = set(rng.sample(leaves, min(len(leaves), rng.randint(1, 4))))
        sparse = {k: v for k, v in raw.items() if k == "model_type" or (k,) in keep}
        checked += _check_sparse(sparse, f"only {sorted(keep)}")
    assert checked, "transformers refused every subset: the test checked nothing"
