"""Bamba (BambaForCausalLM): Mamba-2 and attention layers by ``attn_layer_indices``, a SwiGLU MLP
in every layer; biases, tying, GQA, an explicit or derived ``mamba_d_head`` and ``head_dim`` random.

T values straddle the (small) SSD chunk sizes: the scan pads T up to a multiple of C."""

MODEL_TYPES = ("bamba",)
T_VALUES = (3, 8, 13)


def tiny(rng, model_type):
    H_m = rng.choice([2, 4])
    expand = rng.choice([1, 2])
    D_m = rng.choice([4, 6, 8])
    d = H_m * D_m // expand
    L = rng.randint(2, 4)
    H_kv = rng.choice([1, 2])
    raw = {
        "model_type": model_type,
        "vocab_size": rng.randint(50, 120),
        "hidden_size": d,
        "intermediate_size": rng.randint(10, 40),
        "num_hidden_layers": L,
        "num_attention_heads": H_kv * rng.choice([1, 2]),
        "num_key_value_heads": H_kv,
        "attn_layer_indices": sorted(rng.sample(range(L), rng.randint(1, L - 1))),
        "attention_bias": rng.random() < 0.5,
        "mlp_bias": rng.random() < 0.5,
        "mamba_n_heads": H_m,
        "mamba_d_head": D_m if rng.random() < 0.5 else "auto",
        "mamba_expand": expand,
        "mamba_n_groups": rng.choice([g for g in (1, 2) if H_m % g == 0]),
        "mamba_d_state": rng.choice([2, 4, 8]),
        "mamba_d_conv": rng.choice([2, 3, 4]),
        "mamba_chunk_size": rng.choice([4, 8]),
        "mamba_conv_bias": rng.random() < 0.5,
        "mamba_proj_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
    }
    if rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 6, 8])  # read by BambaAttention via getattr
    return raw
