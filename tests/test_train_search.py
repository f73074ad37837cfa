"""``train --search``: the vectorised sweep against ``train`` / ``comm`` run on one setup, the
candidate set against an enumeration checked by the engine's own validators, pinning, bad input.

The references are the single-setup code paths (``train_memory``, ``comm``, ``steptime.step_time``,
``schedule.peak``) and the checks ``train`` applies (``Plan.check``, ``States.check``,
``check_pipeline``); nothing here is a number the search produced.
"""
import itertools
import json
import random
from fractions import Fraction

import numpy as np
import pytest

import symcost
from symcost.cli import main
from symcost.core.errors import SymcostError
from symcost.core.terms import exact
from symcost.hardware.gpus import gpu
from symcost.hardware.links import Links
from symcost.training.comm import comm
from symcost.training.memory import train_memory
from symcost.training.plan import Plan
from symcost.training.schedule import peak
from symcost.training.search import MICRO, _held_states, candidates, evaluate, search
from symcost.training.setup import Batch, TrainSetup, check_pipeline, micro_batches  # noqa: F401
from symcost.training.states import States
from symcost.training.steptime import step_time
from tests import training_throughput as tt

FEATURES = {  # each new dimension, and the old ones, must be sampled
    "interleaved": lambda c: c["virtual_stages"] > 1,
    "hsdp": lambda c: c["hsdp_shard"] is not None,
    "offload_optimizer": lambda c: c["offload"] == "optimizer",
    "offload_params": lambda c: c["offload"] == "params",
    "sp_on": lambda c: c["sp"],
    "sp_off_tp": lambda c: not c["sp"] and c["tp"] > 1,
    "full": lambda c: c["recompute"] == "full",
    "selective_cp": lambda c: c["recompute"] == "selective" and c["cp"] > 1,
    "ep": lambda c: c["ep"] > 1,
    "zero3": lambda c: c["zero"] == 3,
}


def _reference(m, c, *, seq, gb, g, capacity=None, mfu=0.4):
    """What ``symcost train --gpu`` computes for one candidate (cmd_train's calls)."""
    kw = dict(seq=seq, global_batch=gb, capacity=capacity, micro_batch=c["micro_batch"], dp=c["dp"], tp=c["tp"],
              pp=c["pp"], ep=c["ep"], cp=c["cp"], zero=c["zero"], sp=c["sp"], hsdp_shard=c["hsdp_shard"],
              offload=c["offload"], virtual=c["virtual_stages"], account_embedding=c["account_embedding"],
              account_loss=c["account_loss"])
    tm = train_memory(m, TrainSetup.of(recompute=c["recompute"], **kw))
    rc = "none" if c["recompute"] == "selective" and c["cp"] == 1 else c["recompute"]
    cm = comm(m, TrainSetup.of(recompute=rc, **kw))
    world = c["dp"] * c["tp"] * c["pp"] * c["cp"]
    st = step_time(tm.flops_per_step // world, cm, TrainSetup.of(recompute=c["recompute"], **kw),
                   peak_flops=g.bf16_tflops * 1e12, mfu=mfu, links=Links(nvlink_bytes_s=g.link_gbs * 1e9),
                   overlap=0.0)
    return tm, cm, st


def _sample(space, n_each, seed=0):
    rng = random.Random(seed)
    rows = [space[i] for i in range(len(space))] if len(space) < 40_000 else None
    picks = set(rng.sample(range(len(space)), n_each))
    for name, pred in FEATURES.items():
        idx = [i for i in range(len(space)) if pred(rows[i] if rows else space[i])]
        picks |= set(rng.sample(idx, min(n_each, len(idx))))
    return sorted(picks)


