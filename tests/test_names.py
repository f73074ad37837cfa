"""Model names resolve as people type them (issue 16): case, prefixes, Hub ids and cache folders."""
import json
import shutil
from pathlib import Path

import pytest

from symcost.architectures import loader
from symcost.cli import main
from symcost.core.errors import SymcostError

LLAMA = loader.BUNDLED / "llama-3.1-8b.json"


@pytest.mark.parametrize("typed, bundled", [
    ("llama-3.1-8b", "llama-3.1-8b"), ("Llama-3.1-8B", "llama-3.1-8b"),
    ("meta-llama/Meta-Llama-3.1-8B", "llama-3.1-8b"), ("Qwen/Qwen3-8B", "qwen3-8b"),
    ("deepseek-v3.", "deepseek-v3.2"), ("GPT2", "gpt2"),
])
def test_bundled_names(typed, bundled, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty cache: the bundled copy answers
    assert loader.resolve(typed) == (bundled, None)


def test_ambiguous_prefix_lists_candidates():
    with pytest.raises(SymcostError, match="matches several bundled models: llama-2-7b, llama-3.1-70b, llama-3.1-8b"):
        loader.resolve("llama")


def test_misspelling_suggests():
    with pytest.raises(SymcostError, match="did you mean llama-3.1-8b"):
        loader.resolve("lama-3.1-8b")


def _fake_hub(root, repo="acme/Tiny-Llama", ref=True):
    folder = root / ("models--" + repo.replace("/", "--"))
    snap = folder / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    shutil.copy(LLAMA, snap / "config.json")
    if ref:
        (folder / "refs").mkdir()
        (folder / "refs" / "main").write_text("0123abcd")
    return folder, snap


def test_hub_id_from_the_local_cache(monkeypatch, tmp_path):
    _fake_hub(tmp_path / "hub")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    name, path = loader.resolve("acme/Tiny-Llama")
    assert name == "acme/Tiny-Llama" and path.name == "config.json"
    assert loader.build("acme/Tiny-Llama").params().total_at() == 8_030_261_248


@pytest.mark.parametrize("ref", [True, False])
def test_cache_folder_and_snapshot_named_after_the_repository(tmp_path, ref):
    folder, snap = _fake_hub(tmp_path, ref=ref)
    assert loader.resolve(str(folder))[0] == "acme/Tiny-Llama"
    assert loader.resolve(str(snap))[0] == "acme/Tiny-Llama"  # not the hash
    assert loader.resolve(str(snap / "config.json"))[0] == "acme/Tiny-Llama"


def test_directory_without_config(tmp_path, capsys):
    assert main(["params", str(tmp_path)]) == 2
    assert "holds no config.json" in capsys.readouterr().err


def test_spec_file_uses_its_own_name(tmp_path):
    examples = Path(__file__).resolve().parent.parent / "examples"
    spec = json.loads(next(examples.glob("*.json")).read_text())
    spec["name"] = "my-what-if"
    p = tmp_path / "config.json"
    p.write_text(json.dumps(spec))
    assert loader.build(str(p)).name == "my-what-if"
