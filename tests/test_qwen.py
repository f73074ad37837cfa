"""Qwen3.5 and Qwen3-VL beyond the generic oracle suite: the vision tower per image (FLOPs exact against
FlopCounterMode on the real tower + mergers, tokens equal to the merged rows), the config forms
transformers itself writes (``to_dict()`` and ``save_pretrained``), and bad input naming its field."""
import json
import random

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig

import symcost
from symcost.cli import main
from symcost.core.errors import SymcostError
from tests import oracle
from tests.tiny import qwen3_5 as tiny35
from tests.tiny import qwen3_vl as tinyvl

WRAPPERS = ("qwen3_5", "qwen3_5_moe", "qwen3_vl", "qwen3_vl_moe")
ALL_TYPES = tiny35.MODEL_TYPES + tinyvl.MODEL_TYPES


def _tiny(model_type: str, seed) -> dict:
    mod = tiny35 if model_type in tiny35.MODEL_TYPES else tinyvl
    return mod.tiny(random.Random(f"test-qwen-{model_type}-{seed}"), model_type)


# -- the vision tower, per image --------------------------------------------------------------------
@pytest.mark.parametrize("model_type", WRAPPERS)
@pytest.mark.parametrize("seed", range(2))
def test_vision_image_flops_and_tokens(model_type, seed):
    raw = _tiny(model_type, seed)
    if model_type.startswith("qwen3_vl"):  # at least one deepstack merger runs
        raw["vision_config"]["deepstack_visual_indexes"] = [raw["vision_config"]["depth"] - 1]
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    v = raw["vision_config"]
    side = m.values[symcost.core.notation.sym.N_pat] ** 0.5
    side = int(side)
    assert side * side == m.values[symcost.core.notation.sym.N_pat] and side % v["spatial_merge_size"] == 0
    pixels = torch.randn(side * side, v["in_channels"] * v["temporal_patch_size"] * v["patch_size"] ** 2)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model.model.get_image_features(pixel_values=pixels, image_grid_thw=torch.tensor([[1, side, side]]))
    assert m.vision.image_flops().total_at(m.values) == counter.get_total_flops()
    assert m.vision.image_tokens().subs(m.values) == out.pooler_output[0].shape[0] == side * side // 4
    if model_type.startswith("qwen3_vl"):
        assert len(out.deepstack_features) == 1


def test_bundled_vision():
    """The published configs: 48×48 learned grid of 16-px patches, 2×2 merge -> 576 tokens per image;
    Qwen3-VL has three deepstack mergers, Qwen3.5 none."""
    for name, n_ds in (("qwen3.5-27b", 0), ("qwen3.5-35b-a3b", 0), ("qwen3-vl-8b-instruct", 3),
                       ("qwen3-vl-30b-a3b-instruct", 3)):
        m = symcost.build(name)
        assert m.vision.image_tokens().subs(m.values) == 576, name
        names = m.params().flatten()
        assert any(k.startswith("visual/deepstack") for k in names) == bool(n_ds), name
        if n_ds:
            assert m.values[symcost.core.notation.sym.n_ds] == n_ds


