"""The README as a new user meets it (issue 27): its install serves every command, its samples are
what the commands print.

``test_console_samples_match`` runs every ``$ symcost ...`` line of the README's console blocks and
compares what it prints with the lines under it, byte for byte.

``test_fresh_venv_install_serves_deploy_and_search`` installs the project the README's way into a new
virtual environment that holds nothing but the project's declared core dependencies (resolved
from this machine's installed distributions through their metadata, linked into a directory
the venv reads through a ``.pth`` file: no ``--system-site-packages``, so neither torch, transformers,
matplotlib nor the editable symcost of the development install is visible), with pip told to use no
index (``--no-index``: the dependencies must be satisfied by what the metadata declares, offline)
and no build isolation (setuptools, the declared build backend, is among the linked distributions).
Then the README's first command, ``deploy`` and ``train --search`` run from the venv's
``symcost`` script. About 20-40 s on this machine.
"""
from __future__ import annotations

import importlib.metadata as md
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from symcost.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _blocks(lang: str | None = None) -> list[str]:
    return [body for tag, body in re.findall(r"```(\w*)\n(.*?)```", README, flags=re.S)
            if lang is None or tag == lang]


def _console_samples() -> list[tuple[str, str]]:
    """(command, expected output) for every ``$ symcost`` line of an untagged block."""
    out = []
    for body in _blocks(""):
        if not body.startswith("$ symcost"):
            continue
        for chunk in re.split(r"^(?=\$ )", body, flags=re.M):
            if chunk.strip():
                cmd, _, expected = chunk.partition("\n")
                out.append((cmd[2:], expected))
    return out


SAMPLES = _console_samples()


def test_readme_has_console_samples():
    assert len(SAMPLES) >= 3 and SAMPLES[0][0] == "symcost params llama-3.1-8b"


@pytest.mark.parametrize("cmd,expected", SAMPLES, ids=[c for c, _ in SAMPLES])
def test_console_samples_match(cmd, expected, capsys):
    args = shlex.split(cmd)[1:]
    rc = main(args)
    printed = capsys.readouterr().out
    assert rc in (0, None)
    assert printed == expected


def test_first_block_is_the_install_and_first_sample():
    first = _blocks("bash")[0].strip()
    assert first == "pip install . && " + SAMPLES[0][0]


def test_python_blocks_are_self_contained():
    """Each Python block imports what it uses (a reader pastes one block, not the page)."""
    for body in _blocks("python"):
        assert ">>> import symcost" in body or ">>> import sympy, symcost" in body, body[:80]


# -- the fresh venv ------------------------------------------------------------------------------
def _requirement_names(dist: str) -> list[str]:
    from packaging.markers import Marker  # pip's own dependency, present wherever pip is

    names = []
    for req in md.distribution(dist).requires or []:
        spec, _, marker = req.partition(";")
        if marker and ("extra" in marker or not Marker(marker).evaluate()):
            continue
        names.append(re.match(r"[A-Za-z0-9_.\-]+", spec.strip()).group(0))
    return names


def _closure(names: list[str]) -> set[str]:
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        todo += _requirement_names(name)
    return seen


def _link_distributions(names: set[str], into: Path) -> None:
    """Symlink each distribution's top-level files and its .dist-info into ``into``."""
    into.mkdir()
    for name in names:
        dist = md.distribution(name)
        base = Path(dist.locate_file(""))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            src = base / top
            if src.exists() and not (into / top).exists():
                (into / top).symlink_to(src)


def test_fresh_venv_install_serves_deploy_and_search(tmp_path):
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = [re.match(r"[A-Za-z0-9_.\-]+", d).group(0) for d in deps]
    assert "numpy" in names  # deploy and train --search need it: a core dependency
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    closure = _closure(names + [re.match(r"[A-Za-z0-9_.\-]+", b).group(0) for b in build])
    assert not closure & {"torch", "transformers", "matplotlib"}
    _link_distributions(closure | {"pip"}, tmp_path / "deps")  # pip vendors its own dependencies

    src = tmp_path / "src"
    shutil.copytree(ROOT / "symcost", src / "symcost", ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, src / f)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "deps.pth").write_text(f"{tmp_path / 'deps'}\n")
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1", PATH=f"{venv / 'bin'}:/usr/bin:/bin",
               HF_HUB_CACHE=str(tmp_path / "no-hub"), HF_HOME=str(tmp_path / "no-hf"))

    def run(*cmd, cwd=tmp_path):
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, f"{cmd}: {p.stderr[-2000:]}"
        return p.stdout

    # the README's first block, with pip kept offline and on the linked build backend
    run(str(py), "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", ".", cwd=src)
    for absent in ("torch", "transformers", "matplotlib"):
        probe = subprocess.run([str(py), "-c", f"import {absent}"], env=env, capture_output=True, timeout=60)
        assert probe.returncode != 0, f"{absent} is visible in the fresh venv"
    where = run(str(py), "-c", "import symcost; print(symcost.__file__)")
    assert where.startswith(str(venv)), where  # the installed copy, not the development tree
    exe = str(venv / "bin" / "symcost")
    assert run(exe, "params", "llama-3.1-8b") == SAMPLES[0][1]
    deploy = run(exe, "deploy", "llama-3.1-8b", "--gpu", "H100", "--gpus", "1-8", "--T", "4096")
    assert " layouts, " in deploy and " fit" in deploy and "TP1" in deploy
    search = run(exe, "train", "llama-3.1-8b", "--search", "--gpus", "8", "--global-batch", "64",
                 "--seq", "4096", "--micro-batch", "1", "--gpu", "H100")
    assert "candidates on 8 x H100" in search and "fastest that fit" in search
