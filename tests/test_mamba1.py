"""Mamba-1 (mamba, falcon_mamba), Jamba and LFM2 beyond the generic oracle suite: bad input names
its field, the configs transformers itself writes are accepted with the same counts, the config
classes' own defaults agree on the meta device, and the minimal scan is linear in T."""
import json
import random

import pytest

import symcost
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from tests import oracle
from tests.tiny import jamba, lfm2, mamba

FAMILIES = {"mamba": mamba, "falcon_mamba": mamba, "jamba": jamba, "lfm2": lfm2, "lfm2_moe": lfm2}


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
    ("jamba", {"attn_layer_period": 2, "attn_layer_offset": 2}, "attn_layer_offset"),
    ("jamba", {"attn_layer_period": 2, "attn_layer_offset": -1}, "attn_layer_offset"),
    ("jamba", {"attn_layer_period": 0}, "attn_layer_period"),
    ("jamba", {"expert_layer_period": 3, "expert_layer_offset": 5}, "expert_layer_offset"),
    ("jamba", {"num_experts": 3, "num_experts_per_tok": 4, "expert_layer_period": 1, "expert_layer_offset": 0},
     "num_experts_per_tok"),
    ("jamba", {"num_local_experts": 2, "num_experts_per_tok": 3, "expert_layer_period": 1,
               "expert_layer_offset": 0}, "num_experts_per_tok"),
    ("jamba", {"mamba_dt_rank": "big", "attn_layer_period": 2}, "mamba_dt_rank"),
    ("jamba", {"num_key_value_heads": 3}, "num_key_value_heads"),
    ("lfm2", {"layer_types": ["conv"] * 9}, "layer_types"),
    ("lfm2", {"layer_types": ["sliding_attention"]}, "layer_types"),
    ("lfm2", {"layer_types": None, "full_attn_idxs": [0, 9]}, "full_attn_idxs"),
    ("lfm2", {"layer_types": None, "full_attn_idxs": [-1]}, "full_attn_idxs"),
    ("lfm2", {"block_ffn_dim_multiplier": None}, "block_ffn_dim_multiplier"),
    ("lfm2", {"num_key_value_heads": 3, "layer_types": ["full_attention"]}, "num_key_value_heads"),
    ("lfm2_moe", {"layer_types": None}, "layer_types"),
    ("lfm2_moe", {"layer_types": ["conv", "attention"]}, "layer_types"),
    ("lfm2_moe", {"num_dense_layers": 0, "num_experts": 2, "num_experts_per_tok": 3}, "num_experts_per_tok"),
]


