"""Zamba / Zamba2 (shared transformer blocks), RecurrentGemma (RG-LRU), OLMo and OLMo-Hybrid beyond the
generic oracle suite: bad input names its field, the config classes' own defaults agree on the meta
device, and the components' identities (GEMM FLOPs = 2·tokens·weights, minimal vs reference scans)."""
import random

import pytest
import sympy

import symcost
from symcost.components.rglru import RecurrentBlock
from symcost.components.shared_block import SharedBlockCall, SharedBlockWeights
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from symcost.core.notation import sym
from symcost.core.primitives import Linear
from tests import oracle
from tests.tiny import olmo1, olmo_hybrid, recurrent_gemma, zamba, zamba2

MODULES = {"zamba2": zamba2, "zamba": zamba, "recurrent_gemma": recurrent_gemma, "olmo_hybrid": olmo_hybrid,
           "olmo": olmo1}


def _tiny(mt: str, seed: int = 0) -> dict:
    return MODULES[mt].tiny(random.Random(f"{mt}-{seed}"), mt)


# -- bad input names its field -----------------------------------------------------------------------
BAD = [
    ("zamba2", 0, {"num_key_value_heads": 2}, "num_key_value_heads"),  # adapters need H_kv = H_q
    ("zamba2", 0, {"attention_head_dim": 3}, "attention_head_dim"),  # adapters need H_q·D_h = 2·d
    ("zamba2", 1, {"num_key_value_heads": 3}, "num_key_value_heads"),
    ("zamba2", 0, {"attention_hidden_size": 7}, "attention_hidden_size"),
    ("zamba2", 0, {"hybrid_layer_ids": [0]}, "hybrid_layer_ids"),
    ("zamba2", 0, {"mamba_headdim": 3}, "mamba_headdim"),
    ("zamba2", 0, {"n_mamba_heads": 3}, "n_mamba_heads"),
    ("zamba2", 0, {"mamba_ngroups": 3}, "mamba_ngroups"),
    ("zamba2", 0, {"layers_block_type": ["hybrid", "attention"]}, "layers_block_type"),
    ("zamba2", 0, {"layer_types": ["hybrid"]}, "layers_block_type"),
    ("zamba", 0, {"num_key_value_heads": 3}, "num_key_value_heads"),
    ("zamba", 0, {"mamba_dt_rank": "big"}, "mamba_dt_rank"),
    ("zamba", 0, {"n_mamba_heads": 3}, "n_mamba_heads"),
    ("zamba", 0, {"layers_block_type": ["hybrid"] * 9}, "layers_block_type"),
    ("recurrent_gemma", 0, {"lru_width": 7}, "lru_width"),
    ("recurrent_gemma", 0, {"block_types": ["recurrent", "local"]}, "block_types"),
    ("recurrent_gemma", 0, {"block_types": []}, "block_types"),
    ("recurrent_gemma", 0, {"num_key_value_heads": 3}, "num_key_value_heads"),
    ("olmo_hybrid", 0, {"layer_types": ["linear_attention"] * 4}, "layer_types"),
    ("olmo_hybrid", 0, {"layer_types": ["full_attention"] * 3}, "layer_types"),
    ("olmo_hybrid", 2, {"linear_num_value_heads": 3}, "linear_num_value_heads"),  # over 2 key heads
    ("olmo", 0, {"num_key_value_heads": 5}, "num_key_value_heads"),
]


