"""MiMo-7B beyond the generic oracle suite (which measures the main model with Qwen2ForCausalLM, as
``MiMoForCausalLM(Qwen2ForCausalLM)`` of the checkpoint's modeling_mimo.py is): the MTP layers the
class registers but never runs, against a stand-in of ``MiMoMTPLayers`` built from transformers'
Qwen2 modules on the meta device, and bad input."""
import json
import random

import pytest
import torch
from torch import nn
from transformers import Qwen2Config
from transformers.models.qwen2.modeling_qwen2 import Qwen2Attention, Qwen2MLP, Qwen2RMSNorm

import symcost
from symcost.cli import main
from symcost.core.errors import SymcostError
from tests.tiny import mimo as tiny_mimo


def mtp_stand_in(raw: dict) -> nn.Module:
    """``MiMoMTPLayers`` as its __init__ lists them: token/hidden/input/post-attention/final RMSNorm,
    input_proj [2d, d] without bias, Qwen2Attention(layer_idx=0), Qwen2MLP."""
    cfg = Qwen2Config(**{k: v for k, v in raw.items() if k != "model_type"})
    d = cfg.hidden_size
    with torch.device("meta"):
        return nn.ModuleDict({
            **{n: Qwen2RMSNorm(d) for n in ("token_layernorm", "hidden_layernorm", "input_layernorm",
                                             "post_attention_layernorm", "final_layernorm")},
            "input_proj": nn.Linear(2 * d, d, bias=False),
            "self_attn": Qwen2Attention(cfg, layer_idx=0), "mlp": Qwen2MLP(cfg)})


CASES = [tiny_mimo.tiny(random.Random(f"mimo-mtp-{s}"), "mimo") for s in range(4)]


@pytest.mark.parametrize("raw", CASES + [symcost.architectures.loader.read_json("mimo-7b-base")[1]],
                         ids=[f"tiny-{s}" for s in range(4)] + ["mimo-7b-base"])
def test_mtp_extras_equal_the_mtp_layers(raw):
    m = symcost.build(dict(raw))
    n = raw.get("num_nextn_predict_layers", 0)
    one = sum(p.numel() for p in mtp_stand_in(raw).parameters())
    mtp = sum(v for k, v in m.extras.at(m.values).items() if k.split("/")[0] == "mtp")
    assert mtp == n * one


def test_bundled_mimo_7b():
    """MiMo-7B-Base: 36 Qwen2 layers, one MTP layer; the class registers 7,622,619,136 + the MTP layer."""
    m = symcost.build("mimo-7b-base")
    v = m.values
    assert (v[symcost.sym.L], v[symcost.sym.H_kv], v[symcost.sym.L_mtp]) == (36, 8, 1)
    assert m.cache().total_at(m.values_with(T=1, B=1)) == 36 * 2 * 8 * 128


def test_bad_input(tmp_path, capsys):
    raw = dict(CASES[0], num_nextn_predict_layers=-1)
    with pytest.raises(SymcostError, match="num_nextn_predict_layers"):
        symcost.build(raw)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    assert main(["params", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "num_nextn_predict_layers" in err[0]
