"""The engine accounting's terms one by one (serving/profile.py, plan.py, quant.expert_padding) and
the memory command's engine options, bad input included."""
import json

import pytest
import sympy

import symcost
from symcost.cli import main
from symcost.core.notation import sym
from symcost.core.terms import exact
from symcost.hardware.gpus import gpu
from dataclasses import replace

from symcost.serving.plan import Layout, ServeSetup, _engine_formulas, deciding_rank, plan, pp_partition
from symcost.serving.profile import (Engine, forward_terms, intermediate_buffer_terms, model_runner, profile,
                                    runner_buffer_terms, sampler_terms, sampler_terms_v2)

from tests.startup_logs import model

GiB = 2**30
QWEN3_32B = "tests/data/checkpoints/Qwen--Qwen3-32B.config.json"


def _at(expr, **v):
    vals = {sym.M: v.get("M", 8192), sym.N_tp: v.get("tp", 1), sym.N_ep: 1, sym.N_pp: 1}
    return int(sympy.ceiling(expr.xreplace({k: sympy.Integer(x) for k, x in vals.items()})))


def test_sampler_holds_the_top_k_top_p_worst_case():
    """38 bytes per (sequence, vocabulary entry) with bf16 logits inside the sort, + the forward's
    hidden states (on a 24 GB card vLLM 0.10.2 logs 1.40 GiB of peak activation for Qwen3-8B-FP8 at
    S = 256: 38·256·151,936 B + the hidden states = 1.39 GiB; tests/data/serving_startup_logs.json)."""
    m = symcost.build("llama-3.1-8b")
    t = sampler_terms(m, 1024)
    V, d = 128256, 4096
    assert _at(t.total) == 1024 * V * 38 + 8192 * d * 2
    assert _at(t.total, M=512) == 512 * V * 38 + 512 * d * 2  # S = min(max_num_seqs, M)
    assert set(t.flatten()) >= {"sort_indices", "logits_fp32", "sort_double_buffer"}


def test_forward_terms_dense_and_fused_moe():
    m = symcost.build("llama-3.1-8b")
    f = forward_terms(m)
    # residual + its copy + norm output: 3·d; the MLP's gate_up 2·d_ff + activation d_ff + down d
    assert _at(f.total) == 8192 * 2 * (3 * 4096 + 3 * 14336 + 4096)
    q = symcost.build("qwen3-30b-a3b")
    ft = forward_terms(q).flatten()
    assert "router" in ft  # M·E bf16 logits + top-k weights and ids
    assert _at(ft["router"]) == 8192 * (128 * 2 + 8 * 8)
    # the fused-MoE workspaces at M·k rows: gate_up 2N/e + activation N/e + down d, k = 8, N = 768
    assert _at(ft["layer_transient"], tp=1) >= 8192 * 2 * 8 * (2 * 768 + 768 + 2048)


def test_engine_defaults_follow_the_gpu_and_version():
    assert Engine().limits(gpu("H100"), 8192) == (8192, 1024)
    assert Engine().limits(gpu("A100"), 8192) == (2048, 256)  # A100 excluded from the large defaults
    assert Engine().limits(gpu("B200"), 8192) == (16384, 1024)  # >= 160 GiB: the largest defaults, from 0.28
    assert Engine(version="0.27.1").limits(gpu("B200"), 8192) == (8192, 1024)
    assert Engine().limits(gpu("H200"), 8192) == (8192, 1024)  # 139.8 GiB
    assert Engine(version="0.6").limits(gpu("RTX-3090"), 20000) == (20000, 256)  # V0 without chunked prefill
    assert Engine(version="0.7").limits(gpu("RTX-4090"), 131072) == (2048, 256)  # chunked prefill past 32K
    assert Engine(max_num_seqs=64, max_batched_tokens=4096).limits(gpu("H100"), 8192) == (4096, 64)


def test_pipeline_stages_split_as_vllm_and_the_deciding_stage():
    assert pp_partition(61, 4) == [15, 15, 16, 15]
    assert pp_partition(32, 4) == [8, 8, 8, 8]
    m = symcost.build("deepseek-v3")
    r = deciding_rank(m, Layout(pp=4))
    assert r["pp_stage"] == 2 and r["layers_per_stage"] == [15, 15, 16, 15]
    even = deciding_rank(symcost.build("llama-3.1-8b"), Layout(pp=2))
    assert even["pp_stage"] == 1  # equal splits: the last stage, with the head and the sampler


def test_kv_cache_memory_skips_the_profile():
    m = symcost.build("llama-3.1-8b")
    raw = symcost.architectures.loader.read_json("llama-3.1-8b")[1]
    p = plan(m, raw, ServeSetup(gpu=gpu("H100"), overhead_gib=None, max_batched_tokens=None,
                                kv_cache_memory=20 * GiB), T=8192)
    assert p.kv_available_rank == 20 * GiB
    assert p.kv.num_blocks == 20 * GiB // (16 * 32 * 2 * 8 * 128 * 2)


