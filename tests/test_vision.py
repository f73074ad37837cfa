"""Vision towers per image: ``Model.vision.image_flops()`` exact against FlopCounterMode on the real
tower + projector (CPU, eager attention) for tiny configs, ``image_tokens()`` equal to the rows the
merger hands the text model, the bundled configs' stated image sizes, and ``--images`` on the CLI."""
import json
import random

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import symcost
from symcost.cli import main
from tests import oracle
from tests.tiny import deepseek as tiny_ds
from tests.tiny import gemma as tiny_gemma
from tests.tiny import minimax_m3 as tiny_m3


def _measure(fn):
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = fn()
    return counter.get_total_flops(), out


# -- Kimi K2.5: MoonViT + patch merger ------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_moonvit_image_flops_and_tokens(seed):
    raw = tiny_ds.tiny(random.Random(f"vision-kimi-{seed}"), "kimi_k25")
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    v = raw["vision_config"]
    kh, kw = v["merge_kernel_size"]
    # the adapter's image: the position grid, padded to whole merge kernels as the processor does
    h, w = -(-v["pos_emb_height"] // kh) * kh, -(-v["pos_emb_width"] // kw) * kw
    pixels = torch.randn(h * w, 3, v["patch_size"], v["patch_size"])
    flops, out = _measure(lambda: model.model.get_image_features(
        pixel_values=pixels, image_grid_thw=torch.tensor([[1, h, w]])))
    assert m.vision.image_flops().total_at(m.values) == flops
    assert m.vision.image_tokens().subs(m.values) == out.pooler_output[0].shape[0] == h * w // (kh * kw)


# -- Gemma 3: SigLIP + pooled projector ----------------------------------------------------------
@pytest.mark.parametrize("seed,head,side,mm", [(0, False, 4, 4), (1, True, 4, 4), (2, True, 7, 9), (3, False, 6, 4)])
def test_siglip_image_flops_and_tokens(seed, head, side, mm):
    raw = tiny_gemma.tiny(random.Random(f"vision-gemma-{seed}"), "gemma3")
    vc = raw["vision_config"]
    vc.update(vision_use_head=head, image_size=side * vc["patch_size"])
    raw["mm_tokens_per_image"] = mm
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    size = vc["image_size"]
    flops, out = _measure(lambda: model.model.get_image_features(
        pixel_values=torch.randn(1, vc["num_channels"], size, size)))
    assert m.vision.image_flops().total_at(m.values) == flops
    assert m.vision.image_tokens().subs(m.values) == out.pooler_output.shape[1]


def test_gemma3_image_tokens_config_dict():
    """gemma-3-4b-it's vision_config: 896² px, patch 14 -> 64² patches pooled 4×4 -> 256 tokens."""
    raw = {"model_type": "gemma3", "mm_tokens_per_image": 256,
           "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34,
                           "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                           "vocab_size": 262208, "sliding_window": 1024},
           "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
                             "image_size": 896, "patch_size": 14, "vision_use_head": False}}
    m = symcost.build(raw)
    assert m.values[symcost.core.notation.sym.N_pat] == 64 * 64
    assert m.vision.image_tokens().subs(m.values) == 256
    bad = {**raw, "mm_tokens_per_image": 81 * 81}
    with pytest.raises(symcost.core.errors.SymcostError, match="mm_tokens_per_image"):
        symcost.build(bad)


