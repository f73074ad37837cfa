"""Tiny random configs, one module per model family.

Each module defines ``MODEL_TYPES`` (the registry entries it covers) and ``tiny(rng, model_type)``
returning a raw ``config.json`` dict small enough to run on CPU in milliseconds, with every
structural feature of the family kept. Optional: ``T_VALUES`` (prefill lengths to measure; chunked
scans need multiples of their chunk), ``SEEDS``.
"""
import importlib
import pkgutil
import random


def gqa_stack(rng, model_type) -> tuple[dict, int]:
    """The sizes every Llama-like tiny config starts from (drawn in this order: H_kv, H_q, L, then
    the fields below), and L; a family module adds its own fields after these."""
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2, 3])
    L = rng.randint(2, 4)
    return {
        "model_type": model_type,
        "hidden_size": H_q * rng.choice([4, 8]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "intermediate_size": rng.randint(10, 50),
    }, L


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
