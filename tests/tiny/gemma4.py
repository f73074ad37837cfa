"""Gemma 4: sliding/global layers with their own head dim and KV heads (K = V), KV-shared layers,
per-layer inputs, MoE beside the dense FFN, double-wide FFN; the wrapper with vision and audio towers
(vision on n % 4 != 2, audio on n % 4 in (1, 2)).

The n-th config of a model type switches the structural features on in turn, so every combination
below is measured for both ``gemma4_text`` and ``gemma4``:
n % 4 = 0 dense + per-layer inputs | 1 MoE + KV-shared + per-layer inputs | 2 dense + KV-shared +
per-layer inputs, double-wide FFN | 3 MoE without per-layer inputs, K = V, the serialised
``per_layer_config`` form. KV-shared layers always come with per-layer inputs: transformers 5.24 cannot
run a prefill with KV-shared layers and ``hidden_size_per_layer_input=0``
(``Gemma4TextModel._maybe_slice_kv_shared_inputs`` indexes the absent per-layer inputs).
"""

import collections

MODEL_TYPES = ("gemma4_text", "gemma4")
SEEDS = 4
T_VALUES = (5, 11)  # on both sides of the windows drawn below
_CALLS = collections.Counter()


def _text(rng, n, model_type="gemma4_text"):
    H_kv = rng.choice([1, 2])
    H_q = H_kv * rng.choice([1, 2])
    L = rng.randint(3, 5)
    types = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(L)]
    types[0], types[-1] = "sliding_attention", "full_attention"
    moe, shared, ple = n % 4 in (1, 3), n % 4 in (1, 2), n % 4 in (0, 1, 2)
    raw = {
        "model_type": model_type,
        "hidden_size": rng.choice([16, 24, 32]),
        "vocab_size": (V := rng.randint(50, 120)),
        "num_hidden_layers": L,
        "num_attention_heads": H_q,
        "num_key_value_heads": H_kv,
        "head_dim": rng.choice([4, 8]),
        "global_head_dim": rng.choice([8, 12, 16]),
        "intermediate_size": rng.randint(20, 60),
        "sliding_window": rng.choice([3, 4, 7]),
        "attention_bias": rng.random() < 0.3,
        "attention_k_eq_v": n % 4 == 3 or rng.random() < 0.4,
        "num_global_key_value_heads": rng.choice([1, H_q]),
        "hidden_size_per_layer_input": rng.choice([4, 6]) if ple else 0,
        "vocab_size_per_layer_input": V + rng.choice([0, 7]),  # token ids index it too
        "num_kv_shared_layers": 0,
        "enable_moe_block": moe,
        "use_double_wide_mlp": n % 4 == 2,
        "final_logit_softcapping": rng.choice([None, 30.0]),
        "max_position_embeddings": 128,
    }
    if n % 2 == 0:
        raw["layer_types"] = types
    if shared:  # the consumers' types must each have a producer before them
        ks = [k for k in range(1, L) if set(_types(raw)[:L - k]) == set(_types(raw))]
        if not ks:  # the default pattern's only full layer is the last: state two
            raw["layer_types"] = ["full_attention", "sliding_attention"] + ["full_attention"] * (L - 2)
            ks = [k for k in range(1, L) if set(_types(raw)[:L - k]) == set(_types(raw))]
        raw["num_kv_shared_layers"] = rng.choice(ks)
    if moe:
        E = rng.randint(2, 6)
        raw.update(num_experts=E, top_k_experts=rng.randint(1, E), moe_intermediate_size=rng.randint(4, 12))
    if n % 4 == 3:  # the form to_dict/save_pretrained writes: per-layer overrides, no global_* keys
        types = _types(raw)
        hd, kv = raw.pop("global_head_dim"), raw.pop("num_global_key_value_heads")
        raw["per_layer_config"] = {str(i): {"head_dim": hd, "num_key_value_heads": kv}
                                   for i, t in enumerate(types) if t == "full_attention"}
    return raw


def _types(raw):
    """layer_types as Gemma4TextConfig resolves them (default 5 sliding : 1 full, the last full)."""
    L = raw["num_hidden_layers"]
    types = list(raw.get("layer_types") or ["sliding_attention" if (i + 1) % 6 else "full_attention"
                                            for i in range(L)])
    types[-1] = "full_attention"
    return types


def tiny(rng, model_type):
    n = _CALLS[model_type]
    _CALLS[model_type] += 1
    if model_type == "gemma4_text":
        raw = _text(rng, n)
        raw["tie_word_embeddings"] = rng.random() < 0.6
        return raw
    text = _text(rng, n)
    if n % 2:
        text.pop("model_type")  # a nested text_config with or without its own model_type
    raw = {"model_type": "gemma4", "text_config": text, "tie_word_embeddings": rng.random() < 0.6}
    if n % 4 != 2:
        raw["vision_config"] = vision(rng)
    if n % 4 in (1, 2):
        raw["audio_config"] = {
            "model_type": "gemma4_audio",
            "hidden_size": rng.choice([8, 12, 16]),
            "num_hidden_layers": rng.randint(1, 2),
            "num_attention_heads": rng.choice([2, 3]),  # 12 // 3 and 16 // 3: head dims that do not divide
            "subsampling_conv_channels": [rng.choice([8, 10, 12]), rng.choice([3, 4])],
            "conv_kernel_size": rng.choice([3, 5]),
            "use_clipped_linears": rng.random() < 0.5,
            "output_proj_dims": rng.randint(6, 20),
        }
    return raw


def vision(rng):
    """A tiny ``vision_config`` (the soft-token budget rides on ``default_output_length``)."""
    H = rng.choice([1, 2])
    return {
        "model_type": "gemma4_vision",
        "hidden_size": rng.choice([8, 12, 16]),
        "intermediate_size": rng.randint(8, 30),
        "num_hidden_layers": rng.randint(1, 2),
        "num_attention_heads": H,
        "num_key_value_heads": rng.choice([1, H]),
        "head_dim": rng.choice([4, 8]),
        "patch_size": rng.choice([2, 3]),
        "pooling_kernel_size": rng.choice([2, 3]),  # 1 does not run: the unpooled mask keeps no token
        "position_embedding_size": rng.randint(12, 24),
        "use_clipped_linears": rng.random() < 0.5,
        "standardize": rng.random() < 0.5,
        "default_output_length": rng.choice([2, 4, 6]),
    }
