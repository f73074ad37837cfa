"""`symcost export`: standalone code equal to the engine at random points, without symcost (issue 14)."""
import json
import random
import subprocess
import sys
import time

import numpy as np
import pytest

import symcost
from symcost import Phase
from symcost.analysis.export import export
from symcost.cli import main

CASES = [("llama-3.1-8b", "flops", ["--phase", "prefill", "--attention", "causal"]),
         ("gemma-2-9b-it", "flops", ["--phase", "prefill", "--attention", "causal"]),  # Piecewise windows
         ("gemma-2-9b-it", "cache_bytes", []),  # Min(T, W - 1)
         ("qwen3-next-80b-a3b-thinking", "flops", ["--phase", "prefill", "--impl", "reference"]),  # ceilings
         ("deepseek-v3", "flops", ["--phase", "decode", "--mla", "absorb"]),
         ("nemotron-3-nano-30b-a3b", "cache_bytes", [])]


def _code(capsys, argv):
    assert main(["export", *argv]) == 0
    return capsys.readouterr().out


def _engine(name, metric, flags):
    m = symcost.build(name)
    if metric == "cache_bytes":
        return m.cache_bytes()
    opts = dict(zip([f.lstrip("-") for f in flags[::2]], flags[1::2]))
    return m.flops(Phase(kind=opts.pop("phase"), **opts))


POINTS = [(1, 1), (2, 4095), (3, 4096), (1, 4097), (8, 2**21)] + \
         [(random.Random(i).randint(1, 64), random.Random(-i).randint(1, 300_000)) for i in range(4)]


@pytest.mark.parametrize("name, metric, flags", CASES)
def test_python_export_runs_without_symcost_and_is_exact(capsys, tmp_path, name, metric, flags):
    code = _code(capsys, [name, "--metric", metric, "--to", "python", *flags])
    assert "symcost" not in "".join(l for l in code.splitlines() if "import" in l)
    (tmp_path / "f.py").write_text(code)
    calls = "; ".join(f"print({metric}(B={B}, T={T}))" for B, T in POINTS)
    # -S: no site-packages, so neither symcost nor numpy is importable
    out = subprocess.run([sys.executable, "-S", "-c", f"from f import {metric}; {calls}"],
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split()
    terms = _engine(name, metric, flags)
    assert [int(v) for v in out] == [terms.total_at(B=B, T=T) for B, T in POINTS]


@pytest.mark.parametrize("name, metric, flags", CASES)
def test_numpy_export_float64_and_object(capsys, name, metric, flags):
    code = _code(capsys, [name, "--metric", metric, "--to", "numpy", *flags])
    ns = {}
    exec(compile(code, "export", "exec"), ns)  # the test runs generated code; nothing from the user
    fn = ns[metric]
    terms = _engine(name, metric, flags)
    B = np.array([B for B, _ in POINTS])
    T = np.array([T for _, T in POINTS])
    exact = [terms.total_at(B=int(b), T=int(t)) for b, t in zip(B, T)]
    approx = fn(B=B, T=T)  # int64 inputs: converted to float64, no silent wrap at T = 2^21, B = 8
    assert np.all(approx > 0)
    assert np.allclose(approx, np.array(exact, dtype=float), rtol=1e-12, atol=0)
    assert [int(v) for v in fn(B=B.astype(object), T=T.astype(object), dtype=object)] == exact


def test_c_export_compiles_and_agrees(capsys, tmp_path):
    import shutil
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is part of the machine image (gcc)"
    code = _code(capsys, ["llama-3.1-8b", "--metric", "flops", "--to", "c", "--phase", "decode"])
    (tmp_path / "f.c").write_text(code + '\n#include <stdio.h>\nint main(void) { printf("%.17g\\n", '
                                  'flops(8, 131072)); return 0; }\n')
    subprocess.run([cc, "-O0", "-o", str(tmp_path / "f"), str(tmp_path / "f.c"), "-lm"], check=True)
    got = float(subprocess.run([str(tmp_path / "f")], capture_output=True, text=True).stdout)
    want = symcost.build("llama-3.1-8b").flops(Phase(kind="decode")).total_at(B=8, T=131072)
    assert abs(got - want) / want < 1e-15


def test_keep_leaves_symbols_free(capsys):
    data = json.loads(_code(capsys, ["llama-3.1-8b", "--metric", "params", "--to", "json", "--keep", "d,L"]))
    assert data["arguments"] == ["L", "d"]
    f = symcost.parse(data["formula"])
    m = symcost.build("llama-3.1-8b")
    assert f.subs(m.values) == m.params().total_at()


def test_latex_and_sympy_targets(capsys):
    tex = _code(capsys, ["llama-3.1-8b", "--metric", "cache_bytes", "--to", "latex"])
    assert "B T" in tex
    src = _code(capsys, ["llama-3.1-8b", "--metric", "cache_bytes", "--to", "sympy"])
    ns = {}
    exec(src, ns)
    e = ns["cache_bytes"]
    assert e == symcost.build("llama-3.1-8b").cache_bytes().total.xreplace(
        symcost.build("llama-3.1-8b").cache_bytes().bound)  # same symbols, same assumptions
    assert e.subs({symcost.sym.B: 1, symcost.sym.T: 10}) == 10 * 131072


@pytest.mark.parametrize("keep", ["__import__('os')", "d,L,os.system", "x" * 100_000, "E,N,zz"])
def test_hostile_keep_is_refused_fast(capsys, keep):
    t0 = time.process_time()
    assert main(["export", "llama-3.1-8b", "--metric", "params", "--keep", keep]) == 2
    err = capsys.readouterr().err
    assert time.process_time() - t0 < 0.5 and len(err.splitlines()) == 1 and len(err) < 300


def test_python_export_is_pure_code():
    from symcost.core.notation import sym
    code = export(sym.T * (sym.T + 1) / 2, {}, name="pairs")
    ns = {}
    exec(code, ns)
    assert ns["pairs"](T=2**40) == 2**40 * (2**40 + 1) // 2


def test_json_flag_wraps_the_code(capsys):
    """``--json`` prints one JSON object whatever ``--to`` is (the code under "code")."""
    import json

    from symcost.cli import main
    assert main(["export", "gpt2", "--metric", "params", "--to", "python", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["to"] == "python" and "def params" in out["code"]
