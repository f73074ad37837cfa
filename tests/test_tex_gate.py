"""The TeX gate: bare machines skip the LaTeX tests with a reason, CI (SYMCOST_REQUIRE_TEX=1) fails."""
import shutil

import pytest

from tests import tex


def test_missing_pdflatex_skips_with_reason(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.delenv(tex.REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="pdflatex is not installed"):
        tex.need_tex()


def test_missing_pdflatex_fails_when_required(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv(tex.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="pdflatex is not installed"):
        tex.need_tex()


def test_present_pdflatex_runs(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setenv(tex.REQUIRE_ENV, "1")
    assert tex.need_tex() is None


def test_ci_demands_tex():
    from pathlib import Path
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert f"export {tex.REQUIRE_ENV}=1" in ci
