"""The CLI's start-up shortcuts (symcost/startup.py) change no result and hide nothing from SymPy."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

ENV = {**os.environ, "PYTHONPATH": os.getcwd()}


def run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=ENV)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_tensor_module_is_deferred_and_still_works():
    """Arithmetic does not import sympy.tensor.tensor (nor sympy.combinatorics); using the module
    afterwards loads the real one, and a stand-in bound before then tests like the real class."""
    out = run("""
        import sys
        from symcost.cli import startup
        startup.defer_sympy_tensor()
        import sympy
        from sympy.tensor.tensor import TensExpr          # bound while still the stand-in
        x = sympy.Symbol("x")
        assert sympy.expand((x + 1) * (x + 2) + x) == x**2 + 4*x + 2
        print("combinatorics" in " ".join(sys.modules), isinstance(x + 1, TensExpr))
        from sympy.tensor.tensor import TensorIndexType, tensor_indices, TensorHead
        L = TensorIndexType("L")
        i = tensor_indices("i", L)
        A, B = TensorHead("A", [L]), TensorHead("B", [L])
        e = A(i) + B(i)                                    # goes through Add.flatten's TensExpr test
        print(isinstance(e, TensExpr), issubclass(type(e), TensExpr), type(e).__name__)
        import sympy.tensor.tensor as real
        print(real.TensExpr is not TensExpr, sys.modules["sympy.tensor.tensor"] is real)
    """).split("\n")
    assert out[0] == "False False"
    assert out[1] == "True True TensAdd"
    assert out[2] == "True True"


@pytest.mark.parametrize("argv", [["flops", "deepseek-v3", "--phase", "prefill", "--T", "8192", "--json"],
                                  ["check", "llama-3.1-8b", "--metric", "cache", "--expr", "2*L*H_kv*D_h*T"],
                                  ["params", "gpt2"]])
def test_cli_output_is_the_same_without_the_shortcuts(argv):
    fast = run(f"import sys; from symcost.cli import main; sys.exit(main({argv!r}))")
    plain = run(f"""
        import sys
        from symcost.cli import startup
        startup.defer_sympy_tensor = startup.no_pydantic_plugins = lambda: None
        from symcost.cli import main
        sys.exit(main({argv!r}))
    """)
    assert fast == plain and fast


def test_the_console_entry_exits_with_mains_status_and_flushed_output(tmp_path):
    """``python -m symcost`` (``cli.run``: main(), freeze, exit): the exit status is main's, the
    whole output arrives, a file the command writes is complete."""
    env = {**ENV, "PYTHONDONTWRITEBYTECODE": "1"}
    ok = subprocess.run([sys.executable, "-m", "symcost", "params", "deepseek-v3", "--json"], capture_output=True,
                        text=True, env=env)
    assert ok.returncode == 0 and json.loads(ok.stdout)["model"] == "deepseek-v3"
    bad = subprocess.run([sys.executable, "-m", "symcost", "params", "no-such-model"], capture_output=True,
                         text=True, env=env)
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1
    out = tmp_path / "s.tex"
    done = subprocess.run([sys.executable, "-m", "symcost", "sheet", "gpt2", "-o", str(out)], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0 and out.read_text().rstrip().endswith("\\end{document}")


def test_one_command_parser_equals_the_whole_parser():
    """``build_parser(only=cmd)`` (what main() builds) parses a command line as the whole parser does."""
    import shlex

    from symcost.cli import EXAMPLES, build_parser
    for name, example in EXAMPLES.items():
        argv = shlex.split(example)[1:]
        assert build_parser(only=name).parse_args(argv) == build_parser().parse_args(argv), name
    assert build_parser(only="no-such-command").format_help() == build_parser().format_help()
