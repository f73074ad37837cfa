"""hunyuan_v1_dense / hunyuan_v1_moe (per-head q/k norm, shared MLP, per-layer top-k),
exaone4 (post-norms, sliding patterns; a string one beside layer_types), apertus (xIELU with learned scalars)."""
from tests.tiny import gqa_stack

MODEL_TYPES = ("hunyuan_v1_dense", "hunyuan_v1_moe", "exaone4", "apertus")
T_VALUES = (5, 11)


def tiny(rng, model_type):
    raw, L = gqa_stack(rng, model_type)
    raw.update({
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
        "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 1,
    })
    if model_type.startswith("hunyuan") or rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 6])
    if model_type != "exaone4":
        raw["attention_bias"] = rng.random() < 0.5
    if model_type == "hunyuan_v1_moe":
        raw["num_experts"] = rng.choice([3, 4])
        raw["moe_topk"] = ([1] + [2] * (L - 1)) if rng.random() < 0.5 else rng.choice([1, 2])
    elif model_type == "exaone4":
        raw["sliding_window"] = rng.choice([3, 4, 7])
        raw["sliding_window_pattern"] = rng.choice([2, 3, "LG"])
        if isinstance(raw["sliding_window_pattern"], str) or rng.random() < 0.3:
            raw["layer_types"] = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(L)]
    elif model_type == "apertus":
        raw["hidden_act"] = rng.choice(["xielu", "xielu", "relu2"])
    return raw
