"""Kimi Linear (KDA + MLA) and MiniMax-Text-01 (lightning attention) beyond the generic oracle suite:
bad input names its field, the config spellings the classes read agree with them (precedence
included), the components' symbolic identities hold, and the class-default (full-size) configs
agree on the meta device."""
import random

import pytest
import sympy
from transformers import AutoConfig

import symcost
from symcost.components.gated_deltanet import GatedDeltaNet
from symcost.components.kda import KDA
from symcost.components.lightning_attention import LightningAttention
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from symcost.core.notation import sym
from tests import oracle
from tests.tiny import kimi_linear, minimax

TINY = {"kimi_linear": kimi_linear, "minimax": minimax}


def _tiny(mt: str, seed: int = 0) -> dict:
    return TINY[mt].tiny(random.Random(f"{mt}-{seed}"), mt)


def _params(raw: dict) -> int:
    m = symcost.build(dict(raw))
    return m.params().total_at(m.values)


def _costs(m, T: int = 70, B: int = 2) -> tuple:
    v = m.values_with(T=T, B=B)
    return (m.params().total_at(m.values),
            *(m.flops(Phase(kind=k, impl="reference", mla="expand")).total_at(v) for k in ("prefill", "decode")),
            m.cache().total_at(v))


# -- bad input ---------------------------------------------------------------------------------------
BAD = [  # (family, change, field named); kimi_linear-0 has 3 layers, minimax-0 has 4
    ("kimi_linear", {"num_key_value_heads": 1, "num_attention_heads": 2}, "num_key_value_heads"),
    ("kimi_linear", {"layer_types": ["linear_attention", "sliding_attention", "full_attention"]}, "layer_types"),
    ("kimi_linear", {"layer_types": ["linear_attention", "full_attention"]}, "layer_types"),
    ("kimi_linear", {"layer_types": None, "linear_attn_config": {"full_attn_layers": [0], "kda_layers": [1, 2]}},
     "linear_attn_config.full_attn_layers"),
    ("kimi_linear", {"layer_types": None, "linear_attn_config": {"full_attn_layers": [1], "kda_layers": [2, 4]}},
     "linear_attn_config.kda_layers"),
    ("kimi_linear", {"layer_types": None, "linear_attn_config": {"full_attn_layers": [1], "kda_layers": [2]}},
     "linear_attn_config"),
    ("kimi_linear", {"linear_attn_config": {"head_dim": 0}}, "linear_attn_config.head_dim"),
    ("kimi_linear", {"mlp_layer_types": ["dense", "moe", "sparse"]}, "mlp_layer_types"),
    ("kimi_linear", {"mlp_layer_types": ["sparse"] * 3, "num_local_experts": 4, "n_group": 4}, "num_expert_group"),
    ("kimi_linear", {"mlp_layer_types": ["sparse"] * 3, "topk_group": 3}, "topk_group"),
    ("kimi_linear", {"mlp_layer_types": ["sparse"] * 3, "num_experts_per_tok": 9}, "num_experts_per_token"),
    ("minimax", {"layer_types": ["linear_attention", "sliding_attention", "full_attention", "full_attention"]},
     "layer_types"),
    ("minimax", {"layer_types": ["full_attention"]}, "layer_types"),
    ("minimax", {"sliding_window": 0}, "sliding_window"),
    ("minimax", {"num_key_value_heads": 3}, "num_key_value_heads"),
    ("minimax", {"num_experts_per_tok": 9}, "num_experts_per_tok"),
    ("minimax", {"block_size": 0}, "block_size"),
]


