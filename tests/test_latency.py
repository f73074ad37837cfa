"""The calibrated latency model's mechanisms (``symcost.serving.roofline``), its calibration lookup
(``symcost.hardware.calibration``) and ``deploy``'s SLA solve (``symcost.serving.deploy``)."""
import json
from pathlib import Path

import numpy as np
import pytest
import sympy

from symcost.cli import main
from symcost.cli.commands.common import read_model
from symcost.core.notation import sym
from symcost.hardware import calibration
from symcost.hardware.gpus import gpu as find_gpu
from symcost.hardware.links import Links
from symcost.serving.deploy import Workload, compile_model, evaluate, layouts, solve_batch
from symcost.serving.plan import Layout, ServeSetup
from symcost.serving.roofline import CalibratedLatency, class_dtypes

ROOT = Path(__file__).resolve().parent.parent


def _cal(name, gpu="H100", links=None):
    m, raw = read_model(name)
    setup = ServeSetup(layout=Layout(), gpu=find_gpu(gpu))
    return m, CalibratedLatency(m, setup.checkpoint(m, raw), setup, links=links)


def test_no_all_to_all_without_expert_parallelism():
    m, cal = _cal("qwen3-30b-a3b")
    off = cal.evaluate("prefill", Layout.vllm(m, tp=8), T=2048, batch=1, max_batched_tokens=8192)
    on = cal.evaluate("prefill", Layout.vllm(m, tp=8, ep=8), T=2048, batch=1, max_batched_tokens=8192)
    assert off.terms["collectives/ep_all_to_all"] == 0.0
    assert on.terms["collectives/ep_all_to_all"] > 0.0
    # symbolically: the all-to-all term carries the switch x_ep, so x_ep = 0 removes it exactly
    sf = cal.step("decode")
    aa = sf.terms["collectives"]["ep_all_to_all"]
    assert sym.x_ep in aa.free_symbols and aa.xreplace({sym.x_ep: 0}) == 0


def test_each_rank_dispatches_only_its_own_rows():
    """Under TP·EP the tokens are replicated over the t ranks of a replica: each sends R/t rows."""
    m, cal = _cal("qwen3-30b-a3b")
    sf = cal.step("decode")
    k, d = int(m.values[sym.k]), int(m.values[sym.d])
    assert sympy.simplify(sf.aa_message - sym.B / sym.N_tp * k * d * 2) == 0


def test_tp1_prefill_not_faster_than_tp8_for_qwen3_moe():
    """The issue's symptom: Qwen3-30B-A3B prefill at TP 8 was slower than at TP 1 (all-to-all on every
    row of every rank); without EP, TP 8 splits the work and is faster."""
    m, cal = _cal("qwen3-30b-a3b")
    t1 = cal.seconds("ttft", Layout.vllm(m, tp=1), T=8192, batch=1, max_batched_tokens=8192)
    t8 = cal.seconds("ttft", Layout.vllm(m, tp=8), T=8192, batch=1, max_batched_tokens=8192)
    assert t8 < t1


def test_link_chosen_by_gpu_count_and_nvlink_domain():
    """TP 16 on 8-GPU NVLink domains all-reduces over the scale-out link; on a 72-GPU domain over NVLink."""
    m, hgx = _cal("llama-3.1-70b", links=Links.of(find_gpu("H100")))
    _, nvl = _cal("llama-3.1-70b", links=Links(nvlink_bytes_s=450e9, ib_bytes_s=50e9, gpus_per_node=72))
    kw = dict(T=4096, batch=64, max_batched_tokens=8192, ideal=True)
    ar = {n: c.evaluate("decode", Layout.vllm(m, tp=n), **kw).terms["collectives/tp_all_reduce"]
          for n in (8, 16) for c in (hgx,)}
    nv16 = nvl.evaluate("decode", Layout.vllm(m, tp=16), **kw).terms["collectives/tp_all_reduce"]
    # per call the volume 2(t-1)/t·S barely changes from 8 to 16; the bandwidth drops 450 -> 50 GB/s
    assert ar[16] / ar[8] > 8
    assert nv16 / ar[8] == pytest.approx((2 * 15 / 16) / (2 * 7 / 8), rel=1e-9)


