"""Training activations: the engine's saved-for-backward bytes equal the measured ones.

``tests/saved.py`` runs one training forward of the real transformers class on a tiny config and
sums the distinct non-parameter storages autograd saves (``saved_tensors_hooks``). The engine's
count (``symcost.training.activations``, the sum of every component's ``saved`` declaration)
must equal it exactly, for eager attention (probabilities materialised) and SDPA (the flash
kernel on CPU), recomputation off, selective (attention core checkpointed) and full (every layer
checkpointed), in fp32 and bf16. Random tiny configs of each family (the oracle's modules) at two
sequence lengths make the polynomial identity argument of DESIGN.md.
"""
import importlib
import json
import random

import pytest

import symcost
from symcost.conventions import Backward
from symcost.notation import sym
from symcost.training.activations import activations, korthikanti

saved = pytest.importorskip("tests.saved")

#: (tiny module, model_type, configs per case)
FAMILIES = [("llama", "llama", 2), ("llama", "mistral", 2), ("llama", "qwen2", 1), ("llama", "qwen3", 2),
            ("mixtral", "mixtral", 2), ("qwen_moe", "qwen2_moe", 2), ("qwen_moe", "qwen3_moe", 2),
            ("deepseek", "deepseek_v3", 3), ("gpt2", "gpt2", 2)]
CASES = [("eager", "none", "fp32"), ("sdpa", "none", "fp32"), ("eager", "selective", "fp32"),
         ("eager", "full", "fp32"), ("sdpa", "full", "fp32"),
         ("eager", "none", "bf16"), ("sdpa", "none", "bf16"), ("eager", "selective", "bf16")]
BYTES = {"fp32": 4, "bf16": 2}
#: (B, T) of each measurement. The chunked scans (Mamba-2 SSD with C ∈ {4, 8}) are measured past one
#: chunk: with a single chunk (T ≤ C) some of einsum's reshapes become views and fewer copies are
#: kept, a regime the engine does not model (it counts the copies, as every T > C run makes them)
SHAPES = ((1, 5), (2, 7))
#: Qwen3-Next / Qwen3.5 measured on linear-attention stacks; T = 70 is two 64-token chunks
LINEAR_ONLY = {"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"}
SCAN_SHAPES = ((1, 9), (2, 13))
SCAN_FAMILIES = {"mamba2", "nemotron_h", "bamba", "granitemoehybrid", "falcon_h1"}


def shapes(model_type):
    if model_type in LINEAR_ONLY:
        return ((1, 5), (2, 70))
    return SCAN_SHAPES if model_type in SCAN_FAMILIES else SHAPES


