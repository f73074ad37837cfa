"""Step-3.7 beyond the generic oracle suite (tests/tiny/step3p7.py): one image through the tower
against FlopCounterMode on transformers' Step3p7Model.get_image_features, the token count the
projector hands the text model, and the config forms symcost refuses (the flat, abridged form
Step3p7Config does not read; sparse-attention layers; a missing window)."""
import json
import random

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import symcost
from symcost.cli import main
from symcost.core.errors import SymcostError
from tests import oracle
from tests.tiny import step3p7 as tiny


def _tiny(seed: int) -> dict:
    return tiny.tiny(random.Random(f"step3p7-test-{seed}"), "step3p7")


@pytest.mark.parametrize("seed", range(3))
def test_image_flops_and_tokens_equal_transformers(seed):
    raw = _tiny(seed)
    m = symcost.build(json.loads(json.dumps(raw)))
    model = oracle.build(raw)
    v = raw["vision_config"]
    pixels = torch.randn(1, 3, v["image_size"], v["image_size"])
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model.model.get_image_features(pixel_values=pixels)
    assert m.vision.image_flops().total_at(m.values) == counter.get_total_flops()
    assert m.vision.image_tokens().subs(m.values) == out.pooler_output[0].shape[0]


def test_hub_padded_lists_are_trimmed_as_transformers_does():
    """layer_types / moe_layers_enum written over the decoder + its MTP layers (the Hub's form)."""
    raw = _tiny(0)
    raw["text_config"].update(num_nextn_predict_layers=2, layer_types=["full_attention", "sliding_attention"] * 3,
                              num_hidden_layers=4)
    raw["text_config"].pop("mlp_layer_types", None)
    raw["text_config"]["moe_layers_enum"] = "1,2,3,4,5"
    cfg = oracle.hf_config(raw).text_config
    m = symcost.build(json.loads(json.dumps(raw)))
    assert m.n_layers() == 4 == len(cfg.layer_types)
    assert m.params().total_at(m.values) == oracle.params(raw)


@pytest.mark.parametrize("change,field", [
    (lambda r: r.update(num_hidden_layers=45, hidden_size=4096, text_config=None), "text_config"),
    (lambda r: r["text_config"].__setitem__("layer_types", ["minimax_m3_sparse"] * r["text_config"]["num_hidden_layers"]),
     "layer_types"),
    (lambda r: r["text_config"].__setitem__("sliding_window", None), "sliding_window"),
    (lambda r: r["text_config"].__setitem__("num_attention_heads", 3), "num_key_value_heads"),
], ids=["flat", "sparse", "window", "heads"])
def test_refused_forms_name_the_field(change, field, tmp_path, capsys):
    raw = _tiny(1)
    raw["text_config"]["num_attention_groups" if "num_attention_groups" in raw["text_config"]
                       else "num_key_value_heads"] = 2
    raw["text_config"].update(num_attention_heads=2, num_sliding_attention_heads=2)
    raw["text_config"].pop("attention_other_setting", None)
    change(raw)
    with pytest.raises(SymcostError, match=field):
        symcost.build(json.loads(json.dumps(raw)))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    assert main(["params", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0]


def test_text_counts_leave_out_the_tower():
    raw = _tiny(2)
    m = symcost.build(json.loads(json.dumps(raw)))
    model = oracle.build(raw, "meta")
    text = sum(p.numel() for n, p in model.named_parameters()
               if not n.startswith(("model.vision_model.", "model.multi_modal_projector.")))
    assert m.text_params().total_at(m.values) == text < m.params().total_at(m.values)
