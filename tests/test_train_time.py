"""Issue 28: step time from the hardware (no --mfu) against published measured runs; overlap, bubbles,
uneven stages, expert folding, FP8; the GPT-OSS FLOP convention.

The measured set is tests/data/training_throughput_measured.json (``tests/training_throughput.py``
builds each row's setup and predicts it; ``python -m tests.training_throughput`` prints the table).
"""
import json

import pytest

from symcost.architectures import loader
from symcost.cli.main import main
from symcost.core.errors import SymcostError
from symcost.hardware.gpus import gpu
from symcost.training import compute, overlap, schedule
from symcost.training.flops import preset_megatron, train_flops
from symcost.training.plan import Plan, rank_stages
from symcost.training.setup import TrainSetup, fold_experts
from tests import training_throughput as tt


@pytest.fixture(scope="module")
def table():
    return tt.table()


# -- the measured set ------------------------------------------------------------------------------
def test_measured_set_is_sourced():
    rows = tt.rows()
    assert len(rows) >= 30
    sources = {r["source"].get("repo") or r["source"].get("paper") for r in rows}
    assert len(sources) >= 4
    for r in rows:
        assert r["source"] and r["figure"] and r["assumed"], r["id"]
        assert r["dp"] * r["tp"] * r["pp"] * r["cp"] == r["gpus"], r["id"]
        assert r["global_batch"] % (r["micro_batch"] * r["dp"]) == 0, r["id"]


def test_every_published_layout_is_accepted(table):
    out, refused = table
    assert refused == []
    assert len(out) == len(tt.rows())


def test_step_time_median_within_25_percent(table):
    """No --mfu: each kernel class at its measured efficiency. Median |predicted/measured − 1|."""
    out, _ = table
    assert tt.summary(out)["median_abs_error"] <= 0.25


@pytest.mark.xfail(strict=True, reason=(
    "not met: worst 2.99x. Qwen3-30B-A3B on B200 at micro-batch 1 (mxfp8, 0.33: 9.4 s predicted, 28.2"
    " s measured) and on H100 at micro-batch 2 (fp8, 0.37 with its stated EP overlap) stay too fast. Both ran Megatron-Core's "
    "alltoall dispatcher (the rows' moe_dispatcher, from the 25.11 presets): the 8 alltoall rows "
    "predict at a median 0.68 of the measured step, the 12 HybridEP rows at 1.07 "
    "(tests.training_throughput.by_dispatcher); Megatron-Bridge's archive runs the two workloads "
    "2.75x (B200: HybridEP, MBS 4, attn graph) and 1.77x (H100: HybridEP, PP1 EP16, no a2a overlap) "
    "faster from 26.02 to 26.02.01. Tried and not enough: the router, permutation, grouped-GEMM "
    "memory term, launch floors (moe_work) and the host's kernel-issue floor (host_launch: 4 "
    "us/kernel, not binding); TransformerEngine #2053's CPU cost per module call (te.Linear forward "
    "99.66 us on GB200's Grace, torch 13.48 us on a DGX H100's Xeon, TE on Xeon taken at Grace's "
    "TE/torch ratio, ~36.5 us) makes the B200 host 7.7 s against 7.7 s of kernels (worst unchanged), "
    "and even serialising host and device in the forward behind the dispatcher's per-layer D2H sync "
    "(token_dispatcher.py before_ep_alltoall, an upper bound) leaves 0.46x/0.47x (worst 2.19x): the "
    "alltoall rows' excess scales with the tokens, not as a fixed cost per micro-batch: 1.1-1.5 us "
    "per token and MoE layer on B200 at E = 128 (4,096 and 16,384-token micro-batches alike), 2.35 at"
    " E = 256, 2.24 on H100; per-token work of the alltoall path (its kernels or its all-to-alls; 6 "
    "ms per layer per micro-batch on the B200 row) that no sourced host or kernel cost here explains"
))
def test_step_time_worst_within_2x(table):
    out, _ = table
    assert tt.summary(out)["worst_factor"] <= 2.0


def test_mfu_override_still_computes_at_the_given_mfu(capsys):
    argv = ["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", "--dp", "8", "--gpu", "H100", "--json"]
    assert main(argv + ["--mfu", "0.5"]) == 0
    s = json.loads(capsys.readouterr().out)["step"]
    assert s["mfu"] == 0.5 and s["hfu_implied"] == pytest.approx(s["compute_s"] / s["step_time_s"] * 0.5, rel=0.02)
    assert main(argv) == 0
    k = json.loads(capsys.readouterr().out)["step"]
    assert k["mfu"] is None and 0 < k["mfu_implied"] < 1 and set(k["exposed_comm_s"]) >= {"dp", "tp", "pp"}


