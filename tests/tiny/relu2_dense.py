"""arcee (ungated relu² MLP), nemotron (relu², LayerNorm1P, partial rotary), helium (o_proj d→d),
stablelm (LayerNorms, qkv bias, per-head q/k LayerNorm, parallel residual drops a norm)."""

MODEL_TYPES = ("arcee", "nemotron", "helium", "stablelm")
T_VALUES = (5, 11)


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2, 3])
    # stablelm: D_h·partial_rotary_factor must be even — an odd rotary width makes transformers'
    # rotate_half broadcast q/k one column wider (a quirk the engine does not model)
    D_h = rng.choice([8, 16]) if model_type == "stablelm" else rng.choice([4, 8])
    raw = {
        "model_type": model_type,
        "hidden_size": H_q * D_h,
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": rng.randint(1, 3),
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "head_dim": D_h,
        "intermediate_size": rng.randint(10, 50),
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
        "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 1,
    }
    if model_type in ("arcee", "nemotron"):
        raw["attention_bias"] = rng.random() < 0.5
        raw["mlp_bias"] = rng.random() < 0.5
        if rng.random() < 0.5:
            raw["head_dim"] = rng.choice([4, 6])
    elif model_type == "helium":
        raw["attention_bias"] = rng.random() < 0.5
        raw["mlp_bias"] = rng.random() < 0.5
    else:
        raw["use_qkv_bias"] = rng.random() < 0.5
        raw["qk_layernorm"] = rng.random() < 0.5
        raw["use_parallel_residual"] = rng.random() < 0.5
        raw["partial_rotary_factor"] = 0.25
    return raw