@pytest.mark.parametrize("mt, change, field", BAD, ids=[f"{b[0]}-{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_names_the_field(mt, change, field):
    raw = {k: v for k, v in {**_tiny(mt), **change}.items() if v is not None}
    with pytest.raises(SymcostError, match=f"^field '{field}'"):
        symcost.build(raw)


def test_features_switched_off_are_not_validated():
    """Kimi's router fields are checked only when some layer is MoE; MiniMax's sliding_window only
    when some layer is softmax attention (a lightning-only stack never reads it)."""
    raw = {**_tiny("kimi_linear"), "mlp_layer_types": ["dense"] * 3, "num_local_experts": 4, "n_group": 4}
    assert _params(raw) == oracle.params(raw)
    raw = {**_tiny("minimax"), "layer_types": ["full_attention"] * 4, "sliding_window": 0}
    with pytest.raises(SymcostError, match="^field 'sliding_window'"):
        symcost.build(raw)  # a softmax layer uses it: refused
    raw["layer_types"] = ["linear_attention"] * 3 + ["full_attention"]
    raw["sliding_window"] = None
    assert _params(raw) == oracle.params(raw)


# -- the spellings the config classes read -------------------------------------------------------------
def test_kimi_linear_checkpoint_names_win_over_the_attribute_map_sources():
    """KimiLinearConfig's attribute_map: the checkpoint's names (num_experts, num_experts_per_token,
    num_shared_experts, num_expert_group) are what the class reads when both spellings are given."""
    raw = {**_tiny("kimi_linear", 1), "mlp_layer_types": ["sparse"] * 5}
    for k in ("num_experts", "num_local_experts", "num_experts_per_token", "num_experts_per_tok",
              "num_shared_experts", "n_shared_experts", "num_expert_group", "n_group"):
        raw.pop(k, None)
    raw.update(num_experts=6, num_local_experts=4, num_experts_per_token=3, num_experts_per_tok=1,
               num_shared_experts=2, n_shared_experts=1, num_expert_group=3, n_group=2, topk_group=2)
    cfg = oracle.hf_config(raw)
    m = symcost.build(dict(raw))
    assert (m.values[sym.E], m.values[sym.k], m.values[sym.E_s]) == (
        cfg.num_local_experts, cfg.num_experts_per_tok, cfg.n_shared_experts) == (6, 3, 2)
    assert m.params().total_at(m.values) == oracle.params(raw)


def test_kimi_linear_attn_config_is_the_same_model_as_its_fields():
    """The checkpoint's ``linear_attn_config`` (1-indexed layer lists, head sizes) and the class's
    own fields describe one model; linear_attn_config wins over the fields, layer_types over both."""
    raw = _tiny("kimi_linear", 2)
    lac = raw["linear_attn_config"]
    assert lac["full_attn_layers"] == [1] and lac["kda_layers"] == [2]
    fields = {k: v for k, v in raw.items() if k != "linear_attn_config"}
    fields.update(layer_types=["full_attention", "linear_attention"], linear_num_heads=lac["num_heads"],
                  linear_head_dim=lac["head_dim"], linear_conv_kernel_dim=lac["short_conv_kernel_size"])
    shadowed = {**raw, "linear_num_heads": 7, "linear_head_dim": 3, "linear_conv_kernel_dim": 9}
    expected = _costs(symcost.build(dict(raw)))
    assert _costs(symcost.build(fields)) == expected == _costs(symcost.build(shadowed))
    assert _params(shadowed) == oracle.params(shadowed)
    flipped = {**raw, "layer_types": ["linear_attention", "linear_attention"]}
    assert _params(flipped) == oracle.params(flipped) != expected[0]


def test_kimi_linear_head_is_never_tied():
    raw = {**_tiny("kimi_linear"), "tie_word_embeddings": True}
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw) == _params({**raw, "tie_word_embeddings": False})
    assert any("never ties" in n for n in m.notes)


def test_kimi_linear_default_layers_and_dense_prefix():
    """No layer lists at all: every 4th layer from index 4 is MLA, the first first_k_dense_replace
    layers are dense (default 1), as the config class derives them."""
    raw = {k: v for k, v in _tiny("kimi_linear", 1).items() if k not in ("first_k_dense_replace",)}
    raw["num_hidden_layers"] = 9
    m = symcost.build(dict(raw))
    cfg = oracle.hf_config(raw)
    assert cfg.layer_types.count("full_attention") == 2 and cfg.mlp_layer_types.count("dense") == 1
    assert sorted(g.name for g in m.groups) == ["full_moe_layers", "lin_dense_layers", "lin_moe_layers"]
    assert m.params().total_at(m.values) == oracle.params(raw)


def test_minimax_num_experts_wins_and_attn_type_list_is_not_read():
    raw = {k: v for k, v in _tiny("minimax", 1).items() if k not in ("num_experts", "num_local_experts")}
    raw.update(num_experts=3, num_local_experts=2, num_experts_per_tok=1, attn_type_list=[1, 1, 0])
    m = symcost.build(dict(raw))
    assert m.values[sym.E] == oracle.hf_config(raw).num_local_experts == 3
    assert m.params().total_at(m.values) == oracle.params(raw)  # the alternating default, as the class
    assert any("attn_type_list is not read" in n for n in m.notes)
    raw["layer_types"] = ["full_attention", "full_attention", "linear_attention"]
    m = symcost.build(dict(raw))
    assert not m.notes and m.params().total_at(m.values) == oracle.params(raw)


def test_minimax_window_masks_but_does_not_shorten_the_cache():
    """MiniMaxCache is a DynamicCache built without the config: with sliding_window every cached
    token stays, and eager decode multiplies all of them (the window only masks)."""
    raw = {**_tiny("minimax", 1), "sliding_window": 3}
    m, model = symcost.build(dict(raw)), oracle.build(raw)
    for T in (2, 9):
        v = m.values_with(T=T, B=2)
        assert m.cache().total_at(v) == oracle.cache_elements(model, 2, T)
        assert m.flops(Phase(kind="decode", impl="reference")).total_at(v) == oracle.decode_flops(model, 2, T)
    keys = [e for p, e in m.cache().flatten().items() if p.endswith("keys")]
    assert keys and all(not e.has(sympy.Min) for e in keys)


# -- the components' identities -----------------------------------------------------------------------
SCAN = ("conv1d", "chunk_kk", "chunk_qk", "ut_solve", "chunk_values", "state_reads", "state_update")


@pytest.mark.parametrize("kind", ["prefill", "decode"])
@pytest.mark.parametrize("attention", ["full", "causal"])
def test_kda_minimal_scan_is_gated_deltanet_with_one_head_shape(kind, attention):
    ph = Phase(kind=kind, attention=attention)
    kda = KDA().flops(ph).flatten()
    gdn = GatedDeltaNet(H_lk=sym.H_kda, H_lv=sym.H_kda, D_lk=sym.D_kda, D_lv=sym.D_kda).flops(ph).flatten()
    scan = [n for n in SCAN if n in gdn]
    assert scan and all(sympy.expand(kda[n] - gdn[n]) == 0 for n in scan)


def test_kda_reference_is_the_chunk_count():
    """Per head and (padded) chunk: 3 products of C²·D and 3 of C·D², at 2 FLOPs per MAC."""
    t = KDA().flops(Phase(impl="reference")).flatten()
    scan = sum(e for n, e in t.items() if n != "conv1d" and not n.endswith("_proj"))
    n = sympy.ceiling(sym.T / sym.C_dn)
    C, D = sym.C_dn, sym.D_kda
    assert sympy.expand(scan - 2 * sym.B * sym.H_kda * n * (3 * C**2 * D + 3 * C * D**2)) == 0


def _blocks(T: int, C: int) -> list[int]:
    return [min(C, T - s) for s in range(0, T, C)]


@pytest.mark.parametrize("C", [3, 4, 256])
def test_lightning_pairs_count_the_blocks(C):
    la = LightningAttention()
    for T in (1, 2, C - 1, C, C + 1, 3 * C, 3 * C + 2):
        if T < 1:
            continue
        at = {sym.T: T, sym.C_la: C}
        full = la.pairs(Phase(impl="reference")).subs(at)
        causal = la.pairs(Phase(impl="reference", attention="causal")).subs(at)
        assert full == sum(s * s for s in _blocks(T, C))
        assert causal == sum(s * (s + 1) // 2 for s in _blocks(T, C))
        minimal = la.pairs(Phase()).subs(at)
        assert (minimal == full) == (T % C == 0) and minimal >= full


def test_lightning_minimal_is_linear_in_T_and_decode_is_constant():
    la = LightningAttention()
    prefill = la.flops(Phase()).total
    assert sympy.diff(prefill, sym.T, 2) == 0 and sympy.diff(prefill, sym.T) != 0
    assert sym.T not in la.flops(Phase(kind="decode")).total.free_symbols
    assert sym.T not in la.cache().total.free_symbols


# -- full size: the class defaults -------------------------------------------------------------------
SIZES = ("hidden_size", "vocab_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


@pytest.mark.parametrize("mt", ["kimi_linear", "minimax"])
def test_class_default_model_at_full_size(mt):
    """The config class's own model (Kimi-Linear-48B-A3B-like sizes: 27 layers, 256 experts; MiniMax:
    32 layers), built on the meta device."""
    defaults = AutoConfig.for_model(mt).to_dict()
    raw = {"model_type": mt, **{k: defaults[k] for k in SIZES}}
    assert _params(raw) == oracle.params(raw)
    assert _params(defaults) == oracle.params(raw)  # every field written out by the class