def test_compute_dtype_follows_quantisation_and_card():
    m, raw = read_model("gpt-oss-20b")
    setup = ServeSetup(layout=Layout(), gpu=find_gpu("H100"))
    ck = setup.checkpoint(m, raw)
    hop = class_dtypes(m, ck, find_gpu("H100"))
    bw = class_dtypes(m, ck, find_gpu("B200"))
    assert hop["grouped_gemm"][1:3] == ("w4a16", "bf16")  # MXFP4 on Hopper: 4-bit weights, bf16 compute
    assert bw["grouped_gemm"][2] in ("fp8", "fp4")  # Blackwell: the 4-bit path on low-precision tensor cores
    assert hop["gemm"][1:3] == ("bf16", "bf16")  # gpt-oss attention stays bf16
    m, raw = read_model("deepseek-v3")
    ck = ServeSetup(layout=Layout(), gpu=find_gpu("H200")).checkpoint(m, raw)
    assert class_dtypes(m, ck, find_gpu("H200"))["gemm"][:3] == ("quant_gemm", "fp8_block", "fp8")
    assert class_dtypes(m, ck, find_gpu("A100-80GB"))["gemm"][2] == "bf16"  # no FP8 tensor cores


def test_dense_linears_a_quantised_checkpoint_keeps_run_as_base_dtype_gemms():
    """A checkpoint that quantises some dense linears and keeps others (its ignore list) costs each set at
    its own kernel class: DeepSeek-V3's FP8 attention and dense MLPs as FP8 block GEMMs, its routers at
    bf16 (``gemm_base``); the two classes split the dense FLOPs, bytes and kernels without loss (the
    input embedding's rows gathered, not its table: ``embedding_unread``)."""
    from symcost.serving.formulas import _paths, embedding_unread, split_routed, weights_per_gpu
    from symcost.serving.roofline import base_dtype_linears, step_formula
    m, raw = read_model("deepseek-v3")
    ck = ServeSetup(layout=Layout(), gpu=find_gpu("H200")).checkpoint(m, raw)
    kept = base_dtype_linears(m, ck)
    assert kept and all(p.endswith("/router") for p in kept)
    dt = class_dtypes(m, ck, find_gpu("H200"))
    assert dt["gemm"][1] == "fp8_block" and dt["gemm_base"][:3] == ("gemm", "bf16", "bf16")
    sf = step_formula(m, ck, "decode")
    (fg, qg, ng), (fb, qb, nb) = sf.parts["gemm"], sf.parts["gemm_base"]
    w = weights_per_gpu(m, ck)
    _, nonrouted = split_routed(w, _paths(m))
    assert sympy.simplify(qg + qb + embedding_unread(m, ck, sym.B) - nonrouted) == 0
    assert qb == sum(e for p, e in w.flatten().items() if p in kept)
    assert nb == sympy.ceiling(sympy.Integer(58) / sym.N_pp)  # one router GEMM per MoE layer of the stage
    # a checkpoint whose layers' dense linears share one layout (all FP8 here) has no second class
    m2, raw2 = read_model(str(ROOT / "tests/data/configs/qwen3-32b-fp8.json"))
    ck2 = ServeSetup(layout=Layout(), gpu=find_gpu("H100")).checkpoint(m2, raw2)
    assert not base_dtype_linears(m2, ck2) and "gemm_base" not in class_dtypes(m2, ck2, find_gpu("H100"))
    assert "gemm_base" not in step_formula(m2, ck2, "decode").parts


