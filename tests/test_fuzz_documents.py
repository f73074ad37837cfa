"""Hostile strings in a user spec never reach a generated document as markup (issue 27).

Every string a ``"model_type": "symcost"`` spec lets a user choose (the model's name, each layer
group's name, each norm's name) is set to each hostile string below — TeX primitives that end the
document, redefine macros, run Lua or shell, switch category codes or open verbatim, and
Markdown/HTML markup — and the sheet is written as LaTeX (through the CLI) and as Markdown. The
.tex must hold no hostile control sequence and must still compile (pdflatex, where installed);
the Markdown, rendered by a CommonMark parser with raw HTML on, must produce no tag, link or image
that the template did not write itself.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

import symcost
from symcost.cli import main
from symcost.core import escape
from symcost.documents.report import render_sheet_md

from .tex import need_tex

HOSTILE = [
    r"\end{document}",
    r"\def\x{1}\x",
    r"\makeatletter\@@end",
    r"\special{ps: (x) run}",
    r"\directlua{os.execute('touch /tmp/pwned')}",
    r"\immediate\write18{touch /tmp/pwned}",
    r"\catcode`\@=11 \input{/etc/passwd}",
    r"\begin{verbatim}",
    r"$\mathbf{x}$ & % # ^ _ ~ { }",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[link](http://example.invalid) ![img](x.png)",
    "**bold** _em_ `code` | cell | ``x``",
    "line\nbreak\r\ttab\x00nul",
    "ünïcödé ∑ → ✓",
]

#: a control sequence from a hostile string, found verbatim (the document's own \end{document} aside)
TEX_BAD = re.compile(r"\\(def\\|makeatletter|@@end|special\{|directlua|write18|immediate|catcode|input\{|"
                     r"begin\{verbatim\}|mathbf\{x\})")


def _spec(s: str, g: str | None = None, n1: str | None = None, n2: str | None = None) -> dict:
    """A small spec whose model, group and two norm names carry the strings given."""
    g, n1, n2 = (s if x is None else x for x in (g, n1, n2))
    return {"model_type": "symcost", "name": "m" + s,
            "values": {"d": 64, "V": 128, "L": 2, "H_q": 4, "H_kv": 2, "D_h": 16, "d_ff": 128},
            "groups": [{"name": "g" + g, "count": "L", "components": [
                {"type": "Norms", "names": ["n1" + n1, "n2" + n2]}, {"type": "Attention"},
                {"type": "FFN", "gated": True}]}]}


#: every hostile string in every field once: four per spec, one per field, rotated
SPECS = [_spec(*(HOSTILE[(i + j) % len(HOSTILE)] for j in range(4))) for i in range(0, len(HOSTILE), 4)]


@pytest.mark.parametrize("spec", SPECS, ids=range(len(SPECS)))
def test_hostile_spec_strings_stay_text_in_latex(spec, tmp_path, capsys):
    cfg = tmp_path / "spec.json"
    cfg.write_text(json.dumps(spec))
    out = tmp_path / "sheet.tex"
    assert main(["sheet", str(cfg), "-o", str(out)]) == 0
    capsys.readouterr()
    tex = out.read_text()
    clean_cfg = tmp_path / "clean.json"
    clean_cfg.write_text(json.dumps(_spec("")))
    assert main(["sheet", str(clean_cfg), "-o", str(tmp_path / "clean.tex")]) == 0
    capsys.readouterr()
    clean = (tmp_path / "clean.tex").read_text()
    # the template's own preamble may use \makeatletter (\needlines): the hostile strings add none
    assert len(TEX_BAD.findall(tex)) == len(TEX_BAD.findall(clean)), TEX_BAD.findall(tex)
    assert tex.count(r"\end{document}") == 1 and tex.rstrip().endswith(r"\end{document}")
    assert "<script" not in tex and "\x00" not in tex


def test_hostile_sheet_compiles(tmp_path, capsys):
    need_tex()
    every = "".join(HOSTILE)
    cfg = tmp_path / "spec.json"
    cfg.write_text(json.dumps(_spec(every)))
    out = tmp_path / "sheet.tex"
    assert main(["sheet", str(cfg), "-o", str(out)]) == 0
    capsys.readouterr()
    run = subprocess.run([shutil.which("pdflatex"), "-interaction=nonstopmode", "-halt-on-error",
                          "-no-shell-escape", out.name], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "sheet.pdf").stat().st_size > 0
    assert not (tmp_path / "pwned").exists()


TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)")
#: tags the sheet's own Markdown produces (headings, paragraphs, tables, lists, code, emphasis)
OWN_TAGS = {"p", "h1", "h2", "h3", "h4", "table", "thead", "tbody", "tr", "th", "td", "code", "strong",
            "em", "ul", "li", "ol", "pre", "hr", "br"}


@pytest.mark.parametrize("spec", SPECS, ids=range(len(SPECS)))
def test_hostile_spec_strings_stay_text_in_markdown(spec):
    markdown_it = pytest.importorskip("markdown_it")
    md = render_sheet_md(symcost.build(spec))
    html = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    tags = {m.group(2).lower() for m in TAG.finditer(html)}
    assert tags <= OWN_TAGS, tags - OWN_TAGS
    clean = render_sheet_md(symcost.build(_spec("")))
    clean_html = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(clean)
    # the hostile text adds no emphasis, no code span and no table cell of its own (a notation remark that
    # names the clean spec's empty name may drop out, so the hostile sheet can have fewer)
    for tag in ("<strong>", "<em>", "<td>", "<th>"):
        assert html.count(tag) <= clean_html.count(tag), tag


@pytest.mark.parametrize("s", HOSTILE, ids=range(len(HOSTILE)))
def test_escape_functions_leave_no_markup(s):
    t = escape.tex(s)
    assert TEX_BAD.search(t) is None and r"\end{" not in t
    assert not s.isascii() or not re.search(r"(?<!\\)[$&%#^_{}~]", t.replace(r"\textbackslash{}", "").replace(
        r"\textasciicircum{}", "").replace(r"\textasciitilde{}", "").replace(r"\textless{}", "").replace(
        r"\textgreater{}", "").replace(r"\textbar{}", "").replace(r"\allowbreak{}", ""))
    h = escape.html(s)
    assert "<" not in h and ">" not in h and '"' not in h
    code = escape.md_code(s)
    fence = re.match(r"`+", code).group(0)
    assert code.endswith(fence) and fence not in code[len(fence):-len(fence)]
    assert re.search(r"(?<!\\)\|", code) is None
