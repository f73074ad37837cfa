"""Training FLOPs: exact count against a measured backward, and the published presets.

The presets are checked against the published formulas evaluated with the tools' own argument
names (Megatron-LM ``num_floating_point_operations``, MaxText
``calculate_tflops_training_per_device``, torchtitan ``get_num_flop_per_token``), transcribed
below in their own parameterisation, so a wrong mapping from our notation shows up as a mismatch.
"""
import random
from fractions import Fraction

import pytest
import sympy

import symcost
from symcost.training import PRESETS, compare_presets, train_flops
from tests import oracle
from tests.tiny import llama as tiny_llama


@pytest.mark.parametrize("seed", range(3))
def test_train_step_is_three_forwards_measured(seed):
    """FlopCounterMode over forward + loss.backward() equals 3 × forward (full convention)."""
    raw = tiny_llama.tiny(random.Random(f"train-{seed}"), "llama")
    raw["attention_bias"] = raw["mlp_bias"] = False
    m = symcost.build(dict(raw))
    model = oracle.build(raw)
    T, B = 7, 2
    measured = oracle.train_step_flops(model, B, T)
    assert train_flops(m, attention="full").total_at(m.values_with(T=T, B=B)) == measured


def test_recompute_modes():
    m = symcost.build("llama-3.1-8b")
    v = m.values_with(T=4096, B=1)
    none = train_flops(m).total_at(v)
    full = train_flops(m, recompute="full").total_at(v)
    sel = train_flops(m, recompute="selective").total_at(v)
    fwd = none // 3
    layers = m.flops(symcost.Phase(kind="prefill", attention="causal"))["layers"].total_at(v)
    head = int(m.flops(symcost.Phase(kind="prefill", attention="causal"))["lm_head"].xreplace(v))
    # full recomputation reruns the decoder layers, not the embedding, head and loss (Megatron's
    # TransformerBlock, transformers' GradientCheckpointingLayer)
    assert none == 3 * fwd and full == 4 * fwd - (fwd - layers) and fwd - layers == head
    core = sum(x for k, x in m.flops(symcost.Phase(kind="prefill", attention="causal")).at(v).items()
               if k.endswith(("scores", "values")))
    assert sel == none + core


def megatron_reference(a):
    """Megatron-LM num_floating_point_operations, standard path, GQA, in its own names."""
    q = a["kv_channels"] * a["num_attention_heads"]
    kv = a["kv_channels"] * a["num_query_groups"]
    attn = 3 * 2 * (a["hidden_size"] * (q + kv + kv) + Fraction(q * a["seq_length"], 2) * 2 + q * a["hidden_size"])
    f = 3 if a["swiglu"] else 2
    mlp = 3 * 2 * a["hidden_size"] * (a["ffn_hidden_size"] * f * a["num_layers"])
    logits = 3 * 2 * a["hidden_size"] * a["padded_vocab_size"]
    return a["batch_size"] * a["seq_length"] * (mlp + attn * a["num_layers"] + logits)


def maxtext_reference(a):
    """MaxText calculate_tflops_training_per_device (dense, causal halved), × 1 device."""
    B, S, emb = a["batch"], a["seq"], a["emb_dim"]
    ffn = 2 * B * S * a["mlp_dim"] * emb * 3
    qkv = 2 * B * S * emb * (a["num_query_heads"] + 2 * a["num_kv_heads"]) * a["head_dim"]
    attention = Fraction(4 * B * S * S * a["num_query_heads"] * a["head_dim"], 2)
    projection = 2 * B * S * emb * a["num_query_heads"] * a["head_dim"]
    embedding = 2 * B * S * emb * a["vocab_size"]
    learnable = (ffn + qkv + projection) * a["num_layers"] + embedding
    return 3 * learnable + 3 * attention * a["num_layers"]


