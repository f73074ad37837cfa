"""MiMo-V2-Flash beyond the generic oracle suite: the hub window (sliding_window_size + 1) against
the cache transformers keeps, the config forms transformers writes, and bad input."""
import json
import random

import pytest

import symcost
from symcost.cli import main
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from tests import oracle
from tests.tiny import mimo_v2_flash as tiny_mimo

BUNDLED = json.loads(symcost.architectures.loader.BUNDLED.joinpath("mimo-v2-flash.json").read_text())


def _tiny(seed=0, **change):
    raw = tiny_mimo.tiny(random.Random(f"mimo-test-{seed}"), "mimo_v2_flash")
    raw.update(change)
    return raw


def test_hub_window_is_sliding_window_size_plus_one():
    """sliding_window_size=128 (the hub file): W = 129, the cache keeps 128 tokens per sliding layer,
    and decode at T = 200 > W attends to the 128 kept keys + the new one — as transformers runs it."""
    raw = _tiny(1, num_hidden_layers=3, sliding_window=128, sliding_window_size=128,
                layer_types=["full_attention", "sliding_attention", "sliding_attention"],
                mlp_layer_types=["dense", "sparse", "sparse"])
    for k in ("hybrid_layer_pattern", "moe_layer_freq"):
        raw.pop(k, None)
    m = symcost.build(dict(raw))
    assert m.values[symcost.sym.W] == 129
    model = oracle.build(raw)
    vals = m.values_with(T=200, B=1)
    assert m.cache().total_at(vals) == oracle.cache_elements(model, 1, 200)
    decode = m.flops(Phase(kind="decode", attention="full", logits="all", impl="reference"))
    assert decode.total_at(vals) == oracle.decode_flops(model, 1, 200)


def test_bundled_window_and_heads():
    m = symcost.build("mimo-v2-flash")
    v = m.values
    assert v[symcost.sym.W] == BUNDLED["sliding_window_size"] + 1
    assert v[symcost.sym.D_h] == BUNDLED["head_dim"] and v[symcost.sym.D_v] == BUNDLED["v_head_dim"]
    swa = next(g for g in m.groups if g.name == "swa_moe_layers")
    attn = next(c for c in swa.components if c.key == "self_attn")
    assert attn.sinks and (attn.H_kv * 1).subs(v) == BUNDLED["swa_num_key_value_heads"]
    kinds = [int(g.name.startswith("swa")) for g in m.groups for _ in range(int(g.count.subs(v)))]
    assert sorted(kinds) == sorted(BUNDLED["hybrid_layer_pattern"])


SERIALISABLE = [("bundled", BUNDLED)] + [(f"tiny-{s}", _tiny(s)) for s in range(4)]


@pytest.mark.parametrize("name,raw", SERIALISABLE, ids=[n for n, _ in SERIALISABLE])
def test_transformers_serialised_config_is_accepted(name, raw, tmp_path):
    """What MiMoV2FlashConfig(**raw).to_dict() and save_pretrained write builds the same model."""
    want = oracle.params(raw)
    as_dict, saved = oracle.serialised(raw, tmp_path)
    for form in (as_dict, saved):
        m = symcost.build(dict(form))
        assert m.params().total_at(m.values) == want
    m = symcost.build(str(tmp_path))
    assert m.params().total_at(m.values) == want


