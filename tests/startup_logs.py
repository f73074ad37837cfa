"""The one loader of the engines' public start-up logs (tests/data/serving_startup_logs.json, the
end-to-end set, and tests/data/vllm_startup.json, the page-accounting set), shared by
tests/test_serving_startup_logs.py and tests/test_vllm_startup.py: read a set's cases, and build a
case's model (a bundled name or a vendored config.json under tests/data) with its raw config."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import symcost
from symcost.architectures import loader

ROOT = Path(__file__).parent.parent
DATA = ROOT / "tests" / "data"
GiB = 2**30


def cases(name: str) -> list[dict]:
    """The cases of one start-up-log set: ``name`` is the file's stem under tests/data."""
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))["cases"]


@lru_cache(maxsize=None)
def _build(source: str):
    if source.endswith(".json"):
        raw = json.loads((ROOT / source).read_text(encoding="utf-8"))
        return symcost.build(dict(raw)), raw
    return symcost.build(source), loader.read_json(source)[1]


def model(source: str):
    """(model, raw config) of a case's ``model`` field: a bundled name or a path from the repo root.
    Built once per source (models are immutable once built)."""
    return _build(source)
