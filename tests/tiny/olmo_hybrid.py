"""OLMo-Hybrid (OlmoHybridForCausalLM): Gated DeltaNet and OLMo-3 full-attention layers, by the
default every-4th pattern or a random ``layer_types`` holding both kinds; GQA, grouped DeltaNet
value heads, explicit or derived head dims, biases, tying and NoPE random.

The prefill scan pads T to a multiple of 64; T = 5, 64, 70 cover one padded chunk, an exact chunk
and two chunks."""

MODEL_TYPES = ("olmo_hybrid",)
T_VALUES = (5, 64, 70)


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2])
    H_lk = rng.choice([1, 2])
    L = rng.randint(2, 4)
    raw = {
        "model_type": model_type,
        "hidden_size": rng.choice([16, 24]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "intermediate_size": rng.randint(20, 60),
        "attention_bias": rng.random() < 0.5,
        "linear_conv_kernel_dim": rng.choice([2, 3, 4]),
        "linear_num_key_heads": H_lk,
        "linear_num_value_heads": H_lk * rng.choice([1, 2]),
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 256,
        "pad_token_id": 0,  # the class default (100277) lies beyond a tiny vocabulary
    }
    if rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 8])
    if rng.random() < 0.5:
        raw["linear_key_head_dim"] = rng.choice([4, 8])
        raw["linear_value_head_dim"] = rng.choice([4, 6, 8])
    if rng.random() < 0.5:
        types = [rng.choice(["linear_attention", "full_attention"]) for _ in range(L)]
        lin, full = rng.sample(range(L), 2)
        types[lin], types[full] = "linear_attention", "full_attention"
        raw["layer_types"] = types
    if rng.random() < 0.3:
        raw["rope_parameters"] = {"rope_type": "default", "rope_theta": None}
    return raw
