"""Kimi Linear: KDA / MLA (NoPE) hybrid, DeepSeek-V3-style MoE with shared experts and dense layers.

The KDA prefill scan pads T to a multiple of 64; T = 5, 64, 70 cover one padded chunk, an exact
chunk and two chunks. Every tiny stack keeps at least one layer of each mixer (transformers cannot
decode a cache of linear-attention layers only). The layer types come in the three forms the config
class reads: ``layer_types``, the checkpoint's ``linear_attn_config`` lists, or the default pattern
(a full-attention layer at index 4, so five layers there); the MoE names in the checkpoint's
spelling or the class's.
"""

MODEL_TYPES = ("kimi_linear",)
T_VALUES = (5, 64, 70)
SEEDS = 4


def tiny(rng, model_type):
    H = rng.choice([1, 2, 3])
    form = rng.choice(["layer_types", "linear_attn_config", "default"])
    L = 5 if form == "default" else rng.randint(2, 4)
    g = rng.choice([1, 2])
    E = g * rng.choice([2, 3])
    raw = {
        "model_type": model_type,
        "hidden_size": rng.choice([16, 24, 32]),
        "vocab_size": rng.randint(50, 120),
        "pad_token_id": 0,
        "num_hidden_layers": L,
        "num_attention_heads": H,
        "num_key_value_heads": rng.choice([H, None]),
        "q_lora_rank": rng.choice([None, 8, 12]),
        "kv_lora_rank": rng.choice([4, 8]),
        "qk_nope_head_dim": rng.choice([4, 8]),
        "qk_rope_head_dim": rng.choice([2, 4]),
        "v_head_dim": rng.choice([4, 6]),
        "attention_bias": rng.random() < 0.3,
        "intermediate_size": rng.randint(20, 60),
        "moe_intermediate_size": rng.randint(8, 24),
        "tie_word_embeddings": rng.random() < 0.3,
        "max_position_embeddings": 256,
    }
    k = rng.randint(1, E)
    if rng.random() < 0.5:  # the checkpoint's names
        raw.update(num_experts=E, num_experts_per_token=k, num_shared_experts=rng.choice([0, 1, 2]),
                   num_expert_group=g, topk_group=rng.randint(1, g))
    else:  # the attribute-map sources
        raw.update(num_local_experts=E, num_experts_per_tok=k, n_shared_experts=rng.choice([1, 2]),
                   n_group=g, topk_group=rng.randint(1, g))
    H_kda, D_kda, K = rng.choice([1, 2, 3]), rng.choice([4, 6, 8]), rng.choice([2, 3, 4])
    if form == "layer_types":
        types = [rng.choice(["linear_attention", "full_attention"]) for _ in range(L)]
        lin, full = rng.sample(range(L), 2)
        types[lin], types[full] = "linear_attention", "full_attention"
        raw.update(layer_types=types, linear_num_heads=H_kda, linear_head_dim=D_kda, linear_conv_kernel_dim=K)
    elif form == "linear_attn_config":
        full = sorted(rng.sample(range(1, L + 1), rng.randint(1, L - 1)))
        raw["linear_attn_config"] = {"full_attn_layers": full,
                                     "kda_layers": [i for i in range(1, L + 1) if i not in full],
                                     "num_heads": H_kda, "head_dim": D_kda, "short_conv_kernel_size": K}
    else:
        raw.update(linear_num_heads=H_kda, linear_head_dim=D_kda, linear_conv_kernel_dim=K)
    if rng.random() < 0.5:
        raw["mlp_layer_types"] = [rng.choice(["dense", "sparse"]) for _ in range(L)]
    else:
        raw["first_k_dense_replace"] = rng.randint(0, 2)
    return raw