@pytest.mark.parametrize("mt, seed, change, field", BAD, ids=[f"{b[0]}-{b[3]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_names_the_field(mt, seed, change, field):
    raw = {**_tiny(mt, seed), **change}
    if "layer_types" in change and "layers_block_type" in raw and mt == "zamba2":
        raw.pop("layers_block_type")
    with pytest.raises(SymcostError, match=f"field '{field}'"):
        symcost.build(raw)


def test_zamba2_adapter_refusals_are_models_transformers_cannot_run():
    """GQA with attention adapters builds in transformers but its forward fails (the k adapter's
    2·d output is added to k_proj's H_kv·D_h): symcost names the field instead of counting it."""
    raw = {**_tiny("zamba2", 0), "num_key_value_heads": 2}
    model = oracle.build(raw)
    with pytest.raises(RuntimeError):
        oracle.prefill_flops(model, 1, 3)


# -- defaults: the config classes' own ---------------------------------------------------------------
DEFAULTS = [
    {"model_type": "zamba2"},
    {"model_type": "zamba2", "num_mem_blocks": 2, "use_shared_attention_adapter": True},
    {"model_type": "zamba2", "num_mem_blocks": 2, "tie_word_embeddings": False, "num_hidden_layers": 12,
     "layers_block_type": ["mamba", "hybrid"] * 6},
    {"model_type": "zamba"},
    {"model_type": "recurrent_gemma"},
    {"model_type": "olmo_hybrid"},
    {"model_type": "olmo"},
]


@pytest.mark.parametrize("raw", DEFAULTS, ids=[f"{r['model_type']}-{i}" for i, r in enumerate(DEFAULTS)])
def test_defaults_equal_the_config_class(raw):
    """Fields left out take the values transformers' config class derives (meta device)."""
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)


def test_zamba2_untied_blocks_store_every_adapter_set():
    """Untied, each hybrid layer keeps its own block and its block index's k_b adapter sets: for 6
    hybrid layers over 2 blocks, k = (3, 3), N_ad = 3² + 3² = 18; tied, N_blk = 2 and N_ad = 6."""
    raw = DEFAULTS[2]
    m = symcost.build(dict(raw))
    assert (m.values[sym.L_hyb], m.values[sym.N_blk], m.values[sym.N_ad]) == (6, 6, 18)
    tied = symcost.build({**raw, "tie_word_embeddings": True})
    assert (tied.values[sym.N_blk], tied.values[sym.N_ad]) == (2, 6)


# -- component identities ------------------------------------------------------------------------------
def _linear_weights(prims) -> sympy.Expr:
    return sum((p.in_ * p.out * p.copies for p in prims if isinstance(p, Linear)), sympy.Integer(0))


@pytest.mark.parametrize("adapters", [False, True])
def test_shared_block_gemm_flops_are_twice_tokens_times_weights(adapters):
    """One invocation's weight GEMMs (tied block + its adapter set + its linear) are 2·tokens per
    weight entry of one stored block, one adapter set and the d·d linear."""
    call = SharedBlockCall(attn_adapters=adapters)
    store = SharedBlockWeights(attn_adapters=adapters, copies=sympy.Integer(1), adapter_copies=sympy.Integer(1))
    for ph in (Phase(kind="prefill"), Phase(kind="decode")):
        gemm = sum(p.flops(ph.tokens) for p in call.primitives(ph) if isinstance(p, Linear))
        want = 2 * ph.tokens * (_linear_weights(store.primitives(None)) + sym.d ** 2)
        assert sympy.expand(gemm - want) == 0
    assert store.flops(Phase(kind="prefill")).total == 0  # stored weights run only through the calls


def test_rglru_minimal_and_reference():
    """Reference prefill: the conv over T + K_c − 1 outputs and no scan; decode: no conv matmul
    (an elementwise multiply-and-sum). Minimal: one conv output and one scan MAC per token."""
    rb = RecurrentBlock()
    w, K, B, T = sym.H_q * sym.D_lru, sym.K_c, sym.B, sym.T
    ref = rb.flops(Phase(kind="prefill", impl="reference")).total
    mini = rb.flops(Phase(kind="prefill")).total
    assert sympy.expand(ref - mini - 2 * B * (K - 1) * w * K + 2 * B * T * w) == 0
    dec_ref = rb.flops(Phase(kind="decode", impl="reference"))
    assert "conv_1d" not in dec_ref and "rg_lru.scan" not in dec_ref
    gates = 2 * (2 * B * sym.H_q * sym.D_lru ** 2)
    proj = 2 * B * 3 * sym.d * w
    assert sympy.expand(dec_ref.total - gates - proj) == 0
    assert sympy.diff(mini, T, 2) == 0


def test_olmo_norms_are_weightless():
    raw = _tiny("olmo", 0)
    m = symcost.build(dict(raw))
    assert not any("norm" in k for k in m.params().flatten())
    ew = m.elementwise(Phase(kind="decode")).flatten()
    assert any("input_layernorm" in k for k in ew)