def test_ideal_is_the_calibrated_model_at_eta_one():
    m, cal = _cal("llama-3.1-8b")
    lay = Layout.vllm(m, tp=2)
    ideal = cal.evaluate("decode", lay, T=4096, batch=8, max_batched_tokens=8192, ideal=True)
    real = cal.evaluate("decode", lay, T=4096, batch=8, max_batched_tokens=8192)
    assert ideal.seconds < real.seconds
    assert all(ideal.terms[k] <= real.terms[k] + 1e-15 for k in ideal.terms)


def test_vector_path_equals_scalar_path():
    m, cal = _cal("deepseek-v3", "H200")
    lays = [Layout.vllm(m, tp=8), Layout.vllm(m, tp=8, ep=8), Layout.vllm(m, tp=1, dp=8, ep=8), Layout.vllm(m, tp=16)]
    vals = {sym.N_tp: np.array([x.tp for x in lays], float), sym.N_pp: np.ones(4), sym.N_dp: np.array([x.dp for x in lays], float),
            sym.N_ep: np.array([x.ep for x in lays], float), sym.x_ep: np.array([float(x.whole_experts) for x in lays]),
            sym.T: 4096.0, sym.B: np.array([1.0, 16, 64, 300]), sym.M: 8192.0}
    got = cal.evaluate_arrays("decode", vals)["total"]
    want = [cal.evaluate("decode", x, T=4096, batch=b, max_batched_tokens=8192).seconds
            for x, b in zip(lays, (1, 16, 64, 300))]
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("engine", [None, "vllm", "sglang", "trtllm"])
def test_calibration_step_function_equals_lookup(engine):
    for cls, key, variant in (("gemm", "m", None), ("grouped_gemm", "m", None), ("collective", "bytes", "all_reduce")):
        vals = [0, 1, 2, 8, 9, 16, 17, 64, 65, 256, 257, 1024, 1025, 4096, 4097, 65536, 65537, 2**20 + 1, 2**25]
        ec, em, t0 = calibration.efficiency_array("H100", cls, vals, key=key, variant=variant,
                                                  dtype="*" if cls == "collective" else "bf16", engine=engine)
        for v, a, b, c in zip(vals, ec, em, t0):
            try:
                e = calibration.efficiency("H100", cls, dtype="*" if cls == "collective" else "bf16", variant=variant,
                                           engine=engine, **({"m": v} if key == "m" else {"nbytes": v}))
            except Exception:  # below every regime: the first regime's row
                continue
            assert (a, b, c) == (e.eta_compute, e.eta_memory, e.floor_s), (cls, v)


def test_each_engine_costs_its_own_fused_moe_kernels():
    """A row tagged with an engine answers only that engine; an engine with rows of its own gets them, any
    other (TensorRT-LLM, whose database the engine-less rows are) the engine-less rows. On B200, DeepSeek-V3's
    experts at TP 8 and 16 tokens run faster in SGLang's fused MoE than in TensorRT-LLM's (measured 102 vs
    220 us per layer at that shape; the fits over all shapes of the regime 8.2 vs 9.6 ms per step), and the
    step says whose rows it used."""
    def source(engine):
        return calibration.efficiency("B200", "grouped_gemm", dtype="fp8_block", m=1, engine=engine).source
    assert "/moe/sglang/" in source("sglang") and "/moe/vllm/" in source("vllm")
    assert "/moe/trtllm/" in source(None) and source("trtllm") == source(None)
    assert all(r.get("engine") in (None, "vllm", "sglang") for r in calibration.rows("grouped_gemm"))
    m, raw = read_model("deepseek-v3")
    lay = Layout.vllm(m, tp=8)
    moe = {}
    for engine in ("sglang", "trtllm"):
        setup = ServeSetup(layout=Layout(), gpu=find_gpu("B200"), schedule=engine)
        cal = CalibratedLatency(m, setup.checkpoint(m, raw), setup)
        assert cal.engine == engine  # the engine whose schedule times the load, by default
        ev = cal.evaluate("decode", lay, T=2048, batch=16, max_batched_tokens=8192, text=False)
        assert f"/moe/{engine}/" in ev.sources["grouped_gemm"] and ev.engine == engine
        moe[engine] = ev.terms["kernels/grouped_gemm"]
        # the dense GEMMs keep one row set for every engine
        assert "/gemm/trtllm/" in ev.sources["gemm"]
    assert moe["trtllm"] > 1.1 * moe["sglang"]


