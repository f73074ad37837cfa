"""Cache bytes and inference memory: seed cases, GPU fit, and clear errors."""
import json

import pytest

import symcost
from symcost.cli import main
from symcost.hardware.gpus import gpu
from symcost.serving.memory import cache_bytes_total, inference_memory


def test_seed_llama_kv_formula():
    """Seed 004: KV = 2·B·T·L·H_kv·D_h·bytes."""
    m = symcost.build("llama-3.1-70b")
    B, T = 3, 5000
    total, _ = cache_bytes_total(m, "bf16", m.values_with(T=T, B=B))
    assert total == 2 * B * T * 80 * 8 * 128 * 2


def test_fp8_halves_bf16():
    m = symcost.build("qwen3-8b")
    v = m.values_with(T=1234, B=2)
    assert 2 * cache_bytes_total(m, "fp8", v)[0] == cache_bytes_total(m, "bf16", v)[0]


def test_memory_fit_is_monotonic_in_batch():
    m = symcost.build("llama-3.1-70b")
    small = inference_memory(m, T=8192, B=1, gpu=gpu("H100"), tp=4)
    assert small.fits and small.max_batch >= 1
    big = inference_memory(m, T=8192, B=small.max_batch + 1, gpu=gpu("H100"), tp=4)
    at_max = inference_memory(m, T=8192, B=small.max_batch, gpu=gpu("H100"), tp=4)
    assert at_max.per_gpu_bytes <= at_max.usable_bytes < big.per_gpu_bytes


def test_weights_dtype_int4_is_a_quarter_of_bf16():
    m = symcost.build("llama-3.1-8b")
    a = inference_memory(m, T=1, B=1, weights_dtype="bf16").weights_bytes
    b = inference_memory(m, T=1, B=1, weights_dtype="int4").weights_bytes
    assert a == 4 * b == 2 * m.params().total_at(m.values)


@pytest.mark.parametrize("argv,needle", [
    (["memory", "llama-3.1-8b", "--T", "10", "--batch", "1", "--gpu", "H900"], "H900"),
    (["memory", "llama-3.1-8b", "--T", "10", "--batch", "1", "--tp", "3"], "--tp 3"),
    (["memory", "llama-3.1-8b", "--T", "10", "--batch", "1", "--ep", "2"], "--ep 2"),
    (["memory", "llama-3.1-8b", "--T", "10", "--batch", "1", "--weights-dtype", "fp5"], "fp5"),
])
def test_memory_bad_input(argv, needle, capsys):
    code = main(argv + ["--json"])
    out, err = capsys.readouterr()
    assert code == 2 and needle in json.loads(out)["error"] and err.count("\n") == 1


