"""Checkpoint weight bytes from quantization_config, against the published sizes of real checkpoints
(tests/data/checkpoint_sizes.json, each figure with its source)."""
import json
from pathlib import Path

import pytest

import symcost
from symcost.architectures import loader
from symcost.core.errors import SymcostError
from symcost.serving.quant import checkpoint, scheme

DATA = json.loads((Path(__file__).parent / "data" / "checkpoint_sizes.json").read_text())["checkpoints"]
ROOT = Path(__file__).parent.parent


def _load(entry):
    source = entry["model"]
    if source.endswith(".json"):
        raw = json.loads((ROOT / source).read_text())
        return symcost.build(dict(raw)), raw
    return symcost.build(source), loader.read_json(source)[1]


@pytest.mark.parametrize("entry", [e for e in DATA if e["kind"] == "total_size"], ids=lambda e: e["repo"])
def test_weight_bytes_equal_published_total_size(entry):
    """metadata.total_size is the sum of tensor bytes: the checkpoint's every weight, packed
    block and scale. gpt-oss (MXFP4) and Kimi K2.5 (INT4 pack-quantized) agree to the byte."""
    m, raw = _load(entry)
    assert checkpoint(m, raw).total(m.values) == entry["bytes"]


@pytest.mark.parametrize("entry", [e for e in DATA if e["kind"] == "file_bytes"], ids=lambda e: e["repo"])
def test_weight_bytes_within_published_file_bytes(entry):
    """File bytes = tensor bytes + each shard's safetensors header (8 bytes + JSON listing its
    tensors). DeepSeek-V3 (FP8 128x128 blocks, fp32 scales, the MTP layer with its own embedding
    and head copies): 11,889,417 bytes (0.0017 %) below the files, about 130 bytes of header per
    tensor over 163 shards."""
    m, raw = _load(entry)
    ours = checkpoint(m, raw).total(m.values)
    assert ours <= entry["bytes"]
    assert (entry["bytes"] - ours) / entry["bytes"] < 1e-3
    assert entry["bytes"] - ours == 11_889_417


def test_deepseek_v3_without_mtp_copies_would_be_off_by_more_than_the_headers():
    """The MTP module's embed_tokens and shared_head.head copies are in the checkpoint: without
    them the total would be 3.7 GB (0.54 %) short."""
    entry = next(e for e in DATA if e["repo"] == "deepseek-ai/DeepSeek-V3")
    m, raw = _load(entry)
    ck = checkpoint(m, raw)
    copies = sum(ck.depth(m.values, 4)[f"checkpoint_extras/mtp/{k}"] for k in ("embed_tokens", "shared_head_head"))
    assert copies == 2 * 129280 * 7168 * 2
    assert (entry["bytes"] - (ck.total(m.values) - copies)) / entry["bytes"] > 5e-3


def test_minimax_nvfp4_storage_by_dtype():
    """nvidia/MiniMax-M2.5-NVFP4: the NVFP4 experts' packed e2m1 bytes (U8) and fp8 group scales
    (F8_E4M3) equal the published counts exactly. The checkpoint keeps the ignored attention
    projections in F32 (exactly their 2,730,491,904 weights) though config.json says bfloat16, so
    the file is 5,460,983,808 bytes (3.9 %) larger than the bf16 weights vLLM loads; the published
    BF16 elements are the embedding, head, norms, routers and routing bias exactly."""
    entry = next(e for e in DATA if e["kind"] == "dtype_counts")
    m, raw = _load(entry)
    ck = checkpoint(m, raw)
    by = {k: int(v.xreplace(m.values)) for k, v in ck.storage.depth(1).items()}
    counts = entry["counts"]
    assert by["U8"] == counts["U8"]
    assert by["F8_E4M3"] == counts["F8_E4M3"]
    params = m.params().at(m.values)
    attn = sum(v for k, v in params.items() if "/self_attn/" in k and k.rsplit("/", 1)[-1].endswith("_proj"))
    assert attn == counts["F32"]
    buffers = m.buffers().total_at(m.values)
    assert params_sum_without(params, ("/self_attn/q_proj", "/self_attn/k_proj", "/self_attn/v_proj",
                                       "/self_attn/o_proj", "/mlp/experts_")) + buffers == counts["BF16"]
    assert ck.dtypes["layers/self_attn/q_proj"] == "bf16"
    assert ck.dtypes["layers/mlp/router"] == "bf16"
    assert ck.dtypes["layers/mlp/experts_gate_up"].startswith("nvfp4")


def params_sum_without(params, parts):
    return sum(v for k, v in params.items() if not any(p in k for p in parts))


def test_kimi_ignore_list_keeps_attention_shared_and_dense_in_bf16():
    m, raw = symcost.build("kimi-k2.5"), loader.read_json("kimi-k2.5")[1]
    d = checkpoint(m, raw).dtypes
    assert d["moe_layers/mlp/experts_down"].startswith("int4 packed")
    for path in ("moe_layers/self_attn/q_b_proj", "moe_layers/mlp/shared_down_proj",
                 "dense_layers/mlp/gate_proj", "lm_head", "vision_layers/vision_block/fc1"):
        assert d[path] == "bf16", path


def test_override_and_experts_dtype():
    m, raw = symcost.build("deepseek-v3"), loader.read_json("deepseek-v3")[1]
    n, buf = m.params().total_at(m.values), 4 * m.buffers().total_at(m.values)  # buffers in fp32
    assert checkpoint(m, raw, override="bf16").total(m.values, served=True) == 2 * n + buf
    routed = m.routed_params().total_at(m.values)
    fp4 = checkpoint(m, raw, override="bf16", experts_dtype="fp4").total(m.values, served=True)
    assert fp4 == 2 * (n - routed) + routed // 2 + buf


