"""OLMo decoders: olmo2 (post-norms, full-width q/k norm), olmo3 (sliding/full pattern),
olmoe (MoE, q norm over d), flex_olmo (OLMo-2 layer with MoE)."""

MODEL_TYPES = ("olmo2", "olmo3", "olmoe", "flex_olmo")
T_VALUES = (5, 11)


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2, 3])
    L = rng.randint(2, 4)
    raw = {
        "model_type": model_type,
        "hidden_size": H_q * rng.choice([4, 8]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "intermediate_size": rng.randint(10, 50),
        "attention_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
        "pad_token_id": 0,
    }
    if model_type in ("olmo2", "olmo3", "flex_olmo") and rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 6])
    if model_type == "olmo3":
        raw["sliding_window"] = rng.choice([3, 4, 7])
        if rng.random() < 0.5:
            raw["layer_types"] = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(L)]
    if model_type in ("olmoe", "flex_olmo"):
        raw["num_experts"] = rng.choice([3, 4])
        raw["num_experts_per_tok"] = rng.choice([1, 2])
        raw["norm_topk_prob"] = rng.random() < 0.5
    return raw
