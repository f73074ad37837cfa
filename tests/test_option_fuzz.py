"""Fuzzing the command line (issues 16 and 27): no combination of options breaks symcost.

For a command drawn from the parser itself, every option it declares is given or not, each with a
value from its choices, a plausible value, a boundary (0, −1, huge) or garbage. The outcome is exit
0 with output (under ``--json``: every count a non-negative integer), exit 1 from ``check --strict``,
or exit 2 with one line on stderr and nothing else — never a traceback, never another status.
Derandomised (tests/conftest.py) and bounded: the option values that make a search large are left
out, so the suite stays fast; sheet and plot write into a temporary folder. Issue 27 adds a user
spec whose names are hostile strings (a written .tex holds none of their control sequences), sizes
of 2^64 and 10^21, decimal budgets and expressions past the parser's degree and term bounds;
``benchmarks/fuzz_campaign.py`` runs the same kinds of input by the thousand outside the suite.
"""
from __future__ import annotations

import argparse
import collections
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symcost.cli import build_parser, main

SKIP = {"models", "gpus"}  # take no option worth fuzzing
OUT = Path(tempfile.mkdtemp(prefix="symcost-fuzz-"))  # where sheet / plot write
#: a user spec whose model, group and norm names are hostile strings (issue 27): every command prints
#: them as text, and sheet's .tex must hold none of their control sequences
HOSTILE = r"\end{document}\def\x{1}\directlua{os.exit()}\catcode`\@=11<script>x</script>|`c`$x$"
HOSTILE_SPEC = OUT / "hostile.json"
HOSTILE_SPEC.write_text(json.dumps({
    "model_type": "symcost", "name": "m" + HOSTILE,
    "values": {"d": 64, "V": 128, "L": 2, "H_q": 4, "H_kv": 2, "D_h": 16, "d_ff": 128},
    "groups": [{"name": "g" + HOSTILE, "count": "L", "components": [
        {"type": "Norms", "names": ["n" + HOSTILE]}, {"type": "Attention"}, {"type": "FFN", "gated": True}]}]}))
MODELS = ["gpt2", "llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3", "nemotron-h-56b-base-8k", "kimi-k2.5",
          "mixtral-8x7b-v0.1", "gemma-2-9b-it", str(HOSTILE_SPEC)]
HUGE = ["18446744073709551616", "1383272158897143899136"]  # 2^64, the 1.38·10^21
#: plausible values of each kind of option, then boundaries and garbage (drawn one time in five)
GOOD = {"size": ["1", "2", "4", "8", "4096", "128K"], "float": ["0.5", "0.4", "1", "0.9"],
        "--expr": ["2*L*H_kv*D_h*T", "V*d", "\\frac{d}{2}", "2*B*T*d"], "--map": ["m=d_ff", "c=2"],
        "--gpu": ["H100", "h100", "B200"], "--a": ["layers/self_attn", "total", "layers"],
        "--b": ["total", "weights"], "--vs": ["gpt2", "llama-3.1-8b"], "--keep": ["d,L", "T"],
        "--gpus": ["8", "16", "1-8"], "--hsdp-shard": ["none", "2"], "--tokens": ["1000000", "15T", "2.7M"],
        "--gpu-hours": ["1000", "2.7M"], "--flops": ["1e20", "3.8e24"], "--top": ["0", "3"], "--seq": ["1024", "4096"],
        "--global-batch": ["8", "16", "64"], "--micro-batch": ["1", "2"], "--T": ["1", "5", "4096", "128K", "1M", *HUGE],
        "--batch": ["1", "2", "8"]}
BAD = {"size": ["0", "-1", "3", "2**40", "1.5", "abc", "", "99999999999999999999"],
       "float": ["0", "-1", "1e9", "nan", "inf", "x"],
       "--expr": ["d^2", "{d²}", "x+", "", "T*" * 20 + "T", "__import__('os')",
                 "(d+1)**64*(V+1)**64*(L+1)**3", "(d+V+L+T+B+H_q+E+k+N+W)**6"], "--map": ["=", "d_ff=m", "x"],
       "--gpu": ["nope", "", " "], "--a": ["nope", "+"], "--b": ["nope"], "--vs": ["nope"], "--keep": ["nope", ","],
       "--gpus": ["8-4", "0", "x", "3", *HUGE], "--hsdp-shard": ["0", "x", "3"], "--tokens": ["0", "x"],
       "--gpu-hours": ["0", "-5", "x"], "--flops": ["0", "-1", "x"], "--top": ["-1"], "--seq": ["0", "3", "x"],
       "--global-batch": ["0", "x", "3"], "--micro-batch": ["0", "x"], "--T": ["0", "-1", "2**40", "x"],
       "--batch": ["0", "-1", "x", "1M"]}


