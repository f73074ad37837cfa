"""MiniMax M3 beyond the generic oracle suite: the intended MSA pair count against the block mask
transformers builds, and the vision tower + projector (extras) against the VL classes."""
import random

import pytest
import sympy
import torch
from torch.utils.flop_counter import FlopCounterMode

import symcost
from symcost.components.minimax_vit import MiniMaxViT
from symcost.components.msa import msa_pairs_decode, msa_pairs_prefill
from symcost.conventions import Phase
from symcost.notation import sym
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
    from transformers.models.minimax_m3_vl.configuration_minimax_m3_vl import (
        MiniMaxM3VLConfig, MiniMaxM3VLTextConfig)
    cfg = MiniMaxM3VLConfig(text_config=MiniMaxM3VLTextConfig(num_hidden_layers=1).to_dict())
    with torch.device("meta"):
        tower = mvl.MiniMaxM3VLVisionModel(cfg.vision_config)
        proj = mvl.MiniMaxM3VLMultiModalProjector(cfg)
    hf = sum(p.numel() for p in tower.parameters()) + sum(p.numel() for p in proj.parameters())
    m = symcost.build("minimax-m3")
    assert m.extras["vision"].total_at(m.values) == hf == 865_567_232


def test_vision_image_flops_equal_transformers():
    from transformers.models.minimax_m3_vl.configuration_minimax_m3_vl import (
        MiniMaxM3VLConfig, MiniMaxM3VLTextConfig, MiniMaxM3VLVisionConfig)
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
