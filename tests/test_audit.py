"""The seeds audit (symcost/audit.py): every claim computes, every verdict is the one the table
states (an engine change that flips one fails here), and every disagreement is explained: the
seed's own formula, evaluated exactly, reproduces the seed's number — or the cause says it is not
reproduced."""
from __future__ import annotations

import re

import pytest

from symcost.documents import audit

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
    assert s["claims"] == len(audit.CLAIMS) == sum(s.get(v, 0) for v in audit.VERDICTS)
    assert f"**{audit._headline(s)}**" in md and "## Error patterns" in md
    assert "GB vs GiB" in md and "invented MLA rope projection" in md
    assert md.count("\n## Seed ") == 4 and "not yet checkable" not in md
    tex = audit.render_tex()
    assert tex.startswith("\\documentclass") and tex.rstrip().endswith("\\end{document}")
    assert "\\input" not in tex and "\\write18" not in tex


def test_seeds_audit_tex_compiles(tmp_path):
    from tests.test_latex import _compile  # real pdflatex; skips on a bare machine, fails under SYMCOST_REQUIRE_TEX=1
    _compile(tmp_path, audit.render_tex(), "seeds-audit")


def test_seeds_audit_pdf_shows_the_chinese_quotes_with_xelatex(tmp_path):
    """Built with xelatex (xeCJK, Noto Serif CJK: .ci/run installs them) the PDF prints the quotes and
    each row's seed line; the same .tex builds under pdflatex without them (the test above)."""
    import shutil
    import subprocess

    from tests.tex import need_tex
    need_tex("xelatex")
    if not shutil.which("kpsewhich") or not subprocess.run(["kpsewhich", "xeCJK.sty", "ctexhook.sty"],
                                                           capture_output=True, text=True).stdout.count("\n") == 2:
        need_tex("xeCJK (Debian: texlive-lang-cjk texlive-lang-chinese)")
    (tmp_path / "a.tex").write_text(audit.render_tex(), encoding="utf-8")
    for _ in range(2):
        proc = subprocess.run(["xelatex", "-no-shell-escape", "-halt-on-error", "-interaction=nonstopmode", "a.tex"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout[-2000:]
    assert "Overfull \\hbox" not in (tmp_path / "a.log").read_text(errors="replace")
    text = subprocess.run(["pdftotext", "a.pdf", "-"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert "约 28 倍" in text.replace("\n", " ") or "28 倍" in text
    assert "每 1B 参数" in text and "001:1451" in text


# -- coverage: every numeric claim of the seeds has a row ----------------------------------------------
#: the share of the seeds' claims (tests/seed_numbers.py ``all_claims``: any number about a cost, with or
#: without a unit) with a row at the same seed line. Issue 25 requires at least 90 % under this definition.
COVERAGE = 0.90


def _rows_by_place() -> set[tuple[str, int, str]]:
    """(seed, line, number as written) of every row: its quote's line, its ``also`` places (the same
    words elsewhere) and its ``repeats`` (the same number stated again in the section)."""
    have = set()
    for c in audit.CLAIMS:
        seed = c.seed.split()[0]
        v = (c.as_written or c.said).replace(",", "")
        if c.line:
            have.add((seed, c.line, v))
        for line, val in c.repeats:
            have.add((seed, line, val))
        for place, line in zip(c.also, c.also_lines):
            if line:
                have.add((place.split()[0], line, v))
    return have


def _coverage():
    from tests import seed_numbers
    have = _rows_by_place()
    found, missing = 0, []
    for seed in ("000", "001", "002", "003", "004"):
        for section, line, v, kind in seed_numbers.all_claims(seed):
            if (seed, line, v) in have:
                found += 1
            else:
                missing.append(f"{seed}:{line} {section} {v} ({kind})")
    return found, missing


def test_seed_extraction_rules():
    from tests import seed_numbers
    c0, c1, c3 = seed_numbers.claims("000"), seed_numbers.claims("001"), seed_numbers.claims("003")
    assert "525.4" in c0["§2.5.4"] and "10.94" in c0["§2.5.4"]  # LaTeX \text{B} read as a unit
    assert "293.6" in c0["§2.3.1"] and "143.7" in c0["§2.3.3"] and "49" in c0["§2.3.3"]  # flattened table cells
    assert "8192" not in c0.get("§1.1", set())  # config-field table: hidden_size8192... has no unit anyway
    assert "12" in c1["§5.4"]  # "12 KB"
    assert "6144" not in c3["§9.2"]  # a GEMM shape, not followed by a unit
    assert "2.2" not in c3.get("§10", set())  # "2.0e12" / code listing lines are excluded
    assert all(not s.startswith("§0") or len(v) < 4 for s, v in c1.items())
    assert "9" not in c1["§3.6"] and "4" not in c1["§3.5.5"]  # exponents: 2.15 × 10^9 FLOPs, 6.55 × 10^4 FLOPs
    assert "3" not in c1.get("§0", set())  # "CH 3 FLOPs" is a chapter number
    assert "1" not in c1["§3.2.2"] and "256" in c1["§3.2.2"]  # "1M 个 key", "64 × 1M × 256": token count and factor
    assert "70" not in c3.get("§2", set()) and "7.6" in c3["§10"]  # 70B names Llama-3-70B; 7.6B is a claim
    assert "2" in c1["§5.2"]  # "每 1B 参数 = 2 GiB": the 1 defines the unit, the 2 is the claim
    assert "1" not in c0["§1.5"] and "1.074" in c0["§1.5"]  # "1 GiB ≈ 1.074 GB": the 1 defines the unit


def test_wider_claims_on_real_seed_lines():
    """Rules 8-12 on the seed lines the issue names: one of each kind, at its line."""
    from tests import seed_numbers
    got = {(line, v, kind) for _, line, v, kind in seed_numbers.all_claims("001")}
    assert (1242, "28", "ratio") in got  # 减去 k^R 开销后约 28 倍
    assert (1333, "1/2000", "fraction") in got  # Attention KV cache 的约 1/2000
    assert (1884, "4", "arrow") in got and (1884, "38", "arrow") in got  # batch 从 1→38，M3 只从 1→4
    assert (1589, "2", "count") in got  # 每层需要两次 all-reduce 通信（前向 + 反向）
    assert (1148, "34", "ratio") in got  # 压缩比 ~34 倍
    got0 = {(line, v, kind) for _, line, v, kind in seed_numbers.all_claims("000")}
    assert (336, "4128768", "result") in got0  # 7168 × 576 = 4,128,768: the result of a parameter product
    got3 = {(line, v) for _, line, v, _ in seed_numbers.all_claims("003")}
    assert (157, "4096") not in got3  # 32 × 128 = 4096 = d: head arithmetic, not a cost
    assert not any(v == "4096" and line == 920 for line, v in got3)  # d = 4096: a definition


def test_rows_are_placed_by_line_not_by_value():
    """A row covers the claims at its quote's line: a row for "33.6M" FLOPs elsewhere in the section
    does not cover "33.6 MB" on another line (the old value-string match did)."""
    have = _rows_by_place()
    rows_without_line = [c.seed for c in audit.CLAIMS if not c.line]
    assert len(rows_without_line) <= 20, rows_without_line
    assert ("001", 1451, "2") in have  # 每 1B 参数 = 2 GiB 显存, its own line
    two = [c for c in audit.CLAIMS if c.seed == "001 §5.2" and c.said == "2" and c.unit == "GiB"]
    assert len(two) == 1 and two[0].verdict_said == "wrong"  # 1.86 GiB: rounding no longer hides it


def test_every_seed_claim_has_a_row():
    found, missing = _coverage()
    share = found / (found + len(missing))
    print(f"coverage {found}/{found + len(missing)} = {share:.1%}; uncovered:\n" + "\n".join(missing))
    assert share >= COVERAGE, f"{share:.1%} < {COVERAGE:.0%}:\n" + "\n".join(missing)