# -- overlap ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("framework", overlap.FRAMEWORKS)
@pytest.mark.parametrize("zero", [0, 1, 3])
def test_overlap_never_hides_more_than_its_compute(framework, zero):
    comm_s = {"dp": 9.0, "tp": 5.0, "pp": 2.0, "ep": 7.0, "cp": 3.0, "host": 1.0}
    t_F, t_B, m = 0.1, 0.2, 4
    ex = overlap.exposed(framework, comm_s, t_F=t_F, t_B=t_B, t_gemm=0.8, t_attn=0.3, m=m, zero=zero, layers=10,
                         hide={"ep": True})
    compute = m * (t_F + t_B)
    for d in ex.values():
        assert d["hidden_s"] + d["exposed_s"] == pytest.approx(d["time_s"])
        assert 0 <= d["hidden_s"] <= compute + 1e-12
    assert ex["tp"]["hidden_s"] <= 0.8 and ex["cp"]["hidden_s"] <= 0.3
    assert ex["host"]["hidden_s"] == 0
    # a dimension turned off is exposed whole; a short collective hides whole behind a long window
    assert overlap.exposed(framework, {"cp": 0.1}, t_F=1, t_B=2, t_gemm=3, t_attn=1, m=1, zero=zero,
                           layers=1, hide={"cp": False})["cp"]["exposed_s"] == 0.1
    assert overlap.exposed(framework, {"cp": 0.1}, t_F=1, t_B=2, t_gemm=3, t_attn=1, m=1, zero=zero,
                           layers=1)["cp"]["exposed_s"] == 0


def test_bad_hide_and_framework_are_refused():
    with pytest.raises(SymcostError, match="unknown dimension"):
        overlap.parse_hide(["xx=on"])
    with pytest.raises(SymcostError, match="on or off"):
        overlap.parse_hide(["tp=maybe"])
    with pytest.raises(SymcostError, match="--framework"):
        overlap.exposed("jax", {}, t_F=1, t_B=1, t_gemm=1, t_attn=1, m=1, zero=0, layers=1)


# -- bubbles ---------------------------------------------------------------------------------------
def _replay_1f1b(p, m, F, B):
    """A 1F1B timeline (each rank: warm-up forwards, 1F1B steady state, cool-down backwards;
    a forward waits for the previous rank's, a backward for the next rank's) -> the idle time of
    rank 0 in the step, the schedule's bubble."""
    import itertools
    done_f, done_b = {}, {}
    ops = []
    for r in range(p):
        w = min(p - r - 1, m)
        seq = [("F", i) for i in range(w)]
        f, b = w, 0
        while f < m:
            seq.append(("F", f))
            f += 1
            seq.append(("B", b))
            b += 1
        seq += [("B", i) for i in range(b, m)]
        ops.append(seq)
    t = [0.0] * p
    pos = [0] * p
    for _ in itertools.count():
        moved = False
        for r in range(p):
            while pos[r] < len(ops[r]):
                kind, i = ops[r][pos[r]]
                if kind == "F":
                    dep = done_f.get((r - 1, i), 0.0) if r > 0 else 0.0
                    if r > 0 and (r - 1, i) not in done_f:
                        break
                    t[r] = max(t[r], dep) + F
                    done_f[(r, i)] = t[r]
                else:
                    if r < p - 1 and (r + 1, i) not in done_b:
                        break
                    dep = done_b.get((r + 1, i), done_f.get((r, i), 0.0))
                    t[r] = max(t[r], dep) + B
                    done_b[(r, i)] = t[r]
                pos[r] += 1
                moved = True
        if not moved:
            break
    return max(t) - m * (F + B)


@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (8, 8), (4, 16)])
def test_1f1b_bubble_equals_the_replayed_schedule(p, m):
    F, B = 1.0, 2.0
    assert schedule.bubble_seconds("1f1b", p, F, B, 1.0) == pytest.approx(_replay_1f1b(p, m, F, B))


def test_bubble_closed_forms():
    F, B, W = 1.0, 2.0, 1.0  # W: the weight-gradient half of B
    assert schedule.bubble_seconds("1f1b", 8, F, B, W) == 7 * 3
    assert schedule.bubble_seconds("interleaved", 8, F, B, W, virtual=4) == pytest.approx(7 * 3 / 4)
    assert schedule.bubble_seconds("zb-h1", 8, F, B, W) == 7 * 1  # (p−1)(F+B−2W): a third of 1F1B's
    assert schedule.bubble_seconds("dualpipe", 8, F, B, W) == 3 * (3 + 2 - 3)  # (p/2−1)(F&B+B−3W)
    assert schedule.bubble_seconds("dualpipe", 1, F, B, W) == 0


