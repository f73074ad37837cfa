"""One metric vocabulary for check, scale, export, crossover and plot (issue 27)."""
from __future__ import annotations

import json
import re

import pytest

from symcost.analysis.vocabulary import ALIASES, CHOICES, METRICS, resolve
from symcost.cli import build_parser, main
from symcost.core.errors import SymcostError

COMMANDS = ("check", "scale", "export", "crossover", "plot")


def _metric_action(cmd):
    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and isinstance(a.choices, dict))
    return next(a for a in sub.choices[cmd]._actions if "--metric" in a.option_strings)


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_command_takes_and_lists_the_same_names(cmd):
    act = _metric_action(cmd)
    assert tuple(act.choices) == CHOICES
    for name in CHOICES:  # --help lists each name with what it counts
        assert re.search(rf"\b{name}\b", act.help)


def test_an_alias_is_a_name_and_a_phase():
    assert resolve("decode_flops", None, "check") == ("flops", "decode")
    assert resolve("decode_flops", None, "plot") == ("flops", "decode")
    with pytest.raises(SymcostError, match="--phase prefill: --metric decode_flops is --metric flops --phase decode"):
        resolve("decode_flops", "prefill", "scale")
    with pytest.raises(SymcostError, match="plot draws"):
        resolve("params", None, "plot")
    assert set(ALIASES) & set(METRICS) == set()


def test_flops_phase_decode_means_one_thing_everywhere(capsys, tmp_path):
    out = {}
    for spelling in (["--metric", "flops", "--phase", "decode"], ["--metric", "decode_flops"]):
        assert main(["export", "llama-3.1-8b", *spelling, "--to", "json"]) == 0
        out[spelling[1]] = json.loads(capsys.readouterr().out)["formula"]
        assert main(["plot", "llama-3.1-8b", *spelling, "-o", str(tmp_path / "p.png"), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["metric"] == "decode_flops"
    assert out["flops"] == out["decode_flops"]
    # prefill: the same quantity in plot as in check/export (a prompt of T), per token by its own name
    assert main(["plot", "llama-3.1-8b", "--metric", "flops", "--phase", "prefill", "-o", str(tmp_path / "q.png"),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metric"] == "prefill_flops"


def test_crossover_mlp_sums_every_group_and_says_which(capsys):
    assert main(["crossover", "deepseek-v3", "--metric", "flops", "--a", "mlp", "--b", "self_attn", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["matched"]["mlp"] == ["dense_layers/mlp", "moe_layers/mlp"]
