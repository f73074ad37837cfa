"""ERNIE 4.5: ernie4_5 (use_bias everywhere, head_dim) and ernie4_5_moe (dense/MoE layout by
start/end/interval, shared experts, correction bias held as a parameter, head bias)."""
from tests.tiny import gqa_stack

MODEL_TYPES = ("ernie4_5", "ernie4_5_moe")
T_VALUES = (5, 11)
SEEDS = 4


def tiny(rng, model_type):
    raw, L = gqa_stack(rng, model_type)
    raw.update({
        "use_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
    })
    if model_type == "ernie4_5":
        raw["head_dim"] = rng.choice([4, 6])
        return raw
    raw.update({
        "moe_intermediate_size": rng.randint(6, 20),
        "moe_num_experts": rng.choice([3, 4]),
        "moe_k": rng.choice([1, 2]),
        "moe_num_shared_experts": rng.choice([0, 1, 2]),
        "moe_layer_start_index": rng.choice([0, 1]),
        "moe_layer_end_index": rng.choice([-1, L - 2]),
        "moe_layer_interval": rng.choice([1, 2]),
    })
    return raw
