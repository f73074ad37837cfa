"""Step-3.7 (step3p7): Step-3.5 text (full / sliding layers with their own query heads, per-head output
gate, q/k norms, dense then MoE with a shared expert and correction bias) behind a tiny ViT; the
per-layer lists in the Hub's padded form (MTP entries appended) or plain, the legacy spellings
(attention_other_setting, moe_layers_enum, moe_num_experts, moe_top_k, num_attention_groups) or the
canonical ones."""

MODEL_TYPES = ("step3p7",)
SEEDS = 4
T_VALUES = (5, 9)  # on both sides of the windows drawn below (W ≤ 6)


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    H = H_kv * rng.choice([1, 2])
    H_swa = H_kv * rng.choice([1, 2, 3])
    L = rng.randint(3, 5)
    n_mtp = rng.choice([0, 1])
    E = rng.randint(2, 5)
    attn = ["full_attention" if i % 2 == 0 else "sliding_attention" for i in range(L)]
    mlp_dense = rng.randint(0, L - 1)
    legacy = rng.random() < 0.5
    text = {
        "hidden_size": rng.choice([16, 24]), "vocab_size": rng.randint(50, 120), "num_hidden_layers": L,
        "num_attention_heads": H, "head_dim": rng.choice([4, 8]), "intermediate_size": rng.randint(8, 30),
        "moe_intermediate_size": rng.randint(4, 12), "share_expert_dim": rng.randint(4, 12),
        "sliding_window": rng.choice([3, 4, 6]), "max_position_embeddings": 64,
        "attention_bias": rng.random() < 0.3, "num_nextn_predict_layers": n_mtp,
        "layer_types": attn + ["full_attention"] * n_mtp,
    }
    k = rng.randint(1, E)
    if legacy:
        text.update(num_attention_groups=H_kv, moe_num_experts=E, moe_top_k=k,
                    attention_other_setting={"num_attention_heads": H_swa, "num_attention_groups": H_kv},
                    moe_layers_enum=",".join(str(i) for i in range(mlp_dense, L + n_mtp)))
    else:
        text.update(num_key_value_heads=H_kv, n_routed_experts=E, num_experts_per_tok=k,
                    num_sliding_attention_heads=H_swa,
                    mlp_layer_types=["dense"] * mlp_dense + ["sparse"] * (L - mlp_dense))
    vision = {"hidden_size": 8 * rng.choice([1, 2]), "num_hidden_layers": rng.randint(1, 2),
              "num_attention_heads": 2, "image_size": rng.choice([28, 42]), "patch_size": 7, "mlp_ratio": 1.5}
    return {"model_type": model_type, "text_config": text, "vision_config": vision,
            "projector_bias": rng.random() < 0.5}
