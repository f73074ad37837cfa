"""DeepSeek family: MLA (q_lora null or set), dense-then-MoE stacks with group-limited routing,
the V3.2 lightning indexer, Kimi-K2 (built as deepseek_v3) and Kimi-K2.5 (text_config + MoonViT)."""

import collections

MODEL_TYPES = ("deepseek_v2", "deepseek_v3", "kimi_k2", "deepseek_v32", "kimi_k25")
T_VALUES = (5, 9)
_CALLS = collections.Counter()  # the n-th config of a type switches features on in turn


def _text(rng, model_type):
    n = _CALLS[model_type]
    _CALLS[model_type] += 1
    H = rng.choice([1, 2, 3])
    n_group = rng.choice([1, 2, 3])
    per_group = rng.choice([2, 3])
    topk_group = rng.randint(1, n_group)
    L = rng.randint(1, 3)
    raw = {
        "model_type": model_type,
        "hidden_size": H * rng.choice([4, 6, 8]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H,
        "num_key_value_heads": H,
        "intermediate_size": rng.randint(10, 40),
        "moe_intermediate_size": rng.randint(4, 16),
        "n_routed_experts": n_group * per_group,
        "n_shared_experts": rng.choice([1, 2]),
        "num_experts_per_tok": rng.randint(1, topk_group * per_group),
        "n_group": n_group,
        "topk_group": topk_group,
        "first_k_dense_replace": rng.randint(0, L),
        "q_lora_rank": rng.randint(4, 12),
        "kv_lora_rank": rng.randint(4, 12),
        "qk_nope_head_dim": rng.choice([2, 4, 6]),
        "qk_rope_head_dim": rng.choice([2, 4]),
        "v_head_dim": rng.choice([2, 4, 6]),
        "attention_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.3,
        "num_nextn_predict_layers": rng.choice([0, 1]),
        "max_position_embeddings": 64,
    }
    if model_type == "deepseek_v2":
        if n % 3 == 0:
            raw["q_lora_rank"] = None  # DeepSeek-V2-Lite: a plain q_proj
        raw["topk_method"] = "greedy" if n % 3 == 1 else "group_limited_greedy"
        raw["mlp_bias"] = n % 2 == 0
        raw["num_experts"] = raw.pop("n_routed_experts")
    if model_type == "deepseek_v3":
        if n % 3 == 1:
            raw["q_lora_rank"] = None
    if model_type == "deepseek_v32":
        raw["index_n_heads"] = rng.choice([1, 2, 3])
        raw["index_head_dim"] = raw["qk_rope_head_dim"] + rng.choice([0, 2, 4])
        raw["index_topk"] = rng.randint(2, 6)
        if n % 3 != 0:
            raw["mlp_layer_types"] = [rng.choice(["dense", "sparse"]) for _ in range(L)]
    return raw


def tiny(rng, model_type):
    if model_type != "kimi_k25":
        return _text(rng, model_type)
    heads = rng.choice([1, 2])
    d_vis = heads * rng.choice([4, 8])
    kh, kw = rng.choice([(1, 2), (2, 2)])
    vision = {
        "hidden_size": d_vis, "vt_hidden_size": d_vis,
        "intermediate_size": rng.randint(6, 20), "num_hidden_layers": rng.randint(1, 2),
        "num_attention_heads": heads, "patch_size": rng.choice([2, 3]),
        "pos_emb_height": rng.randint(2, 4), "pos_emb_width": rng.randint(2, 4),
        "merge_kernel_size": [kh, kw],
    }
    vision["init_pos_emb_height"], vision["init_pos_emb_width"] = vision["pos_emb_height"], vision["pos_emb_width"]
    return {"model_type": "kimi_k25", "text_config": _text(rng, "kimi_k2"), "vision_config": vision,
            "projection_hidden_size": d_vis, "tie_word_embeddings": rng.random() < 0.5}
