"""`check` names the real mistake (issue 14): the seeds' and interview mistakes, one cause each."""
import json

import pytest

from symcost.cli import main

CASES = [  # model, metric, expression, a phrase the cause must contain
    ("llama-3.1-8b", "params", "L*(4*d**2 + 3*d*d_ff + 2*d) + d + 2*V*d", "counted with H_q heads"),
    ("llama-3.1-8b", "cache", "2*B*D_h*H_q*L*T", "counted with H_q heads"),
    ("llama-3.1-8b", "cache", "2*D_h*H_kv*L*T", "batch factor B is missing"),
    ("llama-3.1-8b", "cache", "B*D_h*H_kv*L*T", "off by a factor 2"),
    ("qwen3-30b-a3b", "active",
     "L*(2*d*H_q*D_h + 2*d*H_kv*D_h + 2*D_h + 2*d + d*E + 3*d*d_moe*E) + 2*V*d + d", "all E experts"),
    ("llama-2-7b", "params", "L*(4*d**2 + 3*d*d_ff + 2*d) + d + V*d", "lm_head"),  # the untied head
    ("llama-3.1-8b", "params", "V*d + L*(2*d*H_q*D_h + 2*d*H_kv*D_h + 3*d*d_ff) + d + V*d", "layers/norms"),
]


@pytest.mark.parametrize("model, metric, expr, cause", CASES)
def test_cause_named(capsys, model, metric, expr, cause):
    code = main(["check", model, "--metric", metric, "--expr", expr, "--json", "--strict"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and not data["equal"]
    assert cause in data["note"], data["note"]
    if data["diagnosis"]:  # a named cause: not a misleading list of terms
        assert "too many: layers/self_attn" not in data["note"]


def test_L_against_layer_groups_is_reconciled(capsys):
    """DeepSeek-V3 with one L for attention and L_dense/L_moe for the FFNs is EQUAL."""
    expr = ("L*(d*d_q + d_q + d_q*H_q*(D_nope + D_rope) + d*(d_kv + D_rope) + d_kv + d_kv*H_q*(D_nope + D_v)"
            " + H_q*D_v*d + 2*d) + L_dense*3*d*d_ff + L_moe*(d*E + 3*d*d_moe*(E + E_s)) + 2*V*d + d")
    code = main(["check", "deepseek-v3", "--metric", "params", "--expr", expr, "--json", "--strict"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["equal"] and "L read as L_dense + L_moe" in data["note"]
