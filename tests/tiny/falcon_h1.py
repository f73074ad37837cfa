"""Falcon-H1 (FalconH1ForCausalLM): attention ‖ Mamba-2 in every layer, then a SwiGLU MLP.
Random: ``mamba_d_ssm`` (≠ expand·d, or null), ``mamba_rms_norm``, ``mamba_norm_before_gate``,
``projectors_bias`` apart from ``mamba_proj_bias``, GQA, ``head_dim``, tying, and non-trivial µP
multipliers (which must not change any count).

T values straddle the (small) SSD chunk sizes: the scan pads T up to a multiple of C."""

MODEL_TYPES = ("falcon_h1",)
T_VALUES = (3, 8, 13)
SEEDS = 5


def tiny(rng, model_type):
    H_m = rng.choice([2, 4])
    D_m = rng.choice([4, 6, 8])
    d = rng.choice([8, 12, 16])
    H_kv = rng.choice([1, 2])
    raw = {
        "model_type": model_type,
        "vocab_size": rng.randint(50, 120),
        "hidden_size": d,
        "intermediate_size": rng.randint(10, 40),
        "num_hidden_layers": rng.randint(1, 3),
        "num_attention_heads": H_kv * rng.choice([1, 2]),
        "num_key_value_heads": H_kv,
        "attention_bias": rng.random() < 0.5,
        "mlp_bias": rng.random() < 0.5,
        "mamba_n_heads": H_m,
        "mamba_n_groups": rng.choice([g for g in (1, 2) if H_m % g == 0]),
        "mamba_d_state": rng.choice([2, 4, 8]),
        "mamba_d_conv": rng.choice([2, 3, 4]),
        "mamba_chunk_size": rng.choice([4, 8]),
        "mamba_conv_bias": rng.random() < 0.5,
        "mamba_proj_bias": rng.random() < 0.5,
        "projectors_bias": rng.random() < 0.5,
        "mamba_rms_norm": rng.random() < 0.5,
        "mamba_norm_before_gate": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
        "embedding_multiplier": 5.6,
        "lm_head_multiplier": 0.03,
        "key_multiplier": 0.4,
        "attention_in_multiplier": 1.3,
        "attention_out_multiplier": 0.9,
        "ssm_in_multiplier": 0.7,
        "ssm_out_multiplier": 0.24,
        "mlp_multipliers": [0.6, 0.4],
        "ssm_multipliers": [0.3, 0.2, 0.5, 0.25, 0.35],
        "max_position_embeddings": 128,
    }
    if rng.random() < 0.4:
        raw["mamba_d_ssm"] = H_m * D_m  # independent of hidden_size
    else:
        expand = rng.choice([1, 2])
        raw.update(mamba_d_ssm=None, mamba_expand=expand)
        raw["hidden_size"] = H_m * D_m // expand
    if rng.random() < 0.5:
        raw["mamba_d_head"] = D_m
    if rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 6, 8])
    return raw
