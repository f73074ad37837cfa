"""LongCat-Flash: double blocks (2 × (MLA + dense SwiGLU)) with a shortcut MoE holding zero experts.

Routing decides how many of a token's top-k slots run a real expert, so the configs keep the
count the engine states (min(k, E) per token) exactly what eager transformers computes: the n-th
config of a draw has no zero experts (k ≤ E, any routing), or zero experts with k = E + E_z (every
expert is picked, so each token runs all E real ones)."""

import collections

MODEL_TYPES = ("longcat_flash",)
T_VALUES = (5, 9)
SEEDS = 4
_CALLS = collections.Counter()


def tiny(rng, model_type):
    n = _CALLS[model_type]
    _CALLS[model_type] += 1
    H = rng.choice([1, 2, 3])
    rope = rng.choice([2, 4])
    E = rng.randint(2, 5)
    raw = {
        "model_type": model_type,
        "hidden_size": H * rng.choice([4, 8]),
        "vocab_size": rng.randint(50, 120),
        "num_layers": rng.randint(1, 2),
        "num_attention_heads": H,
        "ffn_hidden_size": rng.randint(10, 30),
        "expert_ffn_hidden_size": rng.randint(4, 12),
        "n_routed_experts": E,
        "q_lora_rank": rng.randint(4, 12),
        "kv_lora_rank": rng.randint(4, 12),
        "qk_nope_head_dim": rng.choice([2, 4, 6]),
        "qk_rope_head_dim": rope,
        "head_dim": rope,  # the rotary table's width: the interleaved RoPE needs it equal to the rope dims
        "v_head_dim": rng.choice([2, 4, 6]),
        "attention_bias": rng.random() < 0.5,
        "router_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.3,
        "max_position_embeddings": 64,
    }
    if n % 2 == 0:
        raw["zero_expert_num"] = 0
        raw["moe_topk"] = rng.randint(1, E)
    else:
        Z = rng.randint(1, 3)
        raw["zero_expert_num"] = Z
        raw["moe_topk"] = E + Z
    if n % 3 == 2:  # the attribute-map spellings
        raw["num_hidden_layers"] = 2 * raw.pop("num_layers")
        raw["num_local_experts"] = raw.pop("n_routed_experts")
        raw["num_experts_per_tok"] = raw.pop("moe_topk")
        raw["intermediate_size"] = raw.pop("ffn_hidden_size")
        raw["moe_intermediate_size"] = raw.pop("expert_ffn_hidden_size")
    return raw
