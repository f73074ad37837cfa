"""Configs of the supported families that are not bundled, typed from their published config.json
(tests/data/unseen_configs.json): the engine must agree with transformers on them too — nothing in
symcost may depend on a bundled file. Each is built on the meta device and compared exactly."""
import json
from pathlib import Path

import pytest

import symcost
from tests import oracle

CONFIGS = json.loads((Path(__file__).parent / "data" / "unseen_configs.json").read_text())


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_unseen_config_params_equal_transformers(name):
    raw = CONFIGS[name]
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)
