"""DeepSeek-V4: sliding / CSA / HCA layers, overlapping compressors, indexer, mHC, hash routing.

Small compression ratios and windows so that prompts of 6 and 11 tokens close several windows,
leave a tail, and (with index_topk < entries) exercise the indexer's top-k; T + 1 in decode
closes a window for some ratios and not for others.
"""

MODEL_TYPES = ("deepseek_v4",)
T_VALUES = (6, 11)

KINDS = ("sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention")


def tiny(rng, model_type):
    H = rng.choice([2, 3, 4])
    D = rng.choice([8, 12, 16])
    g = rng.choice([g for g in (1, 2, 4) if (H * D) % g == 0])
    L = rng.randint(3, 5)
    E = rng.randint(4, 8)
    raw = {
        "model_type": model_type,
        "hidden_size": rng.choice([16, 24, 32]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H,
        "head_dim": D,
        "qk_rope_head_dim": 4,
        "q_lora_rank": rng.choice([8, 12, 20]),
        "o_groups": g,
        "o_lora_rank": rng.choice([4, 6, 10]),
        "moe_intermediate_size": rng.randint(6, 20),
        "n_routed_experts": E,
        "num_experts_per_tok": rng.randint(1, min(3, E)),
        "hc_mult": rng.choice([1, 2, 3]),
        "sliding_window": rng.choice([2, 3, 5, 8]),
        "index_n_heads": rng.choice([1, 2, 3]),
        "index_head_dim": rng.choice([4, 8]),
        "index_topk": rng.choice([1, 2, 3, 8]),
        "num_nextn_predict_layers": rng.choice([0, 1]),
        "tie_word_embeddings": rng.random() < 0.3,
        "mlp_bias": rng.random() < 0.3,
        "max_position_embeddings": 64,
        "compress_rates": {"compressed_sparse_attention": rng.choice([2, 3, 4]),
                           "heavily_compressed_attention": rng.choice([3, 5, 7])},
    }
    kinds = [rng.choice(KINDS) for _ in range(L)]
    kinds[rng.randrange(L)] = KINDS[1]  # every tiny stack has a CSA layer (the indexer)
    if rng.random() < 0.5:
        raw["layer_types"] = kinds
    else:  # the legacy per-layer form of the bundled checkpoint, one extra entry for the MTP layer
        raw["compress_ratios"] = [{KINDS[0]: 0, KINDS[1]: 4, KINDS[2]: 128}[k] for k in kinds] + [0]
    if rng.random() < 0.5:
        raw["num_hash_layers"] = rng.randint(0, L)
    else:
        raw["mlp_layer_types"] = [rng.choice(["hash_moe", "moe"]) for _ in range(L)]
    return raw
