"""Zamba (ZambaForCausalLM): Mamba-1 (multi-head) and hybrid layers (one shared attention + MLP block
for all, then Mamba-1) by ``layers_block_type`` or the period/offset default; GQA, heads, an
explicit head_dim and dt rank, the Mamba biases, tying and the legacy ``mamba`` spelling random.

Every stack has two hybrid layers or more: transformers 5.24 cannot build a Zamba with exactly one
(its tie pattern for the shared block then matches no target and ``post_init`` raises)."""

MODEL_TYPES = ("zamba",)
T_VALUES = (3, 8)
SEEDS = 5


def tiny(rng, model_type):
    H_m = rng.choice([1, 2])
    expand = rng.choice([1, 2])
    d = rng.choice([8, 16])
    L = rng.randint(3, 5)
    H_q = rng.choice([2, 4])
    raw = {
        "model_type": model_type,
        "vocab_size": rng.randint(50, 120),
        "hidden_size": d,
        "intermediate_size": rng.randint(10, 40),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": rng.choice([k for k in (1, 2, H_q) if H_q % k == 0]),
        "n_mamba_heads": H_m,
        "mamba_expand": expand,
        "mamba_d_state": rng.choice([2, 4]),
        "mamba_d_conv": rng.choice([2, 3, 4]),
        "mamba_conv_bias": rng.random() < 0.5,
        "mamba_proj_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
    }
    if rng.random() < 0.5:
        kinds = [rng.choice(["linear_attention", "hybrid", "mamba"]) for _ in range(L)]
        for i in rng.sample(range(L), 2):
            kinds[i] = "hybrid"
        raw["layers_block_type"] = kinds
    else:  # layers 0, 1 Mamba, 2 hybrid, then hybrid where (i - 3) % period == offset
        raw["attn_layer_period"] = rng.choice([1, 2])
        raw["attn_layer_offset"] = 0
        raw["num_hidden_layers"] = L = max(L, 4)
    if rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 6, 8])
    if rng.random() < 0.5:
        raw["mamba_dt_rank"] = rng.choice([1, 3])
    return raw
