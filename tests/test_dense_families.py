"""The classic dense and MoE families (issue 11) beyond the generic oracle suite: the configs
transformers itself writes (``to_dict()`` and ``save_pretrained``) give the same counts, the
config classes' own defaults agree on the meta device, and bad input names its field."""
import json
import random

import pytest

import symcost
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from tests import oracle
from tests.tiny import classic, dense, ernie, gemma, granite, moe_more, more_dense, olmo, phimoe, relu2_dense

MODULES = (classic, dense, ernie, granite, moe_more, more_dense, olmo, phimoe, relu2_dense)
TYPES = {mt: mod for mod in MODULES for mt in mod.MODEL_TYPES} | {"gemma": gemma}


def _tiny(mt: str, seed: int = 0) -> dict:
    return TYPES[mt].tiny(random.Random(f"{mt}-{seed}"), mt)


def _params(raw: dict) -> int:
    m = symcost.build(dict(raw))
    return m.params().total_at(m.values)


CASES = [(mt, s) for mt in sorted(TYPES) for s in (0, 1)]


@pytest.mark.parametrize("mt, seed", CASES, ids=[f"{mt}-{s}" for mt, s in CASES])
def test_to_dict_and_save_pretrained_forms_give_the_same_counts(mt, seed, tmp_path):
    raw = _tiny(mt, seed)
    want = _params(raw)
    as_dict, saved = oracle.serialised(raw, tmp_path)
    m0 = symcost.build(dict(raw))
    for form in (as_dict, saved):
        form = {**form, "model_type": mt}
        m = symcost.build(dict(form))
        assert m.params().total_at(m.values) == want
        vals, vals0 = m.values_with(T=13, B=2), m0.values_with(T=13, B=2)
        for ph in (Phase(kind="prefill", impl="reference"), Phase(kind="decode")):
            assert m.flops(ph).total_at(vals) == m0.flops(ph).total_at(vals0)
        assert m.cache().total_at(vals) == m0.cache().total_at(vals0)


#: each family with only its model_type (and what its class cannot default): the config class's
#: defaults, built on the meta device (shrunk in depth/width where the default model is large)
SMALL = {"num_hidden_layers": 2}
NEEDS = {"hunyuan_v1_dense": {"head_dim": 128}, "nemotron": {"num_key_value_heads": 8}, "hunyuan_v1_moe": {"head_dim": 128},
         "dbrx": {"n_layers": 2, "attn_config": {"rope_theta": 10000.0, "clip_qkv": 8.0}},
         "dots1": {"n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2,
                   "first_k_dense_replace": 1}}
DEFAULTS = [{"model_type": mt, **SMALL, **NEEDS.get(mt, {})} for mt in sorted(TYPES)]


@pytest.mark.parametrize("raw", DEFAULTS, ids=[r["model_type"] for r in DEFAULTS])
def test_defaults_equal_the_config_class(raw):
    assert _params(raw) == oracle.params(raw)


