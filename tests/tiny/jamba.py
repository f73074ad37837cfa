"""Jamba (JambaForCausalLM): Mamba-1 with dt/B/C RMSNorms and GQA attention layers by
attn_layer_period/offset, SwiGLU MLP or top-k MoE by expert_layer_period/offset; periods,
offsets, experts (1 = no MoE), dt rank and biases random. The scan is a plain loop (any T)."""

MODEL_TYPES = ("jamba",)
T_VALUES = (1, 4, 7)
SEEDS = 4


def tiny(rng, model_type):
    H_q = rng.choice([2, 4])
    H_kv = rng.choice([h for h in (1, 2, 4) if H_q % h == 0])
    d = rng.choice([16, 24, 32])
    L = rng.randint(3, 4)
    ap, ep = rng.choice([2, 3]), rng.choice([1, 2, 3])
    E = rng.choice([1, 3, 4, 4])
    raw = {
        "model_type": model_type,
        "vocab_size": rng.randint(50, 120),
        "hidden_size": d,
        "intermediate_size": rng.choice([16, 24, 40]),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "num_experts": E,
        "num_experts_per_tok": rng.randint(1, min(E, 2)),
        "attn_layer_period": ap,
        "attn_layer_offset": rng.randrange(ap),
        "expert_layer_period": ep,
        "expert_layer_offset": rng.randrange(ep),
        "mamba_d_state": rng.choice([2, 4, 8]),
        "mamba_d_conv": rng.choice([2, 3, 4]),
        "mamba_expand": rng.choice([1, 2]),
        "mamba_dt_rank": rng.choice(["auto", 2, 3]),
        "mamba_conv_bias": rng.random() < 0.5,
        "mamba_proj_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
    }
    if rng.random() < 0.3:
        raw["head_dim"] = rng.choice([4, 6, 8])
    return raw
