"""Granite 3.x: granite (multipliers, attention/mlp biases), granitemoe (MoE of d_ff),
granitemoeshared (MoE plus a shared MLP, or none when its width is 0)."""

MODEL_TYPES = ("granite", "granitemoe", "granitemoeshared")
T_VALUES = (5, 11)


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2, 3])
    raw = {
        "model_type": model_type,
        "hidden_size": H_q * rng.choice([4, 8]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": rng.randint(1, 3),
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "intermediate_size": rng.randint(10, 50),
        "attention_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
        "embedding_multiplier": 12.0, "residual_multiplier": 0.22,
        "logits_scaling": 8.0, "attention_multiplier": 0.015625,
        "max_position_embeddings": 128,
    }
    if model_type == "granite":
        raw["mlp_bias"] = rng.random() < 0.5
    else:
        raw["num_local_experts"] = rng.choice([3, 4])
        raw["num_experts_per_tok"] = rng.choice([1, 2])
    if model_type == "granitemoeshared":
        raw["shared_intermediate_size"] = rng.choice([0, 12, 20])
    return raw
