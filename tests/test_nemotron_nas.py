"""nemotron-nas (DeciLM, Llama-Nemotron Super/Ultra): heterogeneous blocks against a runnable stand-in
of the checkpoints' own modeling_decilm.py (tests/decilm_reference.py, built from transformers' Llama
modules), and the bundled configs against the checkpoints' published sizes (tests/data/remote_checkpoints.json).

transformers has no class for this model type, so it is not in tests/tiny (whose generic suite asks
transformers' AutoConfig); these tests are its oracle suite: parameters on the meta device, prefill and
decode FLOPs under FlopCounterMode (eager, ``full``), and the cache a forward returns, on random tiny
block layouts (a polynomial agreeing at random points is the same polynomial).
"""
import json
import random
from pathlib import Path

import pytest

import symcost
from symcost.architectures.nemotron_nas import ffn_mult_to_intermediate_size
from symcost.cli import main
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from tests import decilm_reference, oracle

PUBLISHED = {r["model"]: r for r in json.loads(
    (Path(__file__).parent / "data" / "remote_checkpoints.json").read_text())["checkpoints"]}

MULTS = (0.5, 1.0, 1.3125, 2.625, 5.25, 12.0, 20.0)  # published ffn_mult values and wider ones for d ≤ 64


def tiny(rng: random.Random) -> dict:
    """A random block layout; block 0 is full attention (as in every published NAS checkpoint: the
    cache's sequence length is read from layer 0)."""
    H = rng.choice([2, 4])
    D_h = rng.choice([4, 8, 16])
    L = rng.randint(3, 6)
    blocks = []
    for i in range(L):
        a = rng.choice(["attention", "attention", "linear", "none"]) if i else "attention"
        f = rng.choice(["mlp", "mlp", "linear", "none"])
        attn = {"no_op": a == "none", "replace_with_linear": a == "linear",
                "n_heads_in_group": rng.choice([g for g in (1, 2, 4) if H % g == 0]) if a == "attention" else None}
        ffn = {"no_op": f == "none", "replace_with_linear": f == "linear",
               "ffn_mult": rng.choice(MULTS) if f == "mlp" else None}
        blocks.append({"attention": attn, "ffn": ffn})
    return {"model_type": "nemotron-nas", "hidden_size": H * D_h, "num_attention_heads": H,
            "num_hidden_layers": L, "vocab_size": rng.randint(50, 120), "block_configs": blocks,
            "num_key_value_heads": None, "intermediate_size": None,
            "attention_bias": rng.random() < 0.3, "mlp_bias": rng.random() < 0.3,
            "tie_word_embeddings": rng.random() < 0.3, "max_position_embeddings": 64}


CASES = [tiny(random.Random(f"nemotron-nas-{s}")) for s in range(6)]
FULL = {"attention": "full", "logits": "all", "impl": "reference"}


@pytest.mark.parametrize("seed", range(len(CASES)))
def test_params_equal_the_reference(seed):
    raw = CASES[seed]
    m = symcost.build(dict(raw))
    model = decilm_reference.build(raw, "meta")
    assert m.params().total_at(m.values) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("seed", range(len(CASES)))
def test_flops_and_cache_equal_the_reference(seed):
    raw = CASES[seed]
    m = symcost.build(dict(raw))
    model = decilm_reference.build(raw)
    prefill = m.flops(Phase(kind="prefill", **FULL))
    decode = m.flops(Phase(kind="decode", **FULL))
    cache = m.cache()
    for T in (5, 9):
        for B in (1, 2):
            assert prefill.total_at(m.values_with(T=T, B=B)) == oracle.prefill_flops(model, B, T), (T, B)
        assert decode.total_at(m.values_with(T=T, B=2)) == oracle.decode_flops(model, 2, T), T
        assert cache.total_at(m.values_with(T=T, B=2)) == oracle.cache_elements(model, 2, T), T