def test_memory_json_keys(capsys):
    assert main(["memory", "llama-3.1-8b", "--T", "4096", "--batch", "4", "--gpu", "H100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    for key in ("weights_bytes", "cache_bytes", "activation_bytes", "total_bytes", "per_gpu_bytes",
                "gpus_needed", "max_batch", "fits"):
        assert key in data
    gpus = data["gpus"]
    assert data["total_bytes"] == (data["weights_bytes"] + data["cache_bytes"]
                                   + gpus * (data["activation_bytes"] + data["overhead_bytes_per_gpu"]))
    # one H100 holds Llama-3.1-8B in bf16 with room for many 4K requests
    assert data["fits"] is True and data["max_batch"] >= 4 and data["gpus_needed"] == 1
    assert data["max_concurrency"] * 4096 == pytest.approx(data["kv_capacity_tokens"], rel=0.01)


@pytest.mark.parametrize("argv,needle", [
    (["--tp", "16"], None),  # valid: 64 query heads split, the 8 KV heads replicated past H_kv
    (["--tp", "3"], "--tp 3"),
    (["--pp", "200"], "--pp 200"),
    (["--ep", "2"], "routed experts"),
])
def test_serving_layout_constraints(argv, needle, capsys):
    code = main(["memory", "llama-3.1-70b", "--T", "1000", "--batch", "1", "--gpu", "H100", *argv, "--json"])
    out, _ = capsys.readouterr()
    if needle is None:
        assert code == 0
        return
    assert code == 2 and needle in json.loads(out)["error"]


def test_quantized_checkpoint_is_the_default_and_deepseek_v3_fits_8_h200(capsys):
    """The FP8 checkpoint (with its block scales) is what is loaded: DeepSeek-V3 fits on 8×H200 at TP8."""
    assert main(["memory", "deepseek-v3", "--T", "32768", "--batch", "8", "--gpu", "H200", "--tp", "8",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["weights_bytes"] < 700e9 and data["fits"] is True
    assert data["component_dtypes"]["moe_layers/mlp/experts_down"].startswith("fp8")
    assert main(["memory", "deepseek-v3", "--T", "32768", "--batch", "8", "--gpu", "H200", "--tp", "8",
                 "--weights-dtype", "bf16", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fits"] is False


def test_unknown_quantization_method_exits_2(tmp_path, capsys):
    from symcost.architectures.loader import read_json
    raw = dict(read_json("llama-3.1-8b")[1], quantization_config={"quant_method": "hqq"})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    code = main(["memory", str(path), "--T", "100", "--batch", "1", "--json"])
    assert code == 2 and "quant_method" in json.loads(capsys.readouterr().out)["error"]
    assert main(["memory", str(path), "--T", "100", "--batch", "1", "--quant-fallback", "--json"]) == 0


def test_vllm_pages_full_attention_in_blocks_of_16():
    from symcost.serving.vllm import paged_cache
    m = symcost.build("llama-3.1-8b")
    v = m.values_with(T=1000, B=1)
    assert cache_bytes_total(m, "bf16", v, paged_cache(m))[0] == 131072 * 1008  # ⌈1000/16⌉·16


def test_vllm_sliding_window_keeps_w_minus_1_plus_batched_plus_a_block():
    from symcost.serving.vllm import paged_cache
    m = symcost.build("gemma-2-9b-it")  # W = 4096, 21 sliding + 21 full layers, H_kv·D_h = 8·256
    v = m.values_with(T=100_000, B=1)
    _, by = cache_bytes_total(m, "bf16", v, paged_cache(m, 16, 8192))
    per_token_layer = 2 * 8 * 256 * 2
    assert by["swa_layers/self_attn"] == 21 * per_token_layer * (-(-(4095 + 8192) // 16) + 1) * 16
    assert by["full_layers/self_attn"] == 21 * per_token_layer * 100_000


def test_seed_nemotron_kv_at_1m_is_12_gib():
    """Seed 000 §2.10 / 001 §4.2.5: 12 GQA layers, H_kv = 2, D_h = 128, T = 2^20, BF16 = 12 GiB."""
    m = symcost.build("nemotron-3-ultra-550b-a55b")
    _, by = cache_bytes_total(m, "bf16", m.values_with(T=2**20, B=1))
    assert by["attention_layers/self_attn"] == 12 * 2**30


def test_seed_mla_latent_cache_61_layers_256k():
    """Seed 001 §4.3: 61 MLA layers, d_kv = 512, D_rope = 64, T = 256K: 18,421,383,168 bytes."""
    m = symcost.build("deepseek-v3")
    total, _ = cache_bytes_total(m, "bf16", m.values_with(T=256 * 1024, B=1))
    assert total == 18_421_383_168


def test_vllm_data_point_gpt_oss_120b_73728_bytes_per_token():
    """vLLM: gpt-oss-120b holds 73,728 bytes of KV per token (36 layers × 2 × 8 × 64 × 2)."""
    from symcost.architectures.loader import read_json
    _, raw = read_json("gpt-oss-20b")
    raw = {**raw, "num_hidden_layers": 36, "num_local_experts": 128,
           "layer_types": ["sliding_attention", "full_attention"] * 18}
    m = symcost.build(raw)
    one_token, _ = cache_bytes_total(m, "bf16", m.values_with(T=1, B=1))
    assert one_token == 73_728


def test_tp_shards_gqa_heads_and_replicates_latents():
    """Per-rank cache: GQA splits KV heads until tp exceeds them, then replicates; MLA replicates."""
    from symcost.serving.memory import cache_bytes_per_gpu
    m = symcost.build("llama-3.1-70b")  # H_kv = 8
    v = m.values_with(T=1000, B=1)
    full, _ = cache_bytes_total(m, "bf16", v)
    assert cache_bytes_per_gpu(m, "bf16", v, 8) == full // 8
    assert cache_bytes_per_gpu(m, "bf16", v, 16) == full // 8  # one KV head per rank, replicated
    ds = symcost.build("deepseek-v3")
    v = ds.values_with(T=1000, B=1)
    assert cache_bytes_per_gpu(ds, "bf16", v, 8) == cache_bytes_total(ds, "bf16", v)[0]


def test_memory_formulas_parse_back_and_reproduce_the_numbers(capsys):
    """The JSON "formula" object: every term in N_tp, N_ep, N_pp, T, B, M, M_gpu parses back with
    symcost.parse, and substituting the call's values gives the printed integers."""
    import sympy

    from symcost.core.exprparse import parse
    assert main(["memory", "deepseek-v3", "--T", "32768", "--batch", "8", "--gpu", "H200", "--tp", "8",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    vals = {parse(k): sympy.Integer(v) for k, v in data["formula_values"].items()}
    vals[parse("B")] = sympy.Integer(8)
    f = {k: parse(v) for k, v in data["formula"].items()}
    assert int(sympy.ceiling(f["weights_per_gpu"].xreplace(vals))) == data["weights_per_gpu_bytes"]
    assert int(f["kv_capacity_tokens"].xreplace(vals)) == data["kv_capacity_tokens"]
    assert float(f["max_concurrency"].xreplace(vals)) == pytest.approx(data["max_concurrency"])
    assert int(sympy.ceiling(f["total"].xreplace(vals))) == data["per_gpu_bytes"]
    assert {str(s) for s in f["weights_per_gpu"].free_symbols} <= {"N_tp", "N_ep", "N_pp"}


@pytest.mark.parametrize("name, tp", [("llama-3.1-70b", 4), ("qwen3-8b", 1), ("deepseek-v3", 8),
                                      ("qwen3-next-80b-a3b-thinking", 2), ("gpt-oss-20b", 2),
                                      ("gemma-2-9b-it", 1), ("nemotron-3-nano-30b-a3b", 1)])
def test_kv_formula_equals_vllm_rules(name, tp):
    """The symbolic page layout (formulas.kv_formula) substituted equals vllm.kv_capacity's numbers."""
    import sympy

    from symcost.architectures.loader import read_json
    from symcost.core.notation import sym
    from symcost.serving.formulas import serve_formulas
    from symcost.serving.quant import checkpoint
    from symcost.serving.vllm import kv_capacity
    m = symcost.build(name)
    f = serve_formulas(m, checkpoint(m, read_json(name)[1]), overhead_bytes=0)
    for avail, T in ((20 * 2**30, 32768), (7 * 2**30 + 12345, 4096)):
        kv = kv_capacity(m, avail, max_model_len=T, tp=tp)
        v = {sym.N_tp: tp, sym.N_pp: 1, sym.N_ep: 1, sym.T: T, sym.M: 8192}
        blocks = int(sympy.floor(sympy.Integer(avail) / f.kv.block_bytes.xreplace(v)))
        assert blocks == kv.num_blocks
        assert int(f.kv.block.xreplace(v)) == kv.block_size
        assert blocks // int(f.kv.groups) * kv.block_size == kv.tokens
        assert int(f.kv.need.xreplace(v)) == kv.blocks_per_request


@pytest.mark.parametrize("name", [n for n in symcost.architectures.loader.bundled_names() if n != "gpt2"])
def test_memory_answers_for_every_bundled_model(name, capsys):
    """Every bundled model gets a serving-memory answer with a KV capacity (DeepSeek V4's
    compressed caches once crashed the page layout: floor(T/m) entries and ring buffers)."""
    assert main(["memory", name, "--T", "8192", "--batch", "1", "--gpu", "H200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["per_gpu_bytes"] > 0


def test_compressed_cache_pages_grow_as_the_cache_does():
    """DeepSeek V4: a compressed layer keeps ⌊T/m⌋ entries (plus ring buffers of fewer than m
    tokens, a fixed state at their largest), so its pages grow at the cache's own long-run rate:
    Σ per-token bytes of the unwindowed page kinds × their layers = b_kv · d(cache)/dT far past
    every window, with floor(T/m) read as T/m."""
    import sympy

    from symcost.core.notation import sym
    from symcost.core.terms import exact, relax_steps
    from symcost.serving.formulas import _FAR, kv_formula
    m = symcost.build("deepseek-v4-flash")
    f = kv_formula(m, kv_dtype="bf16")
    paged = sum(rate * n for kind, rate, window, n in f.kinds if kind == "full")
    x = m.cache().total.xreplace({sym.B: 1})
    slope = exact(sympy.diff(relax_steps(x, sym.T), sym.T).xreplace({sym.T: _FAR}), m.values)
    assert paged == 2 * slope
    assert any(kind == "state" for kind, *_ in f.kinds)  # the ring buffers