def test_schedule_refusals_name_the_rule():
    with pytest.raises(SymcostError, match="even --pp"):
        schedule.check_schedule("dualpipe", 3, 12, 1)
    with pytest.raises(SymcostError, match="at least 2 × pp"):
        schedule.check_schedule("dualpipe", 4, 6, 1)
    with pytest.raises(SymcostError, match="one model chunk"):
        schedule.check_schedule("zb-h1", 4, 8, 2)
    with pytest.raises(SymcostError, match="virtual-stages > 1"):
        schedule.check_schedule("interleaved", 4, 8, 1)
    schedule.check_schedule("dualpipe", 4, 8, 1)


# -- uneven stages, expert folding -----------------------------------------------------------------
@pytest.mark.parametrize("plan,L,v", [
    (Plan(pp=16, first=7, last=7), 126, 1),                        # the Llama 3 405B run
    (Plan(pp=16, embed_slot=True, loss_slot=True), 126, 4),        # Megatron-Bridge 405B
    (Plan(pp=8, embed_slot=True, loss_slot=True), 94, 3),          # Qwen3-235B
    (Plan(pp=4, layout=tuple([4] + [4] * 14 + [1])), 61, 4),       # DeepSeek-V3's layout map (4, 4)
    (Plan(pp=4, first=8, last=4), 60, 4),
])
def test_uneven_stages_conserve_layers(plan, L, v):
    sizes = plan.chunk_sizes(L, v)
    assert len(sizes) == plan.pp * v and sum(sizes) == L and min(sizes) >= 0


def test_uneven_stages_place_the_layers_on_their_ranks():
    m = tt.model_of({"model": "tests/data/training_configs/llama-3.1-405b.json"})
    plan = Plan(pp=16, first=7, last=7)
    ranks = rank_stages(m, 16, 1, plan)
    assert [sum(r["layers"].values()) for r in ranks] == [7] + [8] * 14 + [7]
    inter = rank_stages(m, 8, 2, Plan(pp=8, embed_slot=True, loss_slot=True))
    assert sum(sum(r["layers"].values()) for r in inter) == 126
    assert [len(r["chunks"]) for r in inter] == [2] * 8


@pytest.mark.parametrize("plan,L,v,match", [
    (Plan(pp=16, first=6, last=7), 126, 1, "split the other"),
    (Plan(pp=4, first=3, last=4), 60, 2, "multiple of the virtual stages"),
    (Plan(pp=16, embed_slot=True), 126, 4, "must split evenly"),
    (Plan(pp=4, first=8, embed_slot=True), 60, 1, "cannot be combined"),
    (Plan(pp=4, layout=(4, 4, 4)), 12, 1, "pp × v"),
    (Plan(pp=2, layout=(4, 4)), 12, 1, "L=12"),
])
def test_uneven_stage_refusals_name_the_rule(plan, L, v, match):
    with pytest.raises(SymcostError, match=match):
        plan.chunk_sizes(L, v)


def test_interleaving_over_uneven_layers_needs_a_rule(capsys):
    base = ["train", "deepseek-v3", "--seq", "4096", "--micro-batch", "1", "--global-batch", "256", "--pp", "4",
            "--dp", "4", "--ep", "4", "--virtual-stages", "4"]
    assert main(base) == 2
    assert "must divide the layers L=61" in capsys.readouterr().err
    assert main(base + ["--pipeline-layout", ",".join(map(str, [4] + [4] * 14 + [1]))]) == 0


def test_expert_tensor_parallel_folding():
    """Megatron's folding: experts over ep·etp ranks tiling tp·dp·cp; --ep 32 with dp·cp = 16 at tp 2, etp 1
    is a published shape (refused before: N_ep had to divide dp·cp)."""
    assert fold_experts(32, 1, 2, 16, 1) == 16
    assert fold_experts(64, 1, 2, 64, 1) == 32
    assert fold_experts(8, None, 4, 8, 1) == 8
    with pytest.raises(SymcostError, match="must divide tp × dp × cp"):
        fold_experts(64, 1, 2, 16, 1)
    with pytest.raises(SymcostError, match="multiple of --tp"):
        fold_experts(2, 1, 4, 8, 1)
    s = TrainSetup.of(seq=4096, global_batch=64, dp=16, tp=2, ep=32, etp=1)
    s.check(loader.build("deepseek-v3"))
    assert s.plan.ep == 16 and s.plan.expert_ranks == 32 and s.replace(zero=1).plan.etp == 1


