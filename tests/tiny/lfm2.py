"""LFM2 (Lfm2ForCausalLM) and LFM2-MoE (Lfm2MoeForCausalLM): short-convolution and GQA attention
layers (per-head q/k norms, RoPE) by layer_types, or for LFM2 by full_attn_idxs; the MLP width
rule (block_auto_adjust_ff_dim, multiplier, multiple_of), dense-then-MoE layers, expert bias,
conv bias and tying random. No scan: any T is exact."""

MODEL_TYPES = ("lfm2", "lfm2_moe")
T_VALUES = (1, 4, 7)
SEEDS = 4


def tiny(rng, model_type):
    H_q = rng.choice([2, 4])
    L = rng.randint(2, 4)
    kinds = [rng.choice(["conv", "full_attention"]) for _ in range(L)]
    kinds[rng.randrange(L)] = "full_attention"  # an all-conv Lfm2Moe cache fails in transformers
    if "conv" not in kinds:
        kinds[rng.randrange(L)] = "conv"
    raw = {
        "model_type": model_type,
        "vocab_size": rng.randint(50, 120),
        "hidden_size": rng.choice([16, 24, 32]),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": rng.choice([h for h in (1, 2, 4) if H_q % h == 0]),
        "conv_L_cache": rng.choice([2, 3, 4]),
        "conv_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
    }
    if rng.random() < 0.3:
        raw["head_dim"] = rng.choice([4, 6, 8])
    if model_type == "lfm2":
        raw["intermediate_size"] = rng.choice([24, 40, 64])
        raw["block_auto_adjust_ff_dim"] = rng.random() < 0.7
        raw["block_ffn_dim_multiplier"] = rng.choice([0.75, 1.0, 1.5])
        raw["block_multiple_of"] = rng.choice([1, 8, 16])
        if rng.random() < 0.5:
            raw["layer_types"] = kinds
        else:
            raw["full_attn_idxs"] = [i for i, k in enumerate(kinds) if k == "full_attention"]
    else:
        E = rng.choice([2, 3, 4])
        raw.update({
            "layer_types": kinds,
            "intermediate_size": rng.choice([16, 24, 40]),
            "moe_intermediate_size": rng.choice([8, 12, 16]),
            "num_dense_layers": rng.randint(0, 2),
            "num_experts": E,
            "num_experts_per_tok": rng.randint(1, E),
            "use_expert_bias": rng.random() < 0.6,
            "norm_topk_prob": rng.random() < 0.5,
        })
    return raw
