"""Llama 4: chunked local attention (chunks shorter than the measured T), NoPE layers, dense and MoE
layers interleaved (step or explicit moe_layers), explicit layer_types, and the wrapper's vision tower
(some towers consistent enough to embed an image, some only buildable, as transformers' defaults are)."""

MODEL_TYPES = ("llama4_text", "llama4")
SEEDS = 5
T_VALUES = (5, 11)  # both inside and beyond the chunks drawn below (3 or 4 tokens)


def _text(rng):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2])
    L = rng.randint(2, 4)
    E = rng.randint(2, 4)
    raw = {
        "model_type": "llama4_text",
        "hidden_size": rng.choice([8, 12, 16]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "head_dim": rng.choice([4, 8]),
        "intermediate_size": rng.randint(6, 20),
        "intermediate_size_mlp": rng.randint(10, 40),
        "num_local_experts": E,
        "num_experts_per_tok": rng.randint(1, E),
        "attention_chunk_size": rng.choice([3, 4]),
        "use_qk_norm": rng.random() < 0.6,
        "attn_temperature_tuning": rng.random() < 0.6,
        "attention_bias": rng.random() < 0.3,
        "tie_word_embeddings": rng.random() < 0.3,
        "max_position_embeddings": 64,
    }
    layout = rng.choice(["step", "step", "moe_layers"])
    if layout == "step":
        raw["interleave_moe_layer_step"] = rng.choice([1, 2])
    else:
        raw["moe_layers"] = sorted(rng.sample(range(L), rng.randint(0, L)))
    rope = rng.choice(["interval", "list", "layer_types"])
    if rope == "interval":
        raw["no_rope_layer_interval"] = rng.choice([2, 3])
    else:
        raw["no_rope_layers"] = [rng.choice([0, 1]) for _ in range(L)]
    if rope == "layer_types":  # decoupled from RoPE/NoPE: chunked NoPE and global RoPE layers
        raw["layer_types"] = [rng.choice(["chunked_attention", "full_attention"]) for _ in range(L)]
    return raw


def tiny(rng, model_type):
    text = _text(rng)
    if model_type == "llama4_text":
        return text
    heads = rng.choice([1, 2])
    d_vis = heads * rng.choice([4, 8])
    out = rng.randint(6, 20)
    vision = {
        "hidden_size": d_vis, "num_hidden_layers": rng.randint(1, 2), "num_attention_heads": heads,
        "patch_size": rng.choice([2, 3]), "pixel_shuffle_ratio": 0.5, "num_channels": rng.choice([1, 3]),
        "intermediate_size": 4 * d_vis, "projector_input_dim": out, "projector_output_dim": out,
        "vision_output_dim": out,
    }
    vision["image_size"] = vision["patch_size"] * rng.choice([2, 4])
    if rng.random() < 0.5:  # a tower transformers builds but cannot run on pixels (its defaults are such)
        vision["intermediate_size"] = rng.randint(6, 20)
        vision["vision_output_dim"] = rng.randint(6, 20)
    text.pop("model_type")
    if rng.random() < 0.5:
        text["model_type"] = "llama4_text"
    return {"model_type": "llama4", "text_config": text, "vision_config": vision,
            "tie_word_embeddings": rng.random() < 0.5, "image_token_index": 3, "boi_token_index": 1,
            "eoi_token_index": 2}