def test_the_layouts_cover_every_block_kind():
    """The random layouts above hold every attention and FFN kind (else the oracle proves less)."""
    kinds = set()
    for raw in CASES:
        for b in raw["block_configs"]:
            a, f = b["attention"], b["ffn"]
            kinds.add("none" if a["no_op"] else "linear" if a["replace_with_linear"] else a["n_heads_in_group"])
            kinds.add("ffn-none" if f["no_op"] else "ffn-linear" if f["replace_with_linear"] else "ffn")
    assert {"none", "linear", 1, 2, "ffn-none", "ffn-linear", "ffn"} <= kinds


def test_ffn_width_is_the_reference_float_rule():
    """round_up(int(2·m·d/3), 256) in floats: Ultra's 1.95 at d = 16384 gives int(21299.2) = 21299 → 21504;
    Super's 5.25 at d = 8192 is exactly 28672."""
    assert ffn_mult_to_intermediate_size(1.95, 16384) == 21504
    assert ffn_mult_to_intermediate_size(5.25, 8192) == 28672
    assert ffn_mult_to_intermediate_size(0.5, 8192) == 2816  # int(2730.66..) = 2730 → 2816


BUNDLED = ["llama-3.3-nemotron-super-49b-v1", "llama-3.1-nemotron-ultra-253b-v1"]


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_params_equal_the_reference_on_meta(name):
    """The real configs, full size, against the stand-in built on the meta device: exact."""
    _, raw = symcost.architectures.loader.read_json(name)
    m = symcost.build(name)
    model = decilm_reference.build(raw, "meta")
    assert m.params().total_at(m.values) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", [n for n in BUNDLED if n in PUBLISHED])
def test_bundled_count_matches_the_published_size(name):
    """The exact count against the checkpoint's published parameter figure, to its stated precision."""
    row = PUBLISHED[name]
    m = symcost.build(name)
    total = m.params().total_at(m.values)
    assert isinstance(total, int)
    assert abs(total - row["params"]) <= row["rounded_to"] // 2, (total, row["params"])


def test_bundled_super_structure():
    """Super-49B: 49 attention layers (all 8 KV heads), 31 without attention, every layer an MLP."""
    m = symcost.build("llama-3.3-nemotron-super-49b-v1")
    attn = sum(int(g.count) for g in m.groups if any(c.key == "self_attn" for c in g.components))
    assert attn == 49 and m.n_layers() == 80
    assert m.values[symcost.sym.H_kv] == 8 and m.values[symcost.sym.d_ff] == 28672
    # 49 layers × 2 · 8 · 128 cached elements per token
    assert m.cache().total_at(m.values_with(T=1, B=1)) == 49 * 2 * 8 * 128


def test_ultra_identity_layers_are_layers_without_weights():
    m = symcost.build("llama-3.1-nemotron-ultra-253b-v1")
    assert m.n_layers() == 162
    identity = next(g for g in m.groups if g.name == "no_attn_no_ffn")
    assert identity.count == 81 and not identity.tower
    assert any("81 of 162 layers" in n for n in m.notes)


def _bad(change) -> dict:
    raw = json.loads(json.dumps(CASES[0]))
    change(raw)
    return raw


def _block0(part, **kw):
    return lambda raw: raw["block_configs"][0][part].update(kw)


@pytest.mark.parametrize("change,field", [
    (lambda raw: raw.update(num_hidden_layers=9), "block_configs"),
    (_block0("attention", n_heads_in_group=3), "block_configs[0].attention.n_heads_in_group"),
    (_block0("attention", window_length=4), "block_configs[0].attention.window_length"),
    (_block0("ffn", no_op=False, replace_with_linear=False, ffn_mult=-1.0), "block_configs[0].ffn.ffn_mult"),
], ids=["layers", "heads", "window", "ffn_mult"])
def test_bad_blocks_name_the_field(change, field):
    with pytest.raises(SymcostError, match=field.replace("[", r"\[").replace("]", r"\]")):
        symcost.build(_bad(change))


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_bad(lambda raw: raw.update(num_hidden_layers=9))))
    assert main(["params", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "block_configs" in err[0]