def test_every_calibration_row_has_a_source_and_sane_values():
    for cls in calibration.OP_CLASSES:
        for r in calibration.rows(cls):
            assert r["source"], (cls, r)
            assert 0 < r["eta_compute"] <= 1 and 0 < r["eta_memory"] <= 1 and r["floor_us"] >= 0, (cls, r)


def test_sla_solve_is_the_largest_batch_meeting_both_limits():
    """The bisection's batch per layout equals a brute-force scan of the scalar path."""
    m, raw = read_model("llama-3.1-8b")
    setup = ServeSetup(layout=Layout(), gpu=find_gpu("H100"))
    comp = compile_model(m, raw, gpu=setup.gpu)
    cal = CalibratedLatency(m, comp.ck, setup, weights=comp.weights)
    lays = layouts(m, 4)
    work = Workload(isl=1024, osl=1024, max_tpot=0.009, max_ttft=0.1)  # both bind on some layouts
    rows = evaluate(comp, lays, gpu=setup.gpu, T=work.context, batch=1, latency=cal, work=work)
    for lay, row in zip(lays, rows):
        cap = int(row["max_concurrency"])
        best = 0
        for b in range(1, min(cap, 40) + 1):  # under load (an OSL given): the closed loop's TTFT and TPOT
            got = cal.under_load(lay, isl=work.isl, osl=work.osl, max_batched_tokens=8192, concurrency=b * lay.dp)
            if got["tpot"] <= work.max_tpot and got["ttft"] <= work.max_ttft:
                best = b
        assert best < 40 and row["batch_per_replica"] == best, lay.label()
        assert row["meets_sla"] == (best >= 1)


def test_solve_batch_on_a_known_function():
    t = lambda b: 0.001 * b  # noqa: E731
    got = solve_batch(t, 0.0105, np.array([5.0, 100.0, 0.0]), np)
    assert list(got) == [5, 10, 0]


class _R:
    def __init__(self, code, out, err):
        self.returncode, self.stdout, self.stderr = code, out, err


@pytest.fixture
def run(capsys):
    def go(*args):
        code = main(list(args))
        out, err = capsys.readouterr()
        return _R(code, out, err)
    return go


@pytest.mark.parametrize("args, needle", [
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--T", "1024", "--top", "0"), "--top"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--T", "1024", "--top", "-3"), "--top"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--T", "1024", "--isl", "512"), "--isl"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "512", "--batch", "2", "--concurrency", "4"), "--concurrency"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "512", "--ep", "4"), "--ep"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--gpus", "8", "--isl", "512", "--tp", "3"), "--tp"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--gpus", "8", "--isl", "512", "--tp", "2", "--pp", "2", "--dp", "1"), "--gpus"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "0"), "--isl"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "512", "--max-tpot", "-1"), "--max-tpot"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--osl", "512"), "--osl"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--T", "1024", "--top", "some"), "--top"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "512", "--osl", "64", "--request-rate", "0"), "--request-rate"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "512", "--osl", "64", "--request-rate", "-2"), "--request-rate"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "512", "--osl", "64", "--request-rate", "nan"), "--request-rate"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "512", "--request-rate", "2"), "--request-rate"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "512", "--osl", "64", "--request-rate", "2",
      "--concurrency", "8"), "--request-rate"),
    (("deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "512", "--osl", "64", "--request-rate", "2",
      "--batch", "8"), "--request-rate"),
])
def test_deploy_bad_input_exits_2_with_one_line(args, needle, run):
    r = run(*args)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr and r.stdout == ""