@pytest.mark.parametrize("name,gpus,gb,capacity", [
    ("llama-3.1-8b", 16, 64, None),            # 32 layers: interleaving at pp 2, 4, 8, 16
    ("mixtral-8x7b-v0.1", 32, 64, None),       # EP, HSDP with the expert constraint
    ("mixtral-8x7b-v0.1", 16, 32, Fraction(5, 4)),  # capacity factor in every candidate
    ("deepseek-v3", 64, 256, None),            # MLA, dense + MoE stages, 61 layers
])
def test_candidates_equal_train_and_comm(name, gpus, gb, capacity):
    """Sampled candidates (every new dimension among them): per-GPU bytes exactly train_memory's,
    every dimension's bytes comm's, the step time step_time's on comm's collectives."""
    m, g = symcost.build(name), gpu("H100")
    space = candidates(m, gpus, 4096, gb)
    r = evaluate(m, space, TrainSetup.of(seq=4096, global_batch=gb, capacity=capacity), gpu=g, mfu=0.4)
    picks = _sample(space, 4)
    seen = {f for i in picks for f, pred in FEATURES.items() if pred(space[i])}
    expect = set(FEATURES) - ({"ep"} if name.startswith("llama") else set())
    if name.startswith("deepseek"):
        expect -= {"interleaved"}  # 61 layers: no pp·v > 1 divides them
    assert seen >= expect, expect - seen
    for i in picks:
        c = space[i]
        tm, cm, st = _reference(m, c, seq=4096, gb=gb, g=g, capacity=capacity)
        assert int(r.per_gpu_bytes[i]) == tm.per_gpu, c
        det = r.detail(i)
        assert det["micro_batches"] == cm["micro_batches"]
        for dim in ("dp", "tp", "pp", "ep", "cp", "dp_replicate", "host"):
            assert det["bytes"][dim] == pytest.approx(cm["bytes"].get(dim, 0), rel=1e-9, abs=1), (c, dim)
        assert float(r.step_time_s[i]) == pytest.approx(st["step_time_s"], rel=1e-9), c


@pytest.mark.parametrize("name,gpus,gb,capacity", [
    ("qwen3-next-80b-a3b-thinking", 32, 64, None),  # Gated DeltaNet + attention, MoE
    ("nemotron-h-56b-base-8k", 16, 32, None),       # Mamba-2 hybrid
    ("gemma-2-9b-it", 16, 32, None),                # sliding windows, soft-capped logits
    ("llama-4-scout-17b-16e-instruct", 16, 32, Fraction(5, 4)),  # vision tower left out, capacity
])
def test_candidates_equal_train_other_families(name, gpus, gb, capacity):
    m, g = symcost.build(name), gpu("H100")
    space = candidates(m, gpus, 4096, gb)
    r = evaluate(m, space, TrainSetup.of(seq=4096, global_batch=gb, capacity=capacity), gpu=g, mfu=0.4)
    assert r.valid.all()
    for i in random.Random(2).sample(range(len(space)), 10):
        c = space[i]
        tm, cm, st = _reference(m, c, seq=4096, gb=gb, g=g, capacity=capacity)
        assert int(r.per_gpu_bytes[i]) == tm.per_gpu, c
        assert float(r.step_time_s[i]) == pytest.approx(st["step_time_s"], rel=1e-9), c


