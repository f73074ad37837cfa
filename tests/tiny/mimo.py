"""MiMo-7B (remote code): Qwen2 (q/k/v biases, untied or tied head, windows with use_sliding_window)
plus 0-2 MTP layers, which the generic suite's oracle (Qwen2ForCausalLM) does not build and the
engine reports as extras (tests/test_mimo.py checks them)."""
from tests.tiny import gqa_stack

MODEL_TYPES = ("mimo",)
SEEDS = 4


def tiny(rng, model_type):
    raw, L = gqa_stack(rng, model_type)
    raw.update(head_dim=rng.choice([4, 8]), num_nextn_predict_layers=rng.choice([0, 1, 2]),
               tie_word_embeddings=rng.random() < 0.3, max_position_embeddings=64, use_mrope=False)
    if rng.random() < 0.4:
        raw.update(use_sliding_window=True, sliding_window=rng.choice([3, 4]), max_window_layers=rng.randint(0, L))
    return raw
