"""Gemma 1 (two norms, GeGLU, full attention) / Gemma 2 / Gemma 3: four norms, GeGLU, sliding/full patterns, q/k norm (3), SigLIP tower (gemma3)."""

MODEL_TYPES = ("gemma", "gemma2", "gemma3_text", "gemma3")
SEEDS = 4
T_VALUES = (5, 11)  # on both sides of the windows drawn below


def _text(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2, 3])
    L = rng.randint(2, 4)  # both layer kinds appear under the default patterns
    raw = {
        "model_type": model_type,
        "hidden_size": H_q * rng.choice([4, 6, 8]),  # transformers wants d % H_q == 0
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "head_dim": rng.choice([4, 8, 12]),
        "intermediate_size": rng.randint(20, 90),
        "sliding_window": rng.choice([3, 4, 7]),
        "attention_bias": rng.random() < 0.3,
        "max_position_embeddings": 128,
    }
    if model_type == "gemma":
        del raw["sliding_window"]
        return raw
    if rng.random() < 0.5:
        raw["layer_types"] = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(L)]
    elif model_type != "gemma2":
        raw["sliding_window_pattern"] = rng.choice([2, 3])
    return raw


def tiny(rng, model_type):
    if model_type != "gemma3":
        raw = _text(rng, model_type)
        raw["tie_word_embeddings"] = rng.random() < 0.6
        return raw
    text = _text(rng, "gemma3_text")
    patch = rng.choice([4, 7])
    return {
        "model_type": "gemma3",
        "text_config": text,
        "vision_config": {
            "model_type": "siglip_vision_model",
            "hidden_size": rng.choice([8, 16]),
            "intermediate_size": rng.randint(10, 40),
            "num_hidden_layers": rng.randint(1, 2),
            "num_attention_heads": 2,
            "num_channels": rng.choice([1, 3]),
            "image_size": patch * 4,
            "patch_size": patch,
            "vision_use_head": rng.choice([False, True]),
        },
        "mm_tokens_per_image": 4,
        "boi_token_index": 1, "eoi_token_index": 2, "image_token_index": 3,
        "tie_word_embeddings": rng.random() < 0.6,
    }