def _commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sp for name, sp in sub.choices.items() if name not in SKIP}


COMMANDS = _commands()
OUTCOMES: list[int] = []


def _value(data, action):
    flag = max(action.option_strings, key=len)
    if flag == "--output":
        return str(OUT / data.draw(st.sampled_from(["s.tex", "p.png", "p.pdf", "p.html", "x.txt"]), label=flag))
    bad = data.draw(st.integers(0, 7), label="bad?") == 0
    if action.choices is not None and flag not in GOOD:
        good = [str(c) for c in action.choices]
        return data.draw(st.sampled_from(["bogus", ""] if bad else good), label=flag)
    kind = flag if flag in GOOD else ("float" if action.type is float else "size")
    return data.draw(st.sampled_from((BAD if bad else GOOD)[kind]), label=flag)


def _counts_are_whole(node, key=""):
    """Every count of a JSON answer (bytes, parameters, FLOPs, collectives) is a non-negative integer."""
    if isinstance(node, dict):
        for k, v in node.items():
            _counts_are_whole(v, k)
    elif isinstance(node, list):
        for v in node:
            _counts_are_whole(v, key)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        if key.endswith(("bytes", "params", "total", "active")) or key in ("flops_per_step", "collectives"):
            assert isinstance(node, int) and node >= 0, (key, node)


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def _one_command_line(capsys, data):
    name = data.draw(st.sampled_from(sorted(COMMANDS)), label="command")
    argv = [name]
    for action in COMMANDS[name]._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if not action.option_strings:  # the model (or models)
            argv.append(data.draw(st.sampled_from(MODELS), label="model"))
            continue
        if not (action.required or data.draw(st.integers(0, 9), label="give") == 0):
            continue
        flag = max(action.option_strings, key=len)
        if action.nargs == 0:
            argv.append(flag)
        else:
            argv += [flag, _value(data, action)]
    code = main(argv)
    out, err = capsys.readouterr()
    OUTCOMES.append(code)
    assert "Traceback" not in err and "Traceback" not in out, argv
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("symcost: error: "), (argv, err)
        assert out == "" or ("--json" in argv and "error" in json.loads(out)), (argv, out)
        return
    strict = "--strict" in argv or "--exit-code" in argv  # check's NOT EQUAL status
    assert code == 0 or (code == 1 and name == "check" and strict), (argv, code, err)
    assert out, argv
    if "--json" in argv:
        _counts_are_whole(json.loads(out))
    tex = next((argv[i + 1] for i, a in enumerate(argv) if a == "--output" and argv[i + 1].endswith(".tex")), None)
    if name == "sheet" and tex and Path(tex).is_file():
        text = Path(tex).read_text()
        assert text.count(r"\end{document}") == 1 and r"\directlua" not in text and r"\def\x" not in text, argv


def test_any_options_give_an_answer_or_one_error_line(capsys):
    """Every drawn command line passes ``_one_command_line``; and the draws are not all refused at
    parsing: a good share of them is answered, a good share refused. About a fifth of the draws are
    answered (each option given one time in ten, a bad value one time in eight); the draw is derandomised,
    so the sample is fixed by the options there are, and 400 draws keep one in six several standard
    deviations from the share (120 draws and one in four moved from 31 to 23 answered when one option was
    added)."""
    OUTCOMES.clear()
    _one_command_line(capsys)
    print(f"outcomes: {sorted(collections.Counter(OUTCOMES).items())}")
    assert OUTCOMES.count(0) >= len(OUTCOMES) // 6 and OUTCOMES.count(2) >= len(OUTCOMES) // 10, OUTCOMES
