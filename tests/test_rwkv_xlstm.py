"""RWKV-4 and xLSTM beyond the oracle suite: what the tiny configs there cannot vary."""
import pytest

import symcost
from symcost.conventions import Phase
from tests import oracle


@pytest.mark.parametrize("d_att", [8, 20])
def test_rwkv_time_mix_width_apart_from_hidden_size(d_att):
    """attention_hidden_size ≠ hidden_size: weights and the uncached prefill are exact (transformers'
    cached forward cannot run then: its WKV state is allocated hidden_size wide)."""
    raw = {"model_type": "rwkv", "hidden_size": 12, "attention_hidden_size": d_att, "intermediate_size": 17,
           "vocab_size": 70, "num_hidden_layers": 2, "context_length": 32}
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)
    model = oracle.build(raw)
    terms = m.flops(Phase(kind="prefill", attention="full", impl="reference"))
    for T, B in ((4, 1), (7, 2)):
        assert terms.total_at(m.values_with(T=T, B=B)) == oracle.prefill_flops(model, B, T)
    assert any("attention_hidden_size" in n for n in m.notes)


def test_rwkv_reference_decode_runs_batch_squared_rows_minimal_runs_batch():
    """transformers 5.24 decodes B sequences on B² rows (its [B, d] shift state broadcasts against the
    [B, 1, d] input); at B = 1 both conventions agree with the class."""
    raw = {"model_type": "rwkv", "hidden_size": 8, "vocab_size": 60, "num_hidden_layers": 2, "context_length": 32}
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    ref = m.flops(Phase(kind="decode", impl="reference"))
    low = m.flops(Phase(kind="decode"))
    for B in (1, 3):
        assert ref.total_at(m.values_with(T=5, B=B)) == oracle.decode_flops(model, B, 5)
        assert ref.total_at(m.values_with(T=5, B=B)) == B * low.total_at(m.values_with(T=5, B=B))
