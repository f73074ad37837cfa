"""glm_moe_dsa written with the legacy ``layer_types`` spelling (``deepseek_sparse_attention``, as
GLM-5.2-NVFP4's config.json has it): transformers' ``remap_legacy_layer_types`` reads it as
``indexed_attention``, and so does symcost — same counts as without the field, against transformers;
and GLM-5.2's MTP layer against the published tensor index of its checkpoint."""
import json
import random
from pathlib import Path

import pytest

import symcost
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from tests import oracle
from tests.tiny import glm as tiny_glm

PUBLISHED = {r["model"]: r for r in json.loads(
    (Path(__file__).parent / "data" / "remote_checkpoints.json").read_text())["checkpoints"]}


def _tiny(seed: int, kind: str) -> dict:
    raw = tiny_glm._dsa(random.Random(f"glm-dsa-legacy-{seed}"), seed)
    raw["layer_types"] = [kind] * raw["num_hidden_layers"]
    return raw


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["deepseek_sparse_attention", "qwen_sparse_attention"])
def test_legacy_layer_types_equal_transformers(seed, kind):
    raw = _tiny(seed, kind)
    assert oracle.hf_config(raw).layer_types == ["indexed_attention"] * raw["num_hidden_layers"]
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)
    model = oracle.build(raw)
    ph = Phase(kind="prefill", attention="full", logits="all", mla="expand", impl="reference")
    assert m.flops(ph).total_at(m.values_with(T=5, B=2)) == oracle.prefill_flops(model, 2, 5)
    assert m.cache().total_at(m.values_with(T=5, B=2)) == oracle.cache_elements(model, 2, 5)


def test_other_layer_types_are_refused():
    raw = _tiny(0, "deepseek_sparse_attention")
    raw["layer_types"][-1] = "full_attention"
    with pytest.raises(SymcostError, match="layer_types"):
        symcost.build(raw)


def test_glm52_nvfp4_builds_and_equals_transformers():
    _, raw = symcost.architectures.loader.read_json("glm-5.2-nvfp4")
    assert set(raw["layer_types"]) == {"deepseek_sparse_attention"}
    m = symcost.build("glm-5.2-nvfp4")
    assert m.params().total_at(m.values) == oracle.params(raw)


def test_glm52_mtp_layer_equals_its_published_tensor_bytes():
    """Layer 78 (the MTP module) of GLM-5.2 at full precision: 790 BF16 tensors and the fp32
    correction bias [E] — the total_size step of the checkpoint index that added it."""
    row = PUBLISHED["glm-5.2-nvfp4"]
    m = symcost.build("glm-5.2-nvfp4")
    v = m.values
    mtp = sum(n for k, n in m.extras.at(v).items() if k.split("/")[0] == "mtp")
    E = v[symcost.sym.E]
    assert 2 * mtp + 4 * E == row["total_size_after"] - row["total_size_before"]
