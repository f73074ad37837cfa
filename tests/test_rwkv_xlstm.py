"""RWKV-4 and xLSTM beyond the oracle suite: what the tiny configs there cannot vary."""
import pytest

import symcost
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
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


XLSTM = {"model_type": "xlstm", "hidden_size": 64, "vocab_size": 70, "num_hidden_layers": 2, "num_heads": 2,
         "chunk_size": 3, "ffn_proj_factor": 0.6, "ffn_round_up_to_multiple_of": 8}


@pytest.mark.parametrize("changes", [{"weight_mode": "fused"}, {"weight_mode": "fused", "use_bias": True},
                                     {"qk_dim_factor": 0.25, "v_dim_factor": 0.75}])
def test_xlstm_weights_of_other_forms(changes):
    """Fused weights (transformers 5.24 cannot initialise them off the meta device: its _init_weights
    broadcasts a [H] bias slice against [2H]) and q/k/v widths that are not multiples of 64."""
    raw = {**XLSTM, **changes}
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)


def test_xlstm_uncached_prefill_with_narrow_heads():
    """Widths below 64: the cell and the projections are exact without a cache (the cache cannot take them)."""
    raw = {**XLSTM, "qk_dim_factor": 0.25, "v_dim_factor": 0.75}
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    terms = m.flops(Phase(kind="prefill", attention="full", impl="reference"))
    for T, B in ((2, 1), (7, 2), (12, 1)):
        assert terms.total_at(m.values_with(T=T, B=B)) == oracle.prefill_flops(model, B, T)
    assert any("multiple of 64" in n for n in m.notes)


def test_xlstm_minimal_counts_the_recurrent_step_for_every_token():
    m = symcost.build(dict(XLSTM))
    ref = m.flops(Phase(kind="prefill", impl="reference"))
    low = m.flops(Phase(kind="prefill"))
    v = m.values_with(T=2, B=1)  # under one chunk (C = 3): the reference runs the steps too
    assert ref.total_at(v) == low.total_at(v)
    v = m.values_with(T=9, B=1)
    assert ref.total_at(v) > low.total_at(v)


@pytest.mark.parametrize("changes,field", [
    ({"embedding_dim": 32}, "embedding_dim"), ({"num_blocks": 3}, "num_blocks"),
    ({"num_heads": 3}, "qk_dim_factor"), ({"v_dim_factor": 0.0}, "v_dim_factor"),
    ({"weight_mode": "packed"}, "weight_mode")])
def test_xlstm_refusals_name_the_field(changes, field):
    with pytest.raises(SymcostError, match=f"'{field}"):
        symcost.build({**XLSTM, **changes})


def test_xlstm_original_names_alone():
    """embedding_dim and num_blocks (the xLSTM-7B repository's names) read as hidden_size and the
    block count when they agree with the class's other spelling."""
    raw = {k: v for k, v in XLSTM.items() if k not in ("num_hidden_layers",)}
    raw["num_blocks"] = 32  # num_hidden_layers defaults to 32 in xLSTMConfig
    raw["embedding_dim"] = 64
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)


@pytest.mark.parametrize("model_type", ["longcat_flash", "gemma3n_text", "rwkv", "xlstm"])
def test_prefill_keeping_the_last_logits(model_type):
    """``logits="last"`` as generate() runs it (logits_to_keep=1); xLSTM's head ignores it and runs on
    every position, which the reference count keeps."""
    from tests.tiny import cases
    raw = next(r for _, r, _ in cases() if r["model_type"] == model_type)
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    terms = m.flops(Phase(kind="prefill", attention="full", logits="last", mla="expand", impl="reference"))
    assert terms.total_at(m.values_with(T=7, B=2)) == oracle.prefill_flops(model, 2, 7, logits_to_keep=1)


def test_rwkv_bf16_saved_bytes_differ_only_by_cpu_layernorm_statistics():
    """bf16 on CPU: torch's LayerNorm keeps mean and rstd in bf16 (2 bytes less each per row and
    norm than the fp32 the engine counts, as CUDA keeps them); everything else is exact."""
    import random

    from tests import saved
    from tests.test_activations import engine_bytes
    from tests.tiny import rwkv
    raw = rwkv.tiny(random.Random("act-rwkv-0"), "rwkv")
    L = raw["num_hidden_layers"]
    for recompute, norms in (("none", 2 * L + 2), ("full", 1)):  # ln1, ln2 per block, pre_ln, ln_out
        model = saved.build(raw, "eager", recompute, "bf16")
        for B, T in ((1, 5), (2, 7)):
            gap = engine_bytes(raw, "eager", recompute, "bf16", B, T) - saved.saved_bytes(model, B, T)
            assert gap == norms * B * T * 2 * (4 - 2)
