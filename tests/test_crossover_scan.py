"""``crossover`` against a brute-force integer scan (issue 27: "--a mlp --b self_attn" had reported
"from T = 1" while the ratio tends to 0).

For each model (dense, MoE, sliding window, hybrid) the two sides the command compares are exported
as exact Python (``analysis.export``: Fraction arithmetic, exact min/max) and their difference is
evaluated at every integer T from 1 to past the last change of order; the integers where a ≥ b must
be exactly the command's ``ranges`` and its words must say the same.
"""
from __future__ import annotations

import argparse
import json

import pytest
import sympy

import symcost
from symcost.analysis.export import export
from symcost.cli import main
from symcost.cli.commands.symbolic import _sides
from symcost.core.notation import sym

CASES = [  # (model, extra options): dense, MoE + MLA, sliding window (causal: the window caps it), hybrid
    ("llama-3.1-8b", []),
    ("deepseek-v3", []),
    ("gemma-2-9b-it", ["--attention", "causal"]),
    ("gpt-oss-20b", ["--attention", "causal"]),
    ("qwen3-next-80b-a3b-thinking", []),
]


def _scan(fn, last: int) -> list[tuple[int, int | None]]:
    """The integers 1..last with fn(T) >= 0 as ranges; a range reaching ``last`` is open-ended."""
    out, start = [], None
    for t in range(1, last + 1):
        if fn(T=t) >= 0:
            start = t if start is None else start
        elif start is not None:
            out.append((start, t - 1))
            start = None
    if start is not None:
        out.append((start, None))
    return out


def _function(expr, values):
    code = export(expr, values, to="python", name="diff", whole=False)
    space: dict = {}
    exec(compile(code, "<export>", "exec"), space)  # noqa: S102 - our own exported formula, not user text
    return space["diff"]


@pytest.mark.parametrize("model,extra", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("a,b", [("mlp", "self_attn"), ("self_attn", "mlp")])
def test_crossover_matches_an_integer_scan(model, extra, a, b, capsys):
    argv = ["crossover", model, "--metric", "flops", "--a", a, "--b", b, *extra]
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    m = symcost.build(model)
    ns = argparse.Namespace(model=model, metric="flops", a=a, b=b, vs=None, batch=1, weights_dtype=None,
                            kv_dtype="bf16", phase="prefill", attention=extra[1] if extra else "full",
                            logits="all", mla="auto", impl="minimal", elementwise=False, images=None)
    ea, eb, _, values = _sides(m, ns)
    fn = _function(ea - eb, {**values, sym.B: sympy.Integer(1)})
    points = [c["at_float"] for c in got["crossings"]]
    assert points, f"{model}: the MLP and attention FLOPs cross (attention grows as T^2)"
    last = int(max(points)) + 2048
    assert [(r["from"], r["to"]) for r in got["ranges"]] == _scan(fn, last)
    # and in words: the MLP leads up to the crossing, attention from the next integer on
    main(argv)
    text = capsys.readouterr().out.splitlines()[0]
    n = got["ranges"][0]["to"] if a == "mlp" else got["ranges"][0]["from"]
    assert (f"for T <= {n:,}; {b} > {a} from T = {n + 1:,}" if a == "mlp" else f"from T = {n:,}") in text
    assert "from T = 1 " not in text and "from T = 1\n" not in text
