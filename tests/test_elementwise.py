"""The elementwise group (symcost.core.elementwise): separate from the matmul FLOPs, hand-checked on Llama."""
import json

import pytest

from symcost.architectures import loader
from symcost.cli import main
from symcost.core.conventions import Phase
from symcost.core.elementwise import COST

PHASES = [Phase(kind="prefill"), Phase(kind="decode"), Phase(kind="prefill", attention="causal"),
          Phase(kind="decode", mla="absorb"), Phase(kind="prefill", impl="reference")]

# llama-3.1-8b: d, H_q, H_kv, D_h, d_ff, L
d, H_q, H_kv, D_h, d_ff, L = 4096, 32, 8, 128, 14336, 32


def llama_by_hand(T: int, new: int, keys: int) -> int:
    """Per layer: 2 RMSNorms 4·d, RoPE 3·(H_q+H_kv)·D_h, SwiGLU 5·d_ff, 2 residual adds d — per new
    token — and softmax 5·H_q per score (new·keys scores); plus the final RMSNorm 4·d per new token."""
    per_token = 2 * 4 * d + 3 * (H_q + H_kv) * D_h + 5 * d_ff + 2 * d
    per_layer = new * per_token + 5 * H_q * new * keys
    return L * per_layer + new * 4 * d


def test_llama_prefill_by_hand():
    m = loader.build("llama-3.1-8b")
    T = 2048
    ew = m.elementwise(Phase(kind="prefill")).total_at(m.values_with(T=T, B=1))
    # 2 RMSNorms × 4·d·T + softmax 5·H_q·T² + RoPE 3·(H_q+H_kv)·D_h·T + SwiGLU 5·d_ff·T + residual 2·d·T,
    # per layer, plus the final norm 4·d·T
    by_hand = L * (2 * 4 * d * T + 5 * H_q * T * T + 3 * (H_q + H_kv) * D_h * T + 5 * d_ff * T
                   + 2 * d * T) + 4 * d * T
    assert ew == by_hand == llama_by_hand(T, new=T, keys=T)
    assert m.elementwise(Phase(kind="prefill")).total_at(m.values_with(T=T, B=2)) == 2 * by_hand


def test_llama_decode_differs_from_prefill():
    m = loader.build("llama-3.1-8b")
    T = 2048
    decode = m.elementwise(Phase(kind="decode")).total_at(m.values_with(T=T, B=1))
    assert decode == llama_by_hand(T, new=1, keys=T + 1)  # one new token against T + 1 keys
    prefill = m.elementwise(Phase(kind="prefill")).total_at(m.values_with(T=T, B=1))
    assert decode < prefill
    # causal prefill: softmax over the T(T+1)/2 kept pairs, the same pairs as QKᵀ
    causal = m.elementwise(Phase(kind="prefill", attention="causal")).total_at(m.values_with(T=T, B=1))
    assert prefill - causal == L * 5 * H_q * (T * T - T * (T + 1) // 2)


def test_cost_table_is_the_stated_convention():
    assert (COST["rmsnorm"], COST["layernorm"], COST["silu"], COST["gate_mul"], COST["gelu_tanh"],
            COST["relu2"], COST["softmax"], COST["rope"], COST["residual"]) == (4, 7, 4, 1, 8, 2, 5, 3, 1)


@pytest.mark.parametrize("name", loader.bundled_names())
def test_every_bundled_model_builds_its_group_and_flops_are_untouched(name):
    m = loader.build(name)
    vals = m.values_with(T=4096, B=2)
    for ph in PHASES:
        before = m.flops(ph)
        ew = m.elementwise(ph)
        assert ew, name
        value = ew.total_at(vals)
        assert value > 0
        after = m.flops(ph)
        # the matmul total is the same expression, and none of its terms is an elementwise one
        assert after.total == before.total
        assert not any(k.rsplit("/", 1)[-1] in {"softmax", "rope", "residual", "act", "gate_mul"}
                       for k in after.flatten())


def test_hybrids_count_their_scans():
    m = loader.build("nemotron-h-56b-base-8k")
    ew = m.elementwise(Phase(kind="decode"))
    leaves = set(ew.flatten())
    assert any(k.endswith("mixer/scan_decay") for k in leaves)
    assert not any(k.endswith("rope") for k in leaves)  # Nemotron-H attention has no RoPE
    q = loader.build("qwen3-next-80b-a3b-thinking").elementwise(Phase(kind="decode"))
    assert any(k.endswith("linear_attn/scan_decay") for k in q.flatten())
    assert any(k.endswith("self_attn/output_gate") for k in q.flatten())


def test_cli_elementwise_is_additive(capsys):
    argv = ["flops", "llama-3.1-8b", "--phase", "prefill", "--T", "2048", "--json"]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(argv + ["--elementwise"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"] == plain["total"] and data["breakdown"] == plain["breakdown"]
    assert data["elementwise"]["total"] == llama_by_hand(2048, new=2048, keys=2048)
    assert sum(data["elementwise"]["breakdown"].values()) == data["elementwise"]["total"]
    assert "convention" in data["elementwise"] and "elementwise" not in plain
    assert main(argv[:-1] + ["--elementwise"]) == 0
    assert "elementwise total" in capsys.readouterr().out
