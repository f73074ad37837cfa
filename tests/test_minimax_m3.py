"""MiniMax M3 beyond the generic oracle suite: the intended MSA pair count against the block mask
transformers builds, and the vision tower + projector (extras) against the VL classes."""
import random

import pytest
import sympy
import torch
from torch.utils.flop_counter import FlopCounterMode

import symcost
from symcost.components.msa import msa_pairs_decode, msa_pairs_prefill
from symcost.components.towers.minimax_vit import MiniMaxViT
from symcost.core.conventions import Phase
from symcost.core.notation import sym
from tests import oracle
from tests.tiny import minimax_m3 as tiny_m3

mvl = pytest.importorskip("transformers.models.minimax_m3_vl.modeling_minimax_m3_vl")


def _kept_pairs(model, B, T, decode):
    """(query, key) pairs the indexer's block mask keeps, per sparse layer, batch row and head."""
    kept = []
    orig = mvl.MiniMaxM3VLIndexer.build_block_mask

    def spy(self, *a, **kw):
        mask = orig(self, *a, **kw)
        kept.append((mask == 0).sum(dim=(-1, -2)))  # [B, H_q]
        return mask

    ids = torch.randint(0, model.config.vocab_size, (B, T + 1))
    mvl.MiniMaxM3VLIndexer.build_block_mask = spy
    try:
        with torch.no_grad():
            if decode:
                out = model(ids[:, :T], use_cache=True)
                kept.clear()
                model(ids[:, T:], cache=oracle._cache_of(out), use_cache=True)
            else:
                model(ids[:, :T], use_cache=False)
    finally:
        mvl.MiniMaxM3VLIndexer.build_block_mask = orig
    return kept


@pytest.mark.parametrize("seed", range(3))
def test_intended_sparse_pairs_match_block_mask(seed):
    raw = tiny_m3.tiny(random.Random(f"msa-{seed}"), "minimax_m3")
    raw["sparse_attention_config"].update(sparse_block_size=3, sparse_topk_blocks=2)
    raw["layer_types"] = ["full_attention"] + ["minimax_m3_sparse"] * (raw["num_hidden_layers"] - 1)
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    for T in (4, 7, 13, 20):
        vals = m.values_with(T=T, B=2)
        for decode, fn in ((False, msa_pairs_prefill), (True, msa_pairs_decode)):
            want = fn(sympy.Integer(T), 2, 3)
            kept_all = _kept_pairs(model, 2, T, decode)
            assert len(kept_all) == raw["num_hidden_layers"] - 1
            for kept in kept_all:
                assert (kept == int(want)).all(), (T, decode, kept, want)
        # and the engine's causal convention counts exactly those pairs in the main attention
        grp = next(g for g in m.groups if g.name.startswith("msa"))
        attn = next(c for c in grp.components if c.key == "self_attn")
        pre = attn.flops(Phase(kind="prefill", attention="causal"))["scores"]
        assert pre.subs(vals) == 2 * 2 * raw["num_attention_heads"] * raw["head_dim"] * msa_pairs_prefill(T, 2, 3)


def test_vision_params_equal_transformers():
    from transformers.models.minimax_m3_vl.configuration_minimax_m3_vl import MiniMaxM3VLConfig, MiniMaxM3VLTextConfig
    cfg = MiniMaxM3VLConfig(text_config=MiniMaxM3VLTextConfig(num_hidden_layers=1).to_dict())
    with torch.device("meta"):
        tower = mvl.MiniMaxM3VLVisionModel(cfg.vision_config)
        proj = mvl.MiniMaxM3VLMultiModalProjector(cfg)
    hf = sum(p.numel() for p in tower.parameters()) + sum(p.numel() for p in proj.parameters())
    m = symcost.build("minimax-m3")
    assert m.extras["vision"].total_at(m.values) == hf == 865_567_232


