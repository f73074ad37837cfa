"""Qwen3-Next: Gated DeltaNet / gated full-attention hybrid with shared-expert MoE (and dense layers).

The prefill scan pads T to a multiple of 64; T = 5, 64, 70 cover one padded chunk, an exact
chunk and two chunks. Every tiny stack keeps at least one layer of each mixer, one full-attention layer being needed: transformers
cannot decode a cache that holds only linear-attention layers (``get_seq_length`` raises).
"""

MODEL_TYPES = ("qwen3_next",)
T_VALUES = (5, 64, 70)
SEEDS = 4


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2])
    H_lk = rng.choice([1, 2])
    L = rng.randint(2, 4)
    raw = {
        "model_type": model_type,
        "hidden_size": rng.choice([16, 24, 32]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "head_dim": rng.choice([8, 16]),
        "intermediate_size": rng.randint(20, 60),
        "attention_bias": rng.random() < 0.3,
        "linear_conv_kernel_dim": rng.choice([2, 3, 4]),
        "linear_key_head_dim": rng.choice([4, 8]),
        "linear_value_head_dim": rng.choice([4, 6, 8]),
        "linear_num_key_heads": H_lk,
        "linear_num_value_heads": H_lk * rng.choice([1, 2]),
        "moe_intermediate_size": rng.randint(8, 24),
        "shared_expert_intermediate_size": rng.randint(8, 24),
        "num_experts": rng.choice([4, 6]),
        "num_experts_per_tok": rng.choice([1, 2, 3]),
        "decoder_sparse_step": rng.choice([1, 1, 2]),
        "mlp_only_layers": rng.sample(range(L), rng.randint(0, 1)),
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 256,
    }
    if rng.random() < 0.5:
        raw["full_attention_interval"] = rng.randint(2, L)  # layer 0 linear, layer interval-1 full
    else:
        types = [rng.choice(["linear_attention", "full_attention"]) for _ in range(L)]
        lin, full = rng.sample(range(L), 2)
        types[lin], types[full] = "linear_attention", "full_attention"
        raw["layer_types"] = types
    return raw
