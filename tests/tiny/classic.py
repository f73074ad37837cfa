"""Classic dense decoders: phi (parallel block, LayerNorms, head bias, q/k LayerNorm),
gpt_neox (fused qkv, parallel or serial residual), starcoder2 (biases, LayerNorms, window)."""

MODEL_TYPES = ("phi", "gpt_neox", "starcoder2")
T_VALUES = (5, 11)


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2, 3])
    raw = {
        "model_type": model_type,
        "hidden_size": H_q * rng.choice([4, 8]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": rng.randint(1, 3),
        "num_attention_heads": H_q,
        "intermediate_size": rng.randint(20, 70),
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
    }
    if model_type == "phi":
        raw["num_key_value_heads"] = rng.choice([None, H_kv])
        raw["qk_layernorm"] = rng.random() < 0.5
        raw["partial_rotary_factor"] = 0.5
    elif model_type == "gpt_neox":
        raw["use_parallel_residual"] = rng.random() < 0.5
        raw["attention_bias"] = rng.random() < 0.6
        raw["rotary_pct"] = 0.25
    else:
        raw["num_key_value_heads"] = H_kv
        raw["use_bias"] = rng.random() < 0.6
        raw["sliding_window"] = rng.choice([None, 4, 6])
    return raw
