"""Fuzzing configs (issue 16): no mutated config breaks symcost.

Tiny configs of every family (tests/tiny) are mutated — wrong types, negatives, zeros, huge numbers,
missing fields, extra nesting, unknown fields — and loaded. The outcome is either a model whose
counts are non-negative integers, or one ``SymcostError`` of one short line (the CLI's exit 2);
never another exception, never a negative or fractional count. Derandomised (tests/conftest.py)
and bounded, so a failure reproduces and the suite stays fast.
"""
import json

import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symcost
from symcost.cli import main
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from tests.tiny import cases

BASES = {}
for _id, _raw, _mod in cases():
    BASES.setdefault(_raw["model_type"], []).append(_raw)
TYPES = sorted(BASES)

HUGE = [0, -1, -(2**31), 10**9, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**30, 10**300]
VALUES = st.one_of(
    st.booleans(), st.none(), st.integers(-3, 70), st.sampled_from(HUGE),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
    st.lists(st.one_of(st.integers(-2, 3), st.sampled_from(["full_attention", "moe", "M", ""])), max_size=4),
    st.dictionaries(st.sampled_from(["a", "hidden_size", "model_type"]), st.integers(-2, 5), max_size=2),
)


def leaves(raw, prefix=()):
    out = []
    for k, v in raw.items():
        if not (k == "model_type" and not prefix):  # mutated by its own, rarer kind
            out.append(prefix + (k,))
        if isinstance(v, dict):
            out += leaves(v, prefix + (k,))
        elif isinstance(v, list) and v and len(prefix) < 2:
            out += [prefix + (k, i) for i in range(len(v))]
    return out


def mutate(data, raw):
    raw = json.loads(json.dumps(raw))
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        paths = leaves(raw)
        if not paths:
            break
        path = data.draw(st.sampled_from(paths), label="path")
        node = raw
        try:
            for p in path[:-1]:
                node = node[p]
            old = node[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        kind = data.draw(st.sampled_from(["set", "set", "small", "small", "small", "flip", "delete", "negate",
                                          "scale", "wrap_list", "wrap_dict", "add_field", "model_type"]),
                         label="kind")
        key = path[-1]
        if kind == "model_type":
            raw["model_type"] = data.draw(st.one_of(st.sampled_from(TYPES), VALUES), label="model_type")
        elif kind == "small" and isinstance(old, int) and not isinstance(old, bool):
            node[key] = data.draw(st.integers(0, 9), label="small")  # valid type, maybe inconsistent
        elif kind == "flip" and isinstance(old, bool):
            node[key] = not old
        elif kind == "delete":
            del node[key]
        elif kind == "negate" and isinstance(old, int) and not isinstance(old, bool):
            node[key] = -old
        elif kind == "scale" and isinstance(old, int) and not isinstance(old, bool):
            node[key] = old * data.draw(st.sampled_from([0, 10**3, 10**9, 2**62]), label="factor")
        elif kind == "wrap_list":
            node[key] = [old]
        elif kind == "wrap_dict":
            node[key] = {"value": old}
        elif kind == "add_field" and isinstance(node, dict):
            node[data.draw(st.sampled_from(["num_experts", "num_local_experts", "layer_types", "head_dim",
                                            "text_config", "use_sliding_window", "sliding_window",
                                            "hybrid_override_pattern", "unknown"]), label="field")] = \
                data.draw(VALUES, label="value")
        else:
            node[key] = data.draw(VALUES, label="value")
    return raw


def check_counts(m) -> None:
    """Every count a model reports is a non-negative integer, and active never exceeds total."""
    values = m.values_with(T=5, B=2)
    counts = {"params": m.params().total_at(m.values), "active": m.active_params().total_at(m.values),
              "cache": m.cache().total_at(values),
              "prefill": m.flops(Phase(kind="prefill", attention="full")).total_at(values),
              "decode": m.flops(Phase(kind="decode", attention="causal")).total_at(values)}
    for name, v in counts.items():
        assert isinstance(v, (int, sympy.Integer)) and v >= 0, (name, v)
    assert counts["active"] <= counts["params"]


def one_line(e: SymcostError) -> None:
    text = str(e)
    assert "\n" not in text and 0 < len(text) < 1000, text[:300]


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.data())
def test_mutated_configs_give_counts_or_one_error_line(data):
    mt = data.draw(st.sampled_from(TYPES), label="model_type")
    base = data.draw(st.sampled_from(BASES[mt]), label="base")
    raw = mutate(data, base)
    try:
        m = symcost.build(raw)
        check_counts(m)
    except SymcostError as e:
        one_line(e)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_config_files_exit_0_or_2_with_one_line(tmp_path_factory, capsys, data):
    mt = data.draw(st.sampled_from(TYPES), label="model_type")
    raw = mutate(data, data.draw(st.sampled_from(BASES[mt]), label="base"))
    path = tmp_path_factory.mktemp("fuzz") / "config.json"
    path.write_text(json.dumps(raw))
    as_json = data.draw(st.booleans(), label="json")
    code = main(["params", str(path)] + (["--json"] if as_json else []))
    out, err = capsys.readouterr()
    if code == 0 and as_json:
        data_out = json.loads(out)
        assert isinstance(data_out["total"], int) and data_out["total"] >= 0
        assert isinstance(data_out["active"], int) and 0 <= data_out["active"] <= data_out["total"]
    elif code == 0:
        assert out and not err
    else:
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
        assert not as_json or "error" in json.loads(out)