def test_sglang_pool_is_the_fraction_less_weights():
    m = symcost.build("llama-3.1-8b")
    raw = symcost.architectures.loader.read_json("llama-3.1-8b")[1]
    s = ServeSetup(gpu=gpu("H100"), overhead_gib=None, max_batched_tokens=None, engine="sglang", mem_util=0.85)
    p = plan(m, raw, s, T=8192)
    assert p.activation_rank == 0  # activations live outside mem_fraction_static
    assert p.kv.tokens == p.kv_available_rank // (32 * 2 * 8 * 128 * 2)


def _run(capsys, *args):
    code = main(["memory", "llama-3.1-8b", "--T", "8192", "--batch", "1", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_model_runner_by_release():
    """vLLM's default runner, each release's ``VllmConfig.use_v2_model_runner`` (read from the wheels)."""
    def mr(v, arch="Qwen3ForCausalLM", **kw):
        return model_runner(Engine(version=v), architectures=[arch], **kw)
    assert mr("0.21") == "v1" and mr("0.11") == "v1"
    assert mr("0.22") == "v2" and mr("0.22", "LlamaForCausalLM") == "v1" and mr("0.23", "LlamaForCausalLM") == "v2"
    assert mr("0.22", quantized=True) == "v1" and mr("0.24", quantized=True) == "v2"  # 0.22/0.23: unquantized only
    assert mr("0.24", "Qwen2MoeForCausalLM", moe=True) == "v2" and mr("0.24", "GemmaForCausalLM") == "v1"
    assert mr("0.25", "GemmaForCausalLM") == "v2" and mr("0.27.1", "Qwen3MoeForCausalLM", moe=True) == "v1"
    assert mr("0.27", "KimiK3ForConditionalGeneration", moe=True) == "v2" and mr("0.26", "KimiK3ForConditionalGeneration", moe=True) == "v1"
    assert mr("0.28", "NemotronHForCausalLM", hybrid=True) == "v1" and mr("0.28", "MambaForCausalLM", attention_free=True) == "v1"
    assert mr("0.29", "Qwen3MoeForCausalLM", moe=True, hybrid=True) == "v2" and mr("0.33") == "v2"
    assert model_runner(Engine("sglang", "0.33")) == "v1"
    # through real configs: architectures, experts, cache kinds
    for name, v, want in ((QWEN3_32B, "0.27.1", "v2"), ("qwen3-30b-a3b", "0.27.1", "v1"), ("qwen3-30b-a3b", "0.29", "v2"),
                          ("qwen3-next-80b-a3b-thinking", "0.28", "v1"), ("llama-3.1-8b", "0.22", "v1"),
                          ("llama-3.1-8b", "0.23", "v2")):
        m, raw = model(name)
        p = plan(m, raw, ServeSetup(gpu=gpu("H100"), vllm_version=v), T=8192)
        assert p.profile.runner == want, (name, v)


def test_model_runner_v2_sampler_terms():
    """Model Runner V2's dummy sampler: before 0.33 the default sampling state (no fp32 copy, no sort),
    gumbel_sample's int64 + fp32 partials per 1024-entry block; from 0.33 the warmup-parameter pass:
    fp32 logits, FlashInfer's top-k mask and softmax (4 B each per sequence and vocabulary entry)."""
    m = symcost.build("llama-3.1-8b")
    V, d = 128256, 4096
    old = sampler_terms_v2(m, 1024, "0.27.1").flatten()
    assert set(old) == {"hidden_states", "logits", "gumbel_partials"}
    assert _at(old["gumbel_partials"]) == 1024 * 126 * (8 + 4)  # ceil(128256 / 1024) = 126 blocks
    assert _at(sum(old.values(), sympy.Integer(0))) == 8192 * d * 2 + 1024 * V * 2 + 1024 * 126 * 12
    new = sampler_terms_v2(m, 1024, "0.33").flatten()
    assert {k: _at(v) for k, v in new.items() if k not in ("hidden_states", "logits")} == \
        {"logits_fp32": 4 * 1024 * V, "topk_masked_logits": 4 * 1024 * V, "topk_probs": 4 * 1024 * V}
    assert _at(new["logits"], M=512) == 512 * V * 2  # S = min(max_num_seqs, M), as V1's
    # 0.33 V2 (14 B per entry) stays below V1's sorted sampler (38 B)
    assert _at(sampler_terms_v2(m, 256, "0.33").total) < _at(sampler_terms(m, 256).total)


def test_model_runner_v2_buffers_and_graphs():
    """The sampler state Model Runner V2 holds before the KV cache (last pipeline stage only), a later
    stage's intermediate buffers (both runners), and no CUDA-graph estimate from V2 before 0.29."""
    m, raw = model(QWEN3_32B)
    V, d, S = 151936, 5120, 1024
    b = runner_buffer_terms(m, S).flatten()
    assert {k: int(v) for k, v in b.items()} == {"penalty_output_bins": 4 * S * V, "penalty_prompt_mask": 4 * S * 4748,
                                                  "grammar_bitmask": 4 * S * 4748}  # ceil(151936 / 32) = 4748
    assert _at(intermediate_buffer_terms(m).total) == 2 * 8192 * d * 2
    g = gpu("H100")
    for v, counted in (("0.27.1", False), ("0.29", True)):
        p = profile(m, g, Engine(version=v), max_model_len=32768, runner="v2")
        assert (p.cudagraph_bytes != 0) is counted, v
        assert p.buffers.total.xreplace({sym.N_pp: 1}) == runner_buffer_terms(m, S).total  # one stage
        assert _at(p.buffers.total.xreplace({sym.N_pp: 2})) == runner_buffer_terms(m, S).total + 2 * 8192 * d * 2
    assert profile(m, g, Engine(version="0.21"), max_model_len=32768).cudagraph_bytes != 0  # the V1 runner
    p = plan(m, raw, ServeSetup(layout=Layout(pp=2), gpu=g, vllm_version="0.27.1"), T=32768)
    first, last = (f.profile for f in p.formulas.stages)
    assert not first.buffers.flatten() and not first.sampler.flatten()
    assert set(last.buffers.flatten()) == {"penalty_output_bins", "penalty_prompt_mask", "grammar_bitmask",
                                           "intermediate_buffers"}
    one = plan(m, raw, ServeSetup(gpu=g, vllm_version="0.27.1"), T=32768)
    assert "runner_buffers/penalty_output_bins" in one.activation_terms()
    with pytest.raises(symcost.SymcostError, match="--model-runner"):
        profile(m, g, Engine(), max_model_len=8192, runner="v3")


@pytest.mark.parametrize("args, flag", [
    (("--engine", "tgi"), "--engine"),
    (("--gpu", "H100", "--moe-backend", "cutlass"), "--moe-backend"),
    (("--gpu-memory", "4GiB"), "--gpu-memory"),
    (("--gpu", "H100", "--kv-cache-memory", "1000"), "--kv-cache-memory"),
    (("--gpu-memory", "lots"), "--gpu-memory"),
    (("--gpu", "H100", "--vllm-version", "new"), "--vllm-version"),
])
def test_bad_engine_options_exit_2_naming_the_option(capsys, args, flag):
    code, out, err = _run(capsys, *args)
    assert code == 2 and flag in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_memory_json_has_the_engine_terms(capsys):
    code, out, _ = _run(capsys, "--gpu-memory", "23.58GiB", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["usable_bytes_per_gpu"] == int(sympy.Rational("23.58") * GiB)
    for key in ("activation_terms", "non_torch_bytes_per_gpu", "cudagraph_bytes_per_gpu", "weights_loaded_bytes",
                "deciding_rank", "kv_available_bytes_per_gpu"):
        assert key in d, key
    # the default release (0.33) runs Model Runner V2 for Llama: its warmup-parameter sampler pass and its sampler state
    assert d["model_runner"] == "v2"
    t = d["activation_terms"]["sampler/topk_probs"]
    assert t["bytes"] == exact(symcost.parse(t["formula"]), {sym.M: 2048}) == 4 * 256 * 128256
    assert d["activation_terms"]["runner_buffers/penalty_output_bins"]["bytes"] == 4 * 256 * 128256
    for flags in (("--vllm-version", "0.21"), ("--model-runner", "v1")):  # the V1 runner: the sorted sampler
        code, out, _ = _run(capsys, "--gpu-memory", "23.58GiB", "--json", *flags)
        d = json.loads(out)
        assert d["model_runner"] == "v1" and "runner_buffers/penalty_output_bins" not in d["activation_terms"]
        t = d["activation_terms"]["sampler/sort_indices"]
        assert t["bytes"] == exact(symcost.parse(t["formula"]), {sym.M: 2048}) == 8 * 256 * 128256
    code, out, _ = _run(capsys, "--gpu", "H100", "--kv-cache-memory", "20GiB", "--json")
    assert json.loads(out)["kv_available_bytes_per_gpu"] == 20 * GiB
    code, out, _ = _run(capsys, "--gpu", "H100", "--gpu-memory-utilization", "0.8", "--max-num-seqs", "64", "--json")
    d = json.loads(out)
    assert d["mem_util"] == 0.8 and d["max_num_seqs"] == 64


@pytest.mark.parametrize("name", ["gemma-4-26b-a4b", "qwen3-next-80b-a3b-thinking", "nemotron-h-56b-base-8k"])
def test_hybrid_pages_unified_one_implementation(name):
    """Gemma 4 (sliding pages twice the full ones), Qwen3-Next and Nemotron-H (state pages): vLLM's
    groups share one page size; kv_capacity and memory's plan are the same code and agree."""
    from symcost.architectures import loader
    from symcost.serving.formulas import kv_formula
    from symcost.serving.vllm import kv_capacity
    m = symcost.build(name)
    raw = loader.read_json(name)[1]
    kv = kv_capacity(m, 20 * GiB, max_model_len=131072)
    assert kv.tokens > 0 and kv.page_bytes > 0
    f = kv_formula(m)
    vals = {sym.N_tp: 1, sym.N_pp: 1, sym.N_ep: 1, sym.T: 131072, sym.M: 8192}
    kinds = {k[0] for k in f.kinds}
    if kinds == {"sliding", "full"}:  # Gemma 4: per-token bytes differ, the pages are made equal
        pts = {int(k[1].xreplace(vals)) for k in f.kinds}
        assert len(pts) == 2 and kv.page_bytes == 16 * max(pts)
        # a full layer's block is raised to largest page / its page · 16 tokens = 32
        full_pt = min(pts)
        assert kv.page_bytes // full_pt == 32
    else:
        assert "state" in kinds and any("padded" in n for n in kv.notes)
    p = plan(m, raw, ServeSetup(gpu=gpu("H200"), kv_cache_memory=20 * GiB, overhead_gib=None,
                                max_batched_tokens=8192), T=131072)
    assert (p.kv.tokens, p.kv.num_blocks) == (kv.tokens, kv.num_blocks)


def test_modelopt_hf_quant_config_beside_config_json(tmp_path, capsys):
    """A ModelOpt checkpoint's hf_quant_config.json is read as its quantization_config (NVFP4 here):
    the weights cost 4.5 bits (+ scales), not the config's bf16."""
    import shutil

    from symcost.architectures import loader
    d = tmp_path / "Llama-3.1-8B-Instruct-NVFP4"
    d.mkdir()
    shutil.copy(loader.BUNDLED / "llama-3.1-8b.json", d / "config.json")
    (d / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                                            "exclude_modules": ["lm_head"]}}))
    _, raw = loader.read_json(str(d))
    assert raw["quantization_config"]["quant_method"] == "modelopt"
    code = main(["memory", str(d), "--T", "4096", "--batch", "1", "--json"])
    out = capsys.readouterr()
    d16 = json.loads(out.out)
    assert code == 0 and "nvfp4" in d16["quantization"] and "warning" not in out.err
    assert d16["weights_bytes"] < 16_060_522_496 * 0.45  # 4-bit body, bf16 embedding and head


