"""MiniMax M3: GQA + q/k norm, MSA index branch on sparse layers, dense / MoE + shared expert.

Three model types: the hub ``minimax_m3`` text config, transformers' ``minimax_m3_vl_text`` and the
``minimax_m3_vl`` wrapper (``text_config`` with or without its own model_type, a tiny vision tower
and projector, which a text-only pass never runs). The layout comes in each form transformers reads:
``layer_types`` / ``mlp_layer_types``, the legacy ``sparse_attention_freq`` / ``moe_layer_freq``
lists, or nothing stated (every layer full attention + MoE, transformers' default).
"""

MODEL_TYPES = ("minimax_m3", "minimax_m3_vl_text", "minimax_m3_vl")
T_VALUES = (5, 11)
SEEDS = 4


def text(rng, model_type):
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
        "bos_token_id": 0, "eos_token_id": 1,
    }
    sac = {"sparse_num_index_heads": rng.choice([h for h in (1, 2, 3) if H_q % h == 0]),
           "sparse_index_dim": rng.choice([4, 8]),
           "sparse_block_size": rng.choice([2, 3, 4]),
           "sparse_topk_blocks": rng.choice([1, 2, 3])}
    attn = [rng.random() < 0.7 for _ in range(L)]
    moe = [rng.random() < 0.7 for _ in range(L)]
    attn[-1] = True  # at least one MSA layer
    form = rng.choice(["types", "freq", "types", "freq", "default"])
    if form == "types":
        raw["layer_types"] = ["minimax_m3_sparse" if a else "full_attention" for a in attn]
        raw["mlp_layer_types"] = ["sparse" if m else "dense" for m in moe]
    elif form == "freq":
        sac.update(use_sparse_attention=True, sparse_attention_freq=[int(a) for a in attn])
        raw["moe_layer_freq"] = [int(m) for m in moe]
        raw["first_k_dense_replace"] = next((i for i, m in enumerate(moe) if m), L)
    raw["sparse_attention_config"] = sac
    return raw


def tiny(rng, model_type):
    if model_type != "minimax_m3_vl":
        return text(rng, model_type)
    txt = text(rng, "minimax_m3_vl_text")
    if rng.random() < 0.5:
        del txt["model_type"]
    heads = rng.choice([1, 2])
    vision = {"hidden_size": 8 * heads, "intermediate_size": rng.randint(8, 24),
              "num_hidden_layers": rng.randint(1, 2), "num_attention_heads": heads,
              "patch_size": rng.choice([2, 4]), "temporal_patch_size": rng.choice([1, 2]),
              "spatial_merge_size": rng.choice([1, 2]), "image_size": 16}
    return {"model_type": model_type, "text_config": txt, "vision_config": vision,
            "projector_hidden_size": rng.randint(8, 24), "tie_word_embeddings": rng.random() < 0.3}
