"""Every formula string any command prints in --json reads back with symcost.parse to itself
(INTERFACE.md; issue 14), over every bundled model."""
import json

import pytest

from symcost import parse
from symcost.architectures import loader
from symcost.cli import main

COMMANDS = [
    ["params"],
    ["flops", "--phase", "decode", "--T", "4096"],
    ["flops", "--phase", "prefill", "--T", "4096", "--attention", "causal"],
    ["cache", "--T", "4096"],
    ["memory", "--T", "4096", "--batch", "1", "--gpu", "H200"],
    ["roofline", "--phase", "decode", "--T", "4096", "--batch", "8", "--gpu", "H200"],
    ["scale", "--metric", "cache_bytes", "--wrt", "T"],
    ["export", "--metric", "flops", "--phase", "decode", "--to", "json"],
]


def _formulas(node, path=""):
    """(path, text) of every string under a key that names a formula."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _formulas(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _formulas(v, f"{path}[{i}]")
    elif isinstance(node, str) and any(w in path for w in ("formula", "derivative", "leading_term")):
        yield path, node


@pytest.mark.parametrize("name", loader.bundled_names())
def test_every_json_formula_parses_back(name, capsys):
    seen = 0
    for cmd in COMMANDS:
        code = main([cmd[0], name, *cmd[1:], "--json"])
        out = capsys.readouterr().out
        if code != 0:  # a command that does not apply (e.g. a layout that does not fit) says why
            assert "error" in json.loads(out), (cmd, out[:200])
            continue
        for path, text in _formulas(json.loads(out)):
            assert str(parse(text)) == text, (cmd, path, text[:200])
            seen += 1
    assert seen >= 6, seen
