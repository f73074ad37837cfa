"""The Mamba-2 hybrids (bamba, granitemoehybrid, falcon_h1) beyond the generic oracle suite:
bad input names its field, the configs transformers itself writes are accepted with the same
counts, the config classes' own defaults agree, and full-size shapes agree on the meta device."""
import json
import random

import pytest

import symcost
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from symcost.core.notation import sym
from tests import oracle
from tests.tiny import bamba, falcon_h1, granitemoehybrid

FAMILIES = {"bamba": bamba, "granitemoehybrid": granitemoehybrid, "falcon_h1": falcon_h1}


def _tiny(mt: str, seed: int = 0) -> dict:
    return FAMILIES[mt].tiny(random.Random(f"{mt}-{seed}"), mt)


def _params(raw: dict) -> int:
    m = symcost.build(dict(raw))
    return m.params().total_at(m.values)


# -- bad input -------------------------------------------------------------------------------------
def _bad(mt: str, **change):
    raw = {**_tiny(mt), **change}
    return raw


BAD = [
    ("bamba", {"attn_layer_indices": [0, 7]}, "attn_layer_indices"),
    ("bamba", {"attn_layer_indices": [-1]}, "attn_layer_indices"),
    ("bamba", {"layer_types": ["linear_attention"] * 9}, "layer_types"),
    ("bamba", {"layer_types": ["sliding_attention"]}, "layer_types"),
    ("bamba", {"mamba_d_head": 3}, "mamba_d_head"),
    ("bamba", {"mamba_n_heads": 7}, "mamba_n_heads"),
    ("bamba", {"num_key_value_heads": 3}, "num_key_value_heads"),
    ("granitemoehybrid", {"layer_types": ["mamba"]}, "layer_types"),
    ("granitemoehybrid", {"layer_types": ["mamba", "conv"]}, "layer_types"),
    ("granitemoehybrid", {"layers_block_type": ["mamba", "moe"]}, "layer_types"),
    ("granitemoehybrid", {"num_local_experts": 2, "num_experts_per_tok": 3}, "num_experts_per_tok"),
    ("granitemoehybrid", {"mamba_n_groups": 3}, "mamba_n_heads"),
    ("falcon_h1", {"layer_types": ["full_attention"]}, "layer_types"),
    ("falcon_h1", {"layer_types": ["hybrid"] * 9}, "layer_types"),
    ("falcon_h1", {"mlp_multipliers": [1.0]}, "mlp_multipliers"),
    ("falcon_h1", {"ssm_multipliers": [1.0, 1.0]}, "ssm_multipliers"),
    ("falcon_h1", {"mamba_d_ssm": 25}, "mamba_n_heads"),
]


