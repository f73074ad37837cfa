"""MiniMax-Text-01: lightning attention with periodic softmax layers, Mixtral MoE on every layer.

Blocks of 3 to 8 tokens so that T = 5, 9, 16 cover a partial block, several blocks and an exact
multiple; the layer types are written out or left to the class's alternation (layer 0 full), and
``sliding_window`` (which masks but does not shorten MiniMax's cache) is set in some configs. Every
stack keeps a softmax layer: the cache reports its length from the attention layers.
"""

MODEL_TYPES = ("minimax",)
T_VALUES = (5, 9, 16)
SEEDS = 4


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2])
    L = rng.randint(2, 4)
    raw = {
        "model_type": model_type,
        "hidden_size": H_q * rng.choice([4, 8]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "head_dim": rng.choice([None, 4, 6]),
        "intermediate_size": rng.randint(8, 30),
        "block_size": rng.choice([3, 4, 8]),
        "sliding_window": rng.choice([3, 6]) if rng.random() < 0.5 else None,
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
    }
    E = rng.choice([2, 3, 4])
    raw["num_experts" if rng.random() < 0.5 else "num_local_experts"] = E
    raw["num_experts_per_tok"] = rng.randint(1, E)
    if rng.random() < 0.5:
        types = [rng.choice(["linear_attention", "full_attention"]) for _ in range(L)]
        lin, full = rng.sample(range(L), 2)
        types[lin], types[full] = "linear_attention", "full_attention"
        raw["layer_types"] = types
    return raw
