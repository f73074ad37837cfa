"""Gemma 4 beyond the generic oracle suite: the vision tower per image, prefill with the last logits only
(KV-shared layers then run on the last position), the config forms transformers writes, the class
defaults, and bad input."""
import json
import random

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import symcost
from symcost.cli import main
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from tests import oracle
from tests.tiny import gemma4 as tiny


def _cases(model_type, n=4):
    return [tiny.tiny(random.Random(f"test-gemma4-{model_type}-{i}"), model_type) for i in range(n)]


CASES = [(mt, i, raw) for mt in tiny.MODEL_TYPES for i, raw in enumerate(_cases(mt))]
IDS = [f"{mt}-{i}" for mt, i, _ in CASES]


def _flops(fn):
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = fn()
    return counter.get_total_flops(), out


# -- prefill keeping only the last logits: KV-shared layers run on the last position ------------------
@pytest.mark.parametrize("mt,i,raw", CASES, ids=IDS)
def test_prefill_logits_last(mt, i, raw):
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    terms = m.flops(Phase(kind="prefill", attention="full", logits="last", impl="reference"))
    for T in (5, 11):
        for B in (1, 2):
            ids = oracle._ids(model, B, T)
            measured, _ = _flops(lambda: model(ids, use_cache=False, logits_to_keep=1))
            assert terms.total_at(m.values_with(T=T, B=B)) == measured, (T, B)


def test_logits_last_covers_kv_shared_layers():
    shared = [raw for mt, _, raw in CASES if (raw.get("text_config") or raw)["num_kv_shared_layers"]]
    assert len(shared) >= 2


# -- the vision tower, one image --------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_vision_image_flops_and_tokens(seed):
    rng = random.Random(f"gemma4-vision-{seed}")
    raw = {"model_type": "gemma4", "text_config": tiny._text(rng, 0), "vision_config": tiny.vision(rng)}
    raw["vision_config"]["pooling_kernel_size"] = [2, 3, 2, 3][seed]
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    v = raw["vision_config"]
    k, n_img, p = v["pooling_kernel_size"], v["default_output_length"], v["patch_size"]
    rows = {2: 1, 4: 2, 6: 2}[n_img]  # a pooled grid of rows × cols soft tokens: the whole budget
    h, w = rows * k, n_img // rows * k
    pos = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(h), indexing="xy"), -1).reshape(1, h * w, 2)
    pixels = torch.rand(1, h * w, 3 * p * p)
    measured, out = _flops(lambda: model.model.get_image_features(pixels, pos))
    assert m.vision.image_flops().total_at(m.values) == measured
    assert m.vision.image_tokens().subs(m.values) == out.pooler_output[0].shape[0] == n_img