BAD = [
    ("olmoe", {"num_experts": 2, "num_experts_per_tok": 3}, "num_experts_per_tok"),
    ("flex_olmo", {"num_experts": 2, "num_experts_per_tok": 3}, "num_experts_per_tok"),
    ("granitemoe", {"num_local_experts": 2, "num_experts_per_tok": 3}, "num_experts_per_tok"),
    ("granitemoeshared", {"num_local_experts": 2, "num_experts_per_tok": 3}, "num_experts_per_tok"),
    ("phimoe", {"num_local_experts": 1, "num_experts_per_tok": 1}, "num_local_experts"),
    ("ernie4_5_moe", {"moe_num_experts": 2, "moe_k": 3}, "moe_k"),
    ("hunyuan_v1_moe", {"num_experts": 2, "moe_topk": 3}, "moe_topk"),
    ("hunyuan_v1_moe", {"moe_topk": [1]}, "moe_topk"),
    ("hunyuan_v1_dense", {"head_dim": None}, "head_dim"),
    ("olmo3", {"layer_types": ["full_attention"] * 9}, "layer_types"),
    ("cohere2", {"layer_types": ["full_attention"] * 9}, "layer_types"),
    ("exaone4", {"layer_types": ["global"] * 4, "num_hidden_layers": 4}, "layer_types"),
    ("exaone4", {"sliding_window_pattern": "LLLG", "layer_types": None}, "sliding_window_pattern"),
    ("smollm3", {"layer_types": ["sliding_attention"] * 2, "num_hidden_layers": 2,
                 "use_sliding_window": False}, "layer_types"),
    ("phi", {"num_key_value_heads": 3, "num_attention_heads": 4, "hidden_size": 16}, "num_key_value_heads"),
    ("phi", {"head_dim": 3, "qk_layernorm": True}, "head_dim"),
    ("gpt_neox", {"hidden_size": 30, "num_attention_heads": 4}, "hidden_size"),
    ("olmoe", {"head_dim": 3}, "head_dim"),
    ("seed_oss", {"num_key_value_heads": 5}, "num_key_value_heads"),
    ("dbrx", {"ffn_config": {"moe_num_experts": 2, "moe_top_k": 3}}, "ffn_config.moe_top_k"),
    ("dbrx", {"attn_config": {"kv_n_heads": 5}, "n_heads": 4, "d_model": 16}, "attn_config.kv_n_heads"),
    ("dbrx", {"tie_word_embeddings": True}, "tie_word_embeddings"),
    ("dots1", {"n_routed_experts": 2, "num_experts_per_tok": 3}, "num_experts_per_tok"),
    ("dots1", {"layer_types": ["full_attention"]}, "layer_types"),
    ("helium", {"head_dim": 5}, "head_dim"),
    ("stablelm", {"hidden_size": 30, "num_attention_heads": 4}, "hidden_size"),
    ("nemotron", {"num_key_value_heads": 5}, "num_key_value_heads"),
    ("nemotron", {"num_key_value_heads": None}, "num_key_value_heads"),
]


@pytest.mark.parametrize("mt, change, field", BAD, ids=[f"{b[0]}-{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_names_the_field(mt, change, field):
    raw = {**_tiny(mt), **change}
    raw = {k: v for k, v in raw.items() if v is not None}
    with pytest.raises(SymcostError, match=f"field '{field}'"):
        symcost.build(raw)


def test_bad_input_is_exit_2_with_one_line(tmp_path, capsys):
    from symcost.cli import main
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_tiny("olmoe"), "num_experts": 2, "num_experts_per_tok": 5}))
    assert main(["params", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "num_experts_per_tok" in err[0]


def test_parallel_block_changes_no_count():
    """GPT-NeoX's use_parallel_residual is wiring only: same weights, same GEMMs (and the oracle
    agrees for both settings)."""
    raw = _tiny("gpt_neox", 0)
    serial, parallel = {**raw, "use_parallel_residual": False}, {**raw, "use_parallel_residual": True}
    assert _params(serial) == _params(parallel) == oracle.params(serial) == oracle.params(parallel)
    m = symcost.build(dict(serial))
    ph = Phase(kind="prefill", attention="full", logits="all", impl="reference")
    for r in (serial, parallel):
        assert m.flops(ph).total_at(m.values_with(T=6, B=1)) == oracle.prefill_flops(oracle.build(r), 1, 6)


def test_phimoe_routes_two_experts_whatever_k_says():
    raw = {**_tiny("phimoe", 0), "num_local_experts": 4, "num_experts_per_tok": 3}
    m = symcost.build(dict(raw))
    ph = Phase(kind="prefill", attention="full", logits="all", impl="reference")
    assert m.flops(ph).total_at(m.values_with(T=6, B=1)) == oracle.prefill_flops(oracle.build(raw), 1, 6)
    assert any("two experts" in n for n in m.notes)
