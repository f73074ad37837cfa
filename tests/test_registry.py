"""Registry consistency: every registered model type is exercised by tiny configs and vice versa."""
from symcost import architectures
from tests.tiny import MODULES


def test_every_model_type_has_tiny_configs_and_back():
    tiny_types = {mt for mod in MODULES for mt in mod.MODEL_TYPES}
    assert tiny_types <= set(architectures.all_model_types())
    untested = set(architectures.all_model_types()) - tiny_types
    # symcost: our own spec format, tested in test_spec.py against the HF adapters.
    assert untested <= {"symcost"}, f"no tiny configs for {sorted(untested)}"
