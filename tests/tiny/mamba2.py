"""Pure Mamba-2 (Mamba2ForCausalLM): norm + mixer per layer, biases and tying random.

T values straddle the (small) SSD chunk sizes: the scan pads T up to a multiple of C."""

MODEL_TYPES = ("mamba2",)
T_VALUES = (3, 8, 13)


def tiny(rng, model_type):
    H_m = rng.choice([2, 4])
    expand = rng.choice([1, 2])
    D_m = rng.choice([4, 6, 8])
    return {
        "model_type": model_type,
        "vocab_size": rng.randint(50, 120),
        "hidden_size": H_m * D_m // expand,
        "expand": expand,
        "num_heads": H_m,
        "head_dim": D_m,
        "state_size": rng.choice([2, 4, 8]),
        "num_hidden_layers": rng.randint(1, 3),
        "n_groups": rng.choice([g for g in (1, 2) if H_m % g == 0]),
        "conv_kernel": rng.choice([2, 3, 4]),
        "chunk_size": rng.choice([4, 8]),
        "use_bias": rng.random() < 0.5,
        "use_conv_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
    }
