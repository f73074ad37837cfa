"""MiniMax M2: whole-projection q/k RMSNorm, partial RoPE, sigmoid MoE with e_score_correction_bias."""

MODEL_TYPES = ("minimax_m2",)
T_VALUES = (5, 11)


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2, 3])
    D_h = rng.choice([4, 8, 12])
    E = rng.randint(2, 6)
    return {
        "model_type": model_type,
        "hidden_size": rng.randint(8, 40),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": rng.randint(1, 3),
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "head_dim": D_h,
        "rotary_dim": D_h // 2,
        "intermediate_size": rng.randint(10, 50),
        "num_local_experts": E,
        "num_experts_per_tok": rng.randint(1, E),
        "tie_word_embeddings": rng.random() < 0.3,
        "max_position_embeddings": 128,
    }
