"""Model states beyond plain ZeRO (CPU offload, HSDP), MoE capacity and dispatch buffers, and the
interleaved pipeline schedule, against the papers' own formulas (computed here, not copied from
the engine): ZeRO-Offload (Ren et al. 2021 §4: GPU keeps the 2Ψ fp16 parameters, 4Ψ cross PCIe
per step), hybrid sharding as FSDP inside a shard group, Megatron-LM's capacity (``get_capacity``)
and interleaved 1F1B (Narayanan et al. 2021; Korthikanti et al. 2022 §4.2.3)."""
import json
from fractions import Fraction
from math import ceil

import pytest
import sympy

import symcost
import symcost.hardware.gpus
from symcost.cli import main
from symcost.core.notation import sym
from symcost.training.comm import comm
from symcost.training.memory import model_states, train_memory
from symcost.training.plan import Plan
from symcost.training.schedule import forward_chunk, peak, warmup
from symcost.training.setup import Batch, TrainSetup  # noqa: F401
from symcost.training.states import States


def up(x):
    return -(-Fraction(x).numerator // Fraction(x).denominator)


@pytest.fixture(scope="module")
def llama():
    return symcost.build("llama-3.1-8b")


@pytest.fixture(scope="module")
def mixtral():
    return symcost.build("mixtral-8x7b-v0.1")


# -- CPU offload -----------------------------------------------------------------------------------
def test_zero_offload_single_gpu(llama):
    """ZeRO-Offload on one GPU (bf16, AdamW): the GPU keeps the 2Ψ half-precision weights; the
    12Ψ optimizer state and the 2Ψ gradients live on the host; 2Ψ gradients down and 2Ψ weights
    up per step, the paper's 4M communication volume."""
    psi = llama.params().total_at(llama.values)
    tm = train_memory(llama, TrainSetup.of(seq=2048, micro_batch=1, zero=2, offload="optimizer"))
    assert (tm.weights, tm.gradients, tm.optimizer) == (2 * psi, 0, 0)
    assert tm.host == 14 * psi
    c = comm(llama, TrainSetup.of(seq=2048, micro_batch=1, zero=2, offload="optimizer"))
    assert c["bytes"]["host"] == 4 * psi and c["bytes"]["dp"] == 0


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_offload_optimizer_shards_over_dp(llama, zero):
    psi = llama.params().total_at(llama.values)
    n = 8
    st = model_states(llama, TrainSetup(Batch(1), plan=Plan(dp=n, zero=zero), states=States(offload="optimizer")))[0]
    assert st["weights"] == up(Fraction(2 * psi, n if zero == 3 else 1))
    assert (st["gradients"], st["optimizer"]) == (0, 0)
    assert st["host"] == up(Fraction(14 * psi, n))
    # the data-parallel traffic is what it is without offload; PCIe moves only this rank's shard
    c = comm(llama, TrainSetup.of(seq=1024, micro_batch=1, dp=n, zero=zero, offload="optimizer"))
    assert c["bytes"]["dp"] == comm(llama, TrainSetup.of(seq=1024, micro_batch=1, dp=n, zero=zero))["bytes"]["dp"]
    assert c["bytes"]["host"] == up(Fraction(4 * psi, n))


def test_offload_params_zero3_per_micro_batch(llama):
    """FSDP CPUOffload(offload_params=True): weights, gradients and optimizer state of the shard on
    the host; each micro-batch copies the weight shard in for the forward and for the backward and
    the gradient shard out."""
    psi = llama.params().total_at(llama.values)
    n, mb = 8, 4
    tm = train_memory(llama, TrainSetup.of(seq=1024, micro_batch=1, global_batch=n * mb, dp=n, zero=3, offload="params"))
    assert (tm.weights, tm.gradients, tm.optimizer) == (0, 0, 0)
    assert tm.host == up(Fraction(16 * psi, n))
    c = comm(llama, TrainSetup.of(seq=1024, micro_batch=1, global_batch=n * mb, dp=n, zero=3, offload="params"))
    assert c["bytes"]["host"] == up(Fraction((2 * 2 * mb + 2 * mb) * psi, n))
    last = comm(llama, TrainSetup.of(seq=1024, micro_batch=1, global_batch=n * mb, dp=n, zero=3, offload="params"),
                grad_sync="last")
    assert last["bytes"]["host"] == up(Fraction((2 * 2 * mb + 2) * psi, n))


def test_offload_in_step_time(capsys):
    base = ["train", "llama-3.1-8b", "--seq", "2048", "--micro-batch", "1", "--zero", "2", "--gpu", "H100",
            "--mfu", "0.4", "--json"]  # the α–β path, where host traffic is exposed in full
    assert main(base) == 0
    t0 = json.loads(capsys.readouterr().out)["step"]
    assert main(base + ["--offload", "optimizer", "--pcie-gbs", "20"]) == 0
    r = json.loads(capsys.readouterr().out)
    m = symcost.build("llama-3.1-8b")
    psi = m.params().total_at(m.values)
    assert r["step"]["comm_s"]["host"] == pytest.approx(2 * 10e-6 + 4 * psi / 20e9)
    assert r["step"]["step_time_s"] == pytest.approx(t0["step_time_s"] + r["step"]["comm_s"]["host"])
    assert r["host_bytes_per_gpu"] == 14 * psi


# -- HSDP -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("zero", [1, 2, 3])
def test_hsdp_is_sharding_inside_the_group(llama, zero):
    """HSDP over dp = 32 with shard groups of 8: each GPU holds what plain ZeRO over 8 ranks holds,
    the in-group traffic is ZeRO over 8 ranks, and the 4 replicas all-reduce the gradient shard:
    2·(r−1)/r·b_g·Ψ/8 (every micro-batch at ZeRO-3, once per step at ZeRO-1/2)."""
    psi = llama.params().total_at(llama.values)
    mb = 2
    hs = model_states(llama, TrainSetup(Batch(1), plan=Plan(dp=32, zero=zero), states=States(shard=8)))[0]
    flat = model_states(llama, TrainSetup(Batch(1), plan=Plan(dp=8, zero=zero)))[0]
    assert [hs[k] for k in ("weights", "gradients", "optimizer")] == \
           [flat[k] for k in ("weights", "gradients", "optimizer")]
    kw = dict(seq=1024, micro_batch=1, zero=zero)
    h = comm(llama, TrainSetup.of(dp=32, hsdp_shard=8, global_batch=32 * mb, **kw))
    f = comm(llama, TrainSetup.of(dp=8, global_batch=8 * mb, **kw))
    assert h["bytes"]["dp"] == f["bytes"]["dp"]
    times = mb if zero == 3 else 1
    assert h["bytes"]["dp_replicate"] == up(times * 2 * Fraction(3, 4) * 2 * Fraction(psi, 8))


def test_hsdp_experts_shard_inside_the_group(mixtral):
    """Experts are sharded over hsdp-shard·cp/ep ranks: dp = 16, shard 8, ep 8 → expert shard 1."""
    total = mixtral.params().total_at(mixtral.values)
    routed = mixtral.routed_params().total_at(mixtral.values)
    st = model_states(mixtral, TrainSetup(Batch(1), plan=Plan(dp=16, ep=8, zero=1), states=States(shard=8)))[0]
    assert st["optimizer"] == up(Fraction(12 * (total - routed), 8) + Fraction(12 * routed, 8))


def test_hsdp_step_time_uses_two_spans(capsys):
    """The shard group of 8 sits in a node (NVLink); the replica all-reduce crosses nodes."""
    assert main(["comm", "llama-3.1-8b", "--seq", "2048", "--micro-batch", "1", "--dp", "32", "--zero", "3",
                 "--hsdp-shard", "8", "--gpu", "H100", "--alpha-us", "0", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    nv = symcost.hardware.gpus.gpu("H100").link_gbs * 1e9
    assert r["step"]["comm_s"]["dp"] == pytest.approx(r["bytes_per_step"]["dp"] / nv)
    assert r["step"]["comm_s"]["dp_replicate"] == pytest.approx(r["bytes_per_step"]["dp_replicate"] / 50e9)


# -- MoE capacity and dispatch ----------------------------------------------------------------------
def test_megatron_capacity_rows(mixtral):
    """Megatron ``get_capacity``: cap = ceil(c_f·k·tokens/E) per expert; padded to capacity every
    expert holds exactly cap rows, E·cap in all (dropless: k·tokens)."""
    from symcost.training.activations import routed_rows
    k, E = int(mixtral.values[sym.k]), int(mixtral.values[sym.E])
    for cf, n in ((Fraction(5, 4), 4096), (Fraction(1), 4096), (Fraction(1, 2), 1000), (Fraction(3, 2), 7)):
        assert routed_rows(sympy.Integer(k), sympy.Integer(E), sympy.Integer(n), cf) == E * ceil(cf * k * n / E)
    assert routed_rows(sympy.Integer(k), sympy.Integer(E), sympy.Integer(4096)) == k * 4096


def test_capacity_scales_the_expert_rows(mixtral):
    """Only the per-assignment tensors change: at c_f = 1 with E | k·tokens they equal dropless,
    at c_f = 5/4 they are 5/4 of it, and the EP all-to-all grows by the same factor."""
    kw = dict(seq=4096, micro_batch=1, dp=8, ep=8)
    drop = train_memory(mixtral, TrainSetup.of(**kw))
    one = train_memory(mixtral, TrainSetup.of(capacity=Fraction(1), **kw))
    big = train_memory(mixtral, TrainSetup.of(capacity=Fraction(5, 4), **kw))
    assert one.activations == drop.activations
    v = mixtral.values_with(T=4096, B=1)
    v[sym.b_a] = 2
    routed = sum(x for path, x in drop.formula["activations_per_micro_batch"].at(v).items()
                 if "/experts/" in f"/{path}/")
    assert big.activations - drop.activations == routed // 4
    e0 = comm(mixtral, TrainSetup.of(**kw))["bytes"]["ep"]
    e1 = comm(mixtral, TrainSetup.of(capacity=Fraction(5, 4), **kw))["bytes"]["ep"]
    assert Fraction(e1, e0) == Fraction(5, 4)


def test_capacity_pads_the_expert_flops(mixtral, capsys):
    """Padded to capacity the experts compute on E·cap rows: the routed-expert FLOPs (forward and
    backward) grow by E·cap/(k·tokens), everything else stays."""
    from symcost.training import train_flops
    kw = dict(seq=4096, micro_batch=1, dp=8, ep=8, global_batch=16)
    drop = train_memory(mixtral, TrainSetup.of(**kw)).flops_per_step
    assert train_memory(mixtral, TrainSetup.of(capacity=Fraction(1), **kw)).flops_per_step == drop
    routed = sum(x for p, x in train_flops(mixtral).at(mixtral.values_with(T=4096, B=16)).items()
                 if p.rsplit("/", 1)[-1].startswith("experts_"))
    assert train_memory(mixtral, TrainSetup.of(capacity=Fraction(5, 4), **kw)).flops_per_step == drop + routed // 4
    assert main(["comm", "mixtral-8x7b-v0.1", "--seq", "512", "--micro-batch", "1", "--capacity-factor", "1.25",
                 "--json"]) == 2
    assert "--ep > 1" in json.loads(capsys.readouterr().out)["error"]


def test_dispatch_buffers_are_working_memory(mixtral):
    """With EP > 1 one MoE layer's send and receive buffers (k·tokens rows × d × b_a each) are alive
    during its dispatch; under sequence parallelism each TP rank dispatches its own tokens."""
    k, d = int(mixtral.values[sym.k]), int(mixtral.values[sym.d])
    # without EP the working set is the layer's backward gradient buffers alone (``backward_buffers``:
    # 2·b_a·d per token, plus 3·b_a·w with w the widest dense column-parallel projection, q's H_q·D_h,
    # the experts' projections being routed); EP adds the dispatch buffers on top
    base = train_memory(mixtral, TrainSetup.of(seq=4096, micro_batch=1, dp=8)).recompute_working
    w = int(mixtral.values[sym.H_q] * mixtral.values[sym.D_h])
    assert base == 2 * 4096 * d * 2 + 3 * 4096 * w * 2
    tm = train_memory(mixtral, TrainSetup.of(seq=4096, micro_batch=1, dp=8, ep=8))
    assert tm.recompute_working - base == 2 * k * 4096 * d * 2
    sp_base = train_memory(mixtral, TrainSetup.of(seq=4096, micro_batch=1, dp=8, tp=2, sp=True)).recompute_working
    sp = train_memory(mixtral, TrainSetup.of(seq=4096, micro_batch=1, dp=4, ep=4, tp=2, sp=True))
    assert sp.recompute_working - sp_base == 2 * k * 4096 * d * 2 // 2


# -- interleaved 1F1B -----------------------------------------------------------------------------
def test_interleaved_schedule_order():
    """Megatron's interleaved schedule, p = 4, v = 2 (Narayanan et al. 2021, Fig. 4): forwards run
    micro-batch groups of p through chunk 0, then chunk 1; rank r warms up 2(p−r−1) + (v−1)p."""
    assert [forward_chunk(k, 4, 2) for k in range(16)] == [0] * 4 + [1] * 4 + [0] * 4 + [1] * 4
    assert [warmup(4, r, 2, 8) for r in range(4)] == [10, 8, 6, 4]
    assert [warmup(4, r, 1, 8) for r in range(4)] == [3, 2, 1, 0]
    assert warmup(4, 0, 2, 4) == 8  # capped at m·v


@pytest.mark.parametrize("p,v", [(4, 2), (2, 4), (4, 4), (8, 2), (8, 4)])
def test_interleaved_first_stage_holds_korthikanti(llama, p, v):
    """Korthikanti et al. 2022 §4.2.3: the first stage holds p·(1 + (p−1)/(p·v)) micro-batches'
    worth of activations under the interleaved schedule (m ≥ p)."""
    tm = train_memory(llama, TrainSetup.of(seq=1024, micro_batch=1, global_batch=2 * p, pp=p, virtual=v))
    expect = p * (1 + Fraction(p - 1, p * v))
    got = tm.stages[0]["in_flight"]
    assert Fraction(got) == expect
    counts = tm.stages[0]["in_flight_chunks"]
    assert sum(counts) == 2 * (p - 1) + (v - 1) * p + 1
    # the bytes: the held chunks' own activations (chunk 0 carries the embedding, so the peak is
    # the steady-state moment with the most chunk-0 activations, at least the end of the warmup's)
    acts = tm.stages[0]["activations"]
    assert acts == peak_bytes(llama, p, v, counts)
    assert acts >= peak_bytes(llama, p, v, [2 * p - 1] + [p] * (v - 1))


def peak_bytes(model, p, v, counts):
    """Stage 0's held bytes from the activation tree: counts of chunk j × (L/(p·v) layers, plus the
    embedding and shared tables on chunk 0)."""
    from symcost.core.conventions import Backward
    from symcost.training.activations import activations
    vals = model.values_with(T=1024, B=1)
    vals.update({sym.b_a: 2, sym.N_tp: 1, sym.N_cp: 1})
    tree = activations(model, Backward())
    L = int(model.values[sym.L])
    g = model.groups[0]
    layer = int(tree[g.name].total.xreplace(vals)) // L
    pre = sum(int(tree[k].total.xreplace(vals)) for k in [c.key for c in model.pre] + ["shared"] if k in tree)
    per_chunk = L // (p * v) * layer
    return sum(c * per_chunk for c in counts) + counts[0] * pre


def test_interleaved_pp_traffic_and_bubble(llama, capsys):
    """Every model chunk sends its activation forward and its gradient back: 2v per micro-batch on
    an interior rank (v× plain 1F1B); the bubble is (p−1)/(v·m) of the ideal time."""
    d = int(llama.values[sym.d])
    plain = comm(llama, TrainSetup.of(seq=1024, micro_batch=1, global_batch=8, pp=4))
    inter = comm(llama, TrainSetup.of(seq=1024, micro_batch=1, global_batch=8, pp=4, virtual=2))
    assert plain["bytes"]["pp"] == 8 * 2 * 1024 * d * 2
    assert inter["bytes"]["pp"] == 8 * 4 * 1024 * d * 2
    assert main(["comm", "llama-3.1-8b", "--seq", "1024", "--micro-batch", "1", "--global-batch", "8", "--pp", "4",
                 "--virtual-stages", "2", "--gpu", "H100", "--mfu", "0.4", "--json"]) == 0  # the closed-form bubble
    r = json.loads(capsys.readouterr().out)
    b = r["step"]["bubble"]
    assert b / (1 - b) == pytest.approx(3 / (2 * 8))


def test_peak_follows_the_heavier_chunk():
    """With unequal chunks the peak is where the held bytes are largest, not the largest count."""
    # p = 4, v = 2, m = 8, rank 0: 11 chunks in flight; end of warmup + 1 forward is [7, 4]; one
    # steady step later the backward has freed a chunk-1 activation and the forward added chunk 0
    assert peak(4, 0, 2, 8, [1, 1]) == [7, 4]  # equal chunks: the first moment of the maximum
    assert peak(4, 0, 2, 8, [1, 100]) == [7, 4]
    assert peak(4, 0, 2, 8, [100, 1]) == [8, 3]


# -- formulas -------------------------------------------------------------------------------------
@pytest.mark.parametrize("model,extra", [
    ("llama-3.1-8b", ["--dp", "32", "--zero", "3", "--hsdp-shard", "8", "--offload", "params", "--global-batch", "64"]),
    ("llama-3.1-8b", ["--dp", "4", "--zero", "1", "--offload", "optimizer", "--pp", "4", "--virtual-stages", "2",
                      "--global-batch", "16"]),
    ("mixtral-8x7b-v0.1", ["--dp", "8", "--ep", "4", "--zero", "2", "--hsdp-shard", "4",
                           "--capacity-factor", "1.25"]),
])
def test_formulas_round_trip(model, extra, capsys):
    from symcost.core.exprparse import parse
    assert main(["train", model, "--seq", "4096", "--micro-batch", "1", "--json", *extra]) == 0
    r = json.loads(capsys.readouterr().out)
    v = {sym.N_dp: r["dp"], sym.N_tp: r["tp"], sym.N_cp: r["cp"], sym.N_ep: r["ep"], sym.B: 1,
         sym.T: 4096, sym.b_a: 2, sym.N_sh: r["hsdp_shard"] or r["dp"]}
    total = parse(r["formula"]["total"]).xreplace(v)
    # per GPU = states + gathered + activations + Max(loss_peak, working): the whole figure, one term tree
    assert int(sympy.ceiling(total)) == r["per_gpu_bytes"]
    if r["offload"] != "none":
        assert int(sympy.ceiling(parse(r["formula"]["host"]).xreplace(v))) == r["host_bytes_per_gpu"]
    assert main(["comm", model, "--seq", "4096", "--micro-batch", "1", "--json", *extra]) == 0
    c = json.loads(capsys.readouterr().out)
    v[sym.m_mb] = c["micro_batches"]
    for dim, nbytes in c["bytes_per_step"].items():
        assert int(sympy.ceiling(parse(c["formula"][dim]).xreplace(v))) == nbytes, dim


# -- bad options: exit 2, one line naming the constraint ---------------------------------------------
@pytest.mark.parametrize("argv,needle", [
    (["--offload", "optimizer"], "needs --zero 1, 2 or 3"),
    (["--offload", "params", "--zero", "2"], "needs --zero 3"),
    (["--dp", "8", "--zero", "3", "--hsdp-shard", "3"], "must divide --dp 8"),
    (["--dp", "8", "--zero", "3", "--hsdp-shard", "8"], "equals --dp"),
    (["--dp", "8", "--hsdp-shard", "2"], "nothing is sharded at ZeRO-0"),
    (["--capacity-factor", "1.25"], "no routed experts"),
    (["--virtual-stages", "2"], "needs --pp > 1"),
    (["--pp", "4", "--virtual-stages", "3", "--global-batch", "8"], "must divide the layers"),
    (["--pp", "4", "--virtual-stages", "2", "--global-batch", "6"], "multiple of --pp 4"),
])
def test_bad_options_exit_2(argv, needle, capsys):
    for cmd in ("train", "comm"):
        assert main([cmd, "llama-3.1-8b", "--seq", "512", "--micro-batch", "1", "--json", *argv]) == 2
        out, err = capsys.readouterr()
        assert needle in json.loads(out)["error"] and len(err.strip().splitlines()) == 1


def test_compiled_loss_with_chunks_exits_2(capsys):
    """A compiled loss and a chunked loss are two kernels: the pair is refused in one line."""
    assert main(["train", "llama-3.1-8b", "--seq", "512", "--micro-batch", "1", "--json", "--compiled-loss",
                 "--loss-chunks", "4"]) == 2
    out, err = capsys.readouterr()
    assert "--compiled-loss with --loss-chunks 4" in json.loads(out)["error"] and len(err.strip().splitlines()) == 1


def test_bad_moe_options_exit_2(capsys):
    base = ["train", "mixtral-8x7b-v0.1", "--seq", "512", "--micro-batch", "1", "--json"]
    for argv, needle in ((["--capacity-factor", "0"], "must be > 0"),
                         (["--dp", "8", "--ep", "8", "--zero", "1", "--hsdp-shard", "4"], "must divide hsdp-shard")):
        assert main(base + argv) == 2
        assert needle in json.loads(capsys.readouterr().out)["error"]
    # --search sweeps these options; given, they pin (tests/test_train_search.py)
    assert main(["train", "deepseek-v3", "--seq", "4096", "--micro-batch", "1", "--global-batch", "64", "--search",
                 "--gpus", "64", "--gpu", "H800", "--offload", "optimizer", "--zero", "1", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["pinned"] == {"zero": 1, "offload": "optimizer"}
    assert all(b["offload"] == "optimizer" and b["zero"] == 1 for b in r["best"])


# -- the sheet's Training and Communication sections ------------------------------------------------
@pytest.mark.parametrize("name", ["llama-3.1-8b", "deepseek-v3"])
def test_sheet_sections_are_the_train_and_comm_formulas(name):
    """The sections print train_memory / comm on the model's own setup (train --search on the fewest
    H100 that fit, offload off); each formula line evaluates to the exact figure printed beside it."""
    from symcost.documents.report import lines_for, render_sheet
    from symcost.training.sheet import GLOBAL_BATCH, search_setup, training_context
    m = symcost.build(name)
    ctx = training_context(m, seq=4096, lines_for=lines_for)
    assert not ctx["error"]
    found = search_setup(m, 4096)
    setup = found["setup"]
    assert setup.batch.global_batch == GLOBAL_BATCH and setup.plan.world * setup.plan.ep // setup.plan.ep == found["gpus"]
    tm = train_memory(m, setup)
    assert ctx["memory"]["total"] == tm.per_gpu == found["best"]["per_gpu_bytes"]
    assert [r["value"] for r in ctx["memory"]["states"]] == [tm.weights, tm.gradients, tm.optimizer, tm.activations] + [
        x for x in (tm.gathered, tm.loss_peak) if x]
    c = comm(m, setup)
    assert {r["name"]: r["value"] for r in ctx["comm"]} == {k: x for k, x in c["bytes"].items() if x}
    for r in ctx["memory"]["states"] + ctx["comm"]:
        assert r["lines"][-1].endswith(f"{r['value']:,}".replace(",", "{,}") + r"\ \text{bytes}")
    tex = render_sheet(m)
    assert r"\section{Training memory per GPU on" in tex and r"\section{Communication per GPU and step on" in tex


def test_sheet_setup_is_the_fewest_gpus_that_fit():
    """The world size is the first of 1, 2, 4, ... on which the search finds a fitting setup: half of it
    finds none (DeepSeek-V3 on H100, no CPU offload)."""
    from symcost.hardware.gpus import gpu
    from symcost.training.search import search
    from symcost.training.sheet import GLOBAL_BATCH, search_setup
    m = symcost.build("deepseek-v3")
    found = search_setup(m, 4096)
    assert found["gpus"] > 8
    smaller = search(m, TrainSetup.of(seq=4096, global_batch=GLOBAL_BATCH), gpus=found["gpus"] // 2, gpu=gpu("H100"),
                     top=1, offload="none")
    assert not smaller["best"]


def test_sheet_without_activation_declarations_says_so(monkeypatch):
    """A mechanism that declares no saved tensors: the search cannot cost a setup, and the section says
    why instead of printing a layout it did not check."""
    from symcost.components.ffn import FFN
    from symcost.documents.report import lines_for
    from symcost.training.sheet import training_context

    def nothing(self, bw):
        raise NotImplementedError(f"{self.label()} declares no saved-for-backward tensors")
    monkeypatch.setattr(FFN, "saved", nothing)
    m = symcost.build("llama-3.1-8b")
    ctx = training_context(m, seq=4096, lines_for=lines_for)
    assert "declares no saved-for-backward tensors" in ctx["error"]