L = BUNDLED["num_hidden_layers"]
BAD = [
    ({"layer_types": ["full_attention"] * (L - 1)}, "layer_types"),
    ({"layer_types": ["full_attention"] * (L - 1) + ["chunked_attention"]}, "layer_types"),
    ({"mlp_layer_types": ["dense"] * (L + 1)}, "mlp_layer_types"),
    ({"mlp_layer_types": ["dense"] * (L - 1) + ["moe"]}, "mlp_layer_types"),
    ({"hybrid_layer_pattern": BUNDLED["hybrid_layer_pattern"][:-1]}, "hybrid_layer_pattern"),
    ({"hybrid_layer_pattern": [2] * L}, "hybrid_layer_pattern"),
    ({"hybrid_layer_pattern": [1] * L}, "hybrid_layer_pattern"),  # transformers would build its default
    ({"moe_layer_freq": [1] * L}, "moe_layer_freq"),
    ({"moe_layer_freq": [0, 1]}, "moe_layer_freq"),
    ({"num_experts_per_tok": 257}, "num_experts_per_tok"),
    ({"n_routed_experts": 4, "num_experts_per_tok": 5}, "num_experts_per_tok"),
    ({"n_group": 3}, "n_group"),
    ({"swa_num_key_value_heads": 16}, "swa_num_key_value_heads"),
    ({"swa_v_head_dim": 192}, "swa_v_head_dim"),
    ({"add_full_attention_sink_bias": True}, "add_full_attention_sink_bias"),
    ({"add_swa_attention_sink_bias": False}, "add_swa_attention_sink_bias"),
    ({"n_shared_experts": 1}, "n_shared_experts"),
    ({"num_key_value_heads": 64}, "num_key_value_heads"),  # 2·64 KV heads on sliding layers > 64 query heads
    ({"sliding_window": 0, "sliding_window_size": None}, "sliding_window"),
]


@pytest.mark.parametrize("change,field", BAD, ids=[f"{f}-{i}" for i, (_, f) in enumerate(BAD)])
def test_bad_input_names_the_field(change, field, tmp_path, capsys):
    raw = {**BUNDLED, **change}
    with pytest.raises(SymcostError, match=f"field '{field}'"):
        symcost.build(dict(raw))
    p = tmp_path / "config.json"
    p.write_text(json.dumps(raw))
    code = main(["params", str(p)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and f"'{field}'" in err and err.count("\n") == 1


@pytest.mark.parametrize("window", [0, None])
def test_window_switched_off_is_not_validated(window):
    """All layers full: sliding_window 0 / null is not validated, and the class agrees on the count
    (transformers' strict config takes 0 but refuses null, so null is compared with the 0 form)."""
    raw = _tiny(2, sliding_window=window, layer_types=None)
    raw["layer_types"] = ["full_attention"] * raw["num_hidden_layers"]
    for k in ("hybrid_layer_pattern", "sliding_window_size", "swa_num_key_value_heads"):
        raw.pop(k, None)
    m = symcost.build(dict(raw))
    assert symcost.sym.W not in m.values
    assert m.params().total_at(m.values) == oracle.params({**raw, "sliding_window": 0})


def test_value_head_dim_reduces_to_plain_attention():
    """Attention with D_v = D_h is the plain component, term by term (params, both phases, cache)."""
    import sympy

    from symcost.components.attention import Attention
    sym = symcost.sym
    for W in (None, sym.W):
        a, b = Attention(W=W, sinks=True, D_v=sym.D_h), Attention(W=W, sinks=True)
        pairs = [(a.params(), b.params()), (a.cache(), b.cache())]
        pairs += [(a.flops(Phase(kind=k, attention=c)), b.flops(Phase(kind=k, attention=c)))
                  for k in ("prefill", "decode") for c in ("full", "causal")]
        for x, y in pairs:
            assert sympy.expand(x.total - y.total) == 0
    # and D_v moves exactly v_proj, o_proj, PV and the value cache
    a = Attention(D_v=sym.D_v)
    ph = Phase(kind="prefill", attention="full")
    d, H_q, H_kv, D_h, D_v = sym.d, sym.H_q, sym.H_kv, sym.D_h, sym.D_v
    q, k, v, o = d * H_q * D_h, d * H_kv * D_h, d * H_kv * D_v, H_q * D_v * d
    assert sympy.expand(a.params().total - (q + k + v + o)) == 0
    assert a.flops(ph)["values"] == 2 * sym.B * sym.H_q * sym.D_v * sym.T ** 2
    assert a.cache()["values"] == sym.B * sym.H_kv * sym.D_v * sym.T