@pytest.mark.parametrize("mt, change, field", BAD, ids=[f"{b[0]}-{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_names_the_field(mt, change, field):
    raw = _bad(mt, **change)
    if mt == "bamba" and "layer_types" in change and len(change["layer_types"]) == 1:
        raw["num_hidden_layers"] = 1
        raw["attn_layer_indices"] = None
    if mt == "granitemoehybrid" and "layers_block_type" in change:
        raw.pop("layer_types", None)
        raw["num_hidden_layers"] = 2
    if mt == "granitemoehybrid" and "layer_types" in change:
        raw.pop("layers_block_type", None)  # held with it, layers_block_type wins (as in transformers)
    with pytest.raises(SymcostError, match=f"field '{field}'"):
        symcost.build(raw)


def test_bad_input_is_exit_2_with_one_line(tmp_path, capsys):
    from symcost.cli import main
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_bad("bamba", attn_layer_indices=[99])))
    assert main(["params", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "attn_layer_indices" in err[0]


def test_disabled_features_are_not_validated():
    """num_experts_per_tok is not checked against 0 experts (the dense Granite 4.0 layout); with no
    experts and a 0-wide shared MLP a layer is norms + mixer only."""
    raw = {**_tiny("granitemoehybrid", 1), "num_local_experts": 0, "num_experts_per_tok": 99}
    assert _params(raw) == oracle.params(raw)
    raw["shared_intermediate_size"] = 0
    m = symcost.build(dict(raw))
    assert not any("/mlp" in k for k in m.params().flatten())
    assert m.params().total_at(m.values) == oracle.params(raw)


# -- the forms transformers writes ---------------------------------------------------------------
CASES = [(mt, s) for mt, mod in FAMILIES.items() for s in range(getattr(mod, "SEEDS", 3))]


@pytest.mark.parametrize("mt, seed", CASES, ids=[f"{mt}-{s}" for mt, s in CASES])
def test_to_dict_and_save_pretrained_forms_give_the_same_counts(mt, seed, tmp_path):
    raw = _tiny(mt, seed)
    assert oracle.assert_serialised_forms_agree(raw, tmp_path) == oracle.params(raw)


def test_granite_legacy_layer_names_and_alias_equal_transformers():
    raw = _tiny("granitemoehybrid", 2)
    L = raw["num_hidden_layers"]
    raw.pop("layer_types", None)
    raw.pop("layers_block_type", None)
    raw["layers_block_type"] = ["attention"] + ["mamba"] * (L - 1)
    m = symcost.build(dict(raw))
    assert m.values[sym.L_A] == 1 and m.values[sym.L_M] == L - 1
    assert m.params().total_at(m.values) == oracle.params(raw)
    model = oracle.build(raw)
    ph = Phase(kind="prefill", attention="full", logits="all", impl="reference")
    assert m.flops(ph).total_at(m.values_with(T=8, B=1)) == oracle.prefill_flops(model, 1, 8)


def test_bamba_layer_types_written_out_are_accepted_when_they_agree():
    raw = _tiny("bamba", 0)
    L, idx = raw["num_hidden_layers"], raw["attn_layer_indices"]
    agree = ["attention" if i in idx else "mamba" for i in range(L)]
    assert _params({**raw, "layers_block_type": agree}) == _params(raw)


# -- the config classes' defaults, and full-size shapes ----------------------------------------------
DEFAULTS = [
    {"model_type": "bamba"},
    {"model_type": "bamba", "attn_layer_indices": [9, 18, 27]},
    {"model_type": "granitemoehybrid"},
    {"model_type": "granitemoehybrid", "layer_types": ["mamba"] * 5 + ["attention"] + ["mamba"] * 26},
    {"model_type": "falcon_h1"},
]


@pytest.mark.parametrize("raw", DEFAULTS, ids=[f"{r['model_type']}-{i}" for i, r in enumerate(DEFAULTS)])
def test_defaults_equal_the_config_class(raw):
    """Fields left out take the values transformers' config class derives (meta device)."""
    assert _params(raw) == oracle.params(raw)


#: Full-size shapes (not published checkpoints: no public config.json was available to copy).
#: Falcon-H1 7B's depth, width, heads, Mamba heads / head dims and state size are the table in the
#: transformers FalconH1 docs; the other fields are stated here and are not claimed to be TII's.
FULL_SIZE = {
    "falcon_h1-7b-shape": {
        "model_type": "falcon_h1", "num_hidden_layers": 44, "hidden_size": 3072, "num_attention_heads": 12,
        "num_key_value_heads": 2, "head_dim": 128, "mamba_n_heads": 24, "mamba_d_head": 128,
        "mamba_d_ssm": 3072, "mamba_d_state": 256, "mamba_n_groups": 1, "intermediate_size": 12288,
        "vocab_size": 130048, "mamba_rms_norm": True, "projectors_bias": False,
    },
    "granite-hybrid-moe-shape": {
        "model_type": "granitemoehybrid", "num_hidden_layers": 40, "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 72,
        "num_experts_per_tok": 10, "intermediate_size": 768, "shared_intermediate_size": 8192,
        "mamba_n_heads": 128, "mamba_d_head": 64, "mamba_d_state": 128, "vocab_size": 100352,
        "layer_types": ["full_attention" if i % 10 == 5 else "mamba" for i in range(40)],
        "tie_word_embeddings": True,
    },
    "bamba-9b-shape": {
        "model_type": "bamba", "num_hidden_layers": 32, "hidden_size": 4096, "vocab_size": 128256,
        "attn_layer_indices": [9, 18, 27], "mamba_d_state": 128,
    },
}


@pytest.mark.parametrize("name", sorted(FULL_SIZE))
def test_full_size_shapes_equal_transformers(name):
    raw = FULL_SIZE[name]
    m = symcost.build(dict(raw))
    total = m.params().total_at(m.values)
    assert isinstance(total, int) and total > 10**9
    assert total == oracle.params(raw)


# -- the multipliers: elementwise only ----------------------------------------------------------------
def test_multipliers_are_elementwise_only_and_counted_by_hand():
    """Falcon-H1, one layer, per token: ssm_in d + mup_vector (2·d_in + 2·G·N + H_m) + ssm_out d +
    attention_in d + key H_kv·D_h + attention_out d + mlp gate d_ff + mlp down d; plus the embedding
    (d per token) and lm_head_multiplier (V per logit row). Granite: 2·d per layer, d, V."""
    raw = _tiny("falcon_h1", 2)
    m = symcost.build(dict(raw))
    v = {s.name: int(x) for s, x in m.values.items()}
    d, L, T = v["d"], v["L"], 7
    per_token = (5 * d + 2 * v["H_m"] * v["D_m"] + 2 * v["G"] * v["N"] + v["H_m"] + v["H_kv"] * v["D_h"]
                 + v["d_ff"])
    ew = m.elementwise(Phase(kind="prefill", logits="last")).at(m.values_with(T=T, B=1))
    mult = sum(n for k, n in ew.items() if k.startswith("layers/multipliers/"))
    assert mult == L * T * per_token
    assert ew["embedding_multiplier"] == T * d and ew["lm_head_multiplier"] == v["V"]
    for terms in (m.params(), m.flops(Phase(kind="prefill")), m.cache()):
        assert not any("multiplier" in k for k in terms.flatten())
    g = symcost.build(_tiny("granitemoehybrid", 1))
    ew = g.elementwise(Phase(kind="decode")).at(g.values_with(T=5, B=2))
    L = int(g.values[sym.L_M] + g.values[sym.L_A])
    assert sum(n for k, n in ew.items() if k.endswith("multipliers/residual")) == 2 * 2 * L * int(g.values[sym.d])
