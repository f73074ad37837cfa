"""MiniMax M3 text decoder: GQA + q/k norm, MSA index branch on sparse layers, dense / MoE + shared expert.

The layout comes in each of the forms transformers reads (``layer_types`` / ``mlp_layer_types``, the
legacy ``sparse_attention_freq`` / ``moe_layer_freq`` lists) or, as in the abridged M3 file, only
``first_k_dense_replace`` + ``use_sparse_attention`` (completed the way the adapter's notes say).
"""

MODEL_TYPES = ("minimax_m3",)
T_VALUES = (5, 11)
SEEDS = 6  # seeds 0-5 cover all three layout forms (abridged, types, freq)


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2, 3])
    L = rng.randint(2, 5)
    raw = {
        "model_type": model_type,
        "hidden_size": rng.choice([12, 16, 24]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "head_dim": rng.choice([4, 8]),
        "intermediate_size": rng.randint(4, 20),
        "dense_intermediate_size": rng.randint(8, 40),
        "shared_intermediate_size": rng.randint(4, 20),
        "num_local_experts": rng.randint(3, 6),
        "num_experts_per_tok": rng.choice([1, 2]),
        "tie_word_embeddings": rng.random() < 0.3,
        "max_position_embeddings": 128,
        "use_qk_norm": True,
    }
    sac = {"use_sparse_attention": True,
           "sparse_num_index_heads": rng.choice([h for h in (1, 2, 3) if H_q % h == 0]),
           "sparse_index_dim": rng.choice([4, 8]),
           "sparse_block_size": rng.choice([2, 3, 4]),
           "sparse_topk_blocks": rng.choice([1, 2, 3])}
    attn = [rng.random() < 0.7 for _ in range(L)]
    attn[-1] = True  # at least one MSA layer
    moe = [rng.random() < 0.7 for _ in range(L)]
    # every MoE layer of one attention kind: the buffer test sums e_score_correction_bias over the
    # whole class per reported group, so only one group may hold MoE layers (dense layers mix freely)
    moe_attn = rng.random() < 0.8
    attn = [moe_attn if m else a for a, m in zip(attn, moe)]
    if not any(attn):
        attn[-1], moe[-1] = True, moe_attn
    form = rng.choice(["types", "freq", "abridged"])
    if form == "types":
        raw["layer_types"] = ["minimax_m3_sparse" if a else "full_attention" for a in attn]
        raw["mlp_layer_types"] = ["sparse" if m else "dense" for m in moe]
    elif form == "freq":
        sac["sparse_attention_freq"] = [int(a) for a in attn]
        raw["moe_layer_freq"] = [int(m) for m in moe]
    else:
        raw["first_k_dense_replace"] = rng.randint(0, L - 1)
    raw["sparse_attention_config"] = sac
    return raw
