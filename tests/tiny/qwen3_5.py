"""Qwen3.5: the Gated DeltaNet / gated-attention hybrid, dense (qwen3_5_text) or all-MoE
(qwen3_5_moe_text), and the wrappers with the Qwen ViT tower (qwen3_5, qwen3_5_moe).

As for Qwen3-Next, the prefill scan pads T to a multiple of 64: T = 5, 64, 70 cover one padded chunk,
an exact chunk and two chunks, and every stack keeps a layer of each mixer (transformers cannot decode
a cache holding only linear-attention layers). The wrappers run the text path; their tower's weights
are in the parameter count (tests/test_qwen.py measures its per-image FLOPs).
"""

MODEL_TYPES = ("qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")
T_VALUES = (5, 64, 70)
SEEDS = 3


def text(rng, moe: bool) -> dict:
    H_kv = rng.choice([1, 2])
    H_lk = rng.choice([1, 2])
    L = rng.randint(2, 4)
    raw = {
        "hidden_size": rng.choice([16, 24, 32]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_kv * rng.choice([1, 2]),
        "num_key_value_heads": H_kv,
        "head_dim": rng.choice([8, 16]),
        "attention_bias": rng.random() < 0.3,
        "linear_conv_kernel_dim": rng.choice([2, 3, 4]),
        "linear_key_head_dim": rng.choice([4, 8]),
        "linear_value_head_dim": rng.choice([4, 6, 8]),
        "linear_num_key_heads": H_lk,
        "linear_num_value_heads": H_lk * rng.choice([1, 2]),
        "max_position_embeddings": 256,
    }
    if moe:
        E = rng.choice([4, 6])
        raw.update(num_experts=E, num_experts_per_tok=rng.randint(1, 3), moe_intermediate_size=rng.randint(8, 24),
                   shared_expert_intermediate_size=rng.randint(8, 24))
        if rng.random() < 0.5:  # written by Hub files, not read by the class
            raw["mlp_only_layers"] = rng.sample(range(L), 1)
    else:
        raw["intermediate_size"] = rng.randint(20, 60)
    if rng.random() < 0.5:
        raw["full_attention_interval"] = rng.randint(2, L)  # layer 0 linear, layer interval-1 full
    else:
        types = [rng.choice(["linear_attention", "full_attention"]) for _ in range(L)]
        lin, full = rng.sample(range(L), 2)
        types[lin], types[full] = "linear_attention", "full_attention"
        raw["layer_types"] = types
    return raw


def vision(rng, d: int, deepstack: bool) -> dict:
    depth = rng.randint(1, 3)
    v = {
        "depth": depth,
        "hidden_size": rng.choice([8, 16]),
        "num_heads": 2,
        "intermediate_size": rng.randint(6, 30),
        "in_channels": 3,
        "patch_size": rng.choice([2, 4]),
        "temporal_patch_size": rng.choice([1, 2]),
        "spatial_merge_size": 2,
        "num_position_embeddings": rng.choice([16, 20, 36]),
        # a config may state another merger width than the text's: built, counted as d_vout
        "out_hidden_size": d if rng.random() < 0.75 else d + 8,
    }
    if deepstack:
        v["deepstack_visual_indexes"] = sorted(rng.sample(range(depth), rng.randint(0, depth)))
    return v


def wrap(rng, model_type: str, text_cfg: dict, text_type: str, deepstack: bool) -> dict:
    if rng.random() < 0.5:
        text_cfg = {**text_cfg, "model_type": text_type}
    text_cfg["tie_word_embeddings"] = rng.random() < 0.5  # not read: the wrapper's flag ties the head
    return {"model_type": model_type, "text_config": text_cfg,
            "vision_config": vision(rng, text_cfg["hidden_size"], deepstack),
            "tie_word_embeddings": rng.random() < 0.5}


def tiny(rng, model_type):
    moe = "moe" in model_type
    raw = text(rng, moe)
    if model_type.endswith("_text"):
        return {"model_type": model_type, **raw, "tie_word_embeddings": rng.random() < 0.5}
    return wrap(rng, model_type, raw, model_type + "_text", deepstack=False)
