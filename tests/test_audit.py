"""The seeds audit (symcost/audit.py): every claim computes, every verdict is the one the table
states (an engine change that flips one fails here), and every disagreement is explained: the
seed's own formula, evaluated exactly, reproduces the seed's number — or the cause says it is not
reproduced."""
from __future__ import annotations

import re

import pytest

from symcost import audit

IDS = [f"{i}-{c.seed.replace(' ', '')}-{c.model}" for i, c in enumerate(audit.CLAIMS)]


@pytest.mark.parametrize("c", audit.CLAIMS, ids=IDS)
def test_claim_verdict_is_pinned(c):
    assert c.verdict_said in audit.VERDICTS
    assert c.verdict() == c.expect, (c.seed, c.quote, audit.in_unit(c, c.value()))


@pytest.mark.parametrize("c", [c for c in audit.CLAIMS if c.expect == "disagrees"],
                         ids=[i for i, c in zip(IDS, audit.CLAIMS) if c.expect == "disagrees"])
def test_disagreement_is_explained(c):
    assert c.cause, "a disagreement needs its cause"
    assert c.pattern and c.pattern.isascii(), "a disagreement names its error pattern (the summary counts them)"
    if c.alt is None:
        assert c.cause.startswith("not reproduced"), "no alternative formula: say it is not reproduced"
    else:
        assert c.alt_reproduces(), (c.seed, audit.in_unit(c, c.alt(), c.alt_unit), c.said, c.unit)


def test_claims_are_well_formed():
    for c in audit.CLAIMS:
        assert c.unit in audit.SCALE and (c.alt_unit or c.unit) in audit.SCALE
        assert re.fullmatch(r"\d{1,3}(,\d{3})*(\.\d+)?|\d+(\.\d+)?", c.said), c.said
        assert re.fullmatch(r"00[0-4] §\S+( \S+)?", c.seed), c.seed
        assert c.what.isascii() and c.cause.isascii(), (c.what, c.cause)  # the .tex has no CJK/Unicode


def test_report_renders_every_claim():
    md = audit.render_markdown()
    s = audit.summary(audit.evaluate())
    assert s["claims"] == len(audit.CLAIMS) == s.get("agrees", 0) + s.get("disagrees", 0)
    assert f"**{s['claims']} claims: {s['agrees']} agree, {s['disagrees']} disagree.**" in md
    assert md.count("\n## Seed ") == 4 and "not yet checkable" not in md
    tex = audit.render_tex()
    assert tex.startswith("\\documentclass") and tex.rstrip().endswith("\\end{document}")
    assert "\\input" not in tex and "\\write18" not in tex


def test_seeds_audit_tex_compiles(tmp_path):
    from tests.test_latex import _compile  # real pdflatex; skips on a bare machine, fails under SYMCOST_REQUIRE_TEX=1
    _compile(tmp_path, audit.render_tex(), "seeds-audit")