# -- MiniMax M3: ViT + two-stage merge projector (the adapter's vision_config path) -------------
@pytest.mark.parametrize("seed", range(2))
def test_minimax_vit_image_flops_and_tokens_from_adapter(seed):
    mvl = pytest.importorskip("transformers.models.minimax_m3_vl.modeling_minimax_m3_vl")
    from transformers.models.minimax_m3_vl.configuration_minimax_m3_vl import (
        MiniMaxM3VLConfig,
        MiniMaxM3VLTextConfig,
        MiniMaxM3VLVisionConfig,
    )
    rng = random.Random(f"vision-m3-{seed}")
    raw = tiny_m3.tiny(rng, "minimax_m3")
    side = 2 * rng.randint(1, 3)  # patches per side, whole 2×2 merge kernels
    vision = dict(hidden_size=8 * rng.randint(1, 2), intermediate_size=rng.randint(6, 20),
                  num_hidden_layers=rng.randint(1, 2), num_attention_heads=2, patch_size=2,
                  temporal_patch_size=2, spatial_merge_size=2, num_channels=3, image_size=2 * side)
    raw.update(vision_config=vision, projector_hidden_size=rng.randint(6, 20))
    m = symcost.build(dict(raw))
    cfg = MiniMaxM3VLConfig(
        text_config=MiniMaxM3VLTextConfig(hidden_size=raw["hidden_size"], num_hidden_layers=1).to_dict(),
        vision_config=MiniMaxM3VLVisionConfig(**vision).to_dict(),
        projector_hidden_size=raw["projector_hidden_size"])
    cfg.vision_config._attn_implementation = "eager"
    torch.manual_seed(0)
    tower, proj = mvl.MiniMaxM3VLVisionModel(cfg.vision_config).eval(), mvl.MiniMaxM3VLMultiModalProjector(cfg)
    pixels = torch.randn(side * side, 3 * 2 * 2 * 2)
    flops, out = _measure(lambda: proj(tower(pixel_values=pixels, grid_thw=torch.tensor([[1, side, side]]))
                                       .last_hidden_state.squeeze(0)))
    assert m.vision.image_flops().total_at(m.values) == flops
    assert m.vision.image_tokens().subs(m.values) == out.shape[-2] == side * side // 4


# -- bundled configs: the stated image sizes --------------------------------------------------------
def test_bundled_image_tokens():
    kimi = symcost.build("kimi-k2.5")  # 896² px = the 64×64 position grid of 14-px patches, 2×2 merge
    assert kimi.vision.image_tokens().subs(kimi.values) == 64 * 64 // 4 == 1024
    m3 = symcost.build("minimax-m3")  # vision_config.image_size 2016², patch 14, merge 2
    assert m3.vision.image_tokens().subs(m3.values) == (2016 // 14) ** 2 // 4 == 5184
    assert symcost.build("llama-3.1-8b").vision is None


# -- the CLI ----------------------------------------------------------------------------------------
def _json(argv, capsys):
    code = main(argv + ["--json"])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def test_cli_flops_images(capsys):
    m = symcost.build("kimi-k2.5")
    per_image = m.vision.image_flops().total_at(m.values)
    _, plain = _json(["flops", "kimi-k2.5", "--phase", "prefill", "--T", str(100 + 2 * 1024), "--batch", "2"],
                     capsys)
    code, data = _json(["flops", "kimi-k2.5", "--phase", "prefill", "--T", "100", "--images", "2",
                        "--batch", "2"], capsys)
    assert code == 0
    assert (data["T"], data["T_text"], data["vision_tokens"], data["images"]) == (2148, 100, 2048, 2)
    assert data["breakdown"]["vision"] == 2 * 2 * per_image
    assert data["total"] == plain["total"] + 2 * 2 * per_image
    assert sum(data["breakdown"].values()) == data["total"]
    assert sum(data["vision_flops_per_image"].values()) == per_image
    # decode: the images sit in the context, the tower does not run again
    _, dec = _json(["flops", "kimi-k2.5", "--phase", "decode", "--T", "100", "--images", "2"], capsys)
    _, dec_plain = _json(["flops", "kimi-k2.5", "--phase", "decode", "--T", "2148"], capsys)
    assert "vision" not in dec["breakdown"] and dec["total"] == dec_plain["total"]


def test_cli_cache_images(capsys):
    code, data = _json(["cache", "minimax-m3", "--T", "1000", "--images", "3"], capsys)
    _, plain = _json(["cache", "minimax-m3", "--T", str(1000 + 3 * 5184)], capsys)
    assert code == 0
    assert (data["T"], data["T_text"], data["vision_tokens"]) == (1000 + 3 * 5184, 1000, 3 * 5184)
    assert data["bytes"] == plain["bytes"]


@pytest.mark.parametrize("argv", [["flops", "llama-3.1-8b", "--phase", "prefill", "--T", "10", "--images", "1"],
                                  ["cache", "qwen3-8b", "--T", "10", "--images", "2"],
                                  ["cache", "kimi-k2.5", "--T", "10", "--images", "-1"]])
def test_cli_images_errors(argv, capsys):
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 2 and "--images" in err and len(err.strip().splitlines()) == 1
