"""Mamba-1 (MambaForCausalLM, FalconMambaForCausalLM): norm + selective-scan mixer per layer;
biases, tying, expand, dt rank (an integer or "auto") random. The torch scan is a plain loop over
the tokens (no chunking), so any T is exact."""

MODEL_TYPES = ("mamba", "falcon_mamba")
T_VALUES = (1, 4, 7)


def tiny(rng, model_type):
    d = rng.choice([8, 16, 24, 40])
    return {
        "model_type": model_type,
        "vocab_size": rng.randint(50, 120),
        "hidden_size": d,
        "expand": rng.choice([1, 2]),
        "state_size": rng.choice([2, 4, 8]),
        "num_hidden_layers": rng.randint(1, 3),
        "conv_kernel": rng.choice([2, 3, 4]),
        "time_step_rank": rng.choice(["auto", 1, 3, 5]),
        "use_bias": rng.random() < 0.5,
        "use_conv_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
    }
