"""RWKV-4: token shift, WKV time mix, relu² channel mix, five [B, d, L] state tensors. The time-mix
width equals hidden_size here (transformers' cached forward needs it); tests/test_rwkv_xlstm.py
checks a different attention_hidden_size on the weights and the uncached prefill."""

MODEL_TYPES = ("rwkv",)
T_VALUES = (5, 9)


def tiny(rng, model_type):
    d = rng.choice([8, 12, 16])
    raw = {
        "model_type": model_type,
        "hidden_size": d,
        "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": rng.randint(2, 4),
        "tie_word_embeddings": rng.random() < 0.3,
        "rescale_every": rng.choice([0, 1, 6]),
        "context_length": 64,
    }
    if rng.random() < 0.6:
        raw["intermediate_size"] = rng.randint(10, 40)
    if rng.random() < 0.5:
        raw["attention_hidden_size"] = d
    return raw
