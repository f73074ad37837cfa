"""Bounded work, exact integers at any size, and names and numbers as people type them (issue 27).

The fuzz campaign (``benchmarks/fuzz_campaign.py``) found these; each is pinned here as one case:
every command line answers or refuses within ``LIMIT`` seconds of CPU time, a count stays an exact
integer however large the sizes (the sum of its parts to the byte), and the spellings people use
(``15T`` tokens, ``openai/GPT-OSS-20B``, ``m.flops("decode", T=4096)``) mean what they mean.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

import symcost
from symcost.cli import main
from symcost.core.errors import SymcostError
from symcost.core.units import parse_count, parse_decimal

CONFIGS = os.path.join(symcost.__path__[0], "configs")



def _sympy_import_cpu() -> float:
    """CPU seconds of ``import sympy`` in a fresh interpreter here (the best of three): the unit the brief
    measures a command's speed in."""
    code = "import time; t = time.process_time(); import sympy; print(time.process_time() - t)"
    return min(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout) for _ in range(3))


#: CPU seconds a command may take: a bound on the work, so a hang (the seeds' 20 s and more) fails. Issue
#: 27 asks for 2 s, the speed benchmarks/fuzz_campaign.py measures; a shared or slow machine (this one took
#: 0.9 s of CPU to import SymPy on a loaded day) gets five of its SymPy imports when that is more
LIMIT = max(2.0, 5 * _sympy_import_cpu())
HUGE_T = "18446744073709551616"  # 2^64
HUGER = "1383272158897143899136"  # the 1.38·10^21

BOUNDED = [  # (command line, the exit status it must give)
    (["check", "deepseek-v3", "--metric", "cache", "--expr", "(d+1)**64*(V+1)**64*(L+1)**3"], 2),
    (["check", "deepseek-v3", "--metric", "cache", "--expr", "(d+V+L+T+B+H_q+E+k+N+W)**6"], 2),
    (["check", "deepseek-v3", "--metric", "ttft", "--expr", "T", "--gpu", "H100"], 0),
    (["roofline", "deepseek-v3", "--phase", "decode", "--T", HUGE_T, "--batch", "8", "--gpu", "H200"], 0),
    (["roofline", "deepseek-v3", "--phase", "prefill", "--T", "16M", "--batch", "1", "--gpu", "H200"], 0),
    (["deploy", "llama-3.1-8b", "--gpus", HUGE_T, "--T", "4K", "--gpu", "H100"], 2),
    (["deploy", "llama-3.1-8b", "--gpus", "1-100000", "--T", "4K", "--gpu", "H100"], 2),
    (["train", "llama-3.1-8b", "--search", "--gpus", HUGE_T, "--seq", "4096", "--micro-batch", "1",
      "--global-batch", "8", "--gpu", "H100"], 2),
    (["plot", "gpt2", "--metric", "cache_bytes", "-o", "x.png", "--T-max", HUGE_T], 2),
    (["scale", "qwen2.5-7b", "--metric", "kv_capacity", "--wrt", "N_dp", "--max-batched-tokens", "4096"], 0),
    (["scale", "llama-4-scout-17b-16e-instruct", "--metric", "kv_capacity", "--wrt", "tp", "--batch", "16",
      "--max-batched-tokens", "8"], 2),  # 14 s of SymPy regimes before the deadline
    (["budget", "llama-3.1-8b", "--tokens", "1e999", "--gpus", "8", "--gpu", "H100"], 2),
    # wave 4 (seed 29): the calibrated roofline's touched-expert fraction was a plain Rational power of B·T
    # (past 30 s at --batch 1M); now the RatioPow the serving formulas use
    (["roofline", "glm-4.7-fp8", "--phase", "prefill", "--T", "2", "--batch", "1M", "--gpu", "H100",
      "--block-size", "128K"], 0),
    (["roofline", "deepseek-v3", "--phase", "prefill", "--T", "4K", "--batch", "16M", "--gpu", "H200"], 0),
    # a TP size that splits an expert width into fractional bytes: refused naming it (had been a ValueError)
    (["train", "glm-4.7-flash", "--seq", "1K", "--micro-batch", "2", "--dp", "64", "--tp", "5", "--pp", "2",
      "--ep", "64", "--etp", "5"], 2),
    # the vectorised layout search on int64 arrays: a step of 2^64 tokens refused (had been an OverflowError,
    # reached from sheet --T-prefill 2^64)
    (["train", "llama-3.1-8b", "--search", "--gpus", "8", "--gpu", "H100", "--seq", HUGE_T, "--micro-batch", "1",
      "--global-batch", "8"], 2),
    # seed 29: the NVFP4 checkpoint's 156-entry ignore list was matched glob by glob for every layer's
    # matrices (3 s at any batch); now one compiled regex (``quant._ignore_matcher``)
    (["memory", "glm-5.2-nvfp4", "--T", "4096", "--batch", HUGE_T, "--json"], 0),
    # seed 30: --mtp 10^21 listed that many MTP layers (an OverflowError); refused past the decoder layers
    (["presets", "mimo-7b-base", "--seq", HUGE_T, "--mtp", HUGER], 2),
]


