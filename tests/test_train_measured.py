"""Published per-GPU training memory against ``symcost train`` under the matching ``--framework``.

``tests/data/training_memory_measured.json``: each row's source (repository, file, table and row),
hardware, the settings as stated, the figure as logged (GiB) and what was assumed where the source
is silent, with the command-line arguments that state those settings. The figures are torchtitan's
``max_memory_reserved`` (the allocator's reserve, fragmentation included), symcost's are the tensors
alive at the peak plus the cached blocks the allocator is known to hold then (``training.allocator``:
the freed logits' segment at the loss), ``torch.distributed.pipelining``'s buffers
(``training.pipeline_buffers``) and the loss as torchtitan runs it (``activations.loss_peak``: DTensor's
loss parallel under TP, the compiled loss of 2025's ``training.compile`` under ``--compiled-loss``). Criteria (issue 24): within 20 % on every row and 10 % at the median, over the
every row: none is left out (a row symcost could not cost would fail here, not be set aside).
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from symcost.cli.main import main

DATA = Path(__file__).parent / "data"
ROWS = json.loads((DATA / "training_memory_measured.json").read_text())["rows"]


def _model(name: str) -> str:
    local = DATA / "configs" / f"{name}.json"
    return str(local) if local.exists() else name


def _ratio(row, capsys) -> float:
    assert main(["train", _model(row["model"]), *row["args"], "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    return out["per_gpu_bytes"] / (row["measured_gib"] * 2**30)


def test_rows_have_sources_and_settings():
    assert len(ROWS) >= 15
    for r in ROWS:
        assert r["source"] and r["settings"] and r["assumed"] and r["measured_gib"] > 0, r["id"]
        assert "--framework" in r["args"], r["id"]
        assert "not_modelled" not in r, f"{r['id']}: every published row is held to the criteria"


def test_measured_memory_within_20_percent_on_every_row(capsys):
    ratios = {r["id"]: _ratio(r, capsys) for r in ROWS}
    bad = {k: round(x, 3) for k, x in ratios.items() if abs(x - 1) > 0.20}
    assert not bad, bad


def test_measured_memory_median_within_10_percent(capsys):
    ratios = [_ratio(r, capsys) for r in ROWS]
    assert statistics.median(abs(x - 1) for x in ratios) <= 0.10
