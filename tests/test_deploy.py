"""Roofline on layouts and the deployment planner: contract keys, constraints, agreement of the
vectorised planner with the exact single-layout commands."""
import json

import pytest

from symcost.cli import main


def _run(argv, capsys):
    code = main(argv + ["--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out)


def test_deploy_contract_and_agreement_with_memory(capsys):
    code, data = _run(["deploy", "deepseek-v3", "--gpu", "H200", "--gpus", "8", "--T", "32768",
                       "--batch", "8", "--top", "50"], capsys)
    assert code == 0 and data["model"] == "deepseek-v3" and data["gpu"] == "H200"
    rows = data["layouts"]
    assert rows and all(r["tp"] * r["pp"] * r["dp"] == 8 for r in rows)
    for key in ("tp", "pp", "dp", "ep", "fits", "kv_capacity_tokens", "max_concurrency", "ttft_s", "tpot_s",
                "tokens_per_s_per_gpu"):
        assert key in rows[0]
    fits = [r for r in rows if r["fits"]]
    assert fits and rows[0]["fits"]  # fitting layouts first, best tokens/s per GPU first
    assert all(a["tokens_per_s_per_gpu"] >= b["tokens_per_s_per_gpu"] for a, b in zip(fits, fits[1:]))
    tp8 = next(r for r in rows if (r["tp"], r["pp"], r["dp"], r["ep"]) == (8, 1, 1, 1))
    # attention DP without EP: the experts sliced over the 8 ranks (vLLM's MoE TP over DP), as memory has it
    dp8 = next(r for r in rows if (r["tp"], r["pp"], r["dp"], r["ep"]) == (1, 1, 8, 1))
    code, mem8 = _run(["memory", "deepseek-v3", "--T", "32768", "--batch", "8", "--gpu", "H200", "--dp", "8"], capsys)
    assert dp8["kv_capacity_tokens"] == mem8["kv_capacity_tokens"] and dp8["fits"]
    code, mem = _run(["memory", "deepseek-v3", "--T", "32768", "--batch", "8", "--gpu", "H200", "--tp", "8"],
                     capsys)
    assert tp8["kv_capacity_tokens"] == mem["kv_capacity_tokens"]
    assert tp8["max_concurrency"] == pytest.approx(mem["max_concurrency"], rel=1e-9)
    code, roof = _run(["roofline", "deepseek-v3", "--phase", "decode", "--T", "32768", "--batch", "8",
                       "--gpu", "H200", "--tp", "8"], capsys)
    assert tp8["tpot_s"] == pytest.approx(roof["tpot_s"], rel=1e-9)
    assert tp8["ttft_s"] == pytest.approx(roof["ttft_s"], rel=1e-9)


def test_deploy_layouts_respect_constraints(capsys):
    code, data = _run(["deploy", "llama-3.1-70b", "--gpu", "H100", "--gpus", "16", "--T", "8192"], capsys)
    assert code == 0
    assert {r["ep"] for r in data["layouts"]} == {1}  # no experts, no expert parallelism
    assert all(64 % r["tp"] == 0 and r["pp"] <= 80 for r in data["layouts"])


@pytest.mark.parametrize("argv, needle", [
    (["roofline", "deepseek-v3", "--phase", "decode", "--T", "100", "--batch", "1", "--gpu", "H200",
      "--tp", "3"], "--tp 3"),
    (["roofline", "deepseek-v3", "--phase", "decode", "--T", "100", "--batch", "1", "--gpu", "H200",
      "--ep", "7"], "--ep 7"),
    (["roofline", "mixtral-8x7b-v0.1", "--phase", "decode", "--T", "100", "--batch", "1", "--gpu", "H100",
      "--tp", "2", "--ep", "8"], "tp·dp"),
    (["deploy", "deepseek-v3", "--gpu", "H200", "--gpus", "x", "--T", "100"], "--gpus"),
    (["memory", "deepseek-v3", "--T", "100", "--batch", "1", "--gpu", "H200", "--pp", "100"], "--pp 100"),
    # pins of one layout: its own constraint, and no more GPUs than --gpus takes (the fuzz campaign's
    # --tp 8K --dp 2^64 listed the divisors of 1.5e23)
    (["deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "1024", "--tp", "8K", "--pp", "1", "--dp", "4"], "--tp 8192"),
    (["deploy", "llama-3.1-8b", "--gpu", "H100", "--isl", "1024", "--tp", "8K", "--pp", "1", "--dp", str(2**64)],
     "at most 1,048,576"),
])
def test_bad_layouts_exit_2_naming_the_constraint(argv, needle, capsys):
    code = main(argv + ["--json"])
    out, err = capsys.readouterr()
    assert code == 2 and needle in json.loads(out)["error"] and err.count("\n") == 1


def test_roofline_contract_and_fp8_peak(capsys):
    code, r = _run(["roofline", "deepseek-v3", "--phase", "decode", "--T", "4096", "--batch", "64",
                    "--gpu", "H200", "--tp", "8"], capsys)
    assert code == 0
    for key in ("flops", "bytes", "intensity", "bound", "time_s", "ttft_s", "tpot_s", "tokens_per_s",
                "formula"):
        assert key in r
    assert r["compute_dtype"] == "fp8" and r["peak_flops"] == 1979 * 10**12  # the FP8 checkpoint
    assert r["bound"] == "memory" and r["mla"] == "auto"
    from symcost.core.exprparse import parse
    assert parse(r["formula"]["total"]).free_symbols  # parses back


def test_deploy_compiles_the_formulas_once(monkeypatch, capsys):
    """Every GPU count, and the search for the smallest count that fits, share one compilation."""
    import symcost.serving.deploy as dep
    calls = []
    real = dep.compile_model
    monkeypatch.setattr(dep, "compile_model", lambda *a, **k: calls.append(1) or real(*a, **k))
    for extra in ([], ["--gpus", "1-16", "--top", "all"]):
        calls.clear()
        code, data = _run(["deploy", "llama-3.1-70b", "--gpu", "H100", "--T", "8192", *extra], capsys)
        assert code == 0 and data["layouts"] and calls == [1]
    assert data["count"] == len(data["layouts"]) and data["hidden"] == 0 and {r["gpus"] for r in data["layouts"]} > {1, 16}


def test_deploy_shows_the_top_ten_and_counts_the_rest(capsys):
    """By default the best 10 layouts, sorted by the objective, and how many more there are."""
    code, data = _run(["deploy", "llama-3.1-70b", "--gpu", "H100", "--gpus", "1-16", "--T", "8192"], capsys)
    assert code == 0 and len(data["layouts"]) == 10 and data["hidden"] == data["count"] - 10 > 0
    tps = [r["tokens_per_s_per_gpu"] for r in data["layouts"] if r["meets_sla"]]
    assert tps == sorted(tps, reverse=True)
    from symcost.cli import main
    assert main(["deploy", "llama-3.1-70b", "--gpu", "H100", "--gpus", "1-16", "--T", "8192"]) == 0
    assert "more layouts hidden" in capsys.readouterr().out


def test_compiled_serving_formulas_equal_exact_substitution():
    """The NumPy code printed once for all layouts (formulas.compile_exprs) gives the exact
    substitution's values, layout by layout."""
    import numpy as np
    import sympy

    import symcost
    from symcost.architectures.loader import read_json
    from symcost.core.notation import sym
    from symcost.serving.formulas import compile_exprs, serve_formulas
    from symcost.serving.quant import checkpoint
    m = symcost.build("mixtral-8x7b-v0.1")
    f = serve_formulas(m, checkpoint(m, read_json("mixtral-8x7b-v0.1")[1]))
    exprs = {"weights": f.weights.total, "fixed": f.fixed, "need": f.kv.need, "per_gpu": f.per_gpu()}
    syms = (sym.N_tp, sym.N_ep, sym.N_pp, sym.T, sym.B, sym.M)
    fn = compile_exprs(exprs, syms)
    pts = [(1, 1, 1), (2, 1, 1), (4, 2, 2), (8, 1, 4)]
    cols = [np.array([p[i] for p in pts], dtype=float) for i in range(3)]
    n = len(pts)
    got = fn(*cols, np.full(n, 5000.0), np.full(n, 3.0), np.full(n, 8192.0))
    for i, (tp, ep, pp) in enumerate(pts):
        v = {sym.N_tp: tp, sym.N_ep: ep, sym.N_pp: pp, sym.T: 5000, sym.B: 3, sym.M: 8192}
        for k, e in exprs.items():
            exact = sympy.sympify(e).xreplace(v)
            assert np.broadcast_to(got[k], (n,))[i] == pytest.approx(float(exact), rel=1e-12), (k, tp, ep, pp)


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_deploy_times_the_load_under_the_engine_schedule(engine, capsys):
    """deploy's layouts under --engine: the array path gives roofline's closed loop of that engine's
    schedule for the same layout (``workload.closed_loop(engine=)``), and says whose schedule it is."""
    common = ["--gpu", "H100", "--max-batched-tokens", "2048", "--engine", engine]
    _, d = _run(["deploy", "llama-3.1-8b", "--gpus", "1", "--isl", "1024", "--osl", "128", "--concurrency", "32",
                 "--top", "all"] + common, capsys)
    assert d["schedule"] == engine
    row = next(r for r in d["layouts"] if r["tp"] == 1 and r["dp"] == 1)
    _, r = _run(["roofline", "llama-3.1-8b", "--phase", "decode", "--T", "1024", "--batch", "32", "--osl", "128",
                 "--concurrency", "32"] + common, capsys)
    assert row["ttft_s"] == pytest.approx(r["load"]["ttft_s"], rel=1e-6)
    assert row["tpot_s"] == pytest.approx(r["load"]["tpot_s"], rel=1e-6)


@pytest.mark.parametrize("model, gpu, gpus, most", [
    ("deepseek-v3", "H200", "24", 14),  # E = 256 over 24 or 12 expert ranks: rank 0 holds ⌈E/n⌉; PP 2, 3, 4, ...
    ("gpt-oss-20b", "H100", "8", 19),  # MXFP4 experts: the kernel pads the whole I under EP, the slice without
    ("qwen3-next-80b-a3b-thinking", "H100", "8", 8),  # hybrid pages: a stage's layers dealt over the KV groups
])
def test_deploy_kv_capacity_equals_memory_on_every_layout(model, gpu, gpus, most, capsys):
    """Layouts with pipeline stages (each kind of stage compiled once, its layer counts as symbols,
    evaluated at every stage's own counts) and with expert parallelism on and off (the experts'
    placement in x_ep) hold the KV tokens ``memory`` gives for that one layout exactly."""
    code, data = _run(["deploy", model, "--gpu", gpu, "--gpus", gpus, "--T", "8192", "--top", "all"], capsys)
    assert code == 0
    rows = sorted((r for r in data["layouts"] if r["pp"] > 1 or r["ep"] > 1), key=lambda r: (r["pp"] > 2, r["pp"]))[:most]
    assert len({r["pp"] for r in rows}) > 1 and any(r["ep"] > 1 for r in rows)
    for r in rows:
        code, mem = _run(["memory", model, "--gpu", gpu, "--T", "8192", "--batch", "1", "--tp", str(r["tp"]),
                          "--pp", str(r["pp"]), "--dp", str(r["dp"]), "--ep", str(r["ep"])], capsys)
        assert code == 0 and r["kv_capacity_tokens"] == mem["kv_capacity_tokens"], (r["tp"], r["pp"], r["dp"], r["ep"])
        # the deciding rank's weights (with stages: the stage with the fewest blocks), as stored and as loaded
        assert (r["weights_per_gpu_bytes"], r["weights_loaded_bytes"]) == \
            (mem["weights_per_gpu_bytes"], mem["weights_loaded_bytes"]), (r["tp"], r["pp"], r["dp"], r["ep"])
