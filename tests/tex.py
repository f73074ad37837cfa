"""Whether the LaTeX-compilation tests can run, and what happens when they cannot.

On a bare machine (Python only, as the README's second command assumes) ``pdflatex`` is absent and
these tests skip with the reason. CI sets ``SYMCOST_REQUIRE_TEX=1`` (``.ci/run`` installs TeX), and
then a missing ``pdflatex`` is a failure, so CI can never pass them by skipping.
"""
from __future__ import annotations

import os
import shutil

import pytest

REQUIRE_ENV = "SYMCOST_REQUIRE_TEX"
REASON = ("pdflatex is not installed (Debian: texlive-latex-base texlive-latex-recommended latexmk); "
          f"set {REQUIRE_ENV}=1 to make this a failure, as .ci/run does")


def required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def need_tex(tool: str = "pdflatex") -> None:
    """Skip (bare machine) or fail (``SYMCOST_REQUIRE_TEX=1``) when ``tool`` is missing."""
    if shutil.which(tool) is not None:
        return
    reason = REASON.replace("pdflatex", tool) if tool != "pdflatex" else REASON
    if required():
        pytest.fail(reason)
    pytest.skip(reason)
