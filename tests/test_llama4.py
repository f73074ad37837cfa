"""Llama 4 beyond the generic oracle suite (tests/tiny/llama4.py covers params, buffers, prefill, decode
and cache under ``full`` / ``impl="reference"``): the (query, key) pairs the chunked and causal masks
keep, read from the attention weights transformers computes; the all-experts reference path against
the k-expert default; a Maverick-shaped config on the meta device; one image tile through the real
tower + projector; the config forms transformers writes; and bad input."""
import json
import random

import pytest
import sympy
import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig

import symcost
from symcost.cli import main
from symcost.components.chunked_attention import ChunkedAttention
from symcost.components.moe import MoE
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from symcost.core.notation import sym
from tests import oracle
from tests.tiny import llama4 as tiny

TEXT_CASES = [tiny.tiny(random.Random(f"llama4_text-{s}"), "llama4_text") for s in range(tiny.SEEDS)]
WRAPPER_CASES = [tiny.tiny(random.Random(f"llama4-{s}"), "llama4") for s in range(tiny.SEEDS)]


def _layer_attentions(raw):
    """The attention component of every layer, in layer order (as the adapter resolved them)."""
    adapter = symcost.load_config(dict(raw))
    kinds = list(zip(adapter.resolved_layer_types(), adapter.rope_kinds()))
    return [adapter.attention(kind, rope) for kind, rope in kinds]


# -- the pairs each mask keeps: the nonzero attention weights of the real model ---------------------------
@pytest.mark.parametrize("seed", range(3))
def test_causal_pairs_equal_the_masks_transformers_applies(seed):
    raw = TEXT_CASES[seed]
    model = oracle.build(raw)
    attns = _layer_attentions(raw)
    B, H = 2, raw["num_attention_heads"]
    for T in (3, 4, 7, 9, 12):  # inside one chunk, exactly one chunk, and several
        ids = oracle._ids(model, B, T + 1)
        with torch.no_grad():
            out = model(ids[:, :T], use_cache=True, output_attentions=True)
            step = model(ids[:, T:], cache=out.cache, use_cache=True, output_attentions=True)
        for i, a in enumerate(attns):
            vals = {sym.T: T, sym.C_att: raw["attention_chunk_size"]}
            kept = int((out.attentions[i] != 0).sum())
            assert B * H * a.pairs(Phase(kind="prefill", attention="causal")).subs(vals) == kept, (T, i)
            kept = int((step.attentions[i] != 0).sum())
            assert B * H * a.pairs(Phase(kind="decode", attention="causal")).subs(vals) == kept, (T, i)
            # `full`: the keys the decode step multiplies, what the window cache held plus the new one
            assert a.pairs(Phase(kind="decode")).subs(vals) == step.attentions[i].shape[-1], (T, i)


@pytest.mark.parametrize("raw", TEXT_CASES[:2] + WRAPPER_CASES[:2])
def test_prefill_logits_last_equals_logits_to_keep_1(raw):
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    terms = m.flops(Phase(kind="prefill", logits="last", impl="reference"))
    for T in tiny.T_VALUES:
        assert terms.total_at(m.values_with(T=T, B=2)) == oracle.prefill_flops(model, 2, T, logits_to_keep=1)


def test_chunked_pairs_closed_form():
    """Σ_{i<T} (i mod C + 1), against a direct sum, over many T and C."""
    ca = ChunkedAttention()
    prefill, decode = ca.pairs(Phase(attention="causal")), ca.pairs(Phase(kind="decode", attention="causal"))
    for C in (1, 2, 3, 5, 8):
        for T in range(1, 40):
            assert prefill.subs({sym.T: T, sym.C_att: C}) == sum(i % C + 1 for i in range(T))
            assert decode.subs({sym.T: T, sym.C_att: C}) == T % C + 1
    assert ChunkedAttention(C=None).pairs(Phase(attention="causal")) == sym.T * (sym.T + 1) / 2


def test_scale_derivative_of_chunked_pairs_is_clean_and_parses_back(capsys):
    """The derivative is that of the trend (``terms.relax_steps``: ⌊T/C⌋ read as T/C, T mod C as 0),
    not an unevaluated Subs: on average each new token meets (C_att + 1)/2 keys of its chunk."""
    code = main(["scale", "llama-4-scout-17b-16e-instruct", "--metric", "flops", "--wrt", "T", "--phase", "prefill",
                 "--attention", "causal", "--json"])
    d = symcost.parse(json.loads(capsys.readouterr().out)["derivative"])
    assert code == 0 and not d.has(sympy.Derivative, sympy.Subs)
    pairs = ChunkedAttention().pairs(Phase(attention="causal"))
    assert sympy.expand(symcost.analysis.symbolic.derivative(pairs, sym.T) - (sym.C_att + 1) / 2) == 0


