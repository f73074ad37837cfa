"""OLMo decoders: olmo2 (post-norms, full-width q/k norm), olmo3 (sliding/full pattern),
olmoe (MoE, q norm over d), flex_olmo (OLMo-2 layer with MoE)."""
from tests.tiny import gqa_stack

MODEL_TYPES = ("olmo2", "olmo3", "olmoe", "flex_olmo")
T_VALUES = (5, 11)


def tiny(rng, model_type):
    raw, L = gqa_stack(rng, model_type)
    raw.update({
        "attention_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
        "pad_token_id": 0,
    })
    if model_type in ("olmo2", "olmo3", "flex_olmo") and rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 6])
    if model_type == "olmo3":
        raw["sliding_window"] = rng.choice([3, 4, 7])
        if rng.random() < 0.5:
            raw["layer_types"] = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(L)]
    if model_type in ("olmoe", "flex_olmo"):
        raw["num_experts"] = rng.choice([3, 4])
        raw["num_experts_per_tok"] = rng.choice([1, 2])
        raw["norm_topk_prob"] = rng.random() < 0.5
    return raw