# -- FP8 -------------------------------------------------------------------------------------------
def test_fp8_peaks_and_bytes():
    h = gpu("H100")
    with pytest.raises(SymcostError, match="Blackwell"):
        compute.check_precision("mxfp8", h)
    with pytest.raises(SymcostError, match="no FP8"):
        compute.check_precision("fp8", gpu("A100-80GB"))
    compute.check_precision("mxfp8", gpu("B200"))
    # every card with block-scaled (FP4) tensor cores runs MXFP8, Blackwell Ultra and the RTX Blackwells too
    for name in ("B300", "GB300", "RTX-PRO-6000", "MI355X"):
        compute.check_precision("mxfp8", gpu(name))
    for name in ("H200", "MI300X", "L40S"):
        with pytest.raises(SymcostError, match=name):
            compute.check_precision("mxfp8", gpu(name))
    assert compute.fp8_weight_copy_bytes(1000, "bf16") == 0
    assert compute.fp8_weight_copy_bytes(1000, "fp8") == 2000
    assert compute.fp8_weight_copy_bytes(1024, "mxfp8") == 2048 + 64
    assert compute.fp8_weight_cast_bytes(10, "fp8") == 60


def test_fp8_runs_gemms_at_the_fp8_peak_and_keeps_attention_and_head_in_bf16(capsys):
    argv = ["train", "llama-3.1-8b", "--seq", "8192", "--micro-batch", "1", "--dp", "8", "--zero", "1", "--gpu",
            "H100", "--json"]
    out = {}
    for p in ("bf16", "fp8"):
        assert main(argv + ["--precision", p]) == 0
        out[p] = json.loads(capsys.readouterr().out)["step"]
    b, f = out["bf16"]["kernel_s"], out["fp8"]["kernel_s"]
    assert out["fp8"]["gemm_peak_dtype"] == "fp8"
    assert f["gemm"] < b["gemm"] and f["attention"] == b["attention"] and f["head"] == b["head"]
    assert out["fp8"]["step_time_s"] < out["bf16"]["step_time_s"]


