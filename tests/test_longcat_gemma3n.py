"""LongCat-Flash and Gemma 3n: what the oracle suite cannot show — the refusals, with the field named,
and the zero-expert convention against a routing that picks zero experts."""

import json

import pytest

import symcost
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from tests import oracle
from tests.tiny import longcat_flash

#: the attribute-map spellings a tiny config may use, and the names these tests change
CANONICAL = {"num_local_experts": "n_routed_experts", "num_experts_per_tok": "moe_topk",
             "intermediate_size": "ffn_hidden_size", "moe_intermediate_size": "expert_ffn_hidden_size"}


def _longcat(**changes):
    """A tiny LongCat config in the class's own field names (whichever spelling the draw used)."""
    import random
    raw = longcat_flash.tiny(random.Random("lc-test"), "longcat_flash")
    raw = {CANONICAL.get(k, k): v for k, v in raw.items()}
    if "num_hidden_layers" in raw:
        raw["num_layers"] = raw.pop("num_hidden_layers") // 2
    raw.update(changes)
    return raw


@pytest.mark.parametrize("changes,field", [
    ({"moe_topk": 99}, "moe_topk"),
    ({"qk_head_dim": 1}, "qk_head_dim"),
    ({"num_key_value_heads": 7}, "num_key_value_heads"),
    ({"zero_expert_num": None}, "zero_expert_num"),
    ({"num_hidden_layers": 1}, "num_hidden_layers"),
])
def test_longcat_refusals_name_the_field(changes, field):
    with pytest.raises(SymcostError, match=f"'{field}"):
        symcost.build(_longcat(**changes))


def test_longcat_num_hidden_layers_is_twice_num_layers_and_wins():
    """transformers: num_hidden_layers is a property 2·num_layers; given, it sets num_layers = n // 2."""
    raw = _longcat(num_layers=1, num_hidden_layers=5)
    m = symcost.build(dict(raw))
    assert m.values[symcost.sym.L] == 2 == oracle.hf_config(raw).num_layers
    assert m.params().total_at(m.values) == oracle.params(raw)


def test_longcat_zero_experts_are_an_upper_bound_when_the_router_picks_them():
    """With k < E + E_z the router may give a slot to a zero expert (identity, 0 FLOPs): eager
    transformers then computes less than min(k, E) real experts per token — the engine's count is the
    most it can compute, and every other term is exact (the difference is whole real-expert runs)."""
    raw = _longcat(n_routed_experts=3, zero_expert_num=3, moe_topk=3, expert_ffn_hidden_size=5, hidden_size=8,
                   num_attention_heads=1, num_layers=1)
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    T, B = 16, 2
    engine = m.flops(Phase(kind="prefill", attention="full", impl="reference")).total_at(m.values_with(T=T, B=B))
    measured = oracle.prefill_flops(model, B, T)
    per_run = 2 * 3 * 8 * 5  # one token through one real expert: gate, up, down
    assert measured < engine and (engine - measured) % per_run == 0


def test_gemma3n_multimodal_is_refused_naming_what_is_missing(tmp_path):
    with pytest.raises(SymcostError, match="vision tower.*audio tower.*gemma3n_text"):
        symcost.build({"model_type": "gemma3n", "text_config": {}})


@pytest.mark.parametrize("changes,field", [
    ({"intermediate_size": [8, 8]}, "intermediate_size"),
    ({"activation_sparsity_pattern": [0.0]}, "activation_sparsity_pattern"),
    ({"altup_active_idx": 2, "altup_num_inputs": 2}, "altup_active_idx"),
    ({"num_kv_shared_layers": 3}, "num_kv_shared_layers"),
    ({"layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
      "num_kv_shared_layers": 1}, "num_kv_shared_layers"),
])
def test_gemma3n_refusals_name_the_field(changes, field):
    raw = {"model_type": "gemma3n_text", "num_hidden_layers": 3, "hidden_size": 16, "num_attention_heads": 2,
           "num_key_value_heads": 1, "num_kv_shared_layers": 0, **changes}
    with pytest.raises(SymcostError, match=f"'{field}"):
        symcost.build(raw)


def test_gemma3n_per_layer_ffn_widths():
    """MatFormer mix-and-match: layers of another FFN width form their own groups."""
    raw = {"model_type": "gemma3n_text", "num_hidden_layers": 4, "hidden_size": 16, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 4, "num_kv_shared_layers": 2, "intermediate_size": [12, 20, 12, 20],
           "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
           "vocab_size": 60, "vocab_size_per_layer_input": 30, "hidden_size_per_layer_input": 3, "laurel_rank": 2,
           "altup_num_inputs": 2, "sliding_window": 3}
    m = symcost.build(dict(raw))
    assert {g.name for g in m.groups} == {"swa_layers", "full_layers_ff20", "shared_swa_layers",
                                          "shared_full_layers_ff20"}
    assert m.params().total_at(m.values) == oracle.params(raw)
    model = oracle.build(raw)
    terms = m.flops(Phase(kind="prefill", attention="full", impl="reference"))
    assert terms.total_at(m.values_with(T=6, B=2)) == oracle.prefill_flops(model, 2, 6)


def test_gemma3n_class_default_equals_transformers():
    """The E4B-sized class default (35 layers, 15 KV-shared), on the meta device."""
    m = symcost.build({"model_type": "gemma3n_text"})
    assert m.params().total_at(m.values) == oracle.params({"model_type": "gemma3n_text"})


def test_longcat_serving_weights_leave_out_the_zero_expert_rows(tmp_path, capsys):
    """The parameter total is the class's (zero-expert gate/up rows included); the checkpoint, and so
    the serving memory, holds only the real experts' rows (plus the fp32 correction-bias buffers)."""
    from symcost.cli import main
    raw = _longcat(n_routed_experts=3, zero_expert_num=2, moe_topk=5)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    m = symcost.build(dict(raw))
    v = m.values
    zero_rows = m.params().flatten()["shortcut_moe/mlp/experts_gate_up_zero"]
    assert zero_rows.xreplace(v) == 2 * 2 * raw["expert_ffn_hidden_size"] * raw["hidden_size"] * v[symcost.sym.L]
    assert main(["memory", str(path), "--T", "8", "--batch", "1", "--weights-dtype", "bf16", "--json"]) == 0
    weights = json.loads(capsys.readouterr().out)["weights_bytes"]
    buffers = m.buffers().total_at(v)
    assert weights == 2 * (m.params().total_at(v) - int(zero_rows.xreplace(v))) + 4 * buffers