def test_a_tp_that_does_not_divide_the_vocabulary_is_no_candidate(capsys):
    """GPT-2's 12 heads allow tp = 2, 3, 4, 6, but its vocabulary (50,257 = 29·1733) splits over
    none of them: the vocab-parallel embedding and head would hold fractional rows, so ``train``
    refuses them (exit 2, naming V) and the search never proposes them."""
    m, g = symcost.build("gpt2"), gpu("H100")
    space = candidates(m, 24, 1024, 48)
    assert {int(space[i]["tp"]) for i in range(len(space))} == {1}
    for tp in ("2", "3", "6"):
        assert main(["train", "gpt2", "--seq", "1024", "--micro-batch", "1", "--tp", tp]) == 2
        assert "does not divide the vocabulary V=50257" in capsys.readouterr().err
    assert main(["train", "gpt2", "--seq", "1024", "--micro-batch", "1", "--global-batch", "48", "--search",
                 "--gpus", "24", "--gpu", "H100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["not_costed"] == 0 and out["candidates"] == len(space)


def _enumerate(m, gpus, seq, gb):
    """Every setup the single-setup checks accept, by brute force over the option values."""
    v = m.values
    L = sum(exact(g.count, v) for g in m.groups)
    out = set()
    divs = [d for d in range(1, gpus + 1) if gpus % d == 0]
    for tp, cp, pp in itertools.product(divs, divs, divs):
        if gpus % (tp * cp * pp) or tp > 8:
            continue
        dp = gpus // (tp * cp * pp)
        for ep, vs, acc, b, zero, sp, rc in itertools.product(divs, range(1, L + 1), (False, True), MICRO,
                                                              (0, 1, 2, 3), (False, True), ("none", "selective", "full")):
            # the embedding and loss slots: offered where interleaving's even split fails and every chunk
            # keeps two slots (search.candidates' rule), then checked as train checks them
            if acc and not (vs > 1 and L % (pp * vs) and (L + 2) % (pp * vs) == 0 and (L + 2) // (pp * vs) >= 2):
                continue
            plan = Plan(dp=dp, tp=tp, pp=pp, ep=ep, cp=cp, zero=zero, sp=sp, embed_slot=acc, loss_slot=acc)
            try:
                plan.check(m, seq)
                mm = micro_batches(gb, b, dp)
                check_pipeline(m, plan, mm, vs)
            except SymcostError:
                continue
            for sh, off in itertools.product([None] + divs, ("none", "optimizer", "params")):
                try:
                    States(shard=sh, offload=off).check(plan)
                except SymcostError:
                    continue
                out.add((dp, tp, pp, ep, cp, vs, acc, acc, b, zero, sh, off, rc, sp))
    return out


@pytest.mark.parametrize("name,gpus,gb", [("llama-3.1-8b", 8, 16), ("mixtral-8x7b-v0.1", 8, 32)])
def test_candidate_set_is_every_valid_setup(name, gpus, gb):
    """The candidates are exactly the setups train would accept: nothing invalid (offload params
    only at ZeRO 3, HSDP only dividing dp and holding whole experts, interleaving only where the
    layers and micro-batches split), nothing valid missing."""
    m = symcost.build(name)
    space = candidates(m, gpus, 4096, gb)
    got = [tuple(space[i].values()) for i in range(len(space))]
    assert len(got) == len(set(got))
    assert set(got) == _enumerate(m, gpus, 4096, gb)


def test_interleaved_peak_states_equal_the_replay():
    """The truncated replay's states give schedule.peak's held bytes for any chunk bytes."""
    rng = random.Random(1)
    for p, v in itertools.product((2, 3, 4), (2, 3, 4)):
        for m_ in (p, 2 * p, 5 * p, 12 * p):
            for r in range(p):
                for _ in range(3):
                    chunk = [rng.randint(1, 10**6) for _ in range(v)]
                    held = peak(p, r, v, m_, chunk)
                    S = _held_states(p, r, v, m_)
                    assert int((S @ np.array(chunk)).max()) == sum(h * c for h, c in zip(held, chunk))


def test_sp_is_swept_and_can_lose():
    """SP costs TP bytes (Megatron's backward re-gather): with memory to spare the fastest
    tp > 1 setup runs without it, and SP holds less activation memory in the same layout."""
    m, g = symcost.build("llama-3.1-8b"), gpu("H100")
    space = candidates(m, 8, 4096, 8, zeros=(1,), recomputes=("none",))
    r = evaluate(m, space, TrainSetup.of(seq=4096, global_batch=8), gpu=g, mfu=0.4)
    by = {}
    for i in range(len(space)):
        c = space[i]
        if c["tp"] == 8 and c["offload"] == "none" and c["hsdp_shard"] is None:
            by[c["sp"]] = (float(r.step_time_s[i]), int(r.per_gpu_bytes[i]))
    assert by[False][0] < by[True][0] and by[True][1] < by[False][1]


@pytest.mark.parametrize("pins", [dict(offload="none"), dict(virtual=2), dict(hsdp=2), dict(hsdp="none"),
                                  dict(sp=False), dict(sp=True), dict(zero=3, offload="params"),
                                  dict(recompute="full")])
def test_pinned_dimensions(pins):
    m = symcost.build("llama-3.1-8b")
    space = candidates(m, 16, 4096, 64, zeros=(pins["zero"],) if "zero" in pins else (0, 1, 2, 3),
                       recomputes=(pins["recompute"],) if "recompute" in pins else ("none", "selective", "full"),
                       **{k: pins[k] for k in ("sp", "virtual", "hsdp", "offload") if k in pins})
    key = {"virtual": "virtual_stages", "hsdp": "hsdp_shard"}
    want = {key.get(k, k): (None if x == "none" and k == "hsdp" else x) for k, x in pins.items()}
    rows = [space[i] for i in range(len(space))]
    assert rows and all(all(c[k] == x for k, x in want.items()) for c in rows)


@pytest.mark.parametrize("mfu", [None, "0.4"])
def test_best_equals_train_run_alone(capsys, mfu):
    """The benchmark's sweep (DeepSeek-V3 on 2,048 H800s): >= 10^4 candidates, every new dimension
    swept; the best setup, run alone through `symcost train`, reports the same bytes (exactly)
    and the same step time — exactly at a given --mfu; without it (kernels by class, overlap, the
    optimizer step) the search's array form costs the slowest pipeline rank's kernel classes (the MTP
    module's on the last stage) and the overlap windows without the recomputed forward, as `train`
    does, but spreads the launch floors and MoE passes by layer share, so within 0.5 % of `train`'s
    (before the optimizer step and the windows matched: 1.6 % apart on the best row)."""
    base = ["train", "deepseek-v3", "--seq", "4096", "--micro-batch", "1", "--global-batch", "15360",
            "--gpu", "H800", "--json"] + (["--mfu", mfu] if mfu else [])
    assert main(base + ["--search", "--gpus", "2048"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["candidates"] >= 10_000 and len(r["best"]) == 5 and r["pinned"] == {}
    sw = r["swept"]
    assert sw["offload"] == ["none", "optimizer", "params"] and sw["zero"] == [0, 1, 2, 3]
    assert sw["hsdp_shard"][0] is None and len(sw["hsdp_shard"]) > 5  # none and shard groups of 1, 2, 4, ...
    assert sw["sp"] == [False, True] and sw["virtual_stages"] == [1]  # 61 layers: no interleaving
    times = [b["step_time_s"] for b in r["best"]]
    assert times == sorted(times) and all(b["per_gpu_bytes"] <= 80 * 2**30 for b in r["best"])
    for b in r["best"][:2]:
        argv = tt.row_argv(base, b, schedule=not mfu)  # the schedule the search chose for the row
        argv += ["--account-embedding", "--account-loss"] if b["account_embedding"] else []
        assert main(argv) == 0
        t = json.loads(capsys.readouterr().out)
        assert t["per_gpu_bytes"] == b["per_gpu_bytes"]
        assert t["step"]["step_time_s"] == pytest.approx(b["step_time_s"], rel=1e-12 if mfu else 0.005)


def test_cli_pins_and_interleaving(capsys):
    """--virtual-stages 2 --offload none pin; the best interleaved setup equals train run alone (its
    bytes exactly; its step time, from the kernel classes and the optimizer step without --mfu, within
    0.1 %: the search spreads the launch floors by layer share)."""
    base = ["train", "llama-3.1-8b", "--seq", "8192", "--micro-batch", "1", "--global-batch", "256", "--gpu", "H100"]
    assert main(base + ["--search", "--gpus", "64", "--virtual-stages", "2", "--offload", "none", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["pinned"] == {"virtual_stages": 2, "offload": "none"}
    assert r["best"] and all(b["virtual_stages"] == 2 and b["offload"] == "none" and b["pp"] > 1 for b in r["best"])
    b = r["best"][0]
    argv = base + ["--json", "--zero", str(b["zero"]), "--recompute", b["recompute"], "--virtual-stages", "2"]
    argv += [x for k in ("dp", "tp", "pp", "ep", "cp") for x in (f"--{k}", str(b[k]))]
    argv += (["--sp"] if b["sp"] else []) + (["--hsdp-shard", str(b["hsdp_shard"])] if b["hsdp_shard"] else [])
    argv[argv.index("--micro-batch") + 1] = str(b["micro_batch"])
    assert main(argv) == 0
    t = json.loads(capsys.readouterr().out)
    assert t["per_gpu_bytes"] == b["per_gpu_bytes"]
    assert t["step"]["step_time_s"] == pytest.approx(b["step_time_s"], rel=0.001)
    # the text table names every swept dimension
    assert main(base + ["--search", "--gpus", "16"]) == 0
    out = capsys.readouterr().out
    assert all(h in out.splitlines()[1].split() for h in ("v", "mb", "ZeRO", "hsdp", "offload", "recompute", "sp"))


def test_capacity_factor_is_honoured_not_swept():
    m = symcost.build("mixtral-8x7b-v0.1")
    r1 = search(m, TrainSetup.of(seq=4096, global_batch=64), gpus=32, gpu=gpu("H100"))
    r2 = search(m, TrainSetup.of(seq=4096, global_batch=64, capacity=Fraction(2)), gpus=32, gpu=gpu("H100"))
    assert r1["candidates"] == r2["candidates"]  # the same setups, costed differently
    assert r2["best"][0]["step_time_s"] > r1["best"][0]["step_time_s"]  # padded experts compute more


@pytest.mark.parametrize("model,argv,needle", [
    ("llama-3.1-8b", ["--zero", "0", "--offload", "optimizer"], "needs --zero 1, 2 or 3"),
    ("llama-3.1-8b", ["--zero", "2", "--offload", "params"], "needs --zero 3"),
    ("llama-3.1-8b", ["--zero", "0", "--hsdp-shard", "2"], "needs --zero 1, 2 or 3"),
    ("llama-3.1-8b", ["--virtual-stages", "3"], "no candidate"),
    ("llama-3.1-8b", ["--capacity-factor", "1.25"], "no routed experts"),
    ("llama-3.1-8b", ["--activations", "korthikanti"], "--activations korthikanti"),
    ("llama-3.1-8b", ["--hsdp-shard", "x"], "positive integer or 'none'"),
    ("llama-3.1-8b", ["--hsdp-shard", "3"], "no candidate"),
])
def test_bad_search_input_exits_2(model, argv, needle, capsys):
    code = main(["train", model, "--seq", "4096", "--micro-batch", "1", "--global-batch", "64", "--search",
                 "--gpus", "16", "--gpu", "H100", "--json", *argv])
    out, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert needle in err


def test_exact_ceiling_compiles_to_integer_division():
    """numeric's exact_int: ceil(11/10·k·B·T/E) in integers, where the float quotient rounds up."""
    import sympy

    from symcost.core.notation import sym
    from symcost.core.numeric import compile_exprs
    e = sympy.ceiling(sympy.Rational(11, 10) * 10 * sym.B / sym.N_cp)
    f = compile_exprs({"x": e}, (sym.B, sym.N_cp), exact_int=True)
    B, C = np.arange(1, 41), np.array([1, 2, 4, 5] * 10)
    assert f(B, C)["x"].tolist() == [int(e.subs({sym.B: int(b), sym.N_cp: int(c)})) for b, c in zip(B, C)]


@pytest.mark.parametrize("name,gpus", [("gpt2", 4), ("gemma-2-9b-it", 8), ("mimo-7b-base", 8),
                                       ("qwen3-30b-a3b", 16), ("qwen3-vl-8b-instruct", 8)])
def test_state_floor_is_under_every_candidate(name, gpus):
    """``state_floor`` (what lets the sheet skip world sizes) is at most every candidate's per-GPU bytes
    the search costs without offload: dense, a tied head (gemma), MTP (mimo), experts, a vision tower."""
    from symcost.training.search import state_floor
    m = symcost.build(name)
    setup = TrainSetup.of(seq=4096, global_batch=64)
    space = candidates(m, gpus, 4096, 64, offload="none")
    r = evaluate(m, space, setup, gpu=gpu("H100"))
    floor = state_floor(m, setup, gpus)
    assert 0 < floor <= int(r.per_gpu_bytes.min())


def test_sheet_search_skips_only_worlds_that_cannot_fit():
    """The sheet's setup (``search_setup``, which skips world sizes by ``state_floor``) is the one the
    unpruned loop over every world size finds, and every skipped size has no fitting candidate."""
    from symcost.training import sheet
    from symcost.training.framework import HEADROOM_GIB, budget_bytes
    from symcost.training.search import state_floor
    m = symcost.build("qwen3-30b-a3b")
    g = gpu("H100")
    base = TrainSetup.of(seq=4096, global_batch=sheet.GLOBAL_BATCH)
    found = sheet.search_setup(m, 4096)
    skipped = [n for n in sheet.WORLDS if n < found["gpus"]
               and state_floor(m, base, n) > budget_bytes(g, HEADROOM_GIB)]
    assert skipped  # the floor prunes here (30.5 B parameters: 16 B each exceed one H100)
    for n in sheet.WORLDS:
        r = search(m, base, gpus=n, gpu=g, top=1, offload="none")
        assert bool(r["best"]) == (n == found["gpus"]), n
        if r["best"]:
            assert r["best"][0] == found["best"]
            break
