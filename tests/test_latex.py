"""LaTeX sheets compile with a real pdflatex, without shell escape, whatever the config's text.

These tests need pdflatex (Debian: texlive-latex-base texlive-latex-recommended latexmk): they skip
with the reason on a bare machine and fail when ``SYMCOST_REQUIRE_TEX=1`` (CI) demands them
(``tests/tex.py``).
"""
from __future__ import annotations

import copy
import shutil

import pytest
import sympy

from symcost.architectures import loader
from symcost.core.latex import latex, latex_plugged, split_lines, texescape
from symcost.core.notation import sym
from symcost.documents.report import (
    build_pdf,
    environment,
    mechanisms,
    render_mechanism,
    render_sheet,
    render_sheet_md,
    write_sheet,
)
from tests.tex import need_tex

NASTY = "a_&%$#{}\\~^b \\input{/etc/passwd} \\write18{touch pwned} \\immediate\\write18{x}"


def _need_tex():
    need_tex()


def _compile(tmp_path, text, name="sheet"):
    _need_tex()
    tex = tmp_path / f"{name}.tex"
    tex.write_text(text, encoding="utf-8")
    pdf = build_pdf(tex)
    assert pdf.is_file() and pdf.stat().st_size > 1000
    return pdf


@pytest.mark.parametrize("name", ["llama-3.1-8b", "llama-2-7b", "qwen3-8b"])
def test_bundled_sheet_compiles(tmp_path, name):
    _compile(tmp_path, render_sheet(loader.build(name), T_prefill=2048, T_decode=8192, batch=2))


def test_sliding_window_sheet_compiles(tmp_path):
    raw = {"model_type": "mistral", "hidden_size": 64, "vocab_size": 1000, "num_hidden_layers": 3,
           "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96,
           "sliding_window": 512}
    text = render_sheet(loader.build(raw), T_prefill=100, T_decode=4096)
    assert r"T \le 511" in text and r"T \ge 511" in text  # both window regimes are written out
    _compile(tmp_path, text)


def _nasty_model():
    _, raw = loader.read_json("llama-3.1-8b")
    return loader.build(loader.load_config(copy.deepcopy(raw), name=NASTY))


def test_hostile_name_is_escaped_and_compiles(tmp_path):
    model = _nasty_model()
    model.notes.append("note with " + NASTY)
    text = render_sheet(model)
    for bad in (r"\input{", r"\write18", r"\immediate", "$#", "a_&"):
        assert bad not in text
    assert texescape(NASTY) in text
    _compile(tmp_path, text)
    md = render_sheet_md(model)
    assert "\\input{" not in md.replace("\\\\input", "")


def test_write_sheet_builds_pdf(tmp_path):
    _need_tex()
    tex, pdf, msg = write_sheet(_nasty_model(), tmp_path / "x.tex", pdf=True)
    assert tex.is_file() and pdf is not None and pdf.is_file() and "wrote" in msg


def test_write_sheet_without_engine_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    tex, pdf, msg = write_sheet(loader.build("llama-2-7b"), tmp_path / "x.tex", pdf=True)
    assert tex.is_file() and pdf is None and "no TeX engine" in msg


def test_mechanism_sheet_compiles(tmp_path):
    mech = {m["module"]: m for m in mechanisms()}["attention"]
    _compile(tmp_path, render_mechanism(mech, "tex"))


def test_texescape_covers_every_special():
    out = texescape("\\{}$&#^_%~")
    assert out == (r"\textbackslash{}\{\}\$\&\#\textasciicircum{}\_\%\textasciitilde{}")
    assert texescape("é中") == "\\'{e}[U+4E2D]"  # an accented letter has LaTeX (issue 25); CJK does not in pdflatex


def test_plugged_keeps_structure_and_exact_value():
    expr = sym.d * (sym.H_q + 2 * sym.H_kv) * sym.D_h
    vals = {sym.d: 4096, sym.H_q: 32, sym.H_kv: 8, sym.D_h: 128}
    assert latex_plugged(expr, vals) == r"128 \cdot 4096 \cdot \left(2 \cdot 8 + 32\right)"
    assert latex(sympy.Integer(25165824) * 1000) == "25{,}165{,}824{,}000"
    assert latex(sym.H_kv * sym.d_ff) == r"H_{\mathrm{kv}} d_{\mathrm{ff}}"  # names upright, H_{q} a variable
    assert latex(sym.H_q) == "H_{q}"


def test_long_sums_are_split():
    expr = sum((i + 1) * sym.T ** i * sym.d * sym.d_ff * sym.H_q for i in range(12))
    lines = split_lines(expr, {}, 40)
    assert len(lines) > 2 and all(lines)


def test_templates_are_strict():
    env = environment()
    with pytest.raises(Exception):
        env.from_string(r"\VAR{missing}").render()
    assert env.from_string(r"\VAR{x|texescape}").render(x="$") == r"\$"
