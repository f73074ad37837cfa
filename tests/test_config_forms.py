"""Every config form transformers writes: a round trip through the family's own config class.

For every tiny config of every family (``tests.tiny.cases()``, so families added later are covered
without editing this file), the transformers config class is instantiated from the raw dict the
way the oracle does (``AutoConfig.for_model``), then serialised both with ``to_dict()`` and with
``save_pretrained`` (the ``config.json`` written to disk, read back through symcost's loader).
symcost must accept each form, give the parameter count of the class on the meta device, and the
same FLOPs and cache as the raw dict (which tests/test_oracle_hf.py compares with the class).

Then configs that hold only some fields, everything else the class's defaults: each tiny config
with one field left out, with several left out at once, and the class's default config holding
only the sizes symcost requires (random layer counts). Where transformers builds the model,
symcost must agree — both on the serialised form (the class wrote the defaults out) and on the
sparse dict itself, which only works when every adapter default equals the config class default.
"""
import json
import random
import re

import pytest
from pydantic import BaseModel
from transformers import AutoConfig

import symcost
from symcost import architectures
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
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


def _costs(m) -> tuple:
    """Prefill and decode FLOPs and cache elements at two context lengths."""
    out = []
    for T in (7, 64):
        values = m.values_with(T=T, B=2)
        out += [m.flops(Phase(kind=kind, attention="full", impl="reference")).total_at(values)
                for kind in ("prefill", "decode")] + [m.cache().total_at(values)]
    return tuple(out)


@pytest.mark.parametrize("case", TINY, ids=IDS)
def test_round_trip_through_the_config_class(case, tmp_path):
    _, raw, _ = case
    expected = oracle.params(raw)
    costs = _costs(symcost.build(dict(raw)))
    for form, source in _forms(raw, tmp_path).items():
        m = symcost.build(source)
        assert m.params().total_at(m.values) == expected, form
        assert _costs(m) == costs, form


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


def _alias_groups(model) -> list[set[str]]:
    """The names of each adapter field with several spellings, nested config models included."""
    groups, seen, todo = [], set(), [model]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        for field in cls.model_fields.values():
            if field.validation_alias is not None:
                groups.append(set(field.validation_alias.choices))
            for arg in (field.annotation, *getattr(field.annotation, "__args__", ())):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    todo.append(arg)
    return groups


def _without(raw: dict, path: tuple) -> dict:
    """``raw`` without the field at ``path``, by every name the adapter reads it under."""
    out = json.loads(json.dumps(raw))
    node = out
    for k in path[:-1]:
        node = node[k]
    names = {path[-1]}
    for group in _alias_groups(architectures.get(raw["model_type"])):
        if path[-1] in group:
            names |= group
    for name in names:
        node.pop(name, None)
    return out


#: symcost may refuse a config transformers builds when a mix of tiny values and full-size class
#: defaults is inconsistent (8 query heads over 3 KV heads, k > E), which transformers does not check:
#: an adapter's consistency check. A field it cannot read in the form transformers wrote (pydantic's
#: own errors, these words) is a bug.
UNREADABLE = re.compile(r"Input should|Field required|Extra inputs|Value error")
#: why symcost may refuse the sparse dict while accepting its serialised form: a structural size the
#: adapter requires instead of defaulting, a layout the file must state (MiniMax M3's ``missing:``
#: attention pattern when ``use_sparse_attention`` is true) — a config without them states no
#: complete model — or a stated layer count that disagrees with the default stack (transformers warns)
SPARSE_REFUSAL = re.compile(r"Field required|entries for num_hidden_layers|missing")


def _refusal(source) -> str | None:
    try:
        _params(source)
    except SymcostError as e:
        return str(e)
    return None


def _check_sparse(raw: dict, what: str) -> bool | str:
    """symcost equals the class on a sparse dict and on its serialised form: True when compared,
    False when transformers refuses the dict, else symcost's (allowed) refusal."""
    expected = _transformers_params(raw)
    if expected is None:
        return False
    serialised = _supported_type(oracle.hf_config(raw).to_dict(), raw["model_type"])
    refused = _refusal(serialised)
    if refused is not None:  # every field written out: only an inconsistent mix may be refused
        assert not UNREADABLE.search(refused), f"{what}: serialised form refused: {refused}"
        return refused
    assert _params(serialised) == expected, f"{what}: serialised"
    refused = _refusal(dict(raw))
    if refused is not None:
        assert SPARSE_REFUSAL.search(refused), f"{what}: refused where the class fills a default: {refused}"
        return refused
    assert _params(dict(raw)) == expected, f"{what}: symcost's default differs from the class's"
    return True


