"""The option table (symcost/cli/options.py): every command's options are rows of it, every row's
example is a value its type and range accept, and a command's run imports only its own module."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from symcost.cli import COMMANDS
from symcost.cli import options as o

ROWS = o.table()


def _rows(name):
    module = importlib.import_module(f"symcost.cli.commands.{COMMANDS[name][0]}")
    for row in module.OPTIONS[name]:
        yield from (row.options if isinstance(row, o.Section) else (row,))


@pytest.mark.parametrize("key", sorted(k for k, r in ROWS.items() if r.example is not None))
def test_every_example_is_accepted(key):
    row = ROWS[key]
    value = row.kind(row.flag)(row.example) if row.kind is not None else row.example
    if row.choices is not None:
        assert value in row.choices, (key, row.example)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_option_of_a_command_is_a_row_of_the_table(name):
    """A command may change a row's default, help or requirement, never its flags, type or group."""
    for row in _rows(name):
        assert any(t.flags == row.flags and t.kind is row.kind and t.group == row.group for t in ROWS.values()), \
            (name, row.flags)


def test_groups_are_the_stated_ones():
    assert {r.group for r in ROWS.values()} == {"common", "model", "phase", "conventions", "serve", "parallel",
                                               "train", "metric", "document"}


def test_a_command_imports_only_its_own_module():
    code = ("import sys, io, contextlib; from symcost.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['params', 'gpt2', '--json'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('symcost.cli.commands.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['symcost.cli.commands.common', 'symcost.cli.commands.model']"