def test_deploy_open_loop_overload_is_a_clear_answer(run):
    """A rate no replica keeps up with: every layout listed without a TTFT/TPOT (null in JSON), one line."""
    r = run("deploy", "llama-3.1-8b", "--gpu", "H100", "--gpus", "4", "--isl", "1024", "--osl", "256",
            "--request-rate", "400", "--json")
    d = json.loads(r.stdout)
    assert r.returncode == 0 and d["meeting_sla"] == 0 and all(x["ttft_s"] is None for x in d["layouts"])
    r = run("deploy", "llama-3.1-8b", "--gpu", "H100", "--gpus", "4", "--isl", "1024", "--osl", "256",
            "--request-rate", "400")
    assert "no layout keeps up with 400 requests/s" in r.stdout


def test_deploy_open_loop_serves_the_rate(run):
    r = run("deploy", "llama-3.1-8b", "--gpu", "H100", "--gpus", "4", "--isl", "1024", "--osl", "256",
            "--request-rate", "8", "--json")
    d = json.loads(r.stdout)
    best = d["layouts"][0]
    assert best["meets_sla"] and best["tokens_per_s"] == pytest.approx(8 * 256)
    assert 0 < best["ttft_s"] < 1 and 0 < best["tpot_s"] < 0.1


def test_deploy_pins_and_no_duplicates(run):
    r = run("deploy", "qwen3-30b-a3b", "--gpu", "H100", "--gpus", "8", "--isl", "1024", "--osl", "256", "--tp", "2",
             "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["layouts"]
    assert rows and all(x["tp"] == 2 for x in rows)
    keys = [(x["tp"], x["pp"], x["dp"], x["ep"]) for x in rows]
    assert len(keys) == len(set(keys))


def test_deploy_concurrency_is_spread_over_replicas(run):
    r = run("deploy", "llama-3.1-8b", "--gpu", "H100", "--gpus", "8", "--isl", "1024", "--osl", "128",
             "--concurrency", "64", "--json")
    rows = json.loads(r.stdout)["layouts"]
    for x in rows:
        assert x["batch_per_replica"] == -(-64 // x["dp"])
        assert x["concurrency_served"] == 64


def test_deploy_nothing_fits_names_the_fewest_gpus(run):
    r = run("deploy", "llama-3.1-70b", "--gpu", "H100", "--gpus", "1", "--T", "4096", "--json")
    d = json.loads(r.stdout)
    assert d["fitting"] == 0 and d["fewest_gpus"] > 1
    # the count named is the first power of two at which deploy itself finds a fitting layout
    fits = {n: json.loads(run("deploy", "llama-3.1-70b", "--gpu", "H100", "--gpus", str(n), "--T", "4096",
                              "--json").stdout)["fitting"] for n in (1, 2, 4, 8)}
    assert d["fewest_gpus"] == min(n for n, f in fits.items() if f)


def test_deploy_unmet_sla_names_the_closest_layout(run):
    r = run("deploy", "llama-3.1-8b", "--gpu", "H100", "--gpus", "8", "--isl", "1024", "--max-tpot", "0.0001")
    assert r.returncode == 0
    assert "closest: TP" in r.stdout and "TPOT" in r.stdout


def test_disaggregated_plan_conserves_requests_and_kv_bytes(run):
    from symcost.hardware.links import Links
    from symcost.serving.deploy import disaggregate, kv_bytes
    m, raw = read_model("llama-3.1-8b")
    r = run("cache", "llama-3.1-8b", "--T", "2048", "--json")
    assert kv_bytes(m, "bf16", 2048) == json.loads(r.stdout)["bytes"]  # the KV handed over = the cache of ISL
    setup = ServeSetup(layout=Layout(), gpu=find_gpu("H100"))
    comp = compile_model(m, raw, gpu=setup.gpu)
    cal = CalibratedLatency(m, comp.ck, setup, weights=comp.weights)
    work = Workload(isl=2048, osl=512, max_tpot=0.02)
    rows = evaluate(comp, layouts(m, 2) + layouts(m, 4), gpu=setup.gpu, T=work.context, batch=1, latency=cal, work=work)
    plan = disaggregate(m, rows, work, kv_dtype="bf16", links=Links.of(setup.gpu))
    assert plan is not None
    rp = plan.x * plan.prefill["dp"] / plan.prefill["ttft_s"]
    rd = plan.y * plan.decode["batch_per_replica"] * plan.decode["dp"] / (work.osl * plan.decode["tpot_s"])
    assert plan.served == pytest.approx(min(rp, rd)) and plan.served <= rp and plan.served <= rd
    assert plan.gpus == plan.x * plan.prefill["gpus"] + plan.y * plan.decode["gpus"]
    assert plan.tokens_per_s_per_gpu == pytest.approx(plan.served * work.osl / plan.gpus)
    assert plan.ttft_s == pytest.approx(plan.prefill["ttft_s"] + plan.kv_transfer_s)


def test_speculative_decoding_with_the_mtp_draft():
    from symcost.serving.roofline import draft_modules, tokens_per_step
    assert sympy.expand(tokens_per_step().xreplace({sym.n_d: 1}).doit() - (1 + sym.a_acc)) == 0
    m, cal = _cal("deepseek-v3", "H200")
    assert draft_modules(m) == 1
    lay = Layout.vllm(m, tp=8)
    kw = dict(T=2048, batch=16, max_batched_tokens=8192)
    plain = cal.seconds("tpot", lay, **kw)
    spec = [cal.seconds("tpot", lay, accept=a, **kw) for a in (0.0, 0.5, 0.9)]
    assert spec[0] > plain  # nothing accepted: the verify and draft cost more than a plain step
    assert spec[0] > spec[1] > spec[2]
    # deploy's vectorised TPOT with speculation equals the scalar path
    m, raw = read_model("deepseek-v3")
    setup = ServeSetup(layout=Layout(), gpu=find_gpu("H200"))
    comp = compile_model(m, raw, gpu=setup.gpu)
    lat = CalibratedLatency(m, comp.ck, setup, weights=comp.weights)
    work = Workload(isl=2048, batch=16, accept=0.5)
    rows = evaluate(comp, [lay], gpu=setup.gpu, T=2048, batch=16, latency=lat, work=work)
    assert rows[0]["tpot_s"] == pytest.approx(lat.seconds("tpot", lay, accept=0.5, **kw), rel=1e-9)


def test_accept_rate_refused_without_a_draft(run):
    r = run("deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "512", "--accept-rate", "0.7")
    assert r.returncode == 2 and "--accept-rate" in r.stderr


def test_engine_gemm_rows_where_the_engines_run_other_kernels():
    """The engines' own GEMM rows where they call other kernels than TensorRT-LLM (NVFP4: SGLang's and
    vLLM's FlashInfer CuTe-DSL GEMM, faster at decode sizes than TensorRT-LLM's collection); none for block
    FP8, where every engine calls DeepGEMM and the engines' collections time it at 2-33x TensorRT-LLM's
    on the same shapes (``benchmarks/derive_calibration.SAME_GEMM``)."""
    gemm_rows = calibration.rows("gemm") + calibration.rows("quant_gemm")
    assert not [r for r in gemm_rows if r.get("engine") and r["dtype"] == "fp8_block"]
    own = calibration.efficiency("B200", "quant_gemm", dtype="nvfp4", m=16, engine="sglang")
    ref = calibration.efficiency("B200", "quant_gemm", dtype="nvfp4", m=16)
    assert "/gemm/sglang/" in own.source and "/gemm/trtllm/" in ref.source
    small = 7168 * 2048 * (0.5 + 1 / 16)  # a 7168x2048 NVFP4 weight's bytes with its scales
    bw = find_gpu("B200").bandwidth_bytes_per_s
    assert small / (bw * own.eta_memory) + own.floor_s < small / (bw * ref.eta_memory) + ref.floor_s
    block = calibration.efficiency("B200", "quant_gemm", dtype="fp8_block", m=16, engine="vllm")
    assert block == calibration.efficiency("B200", "quant_gemm", dtype="fp8_block", m=16)


def test_a_ranks_experts_are_touched_by_its_whole_expert_parallel_group():
    """Under EP the experts a rank holds receive the routed tokens of all N_ep replicas of the group (the
    rows its dispatch gathers), so the distinct experts a decode step reads follow the group's rows:
    1 − (1 − k/E)^(N_ep·B), not the replica's own B (DeepSeek-V3, 16 sequences per rank, EP 8 on H200:
    98 % of a rank's experts where its own rows touch 40 %)."""
    from symcost.core.powers import RatioPow
    from symcost.serving.formulas import roofline_formulas
    m, cal = _cal("deepseek-v3", "H200")
    _, Q, _ = cal.step("decode").parts["grouped_gemm"]
    rf = roofline_formulas(m, cal.ck, "decode")
    for expr in (Q, rf.parts["weights_read"]):  # the calibrated step and the ideal roofline's bytes alike
        powers = sympy.sympify(expr).atoms(RatioPow)
        assert powers and all(sympy.simplify(p.args[1] - sym.B * sym.N_ep) == 0 for p in powers), powers
    at = {sym.N_tp: 1, sym.N_pp: 1, sym.N_dp: 8, sym.B: 16, sym.T: 2048, sym.M: 8192, sym.x_ep: 1}
    group, own = (float(sympy.sympify(Q).xreplace({**at, sym.N_ep: n})) * n for n in (8, 1))
    k, E = 8, 256
    want = (1 - (1 - k / E) ** (8 * 16)) / (1 - (1 - k / E) ** 16)  # the routed bytes per rank scale as 1/N_ep
    assert group / own == pytest.approx(want, rel=1e-9) and want > 2.4


def test_attention_dp_without_ep_slices_the_experts_over_the_dp_ranks(capsys):
    """vLLM flattens the MoE layers' tensor parallelism across the DP ranks without --enable-expert-parallel
    (FusedMoEParallelConfig.make, flatten_tp_across_dp): every expert sliced over tp·dp ranks, so a rank holds
    the same expert bytes as under EP over the same ranks, and each MoE layer gathers the replicas' tokens
    (all-gather + reduce-scatter) instead of an all-to-all. A dense model's DP replicas stay replicas."""
    m, _ = read_model("qwen3-30b-a3b")
    flat = Layout.vllm(m, dp=2)
    assert flat.flat_experts and flat.ep == 2 and not flat.whole_experts and flat.ep_group == 1
    assert flat.label() == "TP1·PP1·DP2·EP1"
    dense, _ = read_model("llama-3.1-8b")
    assert Layout.vllm(dense, dp=2) == Layout(dp=2)
    got = {}
    for extra in ([], ["--ep", "2"]):
        assert main(["memory", "qwen3-30b-a3b", "--gpu", "H100", "--dp", "2", "--T", "4096", "--batch", "8",
                     "--json", *extra]) == 0
        got[bool(extra)] = json.loads(capsys.readouterr().out)
    assert main(["memory", "qwen3-30b-a3b", "--gpu", "H100", "--T", "4096", "--batch", "8", "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert got[False]["weights_per_gpu_bytes"] == got[True]["weights_per_gpu_bytes"] < one["weights_per_gpu_bytes"]
    m, cal = _cal("qwen3-30b-a3b", "H100")
    ev_flat = cal.evaluate("decode", flat, T=4096, batch=16, max_batched_tokens=8192)
    ev_ep = cal.evaluate("decode", Layout.vllm(m, dp=2, ep=2), T=4096, batch=16, max_batched_tokens=8192)
    assert ev_flat.terms["collectives/ep_all_to_all"] == 0 < ev_flat.terms["collectives/dp_moe_gather"]
    assert ev_ep.terms["collectives/dp_moe_gather"] == 0 < ev_ep.terms["collectives/ep_all_to_all"]
