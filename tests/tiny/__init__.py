"""Tiny random configs, one module per model family.

Each module defines ``MODEL_TYPES`` (the registry entries it covers) and ``tiny(rng, model_type)``
returning a raw ``config.json`` dict small enough to run on CPU in milliseconds, with every
structural feature of the family kept. Optional: ``T_VALUES`` (prefill lengths to measure; chunked
scans need multiples of their chunk), ``SEEDS``.
"""
import importlib
import pkgutil
import random

MODULES = [importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)]


def cases():
    """(id, raw config, module) for every family × model_type × seed; the seed is in the id."""
    out = []
    for mod in MODULES:
        for mt in mod.MODEL_TYPES:
            for seed in range(getattr(mod, "SEEDS", 3)):
                rng = random.Random(f"{mt}-{seed}")
                out.append((f"{mt}-{seed}", mod.tiny(rng, mt), mod))
    return out
