"""Zamba2 (Zamba2ForCausalLM): Mamba-2 and hybrid layers (a shared attention + MLP block with
per-invocation LoRA adapters, then Mamba-2) by ``layers_block_type``; the number of stored blocks,
attention adapters (then H_kv = H_q), GQA otherwise, biases, tying, an explicit head_dim and the
legacy ``mamba`` spelling random.

T values straddle the (small) SSD chunk sizes: the scan pads T up to a multiple of C."""

MODEL_TYPES = ("zamba2",)
T_VALUES = (3, 8, 13)
SEEDS = 6


def tiny(rng, model_type):
    H_m = rng.choice([2, 4])
    expand = rng.choice([1, 2])
    D_m = rng.choice([4, 8])
    d = H_m * D_m // expand
    L = rng.randint(2, 4)
    kinds = [rng.choice(["linear_attention", "hybrid", "hybrid"]) for _ in range(L)]
    kinds[rng.randrange(L)] = "hybrid"
    adapters = rng.random() < 0.5
    H_q = rng.choice([2, 4])
    H_kv = H_q if adapters else rng.choice([1, H_q // 2, H_q])
    raw = {
        "model_type": model_type,
        "vocab_size": rng.randint(50, 120),
        "hidden_size": d,
        "intermediate_size": rng.randint(10, 40),
        "num_hidden_layers": L,
        "layers_block_type": ["mamba" if k == "linear_attention" and rng.random() < 0.5 else k for k in kinds],
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "num_mem_blocks": rng.choice([1, 2]),
        "use_shared_attention_adapter": adapters,
        "adapter_rank": rng.choice([2, 3, 5]),
        "use_mem_rope": rng.random() < 0.5,
        "add_bias_linear": rng.random() < 0.5,
        "n_mamba_heads": H_m,
        "mamba_expand": expand,
        "mamba_ngroups": rng.choice([g for g in (1, 2) if H_m % g == 0]),
        "mamba_d_state": rng.choice([2, 4, 8]),
        "mamba_d_conv": rng.choice([2, 3, 4]),
        "chunk_size": rng.choice([4, 8]),
        "use_conv_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
    }
    head_dim = None if adapters else rng.choice([None, 6, 8])
    if head_dim:
        raw["head_dim"] = head_dim
    return raw