@pytest.mark.parametrize("q, field", [
    ({"quant_method": "bitsandbytes"}, "quant_method"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, "weight_block_size"),
    ({"quant_method": "compressed-tensors", "config_groups": {}}, "config_groups"),
])
def test_bad_quantization_config_names_the_field(q, field):
    with pytest.raises(SymcostError, match=field):
        scheme({"quantization_config": q})


def test_unknown_method_falls_back_only_when_told():
    s = scheme({"quantization_config": {"quant_method": "bitsandbytes"}}, fallback=True)
    assert s.method == "fallback" and "bitsandbytes" in s.note


def test_fp8_block_scales_round_up_partial_blocks():
    """A 100x300 matrix in 128x128 blocks has ⌈300/128⌉·⌈100/128⌉ = 3 fp32 scales (README_WEIGHTS:
    unaligned blocks are padded)."""
    lay = scheme({"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}).layout
    assert lay.parts(100, 300) == {"F8_E4M3": 30000, "F32": 12}


@pytest.mark.parametrize("q, parts", [
    # AWQ int4 g128, 256 -> 64: qweight int32 [256, 8], qzeros int32 [2, 8], scales fp16 [2, 64]
    ({"quant_method": "awq", "bits": 4, "group_size": 128}, {"I32": 256 * 8 * 4 + 2 * 8 * 4, "F16": 2 * 64 * 2}),
    # GPTQ int4 g128: qweight int32 [32, 64], qzeros int32 [2, 8], scales fp16 [2, 64], g_idx int32 [256]
    ({"quant_method": "gptq", "bits": 4, "group_size": 128},
     {"I32": 32 * 64 * 4 + 2 * 8 * 4 + 256 * 4, "F16": 2 * 64 * 2}),
])
def test_awq_gptq_tensor_shapes(q, parts):
    assert scheme({"quantization_config": q}).layout.parts(256, 64) == parts


def _tensor_bytes(module) -> dict[str, int]:
    """Bytes of a module's parameters by safetensors dtype name (meta tensors: shapes only)."""
    names = {"float8_e4m3fn": "F8_E4M3", "float8_e8m0fnu": "F8_E8M0", "float32": "F32", "int8": "I8",
             "bfloat16": "BF16"}
    out: dict[str, int] = {}
    for p in module.parameters():
        key = names[str(p.dtype).removeprefix("torch.")]
        out[key] = out.get(key, 0) + p.numel() * p.element_size()
    return out


@pytest.mark.parametrize("scale_fmt", ["float", "ue8m0"])
@pytest.mark.parametrize("expert_dtype", ["fp8", "fp4"])
def test_fp8_and_fp4_experts_equal_transformers_allocation(scale_fmt, expert_dtype):
    """DeepSeek V4's checkpoint format: fp8 block-quantized matrices with fp32 or 1-byte E8M0
    scales (``scale_fmt``) and routed experts in fp8 or FP4 (``expert_dtype``: two e2m1 per byte,
    one scale per row and 32 inputs). The engine's bytes of one expert stack and one dense matrix
    equal the tensors transformers allocates for them (``FP8Experts`` / ``FP8Linear``)."""
    torch = pytest.importorskip("torch")
    fp8 = pytest.importorskip("transformers.integrations.finegrained_fp8")
    from types import SimpleNamespace

    from symcost.core.primitives import Linear
    from symcost.serving.quant import _matrix_parts
    E, d, f, block = 6, 320, 200, (128, 128)
    q = {"quant_method": "fp8", "weight_block_size": list(block), "scale_fmt": scale_fmt,
         "expert_dtype": expert_dtype}
    s = scheme({"quantization_config": q, "torch_dtype": "bfloat16"})
    cfg = SimpleNamespace(hidden_size=d, num_local_experts=E, moe_intermediate_size=f, hidden_act="silu")
    with torch.device("meta"):
        experts = fp8.FP8Experts(cfg, block_size=block, scale_fmt=scale_fmt, expert_dtype=expert_dtype)
        linear = fp8.FP8Linear(d, f, block_size=block, scale_fmt=scale_fmt)
    lay = s.experts or s.layout
    mine: dict[str, int] = {}
    for p in (Linear("gate_up", d, 2 * f, copies=E), Linear("down", f, d, copies=E)):
        for k, v in _matrix_parts(p, lay, s.base)[0].items():
            mine[k] = mine.get(k, 0) + int(v)
    assert mine == _tensor_bytes(experts)
    dense = {k: int(v) for k, v in _matrix_parts(Linear("proj", d, f), s.layout, s.base)[0].items()}
    assert dense == _tensor_bytes(linear)


def test_expert_dtype_at_the_top_level_is_read_as_transformers_moves_it():
    """DeepSeek V4's config.json states ``expert_dtype`` beside ``quantization_config``; the config
    class moves it inside. Both spellings give FP4 experts; anything but fp8/fp4 is refused."""
    q = {"quant_method": "fp8", "weight_block_size": [128, 128], "scale_fmt": "ue8m0"}
    assert scheme({"quantization_config": q, "expert_dtype": "fp4"}).experts.kind == "fp4_rows"
    assert scheme({"quantization_config": {**q, "expert_dtype": "fp4"}}).experts.kind == "fp4_rows"
    assert scheme({"quantization_config": q}).experts is None
    with pytest.raises(SymcostError, match="expert_dtype"):
        scheme({"quantization_config": {**q, "expert_dtype": "int4"}})
