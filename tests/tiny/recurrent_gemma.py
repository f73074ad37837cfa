"""RecurrentGemma (RecurrentGemmaForCausalLM): RG-LRU recurrent and local-attention layers by a
random ``block_types`` pattern; lru_width ≠ d, GQA, attention biases, an explicit head_dim, tying
and windows shorter and longer than the prompts random."""

MODEL_TYPES = ("recurrent_gemma",)
T_VALUES = (3, 7, 12)
SEEDS = 4


def tiny(rng, model_type):
    H = rng.choice([2, 4])
    H_kv = rng.choice([k for k in (1, 2, H) if H % k == 0])
    L = rng.randint(2, 4)
    pattern = [rng.choice(["recurrent", "attention"]) for _ in range(rng.randint(1, 3))]
    if "recurrent" not in pattern:
        pattern[0] = "recurrent"
    raw = {
        "model_type": model_type,
        "vocab_size": rng.randint(50, 120),
        "hidden_size": H * rng.choice([4, 8]),
        "intermediate_size": rng.randint(10, 40),
        "num_hidden_layers": L,
        "num_attention_heads": H,
        "num_key_value_heads": H_kv,
        "block_types": pattern,
        "conv1d_width": rng.choice([2, 3, 4]),
        "attention_window_size": rng.choice([3, 5, 16]),
        "attention_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
    }
    if rng.random() < 0.5:
        raw["lru_width"] = H * rng.choice([2, 4, 6])
    if rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 8])  # half of it rotary: must stay even
    return raw