def test_quantised_name_without_quantisation_warns_once(tmp_path, capsys):
    import shutil

    from symcost.architectures import loader
    d = tmp_path / "Llama-3.1-8B-Instruct-AWQ"
    d.mkdir()
    shutil.copy(loader.BUNDLED / "llama-3.1-8b.json", d / "config.json")
    assert main(["memory", str(d), "--T", "4096", "--batch", "1"]) == 0
    err = capsys.readouterr().err
    assert err.count("the name says AWQ") == 1
    assert main(["memory", str(d), "--T", "4096", "--batch", "1", "--weights-dtype", "int4"]) == 0
    assert "the name says" not in capsys.readouterr().err  # the dtype is stated


def test_engine_default_fractions(capsys):
    """Without --mem-util: vLLM's 0.9; SGLang's mem_fraction_static by TP size (0.85 at TP 4, what
    the QwQ-32B SGLang log of tests/data/serving_startup_logs.json implies)."""
    from symcost.serving.profile import default_fraction
    assert [default_fraction("sglang", t) for t in (1, 2, 4, 8, 16)] == [0.88, 0.87, 0.85, 0.81, 0.79]
    assert default_fraction("vllm", 8) == 0.9
    code, out, _ = _run(capsys, "--gpu", "H100", "--engine", "sglang", "--tp", "4", "--json")
    assert code == 0 and json.loads(out)["mem_util"] == 0.85


