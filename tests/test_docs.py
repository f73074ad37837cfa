"""The README is a contract: its first two code blocks, its generated tables, and CI agree."""
import re
from pathlib import Path

from symcost.documents import docs

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _fenced_blocks(text):
    return re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)


def test_first_block_installs_and_runs_a_bundled_model():
    first = _fenced_blocks(README)[0].strip()
    assert first.startswith("pip install") and "symcost params" in first


def test_ci_runs_exactly_the_readme_test_command():
    second = _fenced_blocks(README)[1].strip()
    ci = (ROOT / ".ci" / "run").read_text()
    assert second in ci.splitlines()


def test_generated_tables_are_current():
    assert docs.fill(README) == README, "run: python -m symcost.documents.generate"
