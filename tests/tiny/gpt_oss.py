"""gpt-oss: biases on q/k/v/o, sinks, sliding/full layers, MoE with router and expert biases."""

MODEL_TYPES = ("gpt_oss",)
T_VALUES = (5, 11)  # on both sides of the windows drawn below


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2, 3])
    L = rng.randint(1, 4)
    E = rng.randint(2, 6)
    raw = {
        "model_type": model_type,
        "hidden_size": rng.randint(8, 40),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "head_dim": rng.choice([4, 8, 12]),
        "intermediate_size": rng.randint(10, 50),
        "num_local_experts": E,
        "num_experts_per_tok": rng.randint(1, E),
        "sliding_window": rng.choice([3, 4, 7]),
        "attention_bias": rng.random() < 0.7,
        "tie_word_embeddings": rng.random() < 0.3,
        "max_position_embeddings": 128,
    }
    if rng.random() < 0.5:
        raw["layer_types"] = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(L)]
    return raw