def tiny(module, model_type, seed):
    raw = importlib.import_module(f"tests.tiny.{module}").tiny(random.Random(f"act-{model_type}-{seed}"),
                                                               model_type)
    raw.pop("num_nextn_predict_layers", None)
    if model_type in LINEAR_ONLY:  # Gated DeltaNet layers only (their gated attention is another mechanism)
        raw.pop("full_attention_interval", None)
        raw["layer_types"] = ["linear_attention"] * raw["num_hidden_layers"]
        # a single value head makes transformers' transposes and reshapes of the core output and z
        # views instead of copies (fewer bytes), a degenerate case the engine does not model
        raw["linear_num_value_heads"] = max(raw["linear_num_value_heads"], 2)
    if model_type == "bamba":  # Mamba-2 layers only (Bamba's partially rotary attention is another mechanism)
        raw["attn_layer_indices"] = []
    if model_type == "gpt2":  # dropout off, as the convention states (GPT-2 defaults to 0.1)
        raw.update(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return raw


def checkpointed_mask(raw, kernel, recompute, B, T, dtype) -> int:
    """Itemised difference: GPT-2's blocks take the attention mask as a positional tensor, so
    full checkpointing saves it with each layer's input (one [B, 1, T, T] tensor shared by all
    layers; SDPA runs with is_causal and no mask); the engine's full-recompute count keeps only
    the hidden-state input."""
    if raw["model_type"] != "gpt2" or recompute != "full" or kernel != "eager":
        return 0
    return B * T * T * BYTES[dtype]


def fp32_stream_inputs(raw, recompute, B, T, dtype) -> int:
    """Itemised difference: Mamba / Mamba-2 keep the residual stream in fp32 (``residual_in_fp32``),
    so under full checkpointing in bf16 every layer after the first is checkpointed with an fp32
    input; the engine's full-recompute count keeps each layer input in the compute dtype."""
    if recompute != "full" or dtype == "fp32" or raw["model_type"] not in ("mamba", "falcon_mamba", "mamba2"):
        return 0
    if not raw.get("residual_in_fp32", True):
        return 0
    return (raw["num_hidden_layers"] - 1) * B * T * raw["hidden_size"] * (4 - BYTES[dtype])


def engine_kernel(m, kernel: str) -> str:
    """The engine convention a measured kernel realises. CPU SDPA runs its flash kernel only when
    q/k and v share a head dim; MLA's (D_nope+D_rope ≠ D_v) falls back to the math backend, which
    saves what eager attention saves."""
    from symcost.components.mla import MLA
    if kernel == "sdpa" and not any(isinstance(c, MLA) for c in m.components()):
        return "flash"
    return "eager"


def engine_bytes(raw, kernel, recompute, dtype, B, T) -> int:
    m = symcost.build(dict(raw))
    bw = Backward(kernel=engine_kernel(m, kernel), recompute=recompute, act_dtype=dtype, scan="reference")
    v = m.values_with(T=T, B=B)
    v.update({sym.b_a: BYTES[dtype], sym.N_tp: 1, sym.N_cp: 1})
    return activations(m, bw).total_at(v)


def sdpa_window_masks(raw, kernel, B, T, dtype) -> int:
    """Itemised difference: SDPA on CPU takes a sliding window as an explicit additive mask
    [B, 1, T, T] in the compute dtype, which it saves for backward in every windowed layer once
    T >= W (transformers drops the mask and uses is_causal below that). FlashAttention takes the
    window as an argument and saves no mask, which is what the engine's ``flash`` counts."""
    if kernel != "sdpa":
        return 0
    m = symcost.build(dict(raw))
    n = 0
    for g in m.groups:
        for c in g.components:
            W = getattr(c, "W", None)
            if W is not None and T >= int(W.xreplace(m.values)):
                n += int(g.count.xreplace(m.values)) * B * T * T * BYTES[dtype]
    return n


#: MLA under CPU SDPA runs the math backend (q/k and v head dims differ), which in bf16 upcasts q,
#: k and v to fp32 — neither FlashAttention's nor eager's saved set, so not a case the engine names.
#: In fp32 it saves exactly what eager does and is tested as such (``engine_kernel``).
#: GPT-2 only in fp32: on CPU torch's LayerNorm returns its mean and rstd in the input dtype for
#: bf16 (CUDA keeps them in fp32, which the engine counts).
MATRIX = [(f, c) for f in FAMILIES for c in CASES
          if not (f[0] == "deepseek" and c[0] == "sdpa" and c[2] == "bf16") and not (f[0] == "gpt2" and c[2] == "bf16")]

#: Recurrent and convolutional mixers (``Backward.scan="reference"``: transformers' torch scans, the
#: path a CPU run takes). Their saved set depends on the dtype, not on the attention kernel or on
#: selective recomputation (which only checkpoints the attention core), so each family runs a few
#: cases that together cover both dtypes, both kernels where the family has attention, and full
#: recomputation; the attention, MoE and FFN mechanisms are covered above. (module, model_type,
#: seeds, cases)
EAGER32, EAGER16, SDPA16, FULL16 = (("eager", "none", "fp32"), ("eager", "none", "bf16"),
                                    ("sdpa", "none", "bf16"), ("sdpa", "full", "bf16"))
HYBRIDS = [("mamba2", "mamba2", 1, (EAGER32, EAGER16, ("eager", "full", "bf16"))),
           ("mamba", "mamba", 1, (EAGER32, EAGER16)),
           ("mamba", "falcon_mamba", 1, (EAGER32, EAGER16)),
           ("nemotron_h", "nemotron_h", range(4, 6), (EAGER32, SDPA16, FULL16)),
           ("qwen3_next", "qwen3_next", 1, (EAGER32, EAGER16)),
           ("qwen3_5", "qwen3_5_text", 1, (EAGER16,)),
           ("qwen3_5", "qwen3_5_moe_text", 1, (EAGER32,)),
           ("bamba", "bamba", 1, (EAGER32, EAGER16)),
           ("granitemoehybrid", "granitemoehybrid", 1, (EAGER32, SDPA16, FULL16)),
           ("lfm2", "lfm2", 1, (EAGER32, SDPA16)),
           ("lfm2", "lfm2_moe", 1, (EAGER32, SDPA16)),
           ("jamba", "jamba", 1, (EAGER32, SDPA16)),
           ("falcon_h1", "falcon_h1", (0, 3), (EAGER32, SDPA16)),  # seed 3: mamba_rms_norm on
           ]
MATRIX += [((m, t, seeds), c) for m, t, seeds, cases in HYBRIDS for c in cases]


@pytest.mark.parametrize("module,model_type,n,kernel,recompute,dtype", [f + c for f, c in MATRIX])
def test_saved_bytes_equal_measured(module, model_type, n, kernel, recompute, dtype):
    for seed in (range(n) if isinstance(n, int) else n):
        raw = tiny(module, model_type, seed)
        model = saved.build(raw, kernel, recompute, dtype)
        for B, T in shapes(model_type):
            measured = saved.saved_bytes(model, B, T)
            mask = sdpa_window_masks(raw, kernel, B, T, dtype) if recompute != "full" else 0
            mask += checkpointed_mask(raw, kernel, recompute, B, T, dtype)
            mask += fp32_stream_inputs(raw, recompute, B, T, dtype)
            assert engine_bytes(raw, kernel, recompute, dtype, B, T) + mask == measured, json.dumps([raw, B, T])
