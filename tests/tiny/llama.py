"""Llama-kind dense decoders: llama, mistral (window), qwen2 (qkv bias), qwen3 (qk norm), phi3."""

MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "phi3")
T_VALUES = (5, 11)


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2, 3])
    H_q = H_kv * rng.choice([1, 2, 3])
    D_h = rng.choice([4, 8, 12])
    raw = {
        "model_type": model_type,
        "hidden_size": H_q * rng.choice([4, 6, 8]),  # transformers wants d % H_q == 0
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": rng.randint(1, 3),
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "head_dim": D_h,
        "intermediate_size": rng.randint(20, 90),
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
    }
    if model_type == "llama":
        raw["attention_bias"] = rng.random() < 0.5
        raw["mlp_bias"] = rng.random() < 0.5
    if model_type == "mistral":
        raw["sliding_window"] = rng.choice([None, 4, 6])
    if model_type == "phi3":
        raw.pop("head_dim")
        raw["hidden_size"] = H_q * D_h
        raw["pad_token_id"] = 0
    if model_type == "qwen3":
        raw["attention_bias"] = rng.random() < 0.5
    return raw