def test_non_torch_terms_by_mechanism():
    """Non-torch memory is named by mechanism (engine_memory.json): kernel modules always; the CUDA
    context only before vLLM 0.6.5's baseline snapshot; NCCL once N_tp·N_pp > 1 (NVLink or PCIe
    class); the custom all-reduce's 2·8 MiB IPC buffers only at its world sizes and, past 2 GPUs,
    inside an NVLink domain (CustomAllreduce.__init__)."""
    from symcost.serving.profile import non_torch_terms
    h100, rtx = gpu("H100"), gpu("RTX-4090")
    new, old = Engine("vllm", "0.10"), Engine("vllm", "0.6.4")
    assert set(non_torch_terms(h100, new, 1).flatten()) == {"kernel_modules", "nccl"}
    assert set(non_torch_terms(h100, new, 8).flatten()) == {"kernel_modules", "nccl", "custom_allreduce"}
    assert "device_baseline" in non_torch_terms(h100, old, 1).flatten()
    one = {sym.N_tp: 1, sym.N_pp: 1}
    nt = non_torch_terms(h100, new, None).flatten()  # any N_tp: the terms vanish at one GPU
    assert exact(nt["nccl"], one) == 0 and exact(nt["custom_allreduce"], one) == 0
    nt2 = non_torch_terms(h100, new, 2).flatten()
    assert exact(nt2["custom_allreduce"], {sym.N_tp: 2, sym.N_pp: 1}) == 16 * 2**20
    assert "custom_allreduce" not in non_torch_terms(rtx, new, 4).flatten()  # 4 PCIe GPUs: off
    assert "custom_allreduce" in non_torch_terms(rtx, new, 2).flatten()
    assert "custom_allreduce" not in non_torch_terms(h100, new, 3).flatten()  # world size 3 unsupported
    pcie = exact(non_torch_terms(rtx, new, 2).flatten()["nccl"], {sym.N_tp: 2, sym.N_pp: 1})
    nvl = exact(nt2["nccl"], {sym.N_tp: 2, sym.N_pp: 1})
    assert 0 < pcie < nvl
    # per peer: TP 8 holds 7 peers' buffers, TP 2 one (A100 TP 8 logged 2.10 GiB, H100 TP 2 0.55)
    nvl8 = exact(non_torch_terms(h100, new, 8).flatten()["nccl"], {sym.N_tp: 8, sym.N_pp: 1})
    assert nvl8 == 7 * nvl