@pytest.mark.parametrize("argv,status", BOUNDED, ids=[" ".join(a[:3]) for a, _ in BOUNDED])
def test_answers_or_refuses_quickly(argv, status, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    t0 = time.process_time()
    rc = main(argv)
    cpu = time.process_time() - t0
    out, err = capsys.readouterr()
    assert rc == status, (out, err)
    assert "Traceback" not in err and "None" not in out
    if rc == 2:
        assert err.count("symcost: error:") == 1 and out == ""
    assert cpu < LIMIT, f"{cpu:.2f} s CPU"


def _json(argv, capsys):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_memory_at_any_size_is_the_exact_sum_of_its_parts(capsys):
    r = _json(["memory", "llama-3.1-8b", "--T", HUGER, "--batch", "1"], capsys)
    parts = r["weights_per_gpu_bytes"] + r["cache_bytes"] + r["activation_bytes"] + r["overhead_bytes_per_gpu"]
    assert all(isinstance(r[k], int) for k in ("per_gpu_bytes", "cache_bytes", "kv_blocks_per_request"))
    assert r["per_gpu_bytes"] == parts
    # the cache is the formula at T, exactly: 2·L·H_kv·D_h·b_kv per token (32·8·128·2·2 = 131,072)
    assert r["cache_bytes"] == 131072 * int(HUGER)


def test_comm_at_any_size_is_exact(capsys):
    r = _json(["comm", "llama-3.1-8b", "--seq", HUGER, "--tp", "2", "--micro-batch", "1"], capsys)
    tp = r["bytes_per_step"]["tp"]
    assert isinstance(tp, int)
    from symcost.core.exprparse import parse
    from symcost.core.notation import sym
    f = parse(r["formula"]["tp"])
    want = f.xreplace({sym.B: 1, sym.T: int(HUGER), sym.b_a: 2, sym.m_mb: 1, sym.N_tp: 2, sym.N_cp: 1})
    assert tp == int(want)


def test_budget_takes_decimal_suffixes_and_keeps_flops_whole(capsys):
    r = _json(["budget", "llama-3.1-8b", "--tokens", "15T", "--gpus", "1024", "--gpu", "H100",
               "--gpu-hours", "2.7M"], capsys)
    assert isinstance(r["flops"], int)
    assert r["gpu_hours"] == pytest.approx(2.7e6)


@pytest.mark.parametrize("text,value", [("15T", 15 * 10**12), ("2.7M", 2_700_000), ("14.8T", 14_800_000_000_000),
                                        ("3.8e24", 38 * 10**23), ("1_000", 1000), ("2,664,000", 2_664_000),
                                        ("1.5B", 1_500_000_000), ("7k", 7000)])
def test_decimal_counts(text, value):
    assert parse_count(text) == value


@pytest.mark.parametrize("text", ["1.5", "x", "", "-5", "nan", "inf", "1e999999", "15TT", "1" * 70])
def test_decimal_counts_refused(text):
    with pytest.raises(ValueError):
        parse_count(text) if text != "1e999999" else parse_decimal(text)


def test_context_sizes_stay_binary(capsys):
    r = _json(["cache", "llama-3.1-8b", "--T", "128K"], capsys)
    assert r["T"] == 131072


@pytest.mark.parametrize("argv,needle", [
    (["memory", "llama-3.1-8b", "--T", "10", "--batch", "1", "--gpu", ""], "--gpu must name a GPU"),
    (["budget", "llama-3.1-8b", "--tokens", "1.5", "--gpus", "8", "--gpu", "H100"], "whole number"),
    (["plot", "gpt2", "--metric", "flops", "-o", "x.png"], "give --phase"),
])
def test_refusals_name_the_option(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_unknown_state_dtype_is_blamed_on_the_config_field(tmp_path, capsys):
    raw = json.loads(open(os.path.join(CONFIGS, "nemotron-3-nano-30b-a3b.json")).read())
    raw["mamba_ssm_cache_dtype"] = "float7"
    p = tmp_path / "c.json"
    p.write_text(json.dumps(raw))
    for argv in (["params", str(p)], ["flops", str(p), "--phase", "decode", "--T", "8"], ["cache", str(p), "--T", "8"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "field 'mamba_ssm_cache_dtype'" in err and "--dtype" not in err


def test_hub_ids_are_case_insensitive_and_the_cache_wins_and_says_so(tmp_path, capsys, monkeypatch):
    snap = tmp_path / "hub" / "models--openai--gpt-oss-20b" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text("abc")
    src = os.path.join(CONFIGS, "gpt-oss-20b.json")
    (snap / "config.json").write_text(open(src).read())
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert main(["params", "openai/GPT-OSS-20B"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("openai/gpt-oss-20b (gpt_oss)")
    assert "using the Hub cache entry openai/gpt-oss-20b" in err and "not the bundled gpt-oss-20b" in err
    assert main(["params", "openai/gpt-os-20b"]) == 2
    assert "did you mean openai/gpt-oss-20b" in capsys.readouterr().err


def test_tokenizer_fields_do_not_warn(tmp_path, capsys):
    raw = json.loads(open(os.path.join(CONFIGS, "gpt2.json")).read())
    raw.update(model_max_length=2048, padding_side="left", tokenizer_class="GPT2Tokenizer")
    p = tmp_path / "c.json"
    p.write_text(json.dumps(raw))
    assert main(["params", str(p)]) == 0
    assert "does not read" not in capsys.readouterr().err


def test_sheet_refuses_a_symlink_and_says_when_it_replaces(tmp_path, capsys):
    link = tmp_path / "link.tex"
    link.symlink_to(tmp_path / "elsewhere.tex")
    assert main(["sheet", "gpt2", "-o", str(link)]) == 2
    assert "symbolic link" in capsys.readouterr().err and not (tmp_path / "elsewhere.tex").exists()
    target = tmp_path / "s.tex"
    target.write_text("mine")
    assert main(["sheet", "gpt2", "-o", str(target)]) == 0
    assert "replaced the existing" in capsys.readouterr().out


def test_failed_pdf_says_the_tex_is_kept(tmp_path, capsys, monkeypatch):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pdflatex").write_text("#!/bin/sh\necho '! Undefined control sequence.'\nexit 1\n")
    (fake / "pdflatex").chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))  # this pdflatex alone: no latexmk, a TeX error
    out = tmp_path / "s.tex"
    assert main(["sheet", "gpt2", "-o", str(out), "--pdf"]) == 2
    err = capsys.readouterr().err
    assert "the .tex is kept at" in err and "Undefined control sequence" in err and out.is_file()


def test_python_api_takes_what_people_type():
    m = symcost.build("llama-3.1-8b")
    assert m.flops("decode", T=4096).total_at(B=1) == m.flops(symcost.Phase(kind="decode")).total_at(T=4096, B=1)
    assert m.flops("prefill", attention="causal").total_at(T=8, B=1) == \
        m.flops(symcost.Phase(attention="causal")).total_at(T=8, B=1)
    assert m.cache(T=4096, B=1).total_at() == 2 * 32 * 8 * 128 * 4096
    with pytest.raises(SymcostError, match="prefill"):
        m.flops("decod")


def test_no_none_in_text(capsys):
    assert main(["roofline", "llama-3.1-8b", "--phase", "decode", "--T", "4096", "--batch", "1", "--gpu", "H100"]) == 0
    out = capsys.readouterr().out
    assert "None" not in out and "never turns compute-bound" in out
    assert main(["scale", "gemma-2-9b-it", "--metric", "cache", "--wrt", "T"]) == 0
    out = capsys.readouterr().out
    assert "degree: not a polynomial in T" in out and "\n      when T <= W - 1:" in out


def test_crossover_sums_every_groups_term(capsys):
    assert main(["crossover", "deepseek-v3", "--metric", "flops", "--phase", "prefill", "--a", "mlp",
                 "--b", "self_attn", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["matched"]["mlp"] == ["dense_layers/mlp", "moe_layers/mlp"]


@pytest.mark.parametrize("expr,cause", [
    ("L*(4*d**2 + 3*d*d_ff + 2*d) + d + V*d", ["multi-head attention", "lm_head is missing"]),
    ("2*B*T*(2*D_h*H_kv*L*d + 2*D_h*H_q*L*d + 3*L*d*d_ff + V*d) + 2*L*B*T**2*H_q*D_h", ["T² is written"]),
])
def test_check_names_compound_mistakes_and_the_T_squared_slip(expr, cause, capsys):
    metric = ["--metric", "params"] if "B" not in expr else ["--metric", "flops", "--phase", "prefill",
                                                                "--attention", "causal"]
    assert main(["check", "llama-3.1-8b", *metric, "--expr", expr]) == 0
    out = capsys.readouterr().out
    assert all(c in out for c in cause), out


def test_check_shows_the_bound_difference(capsys):
    assert main(["check", "llama-3.1-8b", "--metric", "serve_memory", "--expr", "2*L*(4*d**2+3*d*d_ff)",
                 "--gpu", "H100", "--tp", "2", "--pp", "1", "--dp", "1", "--ep", "1"]) == 0
    out = capsys.readouterr().out
    assert "with the config's values and --gpu H100 --tp 2" in out


def test_deadline_stops_runaway_work_and_restores_the_outer_one():
    from symcost.core.deadline import DeadlineExceeded, deadline
    t0 = time.process_time()
    with pytest.raises(DeadlineExceeded):
        with deadline(0.2):
            while True:
                sum(range(1000))
    assert time.process_time() - t0 < 1.0
    with deadline(5):
        with deadline(0.1):
            pass
        assert sum(range(10)) == 45  # the outer deadline did not fire early


def test_gathered_unit_leaves_out_only_units_bounded_in_every_part():
    """ZeRO-3's largest unit (``states._undominated`` before SymPy's pairwise Max; Nemotron-Ultra's 16
    distinct blocks had taken 15 s there): a unit is dropped only when another is ≥ in split, whole and
    experts, so the max is the same at every N_tp, N_ep."""
    import sympy

    from symcost.core.notation import sym
    from symcost.training.states import _undominated, unit_params
    units = [(10, 2, 0), (8, 2, 0), (10, 2, 0), (4, 9, 0), (0, 0, 64), (3, 1, 0)]
    kept = _undominated(units)
    assert sorted(kept) == sorted([(10, 2, 0), (4, 9, 0), (0, 0, 64)])
    full, pruned = sympy.Max(*[unit_params(*u) for u in units]), sympy.Max(*[unit_params(*u) for u in kept])
    for tp in (1, 2, 8):
        for ep in (1, 4, 64):
            at = {sym.N_tp: tp, sym.N_ep: ep}
            assert full.xreplace(at) == pruned.xreplace(at)


def test_fewest_gpus_to_train_skips_only_what_cannot_fit():
    """The summary's fewest GPUs to train skips the N whose sharded states alone exceed the card;
    the answer is the brute-force loop's."""
    from symcost.architectures import loader
    from symcost.documents import summary as S
    from symcost.training.memory import train_memory
    for name in ("llama-3.1-8b", "qwen3-30b-a3b"):
        m, inp = loader.build(name), S.Inputs()
        budget = S.budget_bytes(S.find_gpu(inp.gpu), S.HEADROOM_GIB)
        n = 1
        while train_memory(m, S.train_setup(inp, dp=n, tp=1, pp=1, ep=1, zero=3, recompute="full")).per_gpu > budget:
            n *= 2
        assert S._train_gpus(m, inp) == (n, [])


def test_ignore_list_matches_as_the_globs_and_regexes_do():
    """``Scheme.ignored`` (one compiled regex) says what matching each entry in turn says: ``re:X``
    as ``re.match``, a glob E as ``fnmatchcase`` of E or E.*, or the name itself."""
    import re
    from fnmatch import fnmatchcase

    from symcost.serving.quant import _ignore_matcher

    def one_by_one(ignore, name):
        return any(re.match(e[3:], name) if e.startswith("re:") else
                   fnmatchcase(name, e) or fnmatchcase(name, e + ".*") or name == e for e in ignore)
    raw = json.load(open(os.path.join(CONFIGS, "glm-5.2-nvfp4.json")))
    ignore = tuple(raw["quantization_config"]["ignore"]) + (r"re:.*mlp\.gate$", "a[b]c", "x?y", "re:(?i)HEAD")
    names = [f"model.layers.{i}.{m}" for i in range(80) for m in
             ("self_attn", "self_attn.q_a_proj", "mlp", "mlp.gate", "mlp.shared_experts.up_proj",
              "mlp.experts.3.down_proj")] + ["lm_head", "lm_head.weight", "model.embed_tokens", "abc", "a[b]c",
                                              "xzy", "xy", "head.x", "model.norm"]
    got = [_ignore_matcher(ignore)(n) for n in names]
    assert got == [one_by_one(ignore, n) for n in names]
    assert 0 < sum(got) < len(names)
