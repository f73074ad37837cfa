"""GLM MoE family checks beyond the generic oracle suite: MTP extras against transformers' MtpLayer,
the config class's defaults, the config as transformers serialises it (to_dict, save_pretrained),
GLM-5's shared-indexer layers at real size, and config errors that name their field."""
import json
import random

import pytest
import torch
from transformers import AutoConfig
from transformers.modeling_layers import MtpModel

import symcost
from symcost.architectures import loader
from symcost.core.errors import SymcostError
from tests import oracle
from tests.tiny import glm

BUNDLED = {"glm4_moe": "glm-4.7-fp8", "glm4_moe_lite": "glm-4.7-flash", "glm_moe_dsa": "glm-5"}


def _count(raw: dict) -> int:
    m = symcost.build(dict(raw))
    return m.params().total_at(m.values)


@pytest.mark.parametrize("model_type", glm.MODEL_TYPES)
@pytest.mark.parametrize("seed", range(3))
def test_mtp_extras_equal_transformers_mtp_layers(model_type, seed):
    """transformers builds MTP for glm4_moe (num_mtp_layers); the lite and DSA config classes have no
    such field, so the test states it on the config the way get_mtp_config reads it: every MTP layer
    is one MoE decoder layer of the main class (with its own indexer for GLM-5)."""
    raw = glm.tiny(random.Random(f"mtp-{seed}"), model_type)
    raw["num_nextn_predict_layers"] = 2
    main = oracle.build(raw, "meta")
    if model_type != "glm4_moe":
        main.config.num_mtp_layers = 2
        main.config.mtp_mlp_layer_types = ["sparse"] * 2
    if model_type == "glm_moe_dsa":
        main.config.mtp_layer_types = ["indexed_attention"] * 2
        main.config.indexer_types = ["full"] * raw["num_hidden_layers"]
    with torch.device("meta"):
        mtp = MtpModel(main, 2)  # embedding and head shared with the main model
    m = symcost.build(dict(raw))
    assert m.extras.total_at(m.values) == sum(p.numel() for p in mtp.layers.parameters())


@pytest.mark.parametrize("model_type", glm.MODEL_TYPES)
def test_absent_fields_take_the_config_class_defaults(model_type):
    """Only the four sizes the DeepSeek adapters require; every other field is the class default."""
    cls = AutoConfig.for_model(model_type)
    raw = {"model_type": model_type, **{k: getattr(cls, k) for k in
           ("hidden_size", "vocab_size", "num_hidden_layers", "num_attention_heads")}}
    assert _count(raw) == oracle.params(raw)
    m = symcost.build(dict(raw))
    assert bool(m.extras) == bool(getattr(cls, "num_nextn_predict_layers", 0))


def _serialised_forms(raw: dict, tmp_path):
    mt = raw["model_type"]
    kwargs = {k: v for k, v in raw.items() if k != "model_type"}
    cfg = AutoConfig.for_model(mt, **kwargs)
    cfg.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    return cfg.to_dict(), saved


def _roundtrip_cases():
    out = [(mt, "bundled") for mt in glm.MODEL_TYPES]
    out += [(mt, seed) for mt in glm.MODEL_TYPES for seed in range(3)]
    return out


@pytest.mark.parametrize("model_type, which", _roundtrip_cases())
def test_config_as_transformers_writes_it(model_type, which, tmp_path):
    """to_dict() and save_pretrained's config.json (rope_parameters with partial_rotary_factor, dtype,
    mlp_layer_types / indexer_types / layer_types written out) give the count the raw config gives."""
    if which == "bundled":
        _, raw = loader.read_json(BUNDLED[model_type])
    else:
        raw = glm.tiny(random.Random(f"roundtrip-{which}"), model_type)
    expected = oracle.params(raw)
    assert _count(raw) == expected
    as_dict, saved = _serialised_forms(raw, tmp_path)
    for form in (as_dict, saved):
        assert form["model_type"] == model_type
        assert _count(form) == expected
        assert oracle.params(form) == expected


