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


#: tiny sizes in the Hub's spelling of stepfun-ai/Step-3.7-Flash's config.json (field names as public
#: serving tests write it: vision width/layers/heads, attention_other_setting, moe_layers_enum,
#: moe_num_experts, num_attention_groups, the processor's token counts); not a published config
HUB_SPELLING = {'architectures': ['Step3p7ForConditionalGeneration'],
 'model_type': 'step3p7',
 'image_token_id': 128001,
 'image_token_len': 169,
 'patch_token_len': 81,
 'understand_projector_stride': 2,
 'projector_bias': False,
 'vision_config': {'model_type': 'perception_encoder',
                   'image_size': 728,
                   'patch_size': 14,
                   'width': 32,
                   'layers': 2,
                   'heads': 2,
                   'mlp_ratio': 2.0,
                   'use_cls_token': False,
                   'ls_init_value': 0.1,
                   'use_ln_post': False,
                   'hidden_act': 'quick_gelu',
                   'output_dim': None,
                   'pool_type': 'none'},
 'text_config': {'architectures': ['Step3p5ForCausalLM'],
                 'model_type': 'step3p5',
                 'hidden_size': 256,
                 'intermediate_size': 256,
                 'num_hidden_layers': 4,
                 'max_position_embeddings': 4096,
                 'vocab_size': 128896,
                 'torch_dtype': 'bfloat16',
                 'moe_layers_enum': '1,2,3',
                 'num_attention_heads': 4,
                 'num_attention_groups': 2,
                 'head_dim': 64,
                 'use_moe': True,
                 'moe_num_experts': 8,
                 'moe_top_k': 2,
                 'moe_intermediate_size': 128,
                 'share_expert_dim': 64,
                 'norm_expert_weight': True,
                 'moe_router_activation': 'sigmoid',
                 'moe_router_scaling_factor': 2.5,
                 'att_impl_type': 'GQA',
                 'num_nextn_predict_layers': 0,
                 'rope_theta': [5000000.0, 10000.0, 5000000.0, 10000.0],
                 'rope_scaling': {'rope_type': 'llama3',
                                  'factor': 2.0,
                                  'original_max_position_embeddings': 2048,
                                  'low_freq_factor': 1.0,
                                  'high_freq_factor': 32.0},
                 'yarn_only_types': ['full_attention'],
                 'layer_types': ['full_attention', 'sliding_attention', 'full_attention', 'sliding_attention'],
                 'sliding_window': 128,
                 'attention_other_setting': {'attention_type': 'sliding_attention',
                                             'num_attention_heads': 4,
                                             'num_attention_groups': 2,
                                             'head_dim': 64},
                 'use_head_wise_attn_gate': True,
                 'use_qk_norm': True,
                 'need_fp32_gate': True,
                 'use_moe_router_bias': True,
                 'partial_rotary_factors': [0.5, 1.0, 0.5, 1.0],
                 'swiglu_limits': [0, 0, 0, 7],
                 'swiglu_limits_shared': [0, 0, 0, 16],
                 'max_seq_len': 4096}}


def test_hub_spelling_equals_transformers_without_warnings(tmp_path, capsys):
    raw = json.loads(json.dumps(HUB_SPELLING))
    m = symcost.build(json.loads(json.dumps(raw)))
    assert m.params().total_at(m.values) == oracle.params(raw)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    assert main(["params", str(path)]) == 0
    assert "warning" not in capsys.readouterr().err
