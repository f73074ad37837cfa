"""Qwen MoE decoders: qwen2_moe (shared expert + gate, qkv bias, windows) and qwen3_moe (q/k norm)."""

MODEL_TYPES = ("qwen2_moe", "qwen3_moe")
T_VALUES = (5, 11)
SEEDS = 6


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2, 3])
    L = rng.randint(2, 4)
    raw = {
        "model_type": model_type,
        "hidden_size": H_q * rng.choice([4, 8]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "intermediate_size": rng.randint(20, 60),
        "moe_intermediate_size": rng.randint(8, 24),
        "num_experts": rng.choice([4, 6]),
        "num_experts_per_tok": rng.choice([1, 2, 3]),
        "norm_topk_prob": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
    }
    layout = rng.choice(["all_moe", "mlp_only_layers", "decoder_sparse_step"])
    if layout == "mlp_only_layers":
        raw["mlp_only_layers"] = [rng.randrange(L)]
    elif layout == "decoder_sparse_step":
        raw["decoder_sparse_step"] = 2
    if rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 8, 12])
    if rng.random() < 0.5:
        raw["use_sliding_window"] = True
        raw["sliding_window"] = rng.choice([4, 6])
    if model_type == "qwen2_moe":
        raw["shared_expert_intermediate_size"] = rng.randint(8, 40)
        raw["qkv_bias"] = rng.random() < 0.7
        raw["max_window_layers"] = rng.randint(1, L)
    else:
        raw["attention_bias"] = rng.random() < 0.5
    return raw
