"""The tree shows the layers: each folder of symcost imports only from folders below it (issue 21).

Every ``import``/``from`` in ``symcost/`` (function-local ones included) is resolved to the folder it
names; a module may import its own folder and any folder of a lower layer, never a higher one.
``serving`` and ``training`` share a floor and do not import each other, except through the names in
SIDEWAYS (listed with the reason).
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "symcost"
LAYERS = [{"core"}, {"components"}, {"model"}, {"architectures"}, {"hardware"}, {"serving", "training"}, {"analysis"},
          {"documents"}, {"cli"}]
RANK = {name: i for i, floor in enumerate(LAYERS) for name in floor}
TOP = {"__init__", "__main__"}  # the package's face: may import anything
SIDEWAYS: set[tuple[str, str]] = set()


def folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "symcost" else None


def imports(path: Path):
    pkg = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [f"{mod}.{a.name}" for a in node.names] if mod in ("symcost",) else [mod]
            for n in names:
                yield node.lineno, n
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name


FILES = sorted(p for p in ROOT.rglob("*.py") if p.parent != ROOT or p.stem not in TOP)


def test_every_folder_has_a_floor():
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(RANK), folders ^ set(RANK)
    assert not [p.name for p in ROOT.glob("*.py") if p.stem not in TOP], "modules left at the top level"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path):
    here = path.relative_to(ROOT).parts[0]
    bad = []
    for line, mod in imports(path):
        there = folder(mod)
        if there is None or there == here or there not in RANK:
            continue
        if RANK[there] > RANK[here] or (RANK[there] == RANK[here] and (here, there) not in SIDEWAYS):
            bad.append(f"line {line}: {mod}")
    assert not bad, f"{path.relative_to(ROOT)} imports up or sideways: {bad}"