def test_cli_images(capsys):
    code = main(["flops", "qwen3.5-27b", "--phase", "prefill", "--T", "100", "--images", "2", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["vision_tokens"] == 2 * 576 and data["T"] == 100 + 1152
    m = symcost.build("qwen3.5-27b")
    assert data["breakdown"]["vision"] == 2 * m.vision.image_flops().total_at(m.values)


# -- the config forms transformers writes -----------------------------------------------------------
def _serialised(raw: dict) -> dict:
    cfg = oracle.hf_config(raw)
    return cfg.to_dict()


@pytest.mark.parametrize("model_type", ALL_TYPES)
@pytest.mark.parametrize("seed", range(2))
def test_to_dict_round_trip(model_type, seed):
    raw = _tiny(model_type, seed)
    want = oracle.params(raw)
    d = _serialised(raw)
    assert d["model_type"] == model_type
    m = symcost.build(json.loads(json.dumps(d)))
    assert m.params().total_at(m.values) == want


@pytest.mark.parametrize("model_type", ALL_TYPES)
def test_save_pretrained_round_trip(model_type, tmp_path):
    raw = _tiny(model_type, "save")
    want = oracle.params(raw)
    oracle.hf_config(raw).save_pretrained(tmp_path)
    m = symcost.build(str(tmp_path / "config.json"))
    assert m.params().total_at(m.values) == want
    assert symcost.build(str(tmp_path)).params().total_at(m.values) == want  # a directory holding one


@pytest.mark.parametrize("model_type", ALL_TYPES)
def test_transformers_defaults(model_type):
    """The config class with no arguments (every field its default) counts as the class builds it."""
    d = AutoConfig.for_model(model_type).to_dict()
    m = symcost.build({"model_type": model_type})
    assert m.params().total_at(m.values) == symcost.build(d).params().total_at(m.values) == oracle.params(d)


# -- bad input --------------------------------------------------------------------------------------
def _text(raw: dict) -> tuple[dict, str]:
    """The dict holding the text fields and the prefix errors name them with."""
    return (raw["text_config"], "text_config.") if "text_config" in raw else (raw, "")


def _bad(raw: dict, field: str, capsys, tmp_path):
    with pytest.raises(SymcostError, match=field.replace(".", r"\.")):
        symcost.build(dict(raw))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    code = main(["params", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and field in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("model_type", tiny35.MODEL_TYPES)
def test_bad_layer_types(model_type, capsys, tmp_path):
    raw = _tiny(model_type, "bad")
    text, prefix = _text(raw)
    L = text["num_hidden_layers"]
    text.pop("full_attention_interval", None)
    text["layer_types"] = ["linear_attention"] * (L - 1) + ["full_attention"] * 2  # one too many
    _bad(raw, prefix + "layer_types", capsys, tmp_path)
    text["layer_types"] = ["linear_attention"] * (L - 1) + ["sliding_attention"]
    _bad(raw, prefix + "layer_types", capsys, tmp_path)


@pytest.mark.parametrize("model_type", ("qwen3_5_moe", "qwen3_5_moe_text", "qwen3_vl_moe"))
def test_bad_experts_per_token(model_type, capsys, tmp_path):
    raw = _tiny(model_type, "bad")
    text, prefix = _text(raw)
    text.pop("num_local_experts", None)
    text["num_experts"], text["num_experts_per_tok"] = 4, 5
    text.pop("mlp_only_layers", None)
    text["decoder_sparse_step"] = 1
    _bad(raw, prefix + "num_experts_per_tok", capsys, tmp_path)


def test_bad_vision_heads(capsys, tmp_path):
    raw = _tiny("qwen3_vl", "bad")
    raw["vision_config"]["num_heads"] = 3
    _bad(raw, "vision_config.num_heads", capsys, tmp_path)


def test_qwen3_5_moe_ignores_dense_fields():
    """Qwen3_5MoeTextConfig drops mlp_only_layers / decoder_sparse_step: every layer is MoE."""
    raw = _tiny("qwen3_5_moe_text", 0)
    base = symcost.build(dict(raw)).params()
    L = raw["num_hidden_layers"]
    odd = {**raw, "mlp_only_layers": list(range(L)), "decoder_sparse_step": 2, "intermediate_size": 999}
    m = symcost.build(odd)
    assert m.params().total_at(m.values) == base.total_at(m.values) == oracle.params(odd)


@pytest.mark.parametrize("model_type", WRAPPERS)
@pytest.mark.parametrize("top,inner", [(True, False), (False, True), (True, True)])
def test_wrapper_tying_is_the_top_level_flag(model_type, top, inner):
    """The ConditionalGeneration class ties its head by its own tie_word_embeddings, not text_config's."""
    raw = _tiny(model_type, "tie")
    raw["tie_word_embeddings"], raw["text_config"]["tie_word_embeddings"] = top, inner
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)
    assert ("lm_head" in m.params().at(m.values)) != top