@pytest.mark.parametrize("expr,equal", [
    ("4*B*D_h*H_q*(L_chunk*(Mod(T, C_att) + 1) + L_full*(T + 1)) + 4*B*D_h*(H_q + H_kv)*d*L"
     " + 2*B*(E + 3*d_moe*(k + 1))*d*L + 2*B*V*d", True),  # T mod C_att as a user writes it
    ("2*B*T", False)])  # far off: answered, not a traceback (⌊T/C_att⌋ is no polynomial generator)
def test_check_reads_mod_and_answers_floor_models(expr, equal, capsys):
    code = main(["check", "llama-4-scout-17b-16e-instruct", "--metric", "flops", "--phase", "decode",
                 "--attention", "causal", "--expr", expr, "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["equal"] is equal


# -- routed experts: reference = all E on every token, minimal = k -------------------------------------
@pytest.mark.parametrize("raw", TEXT_CASES + WRAPPER_CASES)
@pytest.mark.parametrize("kind", ["prefill", "decode"])
def test_reference_runs_all_experts_minimal_runs_k(raw, kind):
    m = symcost.build(dict(raw))
    ref = m.flops(Phase(kind=kind, impl="reference")).total
    minimal = m.flops(Phase(kind=kind)).total
    moe_layers = sum(g.count for g in m.groups if any(isinstance(c, MoE) for c in g.components))
    new = sym.T if kind == "prefill" else 1
    expected = moe_layers * 2 * sym.B * new * (sym.E - sym.k) * 3 * sym.d * sym.d_moe
    assert sympy.expand((ref - minimal - expected).xreplace(m.values)) == 0


def test_elementwise_l2_qk_norm_on_rope_layers_temperature_on_nope_layers():
    m = symcost.build("llama-4-scout-17b-16e-instruct")
    t = m.elementwise(Phase(kind="decode"))
    chunked, nope = t["chunked_moe_layers/self_attn"], t["full_nope_moe_layers/self_attn"]
    assert {"rope", "qk_l2norm"} <= set(chunked) and "temperature" not in chunked
    assert "temperature" in nope and not {"rope", "qk_l2norm"} & set(nope)
    assert nope["temperature"] == sym.L_full * sym.B * sym.H_q * sym.D_h


# -- Maverick-shaped (typed from the published sizes) on the meta device ----------------------------------
MAVERICK_TEXT = {"model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 48, "num_attention_heads": 40,
                 "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 202048, "num_local_experts": 128,
                 "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "intermediate_size": 8192,
                 "intermediate_size_mlp": 16384, "use_qk_norm": False, "attention_chunk_size": 8192}


@pytest.mark.parametrize("wrapped", [False, True])
def test_maverick_shaped_params_equal_transformers(wrapped):
    raw = MAVERICK_TEXT if not wrapped else {
        "model_type": "llama4", "text_config": MAVERICK_TEXT,
        "vision_config": {"hidden_size": 1408, "intermediate_size": 5632, "num_hidden_layers": 34,
                          "num_attention_heads": 16, "image_size": 336, "patch_size": 14,
                          "projector_input_dim": 4096, "projector_output_dim": 4096, "vision_output_dim": 4096}}
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)
    counts = {g.name: g.count for g in m.groups}
    assert {k: counts[k] for k in ("chunked_dense_layers", "chunked_moe_layers", "full_nope_moe_layers")} == \
        {"chunked_dense_layers": 24, "chunked_moe_layers": 12, "full_nope_moe_layers": 12}
    if wrapped:  # 336² px, 14-px patches: 576 patches, pixel shuffle 0.5 -> 144 tokens per tile
        assert m.vision.image_tokens().subs(m.values) == 144


# -- one image tile through the real tower, adapter and projector ---------------------------------------
@pytest.mark.parametrize("raw", [r for r in WRAPPER_CASES if symcost.build(dict(r)).vision is not None])
def test_image_flops_and_tokens(raw):
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    v = raw["vision_config"]
    pixels = torch.randn(1, v["num_channels"], v["image_size"], v["image_size"])
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        feats = model.get_image_features(pixel_values=pixels).last_hidden_state
        rows = model.multi_modal_projector(feats.view(-1, feats.size(-1)))  # as the forward does
    assert m.vision.image_flops().total_at(m.values) == counter.get_total_flops()
    assert m.vision.image_tokens().subs(m.values) == rows.shape[0]


@pytest.mark.parametrize("raw", [r for r in WRAPPER_CASES if symcost.build(dict(r)).vision is None])
def test_towers_without_images_fail_in_transformers_too(raw):
    """The note's claim: such a tower is built (its weights counted) but cannot embed an image."""
    model = oracle.build(raw)
    v = raw["vision_config"]
    with pytest.raises(RuntimeError), torch.no_grad():
        feats = model.get_image_features(pixel_values=torch.randn(1, v["num_channels"], v["image_size"],
                                                                  v["image_size"])).last_hidden_state
        model.multi_modal_projector(feats.view(-1, feats.size(-1)))


def test_bundled_scout_tower_cannot_embed_an_image(capsys):
    """The file has no vision_config: transformers' defaults (hidden 768, fc1 input 5632) don't chain."""
    m = symcost.build("llama-4-scout-17b-16e-instruct")
    assert m.vision is None and any("--images unavailable" in n for n in m.notes)
    assert main(["flops", "llama-4-scout-17b-16e-instruct", "--phase", "prefill", "--T", "8", "--images", "1"]) == 2


# -- every form transformers writes ------------------------------------------------------------------------
FORMS = [("llama4_text", r) for r in TEXT_CASES[:3]] + [("llama4", r) for r in WRAPPER_CASES[:3]] + [
    ("llama4_text", {"model_type": "llama4_text"}), ("llama4", {"model_type": "llama4"})]


@pytest.mark.parametrize("mt,raw", FORMS)
def test_config_forms_transformers_writes(mt, raw, tmp_path):
    """``AutoConfig.for_model(mt, **raw).to_dict()`` and ``save_pretrained``'s config.json (rope_parameters,
    dtype, layer_types / no_rope_layers / moe_layers written out, nested model_type) give the same count."""
    kwargs = {k: v for k, v in raw.items() if k != "model_type"}
    cfg = AutoConfig.for_model(mt, **kwargs)
    expected = oracle.params(raw)
    m = symcost.build(cfg.to_dict())
    assert m.params().total_at(m.values) == expected
    cfg.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    text = saved.get("text_config", saved)
    assert "layer_types" in text and "no_rope_layers" in text and "rope_parameters" in text
    m = symcost.build(str(tmp_path))
    assert m.params().total_at(m.values) == expected == oracle.params(saved)


def test_bundled_scout_in_the_wrapper_form_round_trips(tmp_path):
    _, raw = symcost.architectures.loader.read_json("llama-4-scout-17b-16e-instruct")
    cfg = AutoConfig.for_model("llama4", **{k: v for k, v in raw.items() if k != "model_type"})
    cfg.save_pretrained(tmp_path)
    m, bundled = symcost.build(str(tmp_path)), symcost.build("llama-4-scout-17b-16e-instruct")
    assert m.params().total_at(m.values) == bundled.params().total_at(bundled.values) == 108_225_039_360


# -- features switched off are not validated; bad input names its field ----------------------------------
def test_switched_off_fields_are_not_validated():
    base = {**TEXT_CASES[0], "layer_types": ["full_attention"] * TEXT_CASES[0]["num_hidden_layers"]}
    for raw in ({**base, "moe_layers": [], "num_experts_per_tok": 9},  # no MoE layer: k unused
                {**base, "moe_layers": [0], "interleave_moe_layer_step": 0},  # moe_layers overrides the step
                {**base, "no_rope_layers": [1] * base["num_hidden_layers"] + [0]},  # longer, layer_types given
                {**base, "attention_chunk_size": None}):  # no chunked layer
        m = symcost.build(dict(raw))
        assert m.params().total_at(m.values) == oracle.params(raw)


BAD = [
    ({"num_experts_per_tok": 5, "num_local_experts": 4}, "num_experts_per_tok"),
    ({"no_rope_layers": [1, 0]}, "no_rope_layers"),
    ({"no_rope_layers": [1, 0, 1, 1, 0]}, "no_rope_layers"),
    ({"no_rope_layers": [1, 2, 1, 1]}, "no_rope_layers"),
    ({"layer_types": ["full_attention"] * 3}, "layer_types"),
    ({"layer_types": ["full_attention"] * 3 + ["sliding_attention"]}, "layer_types"),
    ({"interleave_moe_layer_step": 0}, "interleave_moe_layer_step"),
    ({"no_rope_layer_interval": 0}, "no_rope_layer_interval"),
    ({"layer_types": ["chunked_attention"] * 4, "attention_chunk_size": None}, "attention_chunk_size"),
    ({"num_key_value_heads": 3}, "num_key_value_heads"),
]


@pytest.mark.parametrize("wrapped", [False, True])
@pytest.mark.parametrize("bad,field", BAD)
def test_bad_input_names_the_field(bad, field, wrapped, tmp_path, capsys):
    text = {"model_type": "llama4_text", "hidden_size": 16, "num_hidden_layers": 4, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 4, "vocab_size": 64, **bad}
    raw = text if not wrapped else {"model_type": "llama4", "text_config": text}
    name = f"text_config.{field}" if wrapped else field
    with pytest.raises(SymcostError, match=rf"field '[a-z.]*{name}'"):
        symcost.build(dict(raw))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    assert main(["params", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and name in err


@pytest.mark.parametrize("bad,field", [({"num_attention_heads": 5}, "vision_config.num_attention_heads"),
                                       ({"image_size": 10, "patch_size": 14}, "vision_config.image_size"),
                                       ({"image_size": [336, 336]}, "vision_config.image_size")])
def test_bad_vision_config_names_the_field(bad, field):
    with pytest.raises(SymcostError, match=field.replace(".", r"\.")):
        symcost.build({"model_type": "llama4", "vision_config": bad})
