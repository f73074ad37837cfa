"""What readers get from the generated documents (issue 15): no machine paths, clean pages."""
import re
import subprocess

import pytest

from symcost.documents.generate import ROOT, render_all
from tests.tex import need_tex

DOCS = render_all()
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|tmp|home|root|usr|opt|var|mnt)/")


def test_no_generated_file_holds_a_machine_path():
    bad = sorted(path for path, text in DOCS.items() if MACHINE_PATH.search(text))
    assert not bad, bad


#: what a document prints where it lacks a glyph: a code point, the replacement character
PLACEHOLDER = re.compile(r"\[U\+[0-9A-Fa-f]{4,6}\]|\ufffd")
#: what a PDF prints where a reference is undefined
UNDEFINED_REF = re.compile(r"\?\?")


def test_no_glyph_placeholder_in_any_generated_file():
    bad = {path: PLACEHOLDER.search(text).group() for path, text in DOCS.items()
           if path.endswith((".tex", ".md")) and PLACEHOLDER.search(text)}
    assert not bad, bad


def test_every_unicode_symbol_of_the_docstrings_has_latex():
    from symcost.core.latex import texescape
    for ch in ["x̂", *"⊗⊙Λµ₀₁₂₄₆ΨΦ∂÷±≡∉⋅∗‖⁻⁰¹∞αβγδεηθλμπστ"]:
        assert "[U+" not in texescape(ch), ch


def test_no_raw_markup_leaks_into_latex():
    for path, text in DOCS.items():
        if path.endswith(".tex"):
            assert "**" not in text, path  # Markdown bold left in a LaTeX page


def test_mechanism_sheets_drop_doctests_and_test_files():
    for path, text in DOCS.items():
        if path.startswith("formulas/") and path.endswith(".md"):
            assert ">>>" not in text and "tests/" not in text, path
            assert not re.search(r"(?<!`)``(?!`)", text), path  # RST literal quotes


def test_mla_sheet_shows_absorbed_decode_next_to_expanded():
    text = DOCS["formulas/mla.md"]
    assert "### Decode FLOPs, expanded (as transformers runs it)" in text
    assert "### Decode FLOPs, absorbed (as vLLM and SGLang run it)" in text


@pytest.mark.parametrize("path", sorted(p for p in DOCS if p.endswith(".tex")))
def test_generated_tex_compiles_without_overfull_boxes(tmp_path, path):
    need_tex()
    (tmp_path / "doc.tex").write_text(DOCS[path], encoding="utf-8")
    cmd = ["pdflatex", "-no-shell-escape", "-halt-on-error", "-interaction=nonstopmode", "doc.tex"]
    for _ in range(2):  # longtable widths settle on the second pass
        proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout[-2000:]
    log = (tmp_path / "doc.log").read_text(errors="replace")
    text = subprocess.run(["pdftotext", "doc.pdf", "-"], cwd=tmp_path, capture_output=True, text=True).stdout
    for pattern in (PLACEHOLDER, UNDEFINED_REF):
        assert not pattern.search(text), f"{path}: {pattern.search(text).group()} in the PDF text"
    overfull = re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)
    assert not overfull, f"{path}: {len(overfull)} overfull boxes ({', '.join(overfull[:5])} pt)"
