"""symcost's own model description ("model_type": "symcost") agrees with the HF adapters."""
import json

import pytest
import sympy

import symcost
from symcost.architectures.loader import read_json
from symcost.cli import main
from symcost.core.conventions import Phase

EXAMPLE = "examples/llama-3.1-8b-all-sliding.json"


def _same(a, b):
    return sympy.expand(a - b) == 0


def test_example_equals_mistral_with_the_same_fields():
    spec = symcost.build(EXAMPLE)
    _, raw = read_json("llama-3.1-8b")
    mistral = symcost.build({**raw, "model_type": "mistral", "sliding_window": 4096})
    assert spec.values == mistral.values
    assert _same(spec.params().total, mistral.params().total)
    assert _same(spec.cache().total, mistral.cache().total)
    for kind in ("prefill", "decode"):
        ph = Phase(kind=kind, attention="causal")
        v = spec.values_with(T=5000, B=2)
        assert spec.flops(ph).total_at(v) == mistral.flops(ph).total_at(v)


def _spec(**changes):
    base = json.loads(open(EXAMPLE).read())
    base.update(changes)
    return base


@pytest.mark.parametrize("raw,needle", [
    (_spec(values={"d": 4096}), "values"),
    (_spec(values={"d": 4096, "Q": 3}), "values.Q"),
    (_spec(groups=[{"name": "x", "count": "L", "components": [{"type": "Nope"}]}]), "groups.0.components.0.type"),
    (_spec(groups=[{"name": "x", "count": "L", "components": [{"type": "FFN", "wide": True}]}]),
     "groups.0.components.0.wide"),
    (_spec(groups=[{"name": "x", "count": "L", "components": [{"type": "FFN", "d_ff": "__import__('os')"}]}]),
     "groups.0.components.0.d_ff"),
])
def test_bad_specs_name_the_field(raw, needle, tmp_path, capsys):
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(raw))
    assert main(["params", str(p)]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