def test_mxfp4_backend_follows_the_triton_kernels_dependency():
    """Triton needs the triton_kernels package, a vLLM dependency from 0.11.1 (PR #27370): a 0.11.0
    install on Hopper loads the experts for Marlin (padded), 0.11.1 on for Triton."""
    from symcost.serving.quant import default_moe_backend
    from symcost.serving.profile import version_tuple
    assert default_moe_backend(gpu("H100"), version_tuple("0.11")) == "marlin"
    assert default_moe_backend(gpu("H100"), version_tuple("0.11.1")) == "triton"
    assert default_moe_backend(gpu("A100-80GB"), version_tuple("0.19")) == "marlin"
    with pytest.raises(Exception, match="--vllm-version"):
        version_tuple("0.x")


def test_uneven_experts_rank_zero_decides():
    """128 experts over 6 EP ranks: vLLM's determine_expert_map gives ranks 0-1 22 experts and the
    rest 21; the plan costs rank 0 (22/128 of the routed bytes, not 1/6) and names it."""
    m = symcost.build("qwen3-30b-a3b")
    raw = symcost.architectures.loader.read_json("qwen3-30b-a3b")[1]
    p6 = plan(m, raw, ServeSetup(layout=Layout.vllm(m, dp=6, ep=6), gpu=gpu("H100")), T=8192)
    p8 = plan(m, raw, ServeSetup(layout=Layout.vllm(m, dp=8, ep=8), gpu=gpu("H100")), T=8192)
    assert p6.deciding_rank["ep_rank"] == 0 and p6.deciding_rank["local_experts"] == 22
    assert "ep_rank" not in p8.deciding_rank
    routed8 = sum(v for k, v in p8.formulas.weights.flatten().items() if k.rsplit("/", 1)[-1].startswith("experts_"))
    routed8 = exact(routed8, {sym.N_tp: 1, sym.N_ep: 8, sym.N_pp: 1, sym.N_dp: 8})
    # rank 0 of 6 holds 22 experts, rank 0 of 8 holds 16: the routed bytes scale by 22/16
    assert p6.weights_loaded_rank - p8.weights_loaded_rank == pytest.approx(routed8 * (sympy.Rational(22, 16) - 1), abs=8)
    with pytest.raises(Exception, match="exceeds them"):
        Layout.vllm(m, dp=256, ep=256).check(m)


def test_pipeline_stages_costed_by_their_own_layers():
    """DeepSeek-V3 over 4 stages of TP 8 on H200: vLLM's split [15, 15, 16, 15] puts the 3 dense layers
    and the embedding on stage 0 and the head and sampler on stage 3; stage 2 holds 16 routed-expert
    layers (more weights than the ceil(count/pp) bound's 1 dense + 15 MoE layers) and decides:
    the plan's blocks are the fewest over the stages, and the JSON formula's Min gives the same."""
    from symcost import parse
    m = symcost.build("deepseek-v3")
    raw = symcost.architectures.loader.read_json("deepseek-v3")[1]
    p = plan(m, raw, ServeSetup(layout=Layout.vllm(m, tp=8, pp=4), gpu=gpu("H200")), T=8192)
    st = p.deciding_rank["stages"]
    assert [s["layers"] for s in st] == [15, 15, 16, 15] and p.deciding_rank["pp_stage"] == 2
    assert st[0]["groups"] == {"dense_layers": 3, "moe_layers": 12} and st[2]["groups"] == {"moe_layers": 16}
    assert st[0]["weights_bytes"] < st[1]["weights_bytes"] < st[2]["weights_bytes"]
    assert [s["sampler"] for s in st] == [False, False, False, True]
    assert st[3]["activation_bytes"] > st[2]["activation_bytes"]  # the sampler runs on the last stage only
    # each stage's pages: its own MLA layers, (d_kv + D_rope) bf16 elements per token, 64-token blocks
    v = m.values
    page = 64 * 2 * (int(v[sym.d_kv]) + int(v[sym.D_rope]))
    assert [s["kv_block_bytes"] for s in st] == [page * s["layers"] for s in st]
    assert p.kv.num_blocks == min(s["num_blocks"] for s in st) == st[2]["num_blocks"]
    assert p.kv.tokens == st[2]["kv_tokens"] and p.weights_rank == st[2]["weights_bytes"]
    # the bound (ceil(count/pp) of every group, the larger edge, the sampler's peak, 16 layers' pages on
    # one stage) is not vLLM's answer: it charges stage 2 with the head and the sampler it does not hold, and
    # with 1 dense + 15 MoE layers' weights where it holds 16 MoE layers; under the V1 runner (0.28 for this
    # MoE) the sorted sampler outweighs the missing expert layer, under Model Runner V2 (0.33) it does not
    f, *_ = _engine_formulas(m, raw, ServeSetup(layout=Layout.vllm(m, tp=8, pp=4), gpu=gpu("H200")), T=8192, tp=8, pp=1)
    assert int(f.num_blocks.xreplace(p.values)) != p.kv.num_blocks
    s28 = ServeSetup(layout=Layout.vllm(m, tp=8, pp=4), gpu=gpu("H200"), vllm_version="0.28")
    p28 = plan(m, raw, s28, T=8192)
    f28, *_ = _engine_formulas(m, raw, s28, T=8192, tp=8, pp=1)
    assert p28.profile.runner == "v1" and int(f28.num_blocks.xreplace(p28.values)) < p28.kv.num_blocks
    formula = p.formulas.formula()
    assert parse(str(formula["num_blocks"])).xreplace(p.values) == p.kv.num_blocks
    assert {f"stage{i}_{k}" for i in range(4) for k in ("weights", "num_blocks", "kv_block_bytes")} <= set(formula)
    assert any("stage 2 affords the fewest KV blocks" in n for n in p.notes)


