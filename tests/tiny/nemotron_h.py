"""Nemotron-H hybrids: Mamba-2, attention, ReLU² MLP and MoE (latent or not) layers, in both the
``hybrid_override_pattern`` and the ``layers_block_type`` form (legacy names included).

The SSD scan pads T to the chunk size; the engine models the padding with a ceiling, so the
T values straddle chunk boundaries (T < C, T a multiple of C, T past one)."""

MODEL_TYPES = ("nemotron_h",)
T_VALUES = (3, 8, 13)

CHARS = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
LEGACY = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}


def tiny(rng, model_type):
    pattern = ["M", "*", "-", "E"] + [rng.choice("M*-E") for _ in range(rng.randint(0, 3))]
    rng.shuffle(pattern)
    H_m = rng.choice([2, 4])
    H_kv = rng.choice([1, 2])
    raw = {
        "model_type": model_type,
        "vocab_size": rng.randint(50, 120),
        "hidden_size": rng.choice([8, 12, 16]),
        "num_attention_heads": H_kv * rng.choice([1, 2]),
        "num_key_value_heads": H_kv,
        "head_dim": rng.choice([4, 8]),
        "intermediate_size": rng.randint(10, 40),
        "mlp_bias": rng.random() < 0.5,
        "use_bias": rng.random() < 0.5,
        "use_conv_bias": rng.random() < 0.5,
        "ssm_state_size": rng.choice([2, 4, 8]),
        "mamba_num_heads": H_m,
        "mamba_head_dim": rng.choice([2, 4, 6]),
        "n_groups": rng.choice([g for g in (1, 2) if H_m % g == 0]),
        "conv_kernel": rng.choice([2, 3, 4]),
        "chunk_size": rng.choice([4, 8]),
        "n_routed_experts": rng.randint(4, 8),
        "num_experts_per_tok": rng.randint(1, 3),
        "moe_intermediate_size": rng.randint(6, 20),
        "moe_shared_expert_intermediate_size": rng.randint(6, 20),
        "moe_latent_size": rng.choice([None, 4, 6]),
        "tie_word_embeddings": rng.random() < 0.5,  # ignored by NemotronHForCausalLM
        "num_nextn_predict_layers": rng.choice([0, 1]),  # never built by transformers
        "max_position_embeddings": 128,
    }
    if rng.random() < 0.5:
        raw["hybrid_override_pattern"] = "".join(pattern)
        raw["num_hidden_layers"] = len(pattern)
    else:
        names = LEGACY if rng.random() < 0.5 else CHARS
        raw["layers_block_type"] = [names[c] for c in pattern]
    return raw