@pytest.mark.parametrize("name", ["llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b"])
def test_presets_match_published_formulas(name):
    m = symcost.build(name)
    v = {str(k): int(x) for k, x in m.values.items()}
    seq, batch = 4096, 2
    vals = m.values_with(T=seq, B=batch)
    meg = megatron_reference(dict(
        kv_channels=v["D_h"], num_attention_heads=v["H_q"], num_query_groups=v["H_kv"],
        hidden_size=v["d"], seq_length=seq, swiglu=True, ffn_hidden_size=v["d_ff"],
        num_layers=v["L"], padded_vocab_size=v["V"], batch_size=batch))
    assert PRESETS["megatron"](m).xreplace(vals) == sympy.Rational(meg.numerator, meg.denominator)
    mt = maxtext_reference(dict(batch=batch, seq=seq, emb_dim=v["d"], mlp_dim=v["d_ff"],
                                num_query_heads=v["H_q"], num_kv_heads=v["H_kv"], head_dim=v["D_h"],
                                vocab_size=v["V"], num_layers=v["L"]))
    assert PRESETS["maxtext"](m).xreplace(vals) == sympy.Rational(mt.numerator, mt.denominator)
    n_emb = v["V"] * v["d"]
    titan = (6 * (m.params().total_at(m.values) - n_emb) + 12 * v["L"] * v["H_q"] * v["D_h"] * seq) * seq * batch
    assert PRESETS["torchtitan"](m).xreplace(vals) == titan
    assert PRESETS["6ND"](m).xreplace(vals) == 6 * m.params().total_at(m.values) * seq * batch


def test_compare_presets_explains_the_two_x():
    rows = {r["preset"]: r for r in compare_presets(symcost.build("llama-3.1-8b"), 8192, 1)}
    # full rectangle vs causal triangle: the flopcounter count exceeds the exact causal one
    assert rows["flopcounter (full)"]["flops"] > rows["exact (causal)"]["flops"]
    # Megatron halves T², the exact count keeps the diagonal: they differ by 3·2·2·L·H_q·D_h·T/2·B
    diff = rows["exact (causal)"]["flops"] - rows["megatron"]["flops"]
    assert diff == 3 * 2 * 32 * 32 * 128 * 8192


def megatron_standard_mla_reference(a):
    """Megatron-LM standard path with MLA, MoE (first_k dense layers), shared experts and MTP."""
    num_layers = a["num_layers"] + a["mtp_num_layers"]
    num_moe_layers = a["num_moe_layers"] + a["mtp_num_layers"]  # the last layer is MoE
    num_dense_layers = a["num_layers"] - a["num_moe_layers"]
    h, s, H = a["hidden_size"], a["seq_length"], a["num_attention_heads"]
    q_term = a["q_lora_rank"] * (h + H * (a["qk_head_dim"] + a["qk_pos_emb_head_dim"]) + 1)
    attn = 3 * 2 * (q_term + a["kv_lora_rank"] * (h + H * (a["qk_head_dim"] + a["v_head_dim"]) + 1)
                     + h * a["qk_pos_emb_head_dim"] + H * a["v_head_dim"] * h
                     + Fraction(s * (H * (a["qk_head_dim"] + a["qk_pos_emb_head_dim"])), 2)
                     + Fraction(s * H * a["v_head_dim"], 2))
    f = 3
    mlp = 3 * 2 * h * (a["ffn_hidden_size"] * f * num_dense_layers
                       + a["moe_ffn_hidden_size"] * a["topk"] * f * num_moe_layers
                       + a["shared_ffn"] * f * num_moe_layers)
    mtp = 3 * 2 * a["mtp_num_layers"] * (3 * h + 2 * h * h)
    logits = 3 * 2 * h * a["vocab"] * (a["mtp_num_layers"] + 1)
    return a["batch"] * s * (mlp + attn * num_layers + mtp + logits)


def megatron_hybrid_reference(a):
    """Megatron-LM hybrid_flops (Mamba / attention / MLP / MoE layers), in its own names
    (its float divisions kept exact with Fraction)."""
    B, s, h = a["batch"], a["seq"], a["hidden"]
    p = Fraction(a["kv_channels"] * a["heads"], h)
    attn = 4 * B * s * h * p * (h + h * Fraction(a["groups"], a["heads"]) + Fraction(s, 2))
    mlp = 4 * Fraction(a["ffn"], h) * 1 * B * s * h ** 2  # swiglu False: scale 1
    d_in = 2 * h
    mamba = (2 * B * s * h * (2 * d_in + 2 * a["m_groups"] * a["state"] + a["m_heads"])
             + 7 * B * s * d_in * a["state"] + 2 * B * s * d_in * h)
    routed = 4 * B * s * a["latent"] * a["moe_ffn"] * a["topk"] + 4 * B * s * h * a["latent"]
    moe = routed + 4 * B * s * h * a["shared_ffn"]
    logits = 2 * B * s * h * a["vocab"] * (1 + a["mtp"])
    fwd = (a["n_attn"] * attn + a["n_mlp"] * mlp + a["n_mamba"] * mamba + a["n_moe"] * moe + logits)
    return fwd * 3