def test_pipeline_split_conserves_layers_and_weights():
    """vLLM's stages hold every decoder layer once (get_pp_indices, with VLLM_PP_LAYER_PARTITION too),
    and their weights add up to the whole model's on one rank: the embedding once, the head once (a
    tied head adds the embedding the last stage builds)."""
    from symcost.serving.formulas import Stage, pipeline_stages, weights_per_gpu
    from symcost.serving.quant import checkpoint
    for name, pp, part in (("deepseek-v3", 4, None), ("qwen3-next-80b-a3b-thinking", 3, None),
                           ("gemma-4-26b-a4b", 2, None), ("llama-3.1-8b", 4, (4, 10, 10, 8)), ("qwen2.5-7b", 2, None)):
        m = symcost.build(name)
        raw = symcost.architectures.loader.read_json(name)[1]
        stages = pipeline_stages(m, pp, part)
        assert sum(s.layers for s in stages) == m.n_layers()
        if part:
            assert [s.layers for s in stages] == list(part)
        for g in m.groups:
            if not g.tower:
                assert sum(s.counts.get(g.name, 0) for s in stages) == exact(g.count, m.values), (name, g.name)
        ck = checkpoint(m, raw)
        one = {sym.N_tp: 1, sym.N_ep: 1, sym.N_pp: 1, sym.N_dp: 1}
        whole = exact(weights_per_gpu(m, ck).total, one)
        parts = [exact(weights_per_gpu(m, ck, s).total, one) for s in stages]
        flat = weights_per_gpu(m, ck).flatten()
        # what every stage holds whatever its layers: the towers (and their buffers), nothing else
        common = exact(weights_per_gpu(m, ck, Stage(0, 0, {}, False, False)).total, one)
        assert (common > 0) == m.has_towers, name
        tied_extra = exact(flat.get("embed_and_head", 0), one) if m.post[-1].primitives(None)[-1].tied else 0
        assert sum(parts) == whole + (pp - 1) * common + tied_extra, name
    with pytest.raises(ValueError, match="summing to 32"):
        pipeline_stages(symcost.build("llama-3.1-8b"), 2, (16, 15))


def test_hybrid_stage_pages_follow_vllm_round_robin_groups():
    """A stage's block bytes = page · its largest projected KV cache group: vLLM deals each spec's n
    layers round-robin over its ceil(n/g) groups (layers[i::k], _get_kv_cache_groups_uniform_page_size)
    and keeps a worker's own layers (_project_kv_cache_groups_to_worker); the test replays that on the
    real layer order of Qwen3-Next (36 linear + 12 full) and Gemma 4 at several PP sizes."""
    from symcost.serving.formulas import kv_formula, pipeline_stages
    for name in ("qwen3-next-80b-a3b-thinking", "gemma-4-26b-a4b"):
        m = symcost.build(name)
        f = kv_formula(m)
        order = [layer[0].name for layer in m.layers()]
        for pp in (2, 3, 4):
            if m.n_layers() < pp:
                continue
            stages = pipeline_stages(m, pp)
            groups = []
            for gs, k in zip(f.spec_groups, f.spec_split):
                mine = [i for i, n in enumerate(order) if n in gs]
                groups += [mine[j::k] for j in range(k)]
            start = 0
            for s in stages:
                held = set(range(start, start + s.layers))
                start += s.layers
                biggest = max(len(held & set(g)) for g in groups)
                assert exact(f.stage_block_bytes(s), {sym.N_tp: 1}) == exact(f.page, {sym.N_tp: 1}) * biggest, (name, pp)


