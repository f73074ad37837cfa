"""xLSTM: mLSTM blocks (biases on or off), a chunk size small enough that the
measured prompts mix the chunkwise kernel and the recurrent steps. q/k and v widths are multiples
of 64 (transformers' cache needs it: tests/test_rwkv_xlstm.py covers other widths uncached)."""

MODEL_TYPES = ("xlstm",)
T_VALUES = (5, 9)


def tiny(rng, model_type):
    H = rng.choice([1, 2, 4])
    return {
        "model_type": model_type,
        "hidden_size": 64,
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": rng.randint(1, 3),
        "num_heads": H,
        "qk_dim_factor": 1.0,
        "v_dim_factor": rng.choice([1.0, 2.0]),
        "chunk_size": rng.choice([2, 3, 4]),
        "ffn_proj_factor": rng.choice([0.3, 0.6, 1.3]),
        "ffn_round_up_to_multiple_of": rng.choice([4, 8, 16]),
        "use_bias": rng.random() < 0.5,
        "weight_mode": "single",  # "fused": transformers 5.24 cannot initialise it (test_rwkv_xlstm.py, meta only)
    }
