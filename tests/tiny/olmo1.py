"""OLMo v1 (OlmoForCausalLM): the Llama layer with weightless LayerNorms; attention biases, tying,
an explicit head_dim and clip_qkv random."""
from tests.tiny import gqa_stack

MODEL_TYPES = ("olmo",)
T_VALUES = (5, 11)


def tiny(rng, model_type):
    raw, _ = gqa_stack(rng, model_type)
    raw.update({
        "attention_bias": rng.random() < 0.5,
        "tie_word_embeddings": rng.random() < 0.5,
        "max_position_embeddings": 128,
        "pad_token_id": 0,
    })
    if rng.random() < 0.5:
        raw["head_dim"] = rng.choice([4, 6])
    if rng.random() < 0.5:
        raw["clip_qkv"] = rng.choice([0.5, 8.0])
    return raw