def test_vision_image_flops_equal_transformers():
    from transformers.models.minimax_m3_vl.configuration_minimax_m3_vl import (
        MiniMaxM3VLConfig,
        MiniMaxM3VLTextConfig,
        MiniMaxM3VLVisionConfig,
    )
    v = dict(hidden_size=16, intermediate_size=24, num_hidden_layers=2, num_attention_heads=2, patch_size=2,
             temporal_patch_size=2, spatial_merge_size=2, num_channels=3)
    cfg = MiniMaxM3VLConfig(text_config=MiniMaxM3VLTextConfig(hidden_size=12, num_hidden_layers=1).to_dict(),
                            vision_config=MiniMaxM3VLVisionConfig(**v).to_dict(), projector_hidden_size=20)
    cfg.vision_config._attn_implementation = "eager"
    tower, proj = mvl.MiniMaxM3VLVisionModel(cfg.vision_config).eval(), mvl.MiniMaxM3VLMultiModalProjector(cfg)
    h, w = 4, 6  # patches per side
    pixels = torch.randn(h * w, 3 * 2 * 2 * 2)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        feats = tower(pixel_values=pixels, grid_thw=torch.tensor([[1, h, w]])).last_hidden_state
        proj(feats.squeeze(0))
    vals = {sym.d: 12, sym.d_vis: 16, sym.d_ff_vis: 24, sym.L_vis: 2, sym.p_vis: 2, sym.t_vis: 2, sym.C_img: 3,
            sym.m_vis: 4, sym.d_proj: 20, sym.N_pat: h * w}
    assert MiniMaxViT().image_flops().total_at(vals) == counter.get_total_flops()


# -- the real config: the stated layout, never a completed one -------------------------------------
import json  # noqa: E402

from symcost.cli import main  # noqa: E402
from symcost.core.errors import SymcostError  # noqa: E402

M3 = json.loads(symcost.architectures.loader.BUNDLED.joinpath("minimax-m3.json").read_text())
L = M3["num_hidden_layers"]
SAC = M3["sparse_attention_config"]


def test_layout_is_the_one_the_file_states():
    m = symcost.build("minimax-m3")
    freq, moe = SAC["sparse_attention_freq"], M3["moe_layer_freq"]
    want = {(a, b): list(zip(freq, moe)).count((a, b)) for a, b in set(zip(freq, moe))}
    got = {(int(g.name.startswith("msa")), int("_moe_" in g.name)): int(g.count.subs(m.values)) for g in m.groups}
    assert got == want
    assert not any(n.startswith("no ") and "transformers' default" in n for n in m.notes)  # nothing defaulted


def test_wrapper_counts_text_vision_and_projector_as_the_class():
    """minimax_m3_vl around the real text config: the class's total = text + tower + projector, and the
    text part equals the minimax-m3 total, the tower + projector the hub config's vision extras."""
    raw = {"model_type": "minimax_m3_vl", "text_config": {k: v for k, v in M3.items() if k != "model_type"}}
    m = symcost.build(dict(raw))
    total = m.params().total_at(m.values)
    assert total == oracle.params(raw)
    hub = symcost.build("minimax-m3")
    assert total == hub.params().total_at(hub.values) + hub.extras["vision"].total_at(hub.values)


def _abridged():
    """The formerly bundled abridged file: the real one without its per-layer lists."""
    raw = {k: v for k, v in M3.items() if k not in ("moe_layer_freq", "num_mtp_modules", "num_nextn_predict_layers")}
    raw["sparse_attention_config"] = {k: SAC[k] for k in ("sparse_index_dim", "sparse_num_index_heads",
                                                          "sparse_topk_blocks", "sparse_block_size")}
    raw["sparse_attention_config"]["use_sparse_attention"] = True
    return raw


INCOMPLETE = [
    (_abridged(), "sparse_attention_config.sparse_attention_freq"),
    ({**_abridged(), "sparse_attention_config": SAC}, "moe_layer_freq"),  # first_k_dense_replace only
]

SAC_BAD = [[1], "x", {"sparse_num_index_heads": 0}, {"sparse_num_index_heads": -2},
           {"sparse_num_index_heads": 4.7}, {"sparse_num_index_heads": True}, {"sparse_num_index_heads": [4]},
           {"sparse_num_index_heads": 3}, {"sparse_index_dim": "128"}, {"sparse_block_size": 0},
           {"sparse_topk_blocks": 1.5}, {"sparse_local_block": -1}, {"sparse_local_block": 17},
           {"sparse_attention_freq": [1, 1]}, {"sparse_attention_freq": [2] * L}, {"sparse_attention_freq": 1}]
