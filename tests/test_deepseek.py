"""DeepSeek family checks beyond the generic oracle suite: MTP extras, Kimi-K2.5's text part,
transformers' buffers, and config errors that name their field."""
import random

import pytest
import torch
from transformers.modeling_layers import MtpModel

import symcost
from symcost.architectures import loader
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from tests import oracle
from tests.tiny import deepseek


@pytest.mark.parametrize("seed", range(3))
def test_mtp_extras_equal_transformers_mtp_layers(seed):
    raw = deepseek.tiny(random.Random(f"mtp-{seed}"), "deepseek_v3")
    raw["num_nextn_predict_layers"] = 2
    main = oracle.build(raw, "meta")
    with torch.device("meta"):
        mtp = MtpModel(main, 2)  # embedding and head shared with the main model
    m = symcost.build(dict(raw))
    assert m.extras.total_at(m.values) == sum(p.numel() for p in mtp.layers.parameters())


def test_bundled_totals():
    v3, v32 = symcost.build("deepseek-v3"), symcost.build("deepseek-v3.2")
    assert v3.params().total_at(v3.values) == 671_026_404_352
    assert v3.buffers().total_at(v3.values) == 58 * 256
    assert v32.params().total_at(v32.values) == 671_877_929_216


def test_deepseek_v3_buffers_in_transformers():
    """14,912 buffer elements: 58·256 e_score_correction_bias (checkpoint) + 64 RoPE inv_freq (not)."""
    _, raw = loader.read_json("deepseek-v3")
    buf = oracle.buffers(oracle.build(raw, "meta"))
    assert sum(buf.values()) == 14_912
    assert sum(n for k, n in buf.items() if k.endswith("e_score_correction_bias")) == 58 * 256


def test_kimi_k25_text_part_equals_deepseek_v3_from_text_config():
    _, raw = loader.read_json("kimi-k2.5")
    text = dict(raw["text_config"], tie_word_embeddings=raw["tie_word_embeddings"])
    whole, alone = symcost.build("kimi-k2.5"), symcost.build(dict(text))
    n_text = alone.params().total_at(alone.values)
    assert n_text == oracle.params(text) == 1_026_408_209_408
    assert whole.params().total_at(whole.values) - n_text == 471_143_920  # MoonViT + projector
    ph = Phase(kind="decode")
    assert whole.flops(ph).total_at(whole.values_with(T=1000, B=1)) == \
        alone.flops(ph).total_at(alone.values_with(T=1000, B=1))


@pytest.mark.parametrize("patch, field", [
    ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ({"n_group": 5}, "n_group"),
    ({"topk_group": 9}, "topk_group"),
])
def test_errors_name_the_field(patch, field):
    _, raw = loader.read_json("deepseek-v3")
    with pytest.raises(SymcostError, match=f"field '{field}'"):
        symcost.build({**raw, **patch})


def test_kimi_k25_errors_name_the_nested_field():
    _, raw = loader.read_json("kimi-k2.5")
    bad = {**raw, "text_config": {**raw["text_config"], "n_group": 7}}
    with pytest.raises(SymcostError, match="field 'text_config.n_group'"):
        symcost.build(bad)
