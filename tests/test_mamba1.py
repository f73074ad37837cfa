"""Mamba-1 (mamba, falcon_mamba), Jamba and LFM2 beyond the generic oracle suite: bad input names
its field, the configs transformers itself writes are accepted with the same counts, the config
classes' own defaults agree on the meta device, and the minimal scan is linear in T."""
import json
import random

import pytest
from transformers import AutoConfig

import symcost
from symcost.conventions import Phase
from symcost.errors import SymcostError
from tests import oracle
from tests.tiny import mamba

FAMILIES = {"mamba": mamba, "falcon_mamba": mamba}


def _tiny(mt: str, seed: int = 0) -> dict:
    return FAMILIES[mt].tiny(random.Random(f"{mt}-{seed}"), mt)


def _params(raw: dict) -> int:
    m = symcost.build(dict(raw))
    return m.params().total_at(m.values)


# -- bad input -------------------------------------------------------------------------------------
BAD = [
    ("mamba", {"time_step_rank": "fast"}, "time_step_rank"),
    ("mamba", {"time_step_rank": 0}, "time_step_rank"),
    ("falcon_mamba", {"time_step_rank": "Auto"}, "time_step_rank"),
    ("mamba", {"state_size": 0}, "state_size"),
    ("falcon_mamba", {"conv_kernel": -1}, "conv_kernel"),
]


@pytest.mark.parametrize("mt, change, field", BAD, ids=[f"{b[0]}-{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_names_the_field(mt, change, field):
    raw = {**_tiny(mt), **change}
    with pytest.raises(SymcostError, match=f"field '{field}'"):
        symcost.build(raw)


def test_bad_input_is_exit_2_with_one_line(tmp_path, capsys):
    from symcost.cli import main
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_tiny("mamba"), "time_step_rank": "fast"}))
    assert main(["params", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "time_step_rank" in err[0]


# -- the forms transformers writes ---------------------------------------------------------------
CASES = [(mt, s) for mt, mod in FAMILIES.items() for s in range(getattr(mod, "SEEDS", 3))]


@pytest.mark.parametrize("mt, seed", CASES, ids=[f"{mt}-{s}" for mt, s in CASES])
def test_to_dict_and_save_pretrained_forms_give_the_same_counts(mt, seed, tmp_path):
    raw = _tiny(mt, seed)
    want = _params(raw)
    assert want == oracle.params(raw)
    as_dict, saved = oracle.serialised(raw, tmp_path)
    m0 = symcost.build(dict(raw))
    for form in (as_dict, saved):
        m = symcost.build(dict(form))
        assert m.params().total_at(m.values) == want
        vals, vals0 = m.values_with(T=13, B=2), m0.values_with(T=13, B=2)
        for ph in (Phase(kind="prefill", impl="reference"), Phase(kind="decode"), Phase(kind="prefill")):
            assert m.flops(ph).total_at(vals) == m0.flops(ph).total_at(vals0)
        assert m.cache().total_at(vals) == m0.cache().total_at(vals0)


def test_mamba_intermediate_size_written_out_wins():
    """to_dict() writes intermediate_size = expand·hidden_size; a config that gives another value
    keeps it in transformers (the kwargs are set after __post_init__), and so in the engine."""
    raw = {**_tiny("mamba", 1), "intermediate_size": 999}
    assert _params(raw) == oracle.params(raw)


# -- the config classes' defaults -------------------------------------------------------------------
DEFAULTS = [
    {"model_type": "mamba"},
    {"model_type": "falcon_mamba", "hidden_size": 4096, "num_hidden_layers": 64, "vocab_size": 65024},
]


@pytest.mark.parametrize("raw", DEFAULTS, ids=[f"{r['model_type']}-{i}" for i, r in enumerate(DEFAULTS)])
def test_defaults_equal_the_config_class(raw):
    """Fields left out take the values transformers' config class derives (meta device)."""
    assert _params(raw) == oracle.params(raw)


# -- the scan conventions -----------------------------------------------------------------------------
@pytest.mark.parametrize("mt", ["mamba", "falcon_mamba"])
def test_minimal_scan_is_linear_in_T_and_below_reference(mt):
    import sympy

    from symcost.notation import sym
    m = symcost.build(_tiny(mt, 2))
    minimal = m.flops(Phase(kind="prefill")).total
    ref = m.flops(Phase(kind="prefill", impl="reference")).total
    assert sympy.degree(sympy.expand(minimal), sym.T) == 1
    # the reference counts K_c − 1 extra conv outputs and no state update as a matmul
    vals = m.values_with(T=64, B=1)
    diff = sympy.expand(ref - minimal).subs(vals)
    K, e, N = (vals[s] for s in (sym.K_c, sym.d_ssm, sym.N))
    L = vals[sym.L]
    assert diff == L * (2 * (K - 1) * e * K - 2 * 64 * e * N)
