"""Text-only total and active counts of models with towers (``Model.text_params``,
``text_active_params``; ``params`` JSON ``text_total`` / ``text_active``): the transformers class's
parameters outside its vision modules, and a model card's published text-only figures."""
import json
from pathlib import Path

import pytest

import symcost
from symcost.architectures import loader
from symcost.cli import main
from tests import oracle

#: the modules of the reference classes that hold the towers and their projectors
TOWER_MODULES = ("vision_tower", "embed_vision", "mm_projector", "vision_model", "multi_modal_projector", "visual")
PUBLISHED = json.loads((Path(__file__).parent / "data" / "text_only_counts.json").read_text())["models"]


def _with_towers():
    out = []
    for name in loader.bundled_names():
        try:
            m = symcost.build(name)
        except symcost.SymcostError:
            continue
        if m.has_towers:
            out.append(name)
    return out


WITH_TOWERS = _with_towers()


def test_the_bundled_multimodal_models_are_covered():
    assert {"gemma-4-26b-a4b", "kimi-k2.5", "qwen3-vl-8b-instruct", "llama-4-scout-17b-16e-instruct"} <= set(WITH_TOWERS)


@pytest.mark.parametrize("name", WITH_TOWERS)
def test_text_total_is_the_class_without_its_vision_modules(name):
    _, raw = loader.read_json(name)
    m = symcost.build(name)
    model = oracle.build(raw, "meta")
    text = sum(p.numel() for n, p in model.named_parameters() if not set(n.split(".")) & set(TOWER_MODULES))
    assert m.text_params().total_at(m.values) == text
    # towers are dense: all their weights run on an image, so they leave active and total alike
    full, active = m.params().total_at(m.values), m.active_params().total_at(m.values)
    assert full - m.text_params().total_at(m.values) == active - m.text_active_params().total_at(m.values) > 0


@pytest.mark.parametrize("row", PUBLISHED, ids=[r["model"] for r in PUBLISHED])
def test_text_counts_match_the_model_card(row):
    m = symcost.build(row["model"])
    half = row["rounded_to"] // 2
    assert abs(m.text_params().total_at(m.values) - row["text_total"]) <= half
    assert abs(m.text_active_params().total_at(m.values) - row["text_active"]) <= half
    # the full counts do not round to the card's figures: the card quotes the text model
    assert abs(m.params().total_at(m.values) - row["text_total"]) > half
    assert abs(m.active_params().total_at(m.values) - row["text_active"]) > half


def test_params_json_has_text_counts_only_with_towers(capsys):
    assert main(["params", "gemma-4-26b-a4b", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    m = symcost.build("gemma-4-26b-a4b")
    assert out["text_total"] == m.text_params().total_at(m.values) < out["total"]
    assert out["text_active"] == m.text_active_params().total_at(m.values) < out["active"]
    assert main(["params", "qwen3-8b", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "text_total" not in out and "text_active" not in out


def test_params_text_lines(capsys):
    assert main(["params", "gemma-4-26b-a4b"]) == 0
    text = capsys.readouterr().out
    assert "text-only total" in text and "text-only active" in text
    assert main(["params", "qwen3-8b"]) == 0
    assert "text-only" not in capsys.readouterr().out
