"""dbrx (fused Wqkv, bias-free LayerNorms, nested attn/ffn configs) and dots1 (q/k norm,
first_k_dense_replace, shared experts, correction-bias buffer, windows from max_window_layers)."""

MODEL_TYPES = ("dbrx", "dots1")
T_VALUES = (5, 11)


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2, 3])
    L = rng.randint(2, 4)
    d = H_q * rng.choice([4, 8])
    if model_type == "dbrx":
        return {
            "model_type": "dbrx", "d_model": d, "n_heads": H_q, "n_layers": L,
            "vocab_size": rng.randint(50, 120), "max_seq_len": 128,
            "attn_config": {"kv_n_heads": H_kv, "rope_theta": 10000.0,
                            "clip_qkv": 8.0},  # clip_qkv=None fails in DbrxAttention (clamp with no bound)
            "ffn_config": {"ffn_hidden_size": rng.randint(8, 30), "moe_num_experts": rng.choice([3, 4]),
                           "moe_top_k": rng.choice([1, 2])},
        }
    raw = {
        "model_type": model_type,
        "hidden_size": d,
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "intermediate_size": rng.randint(10, 50),
        "moe_intermediate_size": rng.randint(6, 20),
        "n_routed_experts": rng.choice([3, 4]),
        "n_shared_experts": rng.choice([1, 2]),
        "num_experts_per_tok": rng.choice([1, 2]),
        "first_k_dense_replace": rng.choice([0, 1]),
        "attention_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
    }
    if rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 6])
    if rng.random() < 0.6:
        raw["sliding_window"] = rng.choice([3, 4, 7])
        raw["max_window_layers"] = rng.randint(0, L - 1)
    else:
        raw["sliding_window"] = None
    return raw