def test_budget_peak_dtype(capsys):
    argv = ["budget", "llama-3.1-70b", "--tokens", "15000000000000", "--gpus", "1024", "--gpu", "H100", "--json"]
    assert main(argv + ["--peak-dtype", "fp8", "--mfu", "0.4"]) == 0
    f = json.loads(capsys.readouterr().out)
    assert main(argv + ["--mfu", "0.4"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert f["peak_dtype"] == "fp8" and f["wall_time_s"] == pytest.approx(b["wall_time_s"] * 989 / 1979)
    assert main(["budget", "llama-3.1-8b", "--tokens", "1000", "--gpus", "8", "--gpu", "A100-80GB",
                 "--peak-dtype", "fp8"]) == 2
    assert "no FP8" in capsys.readouterr().err


# -- kernel classes --------------------------------------------------------------------------------
def test_kernel_classes_partition_the_forward_flops():
    m = loader.build("deepseek-v3")
    s = TrainSetup.of(seq=4096, global_batch=8, dp=8, ep=8)
    works = compute.rank_work(m, s)
    leaves = compute.forward_leaves(m, s)
    total = sum(sum(w.flops.values()) + w.head for w in works)
    assert total == pytest.approx(sum(leaves.values()))  # one rank holds every layer: nothing lost
    assert works[0].flops["grouped_gemm"] > 0 and works[0].flops["attention"] > 0
    assert works[0].expert_rows == 8 * 4096 // (256 // 8)


# -- GPT-OSS's FLOPs against Megatron-Bridge's ------------------------------------------------------
def test_gpt_oss_flops_convention_reproduces_megatron_bridge():
    """The published TFLOPS / tokens-per-second of the GPT-OSS-120B rows is Megatron's count with the
    gate multiplier taken from --swiglu (a clamped GLU counts as two matrices) and no window term."""
    m = tt.model_of({"model": "tests/data/training_configs/gpt-oss-120b.json"})
    rows = [r for r in tt.rows() if "gpt-oss" in r["model"]]
    assert len(rows) == 4  # B200, GB200, H100, GB300
    for r in rows:
        implied = r["figure"]["model_tflops_per_gpu"] * 1e12 / r["figure"]["tokens_per_s_per_gpu"]
        v = m.values_with(T=r["seq"], B=1)
        ours = float(preset_megatron(m, swiglu_only=True).xreplace(v)) / r["seq"]
        assert ours == pytest.approx(implied, rel=0.005)
        exact = train_flops(m).total_at(v) / r["seq"]
        assert 1.10 < exact / ours < 1.21
    dense = loader.build("llama-3.1-8b")  # plain SwiGLU: both readings agree
    assert preset_megatron(dense, swiglu_only=True) == preset_megatron(dense)


def test_search_ranks_by_the_kernel_step_time(capsys):
    base = ["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", "--global-batch", "64", "--gpu", "H100",
            "--json"]
    assert main(base + ["--search", "--gpus", "16"]) == 0
    r = json.loads(capsys.readouterr().out)
    times = [b["step_time_s"] for b in r["best"]]
    assert times == sorted(times)
    b = r["best"][0]
    assert main(tt.row_argv(base, b)) == 0
    t = json.loads(capsys.readouterr().out)["step"]
    assert t["mfu"] is None and t["step_time_s"] == pytest.approx(b["step_time_s"], rel=0.05)
    assert main(base + ["--search", "--gpus", "16", "--schedule", "zb-h1"]) == 2
    assert "drop --search" in capsys.readouterr().err


def test_efficiencies_are_kernel_data_not_the_measured_set():
    """Every calibration row training reads names its source, and none is the throughput set."""
    import importlib.resources as res
    for name in ("gemm", "attn_prefill", "attn_backward", "elementwise", "optimizer"):
        rows = json.loads((res.files("symcost.hardware") / "kernels" / f"{name}.json").read_text())["rows"]
        for row in rows:
            assert row["source"] and "training_throughput" not in row["source"]
            assert "Megatron-Bridge" not in row["source"] and "torchtitan" not in row["source"]


def test_fp8_all_gather_halves_the_gather_bytes():
    s = TrainSetup.of(seq=4096, micro_batch=1, global_batch=16, dp=8, zero=3, grad_dtype="fp32")
    m = s.micro_batches
    assert compute.fp8_all_gather_share(s, "fp8") == pytest.approx((2 * m + 4 * m) / (4 * m + 4 * m))
    with pytest.raises(SymcostError, match="--zero 3"):
        compute.fp8_all_gather_share(s.replace(zero=1), "fp8")
    with pytest.raises(SymcostError, match="--precision"):
        compute.fp8_all_gather_share(s, "bf16")


def test_budget_decimal_suffixes_and_flops_convention(capsys):
    base = ["budget", "llama-3.1-70b", "--gpus", "1024", "--gpu", "H100", "--mfu", "0.4", "--json"]
    assert main(base + ["--tokens", "15T"]) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(base + ["--tokens", "15000000000000"]) == 0
    assert json.loads(capsys.readouterr().out) == a and a["tokens"] == 15 * 10**12
    assert main(base + ["--tokens", "2.5K", "--flops-convention", "6nd"]) == 0
    r = json.loads(capsys.readouterr().out)
    m = loader.build("llama-3.1-70b")
    assert r["tokens"] == 2500 and r["flops_convention"] == "6nd"
    assert r["flops"] == pytest.approx(6 * m.active_params().total_at(m.values) * 2500)
    assert main(base + ["--tokens", "1.5"]) == 2 and "whole number" in capsys.readouterr().err


def test_ddp_all_reduce_hides_behind_the_last_backward_only():
    ex = overlap.exposed("hf", {"dp": 1.0}, t_F=0.5, t_B=0.6, t_gemm=1, t_attn=1, m=4, zero=0, layers=8)
    assert ex["dp"]["hidden_s"] == pytest.approx(0.6) and ex["dp"]["exposed_s"] == pytest.approx(0.4)
    z1 = overlap.exposed("megatron", {"dp": 1.0}, t_F=0.5, t_B=0.6, t_gemm=1, t_attn=1, m=4, zero=1, layers=8,
                         grad_share=0.5)
    assert z1["dp"]["exposed_s"] == 0  # 0.5 reduce behind 0.6, 0.5 gather behind 0.5
    z3 = overlap.exposed("fsdp2", {"dp": 1.0}, t_F=0.5, t_B=0.6, t_gemm=1, t_attn=1, m=4, zero=3, layers=8)
    assert z3["dp"]["exposed_s"] == pytest.approx(1.0 / 16)  # the first unit's gather of each pass


# -- the MoE layer's own work (moe_work) ---------------------------------------------------------------
def _qwen_moe_times(micro_batch, ep):
    from symcost.training import moe_work
    m = loader.build("qwen3-30b-a3b")
    s = TrainSetup.of(seq=4096, micro_batch=micro_batch, global_batch=64 * micro_batch, dp=8, ep=ep, zero=1)
    leaves = compute.forward_leaves(m, s)
    st = rank_stages(m, 1, 1, s.plan)[0]
    w = compute.stage_work(m, s, leaves, st, True, None)
    shape = moe_work.moe_shape(m, s, w.moe_layers)
    return m, s, w, shape, compute.class_times(w, gpu("B200"), "bf16", 0, 0, "none", moe=shape)


def test_moe_permutation_bytes_and_router_follow_the_rows():
    """Q_p = 2·A·d·b·(1 + sort) per pass, A = k·B·T rows; doubling the micro-batch doubles the bytes; the
    chunk sort runs only when the all-to-all delivers several local experts' rows."""
    from symcost.training import moe_work
    m, s, w, shape, t = _qwen_moe_times(1, 8)
    assert w.moe_layers == 48 and shape.routed == 8 * 4096 and shape.local_experts == 16 and shape.sort
    g = gpu("B200")
    e = moe_work.efficiency(g.name, "elementwise", dtype="bf16")
    q = 2 * 8 * 4096 * 2048 * 2 * 2
    assert t["forward"]["moe_permute"] == pytest.approx(48 * (q / (g.bandwidth_bytes_per_s * e.eta_memory) + 4 * e.floor_s))
    assert t["backward"]["moe_permute"] == t["forward"]["moe_permute"]
    _, _, _, shape1, t1 = _qwen_moe_times(1, 1)
    assert not shape1.sort and t1["forward"]["moe_permute"] < t["forward"]["moe_permute"]
    _, _, _, _, t2 = _qwen_moe_times(2, 8)
    floors = 48 * 4 * e.floor_s
    assert t2["forward"]["moe_permute"] - floors == pytest.approx(2 * (t["forward"]["moe_permute"] - floors))


def test_grouped_gemm_pays_its_floor_and_memory_term_per_layer():
    """t = Σ_layers max(F/(P·η_c), Q/(BW·η_m)) + t_0 (the grouped_gemm class's own model): never below
    the FLOP term alone, and one floor per layer and pass above it when compute-bound."""
    m, s, w, shape, t = _qwen_moe_times(1, 8)
    g = gpu("B200")
    e = compute.efficiency(g.name, "grouped_gemm", dtype="bf16", m=w.expert_rows)
    flop_term = float(w.flops["grouped_gemm"]) / (g.peak("bf16")[0] * e.eta_compute)
    assert e.floor_s > 0
    assert t["forward"]["grouped_gemm"] >= flop_term + 48 * e.floor_s - 1e-12
    assert t["backward"]["grouped_gemm"] == pytest.approx(2 * t["forward"]["grouped_gemm"])


def test_dense_model_has_no_moe_terms():
    m = loader.build("llama-3.1-8b")
    s = TrainSetup.of(seq=4096, micro_batch=1, global_batch=8, dp=8)
    st = rank_stages(m, 1, 1, s.plan)[0]
    w = compute.stage_work(m, s, compute.forward_leaves(m, s), st, True, None)
    t = compute.class_times(w, gpu("H100"), "bf16", 0, 0, "none")
    assert w.moe_layers == 0 and t["forward"]["moe_router"] == 0 and t["forward"]["moe_permute"] == 0
    assert w.launches["gemm"] == 32 * 7 + 1  # seven weight GEMM leaves a layer, and the head


# -- CPU offload: the host steps the optimizer (offload) -------------------------------------------------
_OFF = ["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", "--global-batch", "64", "--gpu", "H100",
        "--json", "--framework", "deepspeed"]


def test_offloaded_optimizer_pays_cpu_adam_and_the_copy_back(capsys):
    """t_cpu = 30·Ψ_h·G_h/(BW_host·η_host) (DGX H100's host row), serial after the backward; the copies
    to the host are exposed under DeepSpeed ZeRO-2 (overlap_comm off below ZeRO-3), hidden behind the
    backward up to it under ZeRO-3; offload is no longer free against the GPU optimizer."""
    from symcost.training import optimizer_offload as offload
    layout = ["--dp", "8"]
    assert main(_OFF + layout + ["--zero", "2"]) == 0
    base = json.loads(capsys.readouterr().out)
    assert main(_OFF + layout + ["--zero", "2", "--offload", "optimizer"]) == 0
    off = json.loads(capsys.readouterr().out)
    host = off["breakdown"]["host_bytes"] if "host_bytes" in off["breakdown"] else None
    psi_h = offload.offloaded_params(16 * 8_030_261_248 // 8, 12, 4, 2, "optimizer")
    row = offload.host_system("H100")
    assert row["system"] == "DGX H100" and row["gpus_sharing"] == 8
    want = 30 * psi_h * 8 / (row["bandwidth_gbs"] * 1e9 * row["eta_memory"])
    assert off["step"]["cpu_adam_s"] == pytest.approx(want, rel=1e-9)
    assert off["step"]["step_time_s"] > base["step"]["step_time_s"] + 0.9 * want
    assert off["step"]["overlap_rules"]["host"] == "exposed"
    assert main(_OFF + layout + ["--zero", "3", "--offload", "optimizer"]) == 0
    z3 = json.loads(capsys.readouterr().out)["step"]
    assert z3["hidden_comm_s"]["host"] > 0 and z3["hidden_comm_s"]["host"] <= z3["comm_s"]["host"]
    assert host is None or host > 0


def test_cpu_adam_shares_the_host_only_with_the_runs_gpus():
    from symcost.training import optimizer_offload as offload
    one = offload.cpu_adam_seconds(1e9, "H100", 1)
    assert offload.cpu_adam_seconds(1e9, "H100", 64) == pytest.approx(8 * one)
    assert offload.cpu_adam_seconds(1e9, "GB200", 64) == pytest.approx(
        30e9 * 2 / (512e9 * 0.8))  # a Grace serves two GPUs


def test_search_costs_offload_as_train_does(capsys):
    """The search's array form of the host step (``search._host_step``) against `train` run alone."""
    argv = _OFF[:-2] + ["--json", "--framework", "deepspeed", "--search", "--gpus", "8", "--offload", "optimizer",
                        "--zero", "2"]
    assert main(argv) == 0
    b = json.loads(capsys.readouterr().out)["best"][0]
    run = _OFF + ["--micro-batch", str(b["micro_batch"]), "--zero", "2", "--offload", "optimizer",
                  "--recompute", b["recompute"], "--sp" if b["sp"] else "--no-sp"]
    run += [x for k in ("dp", "tp", "pp", "ep", "cp") for x in (f"--{k}", str(b[k]))]
    assert main(run) == 0
    t = json.loads(capsys.readouterr().out)["step"]
    assert t["step_time_s"] == pytest.approx(b["step_time_s"], rel=0.03)
    assert t["cpu_adam_s"] > 0.05 * t["step_time_s"]


def test_search_reports_the_schedule_of_each_row(capsys):
    argv = ["train", "llama-3.1-70b", "--seq", "4096", "--micro-batch", "1", "--global-batch", "512", "--search",
            "--gpus", "64", "--gpu", "H100", "--json"]
    assert main(argv) == 0
    best = json.loads(capsys.readouterr().out)["best"]
    for b in best:
        want = "none" if b["pp"] == 1 else ("interleaved" if b["virtual_stages"] > 1 else "1f1b")
        assert b["schedule"] == want
    assert {b["schedule"] for b in best} >= {"none", "interleaved"}


# -- the step as a term tree (stepformula) --------------------------------------------------------------
def test_step_term_tree_evaluates_to_the_printed_step_on_every_measured_row(table):
    out, _ = table
    for r in out:
        f = r["step"]["formula"]
        assert f["value_s"] == pytest.approx(r["step"]["step_time_s"], rel=1e-9), r["id"]


@pytest.mark.parametrize("schedule", ["1f1b", "zb-h1", "dualpipe"])
def test_step_term_tree_reads_back_and_differentiates(capsys, schedule):
    """The formula parses in the notation (symcost.parse), equals the step at the printed layout, and
    its derivative in m_mb is one micro-batch's forward, backward and recomputation on the slowest rank
    (the bubble and the exposed collectives do not grow with m_mb in the tree)."""
    import sympy

    from symcost import parse
    from symcost.core.notation import sym
    argv = ["train", "qwen3-30b-a3b", "--seq", "4096", "--micro-batch", "1", "--global-batch", "256", "--dp", "4",
            "--pp", "4", "--ep", "4", "--zero", "1", "--gpu", "H100", "--json", "--schedule", schedule]
    assert main(argv) == 0
    s = json.loads(capsys.readouterr().out)["step"]
    f = s["formula"]
    e = parse(f["formula"])
    at = {sym.by_name(k) if hasattr(sym, "by_name") else getattr(sym, k): v for k, v in f["at"].items()}
    assert float(e.xreplace(at)) == pytest.approx(s["step_time_s"], rel=1e-9)
    per_mb = sum(f["terms"][k]["value_s"] for k in ("t_F", "t_B", "t_R"))
    assert float(sympy.diff(e, sym.m_mb).xreplace(at)) == pytest.approx(per_mb, rel=1e-9)
    assert f["terms"]["bubble"]["value_s"] == pytest.approx(s["bubble_s"], rel=1e-9)
    assert sympy.diff(e, sym.N_pp).xreplace(at) > 0  # more stages, a longer bubble


def test_search_interleaves_layer_counts_that_do_not_divide_with_embedding_and_loss_slots(capsys):
    """Qwen3-235B's 94 layers: pp·v = 48 chunks only with Megatron's embedding and loss slots (96 = 48·2).
    The search offers them; its best row, run alone through `train` with the same flags, has the same bytes
    exactly and its step time within 3 %."""
    model = "tests/data/training_configs/qwen3-235b-a22b.json"
    base = ["train", model, "--seq", "4096", "--micro-batch", "1", "--global-batch", "1024", "--gpu", "B200", "--json"]
    assert main(base + ["--search", "--gpus", "64", "--virtual-stages", "6"]) == 0
    r = json.loads(capsys.readouterr().out)
    best = [b for b in r["best"] if b["pp"] > 1]
    assert best and all(b["account_embedding"] and b["account_loss"] for b in best)
    assert all(b["schedule"] == "interleaved+slots" for b in best)
    b = best[0]
    argv = base + ["--micro-batch", str(b["micro_batch"]), "--zero", str(b["zero"]), "--recompute", b["recompute"],
                   "--offload", b["offload"], "--virtual-stages", "6", "--account-embedding", "--account-loss",
                   "--schedule", "interleaved", "--sp" if b["sp"] else "--no-sp"]
    argv += [x for k in ("dp", "tp", "pp", "ep", "cp") for x in (f"--{k}", str(b[k]))]
    if b["hsdp_shard"] is not None:
        argv += ["--hsdp-shard", str(b["hsdp_shard"])]
    assert main(argv) == 0
    t = json.loads(capsys.readouterr().out)
    assert t["per_gpu_bytes"] == b["per_gpu_bytes"]
    assert t["step"]["step_time_s"] == pytest.approx(b["step_time_s"], rel=0.03)


# -- the attention kernels' speed class (--attention-impl) --------------------------------------------
def test_flash_attention_2_rows_are_the_papers_ratio_of_the_class_rows():
    """On H100 the fa2 rows are the class rows (cuDNN / FlashAttention-3 speed) times FlashAttention-2's
    speed over cuDNN's in the FlashAttention-3 paper's head-dim-128 figures, 0.60-0.70; a card without fa2
    rows takes the class rows, and the step's notes say so."""
    from symcost.hardware import calibration
    for op, m in (("attn_prefill", 1024), ("attn_prefill", 8192), ("attn_prefill", 65536),
                  ("attn_backward", 512), ("attn_backward", 2048), ("attn_backward", 32768)):
        fused = calibration.efficiency("H100", op, m=m)
        fa2 = calibration.efficiency("H100", op, m=m, variant="fa2")
        assert 0.55 < fa2.eta_compute / fused.eta_compute < 0.75, (op, m)
        assert fa2.floor_s == fused.floor_s and "arXiv 2407.08608" in fa2.source
        # the power-limited 96 GB card runs the H100's rows (its calibration base)
        assert calibration.efficiency("H100-96GB-500W", op, m=m, variant="fa2") == fa2
    assert not calibration.has_variant("B200", "attn_prefill", "fa2")
    assert calibration.efficiency("B200", "attn_prefill", m=8192, variant="fa2") == \
        calibration.efficiency("B200", "attn_prefill", m=8192)


def test_attention_impl_slows_the_attention_and_nothing_else(capsys):
    """--attention-impl fa2 changes the attention terms of the step only: the GEMMs, the bytes and the
    collectives stay; a card without fa2 rows keeps its step and says why in the notes."""
    argv = ["train", "llama-3.1-8b", "--seq", "32768", "--micro-batch", "1", "--dp", "8", "--zero", "3",
            "--recompute", "full", "--json"]
    got = {}
    for card in ("H100", "B200"):
        for impl in ("fused", "fa2"):
            assert main(argv + ["--gpu", card, "--attention-impl", impl]) == 0
            got[card, impl] = json.loads(capsys.readouterr().out)
    f, a = got["H100", "fused"], got["H100", "fa2"]
    assert a["per_gpu_bytes"] == f["per_gpu_bytes"]
    assert a["step"]["step_time_s"] > 1.2 * f["step"]["step_time_s"]
    b_f, b_a = got["B200", "fused"], got["B200", "fa2"]
    assert b_a["step"]["step_time_s"] == b_f["step"]["step_time_s"]
    assert any("no fa2 row for B200" in n for n in json.dumps(b_a["step"]).split('"'))


def test_search_costs_the_attention_impl_as_train_does(capsys):
    """The search's array form and `train` agree under fa2 as under the class rows."""
    base = ["train", "llama-3.1-8b", "--seq", "16384", "--global-batch", "16", "--gpu", "H100",
            "--attention-impl", "fa2", "--json"]
    assert main(base + ["--search", "--gpus", "8", "--micro-batch", "1"]) == 0
    b = json.loads(capsys.readouterr().out)["best"][0]
    assert main(tt.row_argv(base, b, schedule=True)) == 0
    t = json.loads(capsys.readouterr().out)
    assert t["step"]["step_time_s"] == pytest.approx(b["step_time_s"], rel=0.005)
