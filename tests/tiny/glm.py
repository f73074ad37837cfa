"""GLM MoE family: glm4_moe (GQA, partial rotary, q/k norm, attention bias, dense prefix + MoE with
shared experts), glm4_moe_lite (MLA, mlp_layer_types) and glm_moe_dsa (MLA + DSA indexer on the
'full' layers of indexer_types, derived from a pattern or freq/offset when absent)."""

import collections

MODEL_TYPES = ("glm4_moe", "glm4_moe_lite", "glm_moe_dsa")
T_VALUES = (5, 9)
_CALLS = collections.Counter()  # the n-th config of a type switches features on in turn


def _moe(rng, L):
    n_group = rng.choice([1, 2])
    per_group = rng.choice([2, 3])
    topk_group = rng.randint(1, n_group)
    return {
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "intermediate_size": rng.randint(10, 40),
        "moe_intermediate_size": rng.randint(4, 16),
        "n_routed_experts": n_group * per_group,
        "n_shared_experts": rng.choice([0, 1, 2]),
        "num_experts_per_tok": rng.randint(1, topk_group * per_group),
        "n_group": n_group,
        "topk_group": topk_group,
        "tie_word_embeddings": rng.random() < 0.3,
        "attention_bias": rng.random() < 0.5,
        "max_position_embeddings": 64,
    }


def _glm4_moe(rng, n):
    L = rng.randint(2, 3)
    H_kv = rng.choice([1, 2])
    H = H_kv * rng.choice([1, 2, 3])
    raw = {"model_type": "glm4_moe", **_moe(rng, L), "hidden_size": H * rng.choice([4, 8]),
           "num_attention_heads": H, "num_key_value_heads": H_kv,
           "first_k_dense_replace": rng.randint(0, L), "use_qk_norm": n % 2 == 0,
           "num_nextn_predict_layers": rng.choice([0, 1])}
    if n % 3 != 0:
        raw["head_dim"] = rng.choice([4, 6, 8])  # not hidden_size // heads
    factor = rng.choice([0.5, 1.0, 0.75])
    if n % 3 == 1:
        raw["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": factor}
    elif n % 3 == 2:
        raw["partial_rotary_factor"] = factor
    return raw


def _mla(rng):
    H = rng.choice([1, 2, 3])
    return {"hidden_size": H * rng.choice([4, 6, 8]), "num_attention_heads": H, "num_key_value_heads": H,
            "q_lora_rank": rng.randint(4, 12), "kv_lora_rank": rng.randint(4, 12),
            "qk_nope_head_dim": rng.choice([2, 4, 6]), "qk_rope_head_dim": rng.choice([2, 4]),
            "v_head_dim": rng.choice([2, 4, 6])}


def _lite(rng, n):
    L = rng.randint(1, 3)
    raw = {"model_type": "glm4_moe_lite", **_moe(rng, L), **_mla(rng), "num_nextn_predict_layers": rng.choice([0, 1])}
    if n % 3 == 0:
        raw["q_lora_rank"] = None  # a plain q_proj
    if n % 3 == 1:
        raw["mlp_layer_types"] = [rng.choice(["dense", "sparse"]) for _ in range(L)]
    if n % 3 == 2:
        raw["head_dim"] = raw["qk_rope_head_dim"] = 2  # head_dim is an alias of qk_rope_head_dim
        raw["first_k_dense_replace"] = L  # ignored by Glm4MoeLiteConfig
        H = raw["num_attention_heads"]
        raw["num_key_value_heads"] = rng.randint(H // 2 + 1, H)  # any H_kv with H // H_kv = 1 runs
    return raw


def _dsa(rng, n):
    L = rng.randint(3, 4)
    raw = {"model_type": "glm_moe_dsa", **_moe(rng, L), **_mla(rng),
           "first_k_dense_replace": rng.randint(0, L), "num_nextn_predict_layers": rng.choice([0, 1]),
           "index_n_heads": rng.choice([1, 2, 3]), "index_topk": rng.randint(2, 6)}
    raw["index_head_dim"] = raw["qk_rope_head_dim"] + rng.choice([0, 2, 4])
    if n % 4 == 1:
        raw["index_topk_freq"] = 2  # full, full, shared, full, ...
    elif n % 4 == 2:
        raw["indexer_types"] = ["full"] + [rng.choice(["full", "shared"]) for _ in range(L - 1)]
        raw["mlp_layer_types"] = [rng.choice(["dense", "sparse"]) for _ in range(L)]
    elif n % 4 == 3:
        raw["index_topk_pattern"] = "F" + "".join(rng.choice("FS") for _ in range(L - 1))
    return raw


def tiny(rng, model_type):
    n = _CALLS[model_type]
    _CALLS[model_type] += 1
    return {"glm4_moe": _glm4_moe, "glm4_moe_lite": _lite, "glm_moe_dsa": _dsa}[model_type](rng, n)


SEEDS = 4
