"""GPT-2: learned positions, LayerNorm with bias, fused c_attn with biases, GELU MLP (n_inner or 4·d)."""

MODEL_TYPES = ("gpt2",)
T_VALUES = (5, 11)


def tiny(rng, model_type):
    H = rng.choice([1, 2, 3, 4])
    raw = {
        "model_type": model_type,
        "n_embd": H * rng.choice([4, 6, 8]),
        "n_layer": rng.randint(1, 3),
        "n_head": H,
        "n_positions": rng.randint(16, 40),
        "vocab_size": rng.randint(50, 120),
        "n_inner": rng.choice([None, rng.randint(10, 70)]),
        "tie_word_embeddings": rng.random() < 0.7,
    }
    return raw
