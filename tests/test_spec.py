"""symcost's own model description ("model_type": "symcost") agrees with the HF adapters."""
import json
import pathlib

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



def test_layer_count_without_listing_the_layers(tmp_path, monkeypatch):
    """``Model.n_layers`` (what a pipeline splits, checked by every layout) is the number of decoder
    layers ``layers()`` lists, for every bundled model, and a spec of a million layers counts them
    without building that list (the fuzz campaign's ``memory`` on such a spec took 3.9 s in it)."""
    from symcost.architectures import loader
    from symcost.model import assembly
    for path in sorted((pathlib.Path(loader.__file__).parent.parent / "configs").glob("*.json")):
        m = loader.build(path.stem)
        assert m.n_layers() == len(m.layers()), path.stem
    spec = {"model_type": "symcost", "name": "deep", "values": {"d": 64, "V": 128, "L": 10**6, "H_q": 4, "H_kv": 2,
            "D_h": 16, "d_ff": 128}, "groups": [{"name": "g", "count": "L", "components": [
                {"type": "Norms", "names": ["n1", "n2"]}, {"type": "Attention"}, {"type": "FFN", "gated": True}]}]}
    (tmp_path / "deep.json").write_text(json.dumps(spec))
    m = loader.build(str(tmp_path / "deep.json"))
    monkeypatch.setattr(assembly.Model, "layers", lambda self: pytest.fail("n_layers listed the layers"))
    assert m.n_layers() == 10**6