@pytest.mark.parametrize("mt, change, field", BAD, ids=[f"{b[0]}-{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_names_the_field(mt, change, field):
    raw = {**_tiny(mt), **change}
    if "num_local_experts" in change:
        raw.pop("num_experts")
    if change.get("layer_types") is not None and len(change["layer_types"]) <= 2:
        raw["num_hidden_layers"] = len(change["layer_types"])
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
    assert oracle.assert_serialised_forms_agree(raw, tmp_path) == oracle.params(raw)


def test_mamba_intermediate_size_written_out_wins():
    """to_dict() writes intermediate_size = expand·hidden_size; a config that gives another value
    keeps it in transformers (the kwargs are set after __post_init__), and so in the engine."""
    raw = {**_tiny("mamba", 1), "intermediate_size": 999}
    assert _params(raw) == oracle.params(raw)


def test_jamba_disabled_features_are_not_validated():
    """num_experts_per_tok is not checked when no layer is MoE (num_experts = 1, or an expert
    offset past the last layer); mamba_dt_rank is not read when no layer is Mamba."""
    raw = {**_tiny("jamba", 0), "num_experts": 1, "num_experts_per_tok": 5}
    assert _params(raw) == oracle.params(raw)
    raw = {**_tiny("jamba", 0), "num_hidden_layers": 3, "num_experts": 2, "num_experts_per_tok": 5,
           "expert_layer_period": 4, "expert_layer_offset": 3}
    assert _params(raw) == oracle.params(raw)
    raw = {**_tiny("jamba", 1), "attn_layer_period": 1, "attn_layer_offset": 0, "mamba_dt_rank": "big"}
    m = symcost.build(dict(raw))
    assert not any("mamba" in k for k in m.params().flatten())


def test_jamba_head_dim_auto_rank_and_alias_equal_transformers():
    """An explicit head_dim (JambaAttention reads it when the config has one), mamba_dt_rank
    "auto", and the num_local_experts alias: exact params and prefill FLOPs."""
    raw = {**_tiny("jamba", 2), "head_dim": 6, "mamba_dt_rank": "auto"}
    raw["num_local_experts"] = raw.pop("num_experts")
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)
    model = oracle.build(raw)
    ph = Phase(kind="prefill", attention="full", logits="all", impl="reference")
    assert m.flops(ph).total_at(m.values_with(T=5, B=2)) == oracle.prefill_flops(model, 2, 5)
    assert m.cache().total_at(m.values_with(T=5, B=2)) == oracle.cache_elements(model, 2, 5)


def test_lfm2_spellings_equal_transformers():
    """The older spellings the config class reads (block_ff_dim, tie_embedding), full_attn_idxs
    instead of layer_types, and no pattern at all (every layer attention): exact params."""
    raw = _tiny("lfm2", 2)
    raw.pop("layer_types", None)
    raw["full_attn_idxs"] = [0]
    raw["block_ff_dim"] = raw.pop("intermediate_size")
    raw["tie_embedding"] = not raw.pop("tie_word_embeddings")
    assert _params(raw) == oracle.params(raw)
    raw.pop("full_attn_idxs")
    m = symcost.build(dict(raw))
    assert all("full_attention" in g.name for g in m.groups)
    assert m.params().total_at(m.values) == oracle.params(raw)


def test_lfm2_layer_types_win_over_full_attn_idxs():
    """Lfm2Config derives layer_types from full_attn_idxs only when layer_types is absent."""
    raw = {**_tiny("lfm2", 0), "full_attn_idxs": [0]}
    assert "layer_types" in raw
    assert _params(raw) == oracle.params(raw)


def test_lfm2_moe_disabled_features_are_not_validated():
    """No MoE layer (num_dense_layers ≥ L): num_experts_per_tok is not checked against num_experts."""
    raw = {**_tiny("lfm2_moe", 1), "num_dense_layers": 9, "num_experts": 2, "num_experts_per_tok": 5}
    assert _params(raw) == oracle.params(raw)


# -- the config classes' defaults -------------------------------------------------------------------
DEFAULTS = [
    {"model_type": "mamba"},
    {"model_type": "falcon_mamba", "hidden_size": 4096, "num_hidden_layers": 64, "vocab_size": 65024},
    {"model_type": "jamba"},
    {"model_type": "jamba", "num_hidden_layers": 72, "hidden_size": 8192, "num_attention_heads": 64},
    {"model_type": "lfm2"},
    {"model_type": "lfm2", "num_hidden_layers": 16, "hidden_size": 2048, "block_ff_dim": 12288,
     "block_ffn_dim_multiplier": 1.0, "full_attn_idxs": [2, 5, 8, 10, 12, 14]},
    {"model_type": "lfm2_moe", "num_hidden_layers": 24,
     "layer_types": ["full_attention" if i % 4 == 2 else "conv" for i in range(24)]},
]


@pytest.mark.parametrize("raw", DEFAULTS, ids=[f"{r['model_type']}-{i}" for i, r in enumerate(DEFAULTS)])
def test_defaults_equal_the_config_class(raw):
    """Fields left out take the values transformers' config class derives (meta device)."""
    assert _params(raw) == oracle.params(raw)


# -- the scan conventions -----------------------------------------------------------------------------
@pytest.mark.parametrize("mt", ["mamba", "falcon_mamba"])
def test_minimal_scan_is_linear_in_T_and_below_reference(mt):
    import sympy

    from symcost.core.notation import sym
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