# every family, its first tiny config: one field at a time left to the class default
FIRST = {}
for _id, _raw, _mod in TINY:
    FIRST.setdefault(_raw["model_type"], (_id, _raw))


@pytest.mark.parametrize("model_type", sorted(FIRST))
def test_each_field_left_to_the_class_default(model_type):
    _, raw = FIRST[model_type]
    checked = [p for p in _leaves(raw) if _check_sparse(_without(raw, p), "without " + ".".join(p)) is True]
    assert checked, "transformers refused every variant: the test checked nothing"


def _required(model_type: str) -> set[str]:
    """The names (aliases included) of the fields the symcost adapter requires."""
    out = set()
    for name, field in architectures.get(model_type).model_fields.items():
        if field.is_required():
            alias = field.validation_alias
            out |= set(alias.choices) if alias is not None else {name}
    return out - {"model_type"}


#: families whose transformers config class cannot build a model from its own defaults plus the
#: sizes symcost requires (checked below, so the list cannot outlive the reason)
UNBUILDABLE_DEFAULTS = {
    "dbrx": "DbrxConfig() leaves attn_config.clip_qkv None and its attention then fails",
    "dots1": "Dots1Config() leaves the expert counts None and the MoE cannot be built from them",
    "lfm2_moe": "Lfm2MoeConfig() derives no layer_types, and a tiny list disagrees with its 24 layers",
}


@pytest.mark.parametrize("model_type", sorted(UNBUILDABLE_DEFAULTS))
def test_unbuildable_class_defaults_are_still_unbuildable(model_type):
    hf_type = oracle.ORACLE_TYPE.get(model_type, model_type)
    defaults = AutoConfig.for_model(hf_type).to_dict()
    raw = {"model_type": model_type, **{k: defaults[k] for k in _required(model_type) & set(defaults)}}
    assert _transformers_params(raw) is None, UNBUILDABLE_DEFAULTS[model_type]


@pytest.mark.parametrize("model_type", sorted(set(FIRST) - set(UNBUILDABLE_DEFAULTS)))
def test_class_defaults_with_a_few_sizes(model_type):
    """A config holding only the fields symcost requires, drawn from the class defaults, with a random
    small layer count: every other field is what the config class fills in. Where the class's own
    defaults are inconsistent (Gemma 3's 256 image tokens from a 14×14 patch grid, DeepSeek-V2's
    num_experts_per_tok None) symcost names the field; that field is then taken from the tiny config."""
    hf_type = oracle.ORACLE_TYPE.get(model_type, model_type)
    defaults = AutoConfig.for_model(hf_type).to_dict()
    _, tiny = FIRST[model_type]
    rng = random.Random(f"defaults-{model_type}")
    checked = 0
    for _ in range(3):
        raw = {"model_type": model_type}
        for k in _required(model_type) & set(defaults):
            raw[k] = defaults[k]
        for k in ("num_hidden_layers", "n_layer"):
            if k in raw:
                raw[k] = rng.randint(1, 4)
        for _ in range(8):  # a family whose class leaves several sizes None names them one by one
            outcome = _check_sparse(raw, f"class defaults + {sorted(raw)}")
            if outcome is False:  # the class cannot build its own defaults (sizes left None, e.g.
                # Dots1's num_experts_per_tok, HunYuan's head_dim): take those from the tiny config
                unset = {k: v for k, v in tiny.items() if k not in raw and defaults.get(k, 0) is None}
                if not unset:
                    break
                raw.update(unset)
                continue
            named = re.match(r"field '(\w+)", outcome) if isinstance(outcome, str) else None
            if not named or named[1] not in tiny or named[1] in raw:
                break
            raw[named[1]] = tiny[named[1]]
        checked += outcome is True
    assert checked, "symcost or transformers refused every variant: the test checked nothing"


@pytest.mark.parametrize("model_type", sorted(FIRST))
def test_several_fields_left_to_the_class_defaults(model_type):
    """Two to four fields of a tiny config left out at once, the class's defaults filling them."""
    _, raw = FIRST[model_type]
    rng = random.Random(f"several-{model_type}")
    required = _required(model_type)  # left out one at a time above
    leaves = [p for p in _leaves(raw) if len(p) > 1 or p[0] not in required]
    checked = 0
    for _ in range(8):
        drop = rng.sample(leaves, min(len(leaves), rng.randint(2, 4)))
        sparse = raw
        for path in sorted(drop, key=len, reverse=True):
            try:
                sparse = _without(sparse, path)
            except KeyError:  # inside a nested config dropped already
                pass
        checked += _check_sparse(sparse, f"without {sorted(drop)}") is True
    assert checked, "transformers refused every variant: the test checked nothing"
