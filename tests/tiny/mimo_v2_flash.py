"""MiMo-V2-Flash: sliding (2·H_kv KV heads, sinks) / full GQA with D_v ≠ D_h, dense + MoE (no shared expert).

Three layout forms: transformers' ``layer_types`` / ``mlp_layer_types`` drawn at random; the class's
defaults (nothing stated); the hub form (``hybrid_layer_pattern``, ``moe_layer_freq``,
``sliding_window_size``, ``swa_*`` fields, which transformers does not read and which must agree).
"""
from symcost.architectures.mimo_v2_flash import default_layer_types

MODEL_TYPES = ("mimo_v2_flash",)
T_VALUES = (5, 11)  # on both sides of the windows drawn below (W ≤ 7)
SEEDS = 7  # seeds 0-6: three "types", two defaults, two hub forms


def tiny(rng, model_type):
    form = rng.choice(["types", "default", "hub"])
    H_kv = rng.choice([1, 2])
    H_q = 2 * H_kv * rng.choice([1, 2])
    L = rng.randint(2, 7)
    E = rng.randint(2, 6)
    W = rng.choice([3, 4, 7])
    raw = {
        "model_type": model_type,
        "hidden_size": rng.choice([16, 24, 32]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "head_dim": rng.choice([6, 8, 12]),
        "v_head_dim": rng.choice([4, 8]),
        "intermediate_size": rng.randint(8, 40),
        "moe_intermediate_size": rng.randint(4, 20),
        "n_routed_experts": E,
        "num_experts_per_tok": rng.randint(1, E),
        "attention_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.3,
        "max_position_embeddings": 128,
    }
    if form == "types":
        attn = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(L)]
        mlp = [rng.choice(["dense", "sparse"]) for _ in range(L)]
        i, j = rng.sample(range(L), 2)  # both attention kinds and both MLP kinds present
        attn[i], attn[j], mlp[rng.randrange(L)] = "full_attention", "sliding_attention", "sparse"
        raw["layer_types"], raw["mlp_layer_types"] = attn, mlp
        raw["sliding_window"] = W
    elif form == "default":
        raw["sliding_window"] = W
    else:
        raw["hybrid_layer_pattern"] = [int(t == "sliding_attention") for t in default_layer_types(L)]
        raw["moe_layer_freq"] = [0] + [1] * (L - 1)
        raw.update(sliding_window=W - 1, sliding_window_size=W - 1, swa_num_attention_heads=H_q,
                   swa_num_key_value_heads=2 * H_kv, swa_head_dim=raw["head_dim"],
                   swa_v_head_dim=raw["v_head_dim"], add_swa_attention_sink_bias=True,
                   add_full_attention_sink_bias=False, n_shared_experts=None)
    return raw
