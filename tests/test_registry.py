"""Registry consistency: every registered model type is exercised by tiny configs and vice versa."""
from pathlib import Path

from symcost import architectures
from tests.tiny import MODULES

#: model types transformers has no class for (the checkpoint ships its own modeling code): their
#: tiny configs cannot go through the generic suite's AutoConfig, so each has its own oracle suite
REMOTE_CODE = {"nemotron-nas": "test_nemotron_nas.py", "kimi_k3": "test_kimi_k3.py"}


def test_every_model_type_has_tiny_configs_and_back():
    tiny_types = {mt for mod in MODULES for mt in mod.MODEL_TYPES}
    assert tiny_types <= set(architectures.all_model_types())
    untested = set(architectures.all_model_types()) - tiny_types
    # symcost: our own spec format, tested in test_spec.py against the HF adapters.
    assert untested <= {"symcost"} | set(REMOTE_CODE), f"no tiny configs for {sorted(untested)}"


def test_remote_code_types_have_their_own_oracle_suite():
    for mt, test_file in REMOTE_CODE.items():
        assert mt in architectures.all_model_types()
        assert (Path(__file__).parent / test_file).is_file(), (mt, test_file)
