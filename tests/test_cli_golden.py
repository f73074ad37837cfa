"""Byte-identical command-line output across the rebuild of the upper floors (issue 21).

tests/data/cli_golden.json holds ~70 command lines (every INTERFACE.md command, the README's
examples, errors and --help) with the exit code, stdout and stderr the code gave *before* the
command-line wing moved. A change that alters an answer on purpose regenerates the file with
``python -m tests.cli_golden_cases --write`` and says why in its commit.
"""
import json

import pytest

from tests.cli_golden_cases import CASES, GOLDEN, run_case

STORED = json.loads(GOLDEN.read_text())


def test_stored_cases_are_the_case_list():
    assert [c["argv"] for c in STORED] == CASES


@pytest.mark.parametrize("case", STORED, ids=[" ".join(c["argv"])[:60] for c in STORED])
def test_output_unchanged(case):
    got = run_case(case["argv"])
    assert (got["code"], got["stderr"]) == (case["code"], case["stderr"])
    assert got["stdout"] == case["stdout"]