def test_bundled_image_tokens_and_cli_images(capsys):
    m = symcost.build("gemma-4-26b-a4b")
    assert m.vision.image_tokens().subs(m.values) == 280
    assert m.values[symcost.core.notation.sym.N_pat] == 280 * 9
    code = main(["flops", "gemma-4-26b-a4b", "--phase", "prefill", "--T", "16", "--images", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["total"] > 0


# -- the forms transformers writes ------------------------------------------------------------------
@pytest.mark.parametrize("mt,i,raw", CASES, ids=IDS)
def test_to_dict_and_save_pretrained_round_trip(mt, i, raw, tmp_path):
    expected = oracle.params(raw)
    cfg = oracle.hf_config(raw)
    as_dict = cfg.to_dict()
    m = symcost.build(json.loads(json.dumps(as_dict)))
    assert m.params().total_at(m.values) == expected
    cfg.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert "global_head_dim" not in (saved.get("text_config") or saved)  # it is written as per_layer_config
    m = symcost.build(str(tmp_path))
    assert m.params().total_at(m.values) == expected


@pytest.mark.parametrize("raw", [
    {"model_type": "gemma4_text"},
    {"model_type": "gemma4"},
    {"model_type": "gemma4", "vision_config": {}, "audio_config": {}},
    {"model_type": "gemma4_text", "num_hidden_layers": 8, "attention_k_eq_v": True,
     "num_global_key_value_heads": 2, "enable_moe_block": True, "num_experts": 8, "top_k_experts": 2,
     "moe_intermediate_size": 64, "num_kv_shared_layers": 2, "hidden_size_per_layer_input": 0},
], ids=["text-defaults", "wrapper-defaults", "wrapper-towers-defaults", "moe-shared-k_eq_v"])
def test_class_defaults(raw):
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)


# E2B-shaped (35 layers, 20 KV-shared, per-layer inputs, double-wide FFN, clipped vision and audio towers):
# the text_config/vision_config/audio_config of a Gemma 4 E2B parser fixture in a public repository, used
# here only as a shape; the count is transformers' own, on the meta device.
E2B_SHAPED = {
    "model_type": "gemma4", "tie_word_embeddings": True,
    "text_config": {"hidden_size": 1536, "num_hidden_layers": 35, "num_attention_heads": 8,
                    "num_key_value_heads": 1,
                    "head_dim": 256, "global_head_dim": 512, "num_global_key_value_heads": None,
                    "attention_k_eq_v": False, "sliding_window": 512, "vocab_size": 262144,
                    "vocab_size_per_layer_input": 262144, "hidden_size_per_layer_input": 256,
                    "num_kv_shared_layers": 20, "use_double_wide_mlp": True, "intermediate_size": 6144,
                    "final_logit_softcapping": 30.0,
                    "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 7},
    "vision_config": {"model_type": "gemma4_vision", "hidden_size": 768, "intermediate_size": 3072,
                      "num_hidden_layers": 16, "num_attention_heads": 12, "num_key_value_heads": 12,
                      "head_dim": 64,
                      "patch_size": 16, "pooling_kernel_size": 3, "position_embedding_size": 10240,
                      "use_clipped_linears": True, "standardize": False},
    "audio_config": {"model_type": "gemma4_audio", "hidden_size": 1024, "num_hidden_layers": 12,
                     "num_attention_heads": 8, "subsampling_conv_channels": [128, 32], "conv_kernel_size": 5,
                     "output_proj_dims": 1536, "use_clipped_linears": True},
}


def test_e2b_shaped_params_and_buffers():
    m = symcost.build(dict(E2B_SHAPED))
    assert m.params().total_at(m.values) == oracle.params(E2B_SHAPED)
    hf = oracle.buffers(oracle.build(E2B_SHAPED, "meta"))
    mine = m.buffers().at(m.values)
    for leaf in ("layer_scalar", "input_min", "output_max"):
        assert sum(n for p, n in mine.items() if p.endswith(leaf)) == sum(
            n for k, n in hf.items() if k.endswith(leaf))
    assert [g.name for g in m.groups][-2:] == ["shared_swa_layers", "shared_full_layers"]


def test_per_layer_config_one_shape_per_type_exact():
    """Sliding layers overridden too (head dim 8, 4 KV heads) and full layers (12, 1): all measured."""
    raw = {"model_type": "gemma4_text", "hidden_size": 16, "vocab_size": 50, "num_hidden_layers": 5,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 4, "sliding_window": 3,
           "hidden_size_per_layer_input": 4, "vocab_size_per_layer_input": 50, "num_kv_shared_layers": 2,
           "intermediate_size": 20,
           "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                           "full_attention"],
           "per_layer_config": {**{str(i): {"head_dim": 8, "num_key_value_heads": 4} for i in (0, 2, 3)},
                                **{str(i): {"head_dim": 12, "num_key_value_heads": 1} for i in (1, 4)}}}
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)
    model = oracle.build(raw)
    prefill = m.flops(Phase(kind="prefill", attention="full", logits="all", impl="reference"))
    decode = m.flops(Phase(kind="decode", attention="full", logits="all", impl="reference"))
    for T in (5, 11):
        vals = m.values_with(T=T, B=2)
        assert prefill.total_at(vals) == oracle.prefill_flops(model, 2, T)
        assert decode.total_at(vals) == oracle.decode_flops(model, 2, T)
        assert m.cache().total_at(vals) == oracle.cache_elements(model, 2, T)


def test_layer_types_ending_sliding_forced_full():
    raw = {"model_type": "gemma4_text", "num_hidden_layers": 3, "hidden_size": 16, "vocab_size": 50,
           "layer_types": ["full_attention", "sliding_attention", "sliding_attention"]}
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)
    assert any("forces the last layer" in n for n in m.notes)


# -- bad input: one line naming the field, exit 2 ---------------------------------------------------
BASE = {"model_type": "gemma4_text", "num_hidden_layers": 4, "hidden_size": 16, "vocab_size": 50}


@pytest.mark.parametrize("change,field", [
    ({"layer_types": ["sliding_attention", "full_attention"]}, "layer_types"),
    ({"layer_types": ["sliding_attention", "chunked_attention", "sliding_attention", "full_attention"]},
     "layer_types"),
    ({"enable_moe_block": True, "num_experts": 4, "top_k_experts": 5, "moe_intermediate_size": 8},
     "top_k_experts"),
    ({"enable_moe_block": True, "top_k_experts": 2, "moe_intermediate_size": 8}, "num_experts"),
    ({"num_kv_shared_layers": 5}, "num_kv_shared_layers"),
    ({"num_kv_shared_layers": 4}, "num_kv_shared_layers"),
    ({"num_kv_shared_layers": 1}, "num_kv_shared_layers"),  # the default pattern's only full layer is the last
    ({"per_layer_config": {"7": {"head_dim": 8}}}, "per_layer_config"),
    ({"per_layer_config": {"3": {"intermediate_size": 8}}}, "per_layer_config"),
    ({"per_layer_config": {"0": {"head_dim": 8}}}, "per_layer_config"),  # sliding layers 0-2 differ
    ({"use_bidirectional_attention": "all"}, "use_bidirectional_attention"),
])
def test_bad_input_names_the_field(change, field, tmp_path, capsys):
    raw = {**BASE, **change}
    with pytest.raises(SymcostError, match=f"field '{field}'"):
        symcost.build(dict(raw))
    wrapped = {"model_type": "gemma4", "text_config": {k: v for k, v in raw.items() if k != "model_type"}}
    with pytest.raises(SymcostError, match=f"field 'text_config.{field}'"):
        symcost.build(wrapped)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    code = main(["params", str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and field in err


def test_moe_fields_not_validated_when_moe_is_off():
    raw = {**BASE, "enable_moe_block": False, "num_experts": 2, "top_k_experts": 8}
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)