def test_partial_rotary_factor_is_read_where_transformers_writes_it(tmp_path):
    raw = {**glm.tiny(random.Random("rope"), "glm4_moe"), "head_dim": 8, "partial_rotary_factor": 0.25}
    raw.pop("rope_parameters", None)
    _, saved = _serialised_forms(raw, tmp_path)
    assert "partial_rotary_factor" not in saved and saved["rope_parameters"]["partial_rotary_factor"] == 0.25
    for form in (raw, saved):
        assert any("int(D_h·0.25) = 2 of D_h = 8" in n for n in symcost.build(dict(form)).notes)
    plain = {k: v for k, v in raw.items() if k != "partial_rotary_factor"}  # the class default, 0.5
    assert any("int(D_h·0.5) = 4" in n for n in symcost.build(plain).notes)


def test_glm5_with_shared_indexers_equals_transformers():
    """GLM-5 at its real size with index_topk_freq 4: 21 of 78 layers build an indexer."""
    _, raw = loader.read_json("glm-5")
    raw = {**raw, "index_topk_freq": 4}
    m = symcost.build(dict(raw))
    assert m.values[symcost.sym.L_I] == 21
    assert m.params().total_at(m.values) == oracle.params(raw)
    full = symcost.build("glm-5")
    per_indexer = (symcost.sym.D_I * symcost.sym.H_I * symcost.sym.d_q + symcost.sym.D_I * symcost.sym.d
                   + 2 * symcost.sym.D_I + symcost.sym.H_I * symcost.sym.d).xreplace(full.values)
    assert full.params().total_at(full.values) - m.params().total_at(m.values) == (78 - 21) * per_indexer


def test_bundled_totals():
    """Pinned from transformers 5.24 on the meta device (tests/test_oracle_hf.py recomputes them)."""
    a, b, c = (symcost.build(n) for n in ("glm-4.7-fp8", "glm-4.7-flash", "glm-5"))
    assert a.params().total_at(a.values) == 352_796_472_320
    assert b.params().total_at(b.values) == 29_943_390_976
    assert c.params().total_at(c.values) == 743_911_199_232
    assert a.buffers().total_at(a.values) == 89 * 160  # e_score_correction_bias, a buffer


def _bad(model_type, **patch):
    """A valid tiny config of three layers, MoE from layer 1 on, then the patch."""
    raw = glm.tiny(random.Random(f"bad-{model_type}"), model_type)
    raw.update(num_hidden_layers=3, first_k_dense_replace=1, mlp_layer_types=None, indexer_types=None,
               index_topk_pattern=None, index_topk_freq=1, rope_parameters=None)
    return {**raw, **patch}


