"""Gemma 3n text: AltUp streams, LAuReL, per-layer inputs, KV-shared layers, activation sparsity,
per-layer FFN widths (MatFormer), sliding/full layer types (explicit, so that 3-4 layers hold both kinds and their sharing)."""

MODEL_TYPES = ("gemma3n_text",)
T_VALUES = (5, 9)
SEEDS = 5


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H = H_kv * rng.choice([1, 2])
    L = rng.randint(3, 4)
    n_alt = rng.choice([1, 2, 3, 4])
    while True:
        types = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(L)]
        shared = rng.randint(0, L - 1)
        if set(types[:L - shared]) == set(types):
            break
    d_ff = rng.randint(8, 30)
    raw = {
        "model_type": model_type,
        "hidden_size": H * rng.choice([4, 8]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H,
        "num_key_value_heads": H_kv,
        "head_dim": rng.choice([4, 6, 8]),
        "intermediate_size": rng.choice([d_ff, [d_ff] * L, [rng.choice([d_ff, d_ff + 4]) for _ in range(L)]]),
        "layer_types": types,
        "sliding_window": rng.choice([3, 4, 7]),
        "num_kv_shared_layers": shared,
        "vocab_size_per_layer_input": rng.randint(20, 60),
        "hidden_size_per_layer_input": rng.randint(2, 6),
        "altup_num_inputs": n_alt,
        "altup_active_idx": rng.randint(0, n_alt - 1),
        "altup_correct_scale": rng.random() < 0.7,
        "laurel_rank": rng.randint(2, 6),
        "activation_sparsity_pattern": [rng.choice([0.0, 0.95]) for _ in range(L)],
        "attention_bias": rng.random() < 0.3,
        "tie_word_embeddings": rng.random() < 0.7,
        "max_position_embeddings": 64,
    }
    return raw