def test_dense_stages_equal_the_bound_when_layers_divide():
    """Llama-3.1-8B (untied head, embedding and head of one size) at PP 2 and 4: the last stage holds
    L/pp layers + the head + the final norm — exactly the ceil(count/pp) bound — and runs the sampler,
    so it decides with the bound's own block count; the first stage has more room."""
    m = symcost.build("llama-3.1-8b")
    raw = symcost.architectures.loader.read_json("llama-3.1-8b")[1]
    for pp in (2, 4):
        setup = ServeSetup(layout=Layout.vllm(m, pp=pp), gpu=gpu("H100"))
        p = plan(m, raw, setup, T=8192)
        st = p.deciding_rank["stages"]
        bound, *_ = _engine_formulas(m, raw, setup, T=8192, tp=1, pp=1)
        assert st[-1]["weights_loaded_bytes"] == int(bound.weights.total.xreplace(p.values))
        assert st[-1]["kv_block_bytes"] == int(bound.kv.block_bytes.xreplace(p.values))
        assert p.kv.num_blocks == int(bound.num_blocks.xreplace(p.values)) == st[-1]["num_blocks"]
        assert st[0]["num_blocks"] > st[-1]["num_blocks"] and p.deciding_rank["pp_stage"] == pp - 1


def test_deploy_and_kv_capacity_use_the_stage_costing():
    """``deploy``'s PP layout, ``memory``'s plan and the Python ``kv_capacity`` give one answer."""
    from symcost.serving.deploy import deploy
    from symcost.serving.vllm import kv_capacity
    m = symcost.build("deepseek-v3")
    raw = symcost.architectures.loader.read_json("deepseek-v3")[1]
    setup = ServeSetup(gpu=gpu("H200"))
    p = plan(m, raw, replace(setup, layout=Layout.vllm(m, tp=8, pp=4)), T=8192)
    rows = deploy(m, raw, setup, gpus=[32], T=8192, batch=1, pins={"tp": 8, "pp": 4, "dp": 1, "ep": 1})["layouts"]
    assert rows[0]["kv_capacity_tokens"] == p.kv.tokens
    given = plan(m, raw, replace(setup, layout=Layout.vllm(m, tp=8, pp=4), kv_cache_memory=50 * 2**30), T=8192)
    kv = kv_capacity(m, 50 * 2**30, max_model_len=8192, tp=8, pp=4)
    assert kv.num_blocks == given.kv.num_blocks == 50 * 2**30 // max(s["kv_block_bytes"] for s in given.deciding_rank["stages"])


def test_cudagraph_estimate_counted_from_0_21():
    """vLLM's default capture sizes (_set_cudagraph_sizes) and profile_cudagraph_memory's estimate:
    the graph pool at the largest size + 1 MiB per further graph (PIECEWISE at every size, FULL at
    the decode sizes <= max_num_seqs); subtracted before KV sizing from 0.21 only (the V1 runner, pinned:
    0.31's default for Llama is Model Runner V2, whose sampler differs too)."""
    from symcost.serving.profile import capture_sizes
    sizes = capture_sizes(256, 2048)
    assert sizes[:4] == [1, 2, 4, 8] and sizes[-1] == 512 and len(sizes) == 3 + 31 + 17
    assert capture_sizes(1024, 8192)[-1] == 512 and capture_sizes(4, 8192) == [1, 2, 4, 8]
    assert capture_sizes(256, 100)[-1] == 96  # capped by max_num_batched_tokens
    m = symcost.build("llama-3.1-8b")
    raw = symcost.architectures.loader.read_json("llama-3.1-8b")[1]
    new = plan(m, raw, ServeSetup(gpu=gpu("A100-80GB"), vllm_version="0.31", model_runner="v1"), T=8192)
    old = plan(m, raw, ServeSetup(gpu=gpu("A100-80GB"), vllm_version="0.19", model_runner="v1"), T=8192)
    given = plan(m, raw, ServeSetup(gpu=gpu("A100-80GB"), vllm_version="0.31", model_runner="v1", cudagraph_gib=0.5), T=8192)
    assert old.cudagraph_rank == 0 and not any(k.startswith("cudagraph/") for k in old.activation_terms())
    terms = new.activation_terms()
    objects = terms["cudagraph/graph_objects"]["bytes"]
    assert objects == (51 - 1 + 35 - 1) * 2**20  # 51 PIECEWISE sizes, 35 FULL sizes <= 256 sequences
    assert new.cudagraph_rank == terms["cudagraph/graph_pool"]["bytes"] + objects
    # the pool is the forward's transient at B_g = 512 tokens
    fwd = sum(v["bytes"] for k, v in plan(m, raw, ServeSetup(gpu=gpu("A100-80GB"), vllm_version="0.31", model_runner="v1",
                                                              max_batched_tokens=512), T=8192).activation_terms().items()
              if k.startswith("forward/"))
    assert terms["cudagraph/graph_pool"]["bytes"] == fwd
    assert given.cudagraph_rank == 2**29  # --cudagraph-gib replaces the modelled term
    assert old.kv_available_rank - new.kv_available_rank == new.cudagraph_rank


