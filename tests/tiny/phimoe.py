"""Phi-3.5-MoE: Mixtral wiring with LayerNorms, attention biases, optional head bias and window,
sparsemixer top-2 routing."""

MODEL_TYPES = ("phimoe",)
T_VALUES = (5, 11)


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2, 4])
    return {
        "model_type": model_type,
        "hidden_size": H_q * rng.choice([4, 8]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": rng.randint(1, 3),
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "intermediate_size": rng.randint(8, 40),
        "num_local_experts": rng.choice([3, 4]),
        "num_experts_per_tok": rng.choice([1, 2, 3]),  # sparsemixer runs two regardless
        "attention_bias": rng.random() < 0.5,
        "lm_head_bias": rng.random() < 0.5,
        "sliding_window": rng.choice([4, 6]) if rng.random() < 0.5 else None,
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
    }
