"""Llama-like dense decoders with one twist each: cohere (parallel block, weight-only LayerNorm,
[H, D_h] q/k norms), cohere2 (sliding/full pattern), smollm3 (NoPE layers, optional window),
seed_oss (separate qkv / o biases)."""
from tests.tiny import gqa_stack

MODEL_TYPES = ("cohere", "cohere2", "smollm3", "seed_oss")
T_VALUES = (5, 11)


def tiny(rng, model_type):
    raw, L = gqa_stack(rng, model_type)
    raw.update({
        "attention_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
        "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 1,
    })
    if model_type in ("cohere", "smollm3", "seed_oss") and rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 6])
    if model_type == "cohere":
        raw["use_qk_norm"] = rng.random() < 0.6
    elif model_type == "cohere2":
        raw["sliding_window"] = rng.choice([3, 4, 7])
        if rng.random() < 0.5:
            raw["layer_types"] = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(L)]
        else:
            raw["sliding_window_pattern"] = rng.choice([2, 4])
    elif model_type == "smollm3":
        raw["mlp_bias"] = rng.random() < 0.5
        raw["no_rope_layer_interval"] = rng.choice([2, 3])
        if rng.random() < 0.6:
            raw["use_sliding_window"] = True
            raw["sliding_window"] = rng.choice([3, 4, 7])
    else:
        raw["attention_out_bias"] = rng.random() < 0.5
        raw["mlp_bias"] = rng.random() < 0.5
    return raw