def test_megatron_preset_mla_moe_mtp_deepseek_v3():
    m = symcost.build("deepseek-v3")
    v = {str(k): int(x) for k, x in m.values.items()}
    seq, batch = 4096, 1
    ref = megatron_standard_mla_reference(dict(
        num_layers=v["L_dense"] + v["L_moe"], num_moe_layers=v["L_moe"], mtp_num_layers=v["L_mtp"],
        hidden_size=v["d"], seq_length=seq, num_attention_heads=v["H_q"], q_lora_rank=v["d_q"],
        kv_lora_rank=v["d_kv"], qk_head_dim=v["D_nope"], qk_pos_emb_head_dim=v["D_rope"],
        v_head_dim=v["D_v"], ffn_hidden_size=v["d_ff"], moe_ffn_hidden_size=v["d_moe"], topk=v["k"],
        shared_ffn=v["d_moe"] * v["E_s"], vocab=v["V"], batch=batch))
    assert PRESETS["megatron"](m).xreplace(m.values_with(T=seq, B=batch)) == sympy.Rational(
        ref.numerator, ref.denominator)


def test_megatron_preset_hybrid_nemotron():
    m = symcost.build("nemotron-3-ultra-550b-a55b")
    v = {str(k): int(x) for k, x in m.values.items()}
    seq, batch = 8192, 2
    ref = megatron_hybrid_reference(dict(
        batch=batch, seq=seq, hidden=v["d"], kv_channels=v["D_h"], heads=v["H_q"], groups=v["H_kv"],
        ffn=v.get("d_ff", 1), m_groups=v["G"], state=v["N"], m_heads=v["H_m"], latent=v["d_lat"],
        moe_ffn=v["d_moe"], topk=v["k"], shared_ffn=v["d_sh"], vocab=v["V"], mtp=v.get("L_mtp", 0),
        n_attn=v["L_A"], n_mlp=v.get("L_F", 0), n_mamba=v["L_M"], n_moe=v["L_E"]))
    got = PRESETS["megatron"](m).xreplace(m.values_with(T=seq, B=batch))
    assert got == sympy.Rational(ref.numerator, ref.denominator)


def test_scan_convention_option(capsys):
    """``train --scan``: the recurrent layers' saved set follows the fused CUDA kernels by default and
    transformers' torch path (what tests/test_activations.py measures) with ``reference``; a model
    without scans gets the same bytes either way."""
    import json

    from symcost.cli import main
    out = {}
    for name in ("nemotron-3-nano-30b-a3b", "llama-3.1-8b"):
        for scan in ("fused", "reference"):
            assert main(["train", name, "--seq", "4096", "--micro-batch", "1", "--scan", scan, "--json"]) == 0
            d = json.loads(capsys.readouterr().out)
            assert d["scan"] == scan
            out[name, scan] = d["breakdown"]["activations"]
    assert out["nemotron-3-nano-30b-a3b", "reference"] > out["nemotron-3-nano-30b-a3b", "fused"]
    assert out["llama-3.1-8b", "reference"] == out["llama-3.1-8b", "fused"]


def test_a_multimodal_wrapper_quotes_its_text_models_measurement():
    """Text-only training runs no tower, so a wrapper's (kimi_k25, qwen3_5, llama4, ...) activations
    are its text model's: the note names that type and its measurement, for every bundled wrapper."""
    import json
    from importlib.resources import files

    from symcost.training.memory import measured_note
    data = json.loads(files("symcost.data").joinpath("activations_measured.json").read_text())
    wrappers = 0
    for name in symcost.architectures.loader.bundled_names():
        m = symcost.build(name)
        if not m.text_model_type or m.model_type in data["exact"]:
            continue
        wrappers += 1
        note = measured_note(m)
        assert f"{m.model_type}'s text model ({m.text_model_type};" in note
        assert ("measured equal" in note) == (m.text_model_type in data["exact"]), note
        assert m.text_model_type != m.model_type
    assert wrappers >= 3
