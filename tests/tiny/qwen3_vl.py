"""Qwen3-VL: a Qwen3 text stack, dense (qwen3_vl) or Qwen3-MoE with dense layers from
``mlp_only_layers`` / ``decoder_sparse_step`` (qwen3_vl_moe), behind the Qwen ViT tower with 0..depth
deepstack mergers. The oracle runs the text path; the tower's weights are in the parameter count."""
from tests.tiny.qwen3_5 import wrap

MODEL_TYPES = ("qwen3_vl", "qwen3_vl_moe")
SEEDS = 3


def tiny(rng, model_type):
    H_kv = rng.choice([1, 2])
    L = rng.randint(2, 4)
    raw = {
        "hidden_size": rng.choice([16, 24, 32]),
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L,
        "num_attention_heads": H_kv * rng.choice([1, 2]),
        "num_key_value_heads": H_kv,
        "head_dim": rng.choice([8, 16]),
        "intermediate_size": rng.randint(20, 60),
        "attention_bias": rng.random() < 0.3,
        "max_position_embeddings": 256,
    }
    if model_type == "qwen3_vl_moe":
        E = rng.choice([4, 6])
        raw.update({"num_experts" if rng.random() < 0.5 else "num_local_experts": E,
                    "num_experts_per_tok": rng.randint(1, 3), "moe_intermediate_size": rng.randint(8, 24),
                    "decoder_sparse_step": rng.choice([1, 1, 2]),
                    "mlp_only_layers": rng.sample(range(L), rng.randint(0, 1))})
    return wrap(rng, model_type, raw, model_type + "_text", deepstack=True)
