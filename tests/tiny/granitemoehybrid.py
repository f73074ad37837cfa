"""Granite 4.0 (GraniteMoeHybridForCausalLM): Mamba-2 / attention layers by ``layer_types`` (new and
legacy names, or the ``layers_block_type`` alias), MoE + shared MLP; one seed is dense
(``num_local_experts = 0``: the shared MLP alone), one has no shared MLP; RoPE on or off.

T values straddle the (small) SSD chunk sizes: the scan pads T up to a multiple of C."""

MODEL_TYPES = ("granitemoehybrid",)
T_VALUES = (3, 8, 13)
SEEDS = 4

NAMES = ({"M": "linear_attention", "A": "full_attention"}, {"M": "mamba", "A": "attention"})


def tiny(rng, model_type):
    H_m = rng.choice([2, 4])
    expand = rng.choice([1, 2])
    D_m = rng.choice([4, 6, 8])
    L = rng.randint(2, 4)
    H_kv = rng.choice([1, 2])
    pattern = ["M", "A"] + [rng.choice("MA") for _ in range(L - 2)]
    rng.shuffle(pattern)
    E = rng.randint(3, 6)
    variant = rng.choice(["moe", "moe", "dense", "no_shared"])
    raw = {
        "model_type": model_type,
        "vocab_size": rng.randint(50, 120),
        "hidden_size": H_m * D_m // expand,
        "intermediate_size": rng.randint(6, 20),
        "shared_intermediate_size": 0 if variant == "no_shared" else rng.randint(6, 20),
        "num_local_experts": 0 if variant == "dense" else E,
        "num_experts_per_tok": rng.randint(1, 2),
        "num_hidden_layers": L,
        "num_attention_heads": H_kv * rng.choice([1, 2]),
        "num_key_value_heads": H_kv,
        "attention_bias": rng.random() < 0.5,
        "position_embedding_type": rng.choice(["rope", None]),
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
        "embedding_multiplier": 12.0,
        "residual_multiplier": 0.22,
        "attention_multiplier": 0.0078125,
        "logits_scaling": 6.0,
        "max_position_embeddings": 128,
    }
    names = rng.choice(NAMES)
    raw["layer_types" if rng.random() < 0.7 else "layers_block_type"] = [names[c] for c in pattern]
    if rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 6, 8])
    return raw