BAD = INCOMPLETE + [
    ({**M3, "sparse_attention_config": v if not isinstance(v, dict) else {**SAC, **v}},
     "sparse_attention_config" + ("" if not isinstance(v, dict) else "." + next(iter(v)))) for v in SAC_BAD] + [
    ({**M3, "moe_layer_freq": M3["moe_layer_freq"][:-1]}, "moe_layer_freq"),
    ({**M3, "moe_layer_freq": [3] * L}, "moe_layer_freq"),
    ({**M3, "layer_types": ["full_attention"] * (L + 1)}, "layer_types"),
    ({**M3, "layer_types": ["full_attention"] * (L - 1) + ["sliding_attention"]}, "layer_types"),
    ({**M3, "mlp_layer_types": ["dense"] * (L - 1)}, "mlp_layer_types"),
    ({**M3, "mlp_layer_types": ["dense"] * (L - 1) + ["moe"]}, "mlp_layer_types"),
    ({**M3, "num_experts_per_tok": 129}, "num_experts_per_tok"),
    ({"model_type": "minimax_m3_vl", "text_config": {**M3, "num_experts_per_tok": 129}},
     "text_config.num_experts_per_tok"),
    ({"model_type": "minimax_m3_vl", "text_config": _abridged()}, "text_config.sparse_attention_config"),
    ({"model_type": "minimax_m3_vl", "text_config": {**M3, "sparse_attention_config": [1]}},
     "text_config.sparse_attention_config"),
    ({"model_type": "minimax_m3_vl_text", **{k: v for k, v in _abridged().items() if k != "model_type"}},
     "sparse_attention_config.sparse_attention_freq"),
]


@pytest.mark.parametrize("raw,field", BAD, ids=[f"{i}-{f}" for i, (_, f) in enumerate(BAD)])
def test_bad_input_names_the_field(raw, field, tmp_path, capsys):
    with pytest.raises(SymcostError, match=f"field '{field}"):
        symcost.build(dict(raw))
    p = tmp_path / "config.json"
    p.write_text(json.dumps(raw))
    code = main(["params", str(p)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and f"'{field}" in err and err.count("\n") == 1


def test_no_pattern_and_no_sparse_flag_is_transformers_default():
    """Nothing stated and nothing implied: every layer full attention + MoE, as the class builds it."""
    raw = tiny_m3.text(random.Random("m3-default"), "minimax_m3_vl_text")
    for k in ("layer_types", "mlp_layer_types", "moe_layer_freq", "first_k_dense_replace"):
        raw.pop(k, None)
    raw["sparse_attention_config"].pop("sparse_attention_freq", None)
    raw["sparse_attention_config"].pop("use_sparse_attention", None)
    m = symcost.build(dict(raw))
    assert [g.name for g in m.groups] == ["full_moe_layers"]
    assert m.params().total_at(m.values) == oracle.params(raw)
    assert any("transformers' default" in n for n in m.notes)


SERIALISABLE = [("minimax_m3-bundled", M3),
                ("minimax_m3_vl-real", {"model_type": "minimax_m3_vl",
                                        "text_config": {k: v for k, v in M3.items() if k != "model_type"}})]
SERIALISABLE += [(f"{mt}-{s}", tiny_m3.tiny(random.Random(f"m3-serial-{mt}-{s}"), mt))
                 for mt in tiny_m3.MODEL_TYPES for s in range(3)]


@pytest.mark.parametrize("name,raw", SERIALISABLE, ids=[n for n, _ in SERIALISABLE])
def test_transformers_serialised_config_is_accepted(name, raw, tmp_path):
    """What MiniMaxM3VL(Text)Config(**raw).to_dict() and save_pretrained write (layer_types and
    mlp_layer_types written out, the legacy fields folded in) builds the same model."""
    want = oracle.params(raw)
    as_dict, saved = oracle.serialised(raw, tmp_path)
    for form in (as_dict, saved):
        m = symcost.build(dict(form))
        assert m.params().total_at(m.values) == want
    m = symcost.build(str(tmp_path))
    assert m.params().total_at(m.values) == want