def test_quant_scratch_dispatch_and_attention_workspace_terms():
    """W8A8 block-FP8 inputs are quantised on the fly (fp8 copy + an fp32 scale per 128); under DP+EP
    the MoE layer sees the N_ep ranks' gathered tokens; FlashInfer's workspace on Blackwell."""
    raw = json.loads(open("tests/data/checkpoints/Qwen--Qwen3-235B-A22B-FP8.config.json").read())
    m = symcost.build(dict(raw))
    p = plan(m, raw, ServeSetup(layout=Layout.vllm(m, tp=4, dp=2, ep=8), gpu=gpu("H100")), T=8192)
    t = p.activation_terms()
    assert "forward/quant_scratch" in t and "forward/expert_dispatch" in t
    d = 4096
    assert t["forward/expert_dispatch"]["bytes"] == 2 * 8192 * d * 2  # N_ep = 2 ranks' tokens, bf16
    q1 = plan(m, raw, ServeSetup(layout=Layout.vllm(m, tp=4), gpu=gpu("H100")), T=8192).activation_terms()
    assert q1["forward/expert_dispatch"]["bytes"] == 0 and q1["forward/layer_transient"]["bytes"] < t["forward/layer_transient"]["bytes"]
    bf16 = symcost.build("llama-3.1-8b")
    raw8 = symcost.architectures.loader.read_json("llama-3.1-8b")[1]
    assert "forward/quant_scratch" not in plan(bf16, raw8, ServeSetup(gpu=gpu("H100")), T=8192).activation_terms()
    b200 = plan(bf16, raw8, ServeSetup(gpu=gpu("B200")), T=8192).activation_terms()
    assert b200["forward/attention_workspace"]["bytes"] == 394 * 2**20


def test_nvfp4_scale_swizzle_padding():
    """MiniMax-M2.5 NVFP4 on B200 (FlashInfer): at TP 16 each expert's intermediate slice is 96, so the
    gate_up scales pad 192 -> 256 rows and the down scales 6 -> 8 columns (swizzle_blockscale):
    (64·192 + 3072·2) B per expert × 256 experts × 62 layers; at TP 4 the shapes are aligned (0);
    Hopper runs NVFP4 through Marlin (no term)."""
    m = symcost.build("minimax-m2.5-nvfp4")
    raw = symcost.architectures.loader.read_json("minimax-m2.5-nvfp4")[1]
    pad = {tp: plan(m, raw, ServeSetup(layout=Layout.vllm(m, tp=tp), gpu=g), T=8192)
           for tp, g in ((4, gpu("B200")), (16, gpu("B200")))}
    assert pad[4].weights_loaded_rank == pad[4].weights_rank
    assert pad[16].weights_loaded_rank - pad[16].weights_rank == (64 * 192 + 3072 * 2) * 256 * 62
    h = plan(m, raw, ServeSetup(layout=Layout.vllm(m, tp=16), gpu=gpu("H200")), T=8192)
    assert h.weights_loaded_rank == h.weights_rank


def test_mxfp4_padding_follows_the_experts_placement():
    """GPT-OSS-20B (I = d = 2880, MXFP4 experts) for Marlin on 4 H100s: without expert parallelism each
    rank's slice of I is 720, padded to 768 (and d to 3072); with EP the MoE layer's own TP size is 1,
    so the kernel pads the whole I, 2880 -> 2944. Both ranks hold a quarter of the experts' bytes, so
    the two paddings stand as (2944·3072 − 2880²) : (3072² − 2880²)."""
    m = symcost.build("gpt-oss-20b")
    raw = symcost.architectures.loader.read_json("gpt-oss-20b")[1]
    pad = {}
    for ep in (1, 4):
        p = plan(m, raw, ServeSetup(layout=Layout.vllm(m, tp=4, ep=ep), gpu=gpu("H100"), moe_backend="marlin"), T=8192)
        pad[ep] = p.weights_loaded_rank - p.weights_rank
    assert pad[1] > 0 and pad[4] / pad[1] == pytest.approx((2944 * 3072 - 2880**2) / (3072**2 - 2880**2), rel=1e-6)


def test_pp_layer_partition_as_vllm_reads_it(capsys):
    """--pp-layer-partition (vLLM's VLLM_PP_LAYER_PARTITION, get_pp_indices): the stages hold the stated
    counts, the heavier stage decides; counts that do not sum to the layers, or without --pp: exit 2."""
    base = ["memory", "qwen3-30b-a3b", "--T", "8192", "--batch", "1", "--gpu", "H100", "--json"]
    assert main(base + ["--pp", "2", "--pp-layer-partition", "16,32"]) == 0
    d = json.loads(capsys.readouterr().out)
    st = d["deciding_rank"]["stages"]
    assert [s["layers"] for s in st] == [16, 32] and d["deciding_rank"]["pp_stage"] == 1
    assert st[1]["kv_block_bytes"] == 2 * st[0]["kv_block_bytes"]
    for args, word in ((["--pp", "2", "--pp-layer-partition", "16,30"], "summing to 48"),
                       (["--pp-layer-partition", "16,32"], "needs --pp"),
                       (["--pp", "2", "--pp-layer-partition", "a,b"], "comma-separated")):
        assert main(base + args) == 2
        out, err = capsys.readouterr()
        assert "--pp-layer-partition" in json.loads(out)["error"] and word in err and "Traceback" not in err