@pytest.mark.parametrize("model_type, patch, field", [
    ("glm4_moe", {"num_experts_per_tok": 99, "first_k_dense_replace": 0}, "num_experts_per_tok"),
    ("glm4_moe_lite", {"num_experts_per_tok": 99, "mlp_layer_types": None}, "num_experts_per_tok"),
    ("glm_moe_dsa", {"num_experts_per_tok": 99, "first_k_dense_replace": 0, "mlp_layer_types": None},
     "num_experts_per_tok"),
    ("glm4_moe", {"first_k_dense_replace": 9}, "first_k_dense_replace"),
    ("glm_moe_dsa", {"first_k_dense_replace": 9, "mlp_layer_types": None}, "first_k_dense_replace"),
    ("glm4_moe", {"partial_rotary_factor": 0}, "partial_rotary_factor"),
    ("glm4_moe", {"partial_rotary_factor": 1.5}, "partial_rotary_factor"),
    ("glm4_moe", {"partial_rotary_factor": -0.5}, "partial_rotary_factor"),
    ("glm4_moe", {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 2}},
     "partial_rotary_factor"),
    ("glm4_moe", {"num_key_value_heads": 5}, "num_key_value_heads"),
    ("glm4_moe_lite", {"num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 16},
     "num_key_value_heads"),
    ("glm4_moe_lite", {"mlp_layer_types": ["dense"] * 9}, "mlp_layer_types"),
    ("glm4_moe_lite", {"mlp_layer_types": ["dense", "moe", "dense"], "num_hidden_layers": 3}, "mlp_layer_types"),
    ("glm_moe_dsa", {"indexer_types": ["full"]}, "indexer_types"),
    ("glm_moe_dsa", {"indexer_types": ["full", "sparse", "full"], "num_hidden_layers": 3,
                     "mlp_layer_types": None}, "indexer_types"),
    ("glm_moe_dsa", {"indexer_types": ["shared", "full", "full"], "num_hidden_layers": 3,
                     "mlp_layer_types": None}, "indexer_types"),
    ("glm_moe_dsa", {"indexer_types": None, "index_topk_pattern": "FXF", "num_hidden_layers": 3,
                     "mlp_layer_types": None}, "index_topk_pattern"),
    ("glm_moe_dsa", {"indexer_types": None, "index_topk_pattern": None, "index_topk_freq": 3,
                     "index_skip_topk_offset": 0}, "index_skip_topk_offset"),
    ("glm_moe_dsa", {"layer_types": ["full_attention"] * 3, "num_hidden_layers": 3, "indexer_types": None,
                     "index_topk_pattern": None, "mlp_layer_types": None}, "layer_types"),
])
def test_errors_name_the_field(model_type, patch, field):
    with pytest.raises(SymcostError, match=f"field '{field}'"):
        symcost.build(_bad(model_type, **patch))


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    """In process (the exit status ``python -m symcost`` passes on is main's: tests/test_startup.py)."""
    from symcost.cli import main
    _, raw = loader.read_json("glm-4.7-fp8")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**raw, "num_experts_per_tok": 161}))
    code = main(["params", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "field 'num_experts_per_tok'" in err


@pytest.mark.parametrize("model_type, patch", [
    ("glm4_moe_lite", {"head_dim": 4, "qk_rope_head_dim": 2}),  # attribute_map: head_dim sets qk_rope_head_dim
    ("glm4_moe_lite", {"num_local_experts": 6, "n_routed_experts": None, "n_group": 1, "topk_group": 1}),
    ("glm_moe_dsa", {"num_experts": 6, "n_routed_experts": 4, "n_group": 1, "topk_group": 1}),  # num_experts wins
    ("glm4_moe", {"num_local_experts": 6, "n_routed_experts": None, "n_group": 1, "topk_group": 1}),
])
def test_aliases_resolve_as_transformers(model_type, patch):
    raw = {k: v for k, v in {**glm.tiny(random.Random("alias"), model_type), **patch}.items() if v is not None}
    assert _count(raw) == oracle.params(raw)


def test_mtp_layer_count_as_transformers_resolves_it():
    raw = glm.tiny(random.Random("mtp-alias"), "glm4_moe")
    for patch in ({"num_mtp_layers": 3}, {"num_mtp_layers": 3, "num_nextn_predict_layers": 2}, {}):
        form = {k: v for k, v in raw.items() if k != "num_nextn_predict_layers"} | patch
        cfg = oracle.hf_config(form)
        m = symcost.build(dict(form))
        assert m.values[symcost.sym.L_mtp] == cfg.num_nextn_predict_layers == cfg.to_dict()["num_nextn_predict_layers"]


@pytest.mark.parametrize("model_type", glm.MODEL_TYPES)
def test_prefill_with_last_logits_only(model_type):
    """--logits last against the class run with logits_to_keep=1 (what generate() does)."""
    from symcost.core.conventions import Phase
    raw = glm.tiny(random.Random("last"), model_type)
    m, model = symcost.build(dict(raw)), oracle.build(raw)
    terms = m.flops(Phase(kind="prefill", attention="full", logits="last", impl="reference"))
    for T in glm.T_VALUES:
        for B in (1, 2):
            assert terms.total_at(m.values_with(T=T, B=B)) == oracle.prefill_flops(model, B, T, logits_to_keep=1)
