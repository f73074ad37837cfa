"""Training activations: the engine's saved-for-backward bytes equal the measured ones.

``tests/saved.py`` runs one training forward of the real transformers class on a tiny config and
sums the distinct non-parameter storages autograd saves (``saved_tensors_hooks``). The engine's
count (``symcost.training.activations``, the sum of every component's ``saved`` declaration)
must equal it exactly, for eager attention (probabilities materialised) and SDPA (the flash
kernel on CPU), recomputation off, selective (attention core checkpointed) and full (every layer
checkpointed), in fp32 and bf16. Random tiny configs of each family (the oracle's modules) at two
sequence lengths make the polynomial identity argument of DESIGN.md.
"""
import functools
import importlib
import json
import random

import pytest
import sympy

import symcost
from symcost.core.conventions import Backward
from symcost.core.notation import sym
from symcost.training.activations import activations

saved = pytest.importorskip("tests.saved")

#: (tiny module, model_type, configs per case): every case of CASES
FAMILIES = [("llama", "llama", 2), ("llama", "mistral", 2), ("llama", "qwen2", 1), ("llama", "qwen3", 2),
            ("mixtral", "mixtral", 2), ("qwen_moe", "qwen2_moe", 2), ("qwen_moe", "qwen3_moe", 2),
            ("deepseek", "deepseek_v3", 3), ("gpt2", "gpt2", 2), ("minimax", "minimax", 3), ("rwkv", "rwkv", 2),
            ("olmo1", "olmo", 2)]
CASES = [("eager", "none", "fp32"), ("sdpa", "none", "fp32"), ("eager", "selective", "fp32"),
         ("eager", "full", "fp32"), ("sdpa", "full", "fp32"),
         ("eager", "none", "bf16"), ("sdpa", "none", "bf16"), ("eager", "selective", "bf16")]
#: more families, one config each over the few cases below (runtime): (module, model_type, cases).
#: Cases left out, and why (each is a known gap, not a pass): DSA families
#: (deepseek_v32, glm_moe_dsa) have no selective case: under the harness's checkpointed attention
#: name transformers builds no mask, which DeepseekV32Attention indexes. The qwen3_vl types build
#: the whole vision-language model (towers included) and feed text only: the towers save nothing.
FEW = [("eager", "none", "fp32"), ("sdpa", "none", "fp32"), ("eager", "full", "fp32"), ("eager", "none", "bf16")]
MORE = [("dense", "smollm3", FEW), ("more_dense", "hunyuan_v1_dense", FEW), ("relu2_dense", "arcee", FEW),
        ("deepseek", "deepseek_v32", FEW), ("deepseek", "kimi_k2", FEW),
        ("glm", "glm4_moe_lite", FEW + [("eager", "selective", "fp32")]), ("glm", "glm_moe_dsa", FEW),
        ("qwen3_vl", "qwen3_vl", FEW), ("qwen3_vl", "qwen3_vl_moe", FEW),
        ("llama", "phi3", FEW + [("eager", "selective", "fp32")]), ("more_dense", "exaone4", [FEW[0], FEW[2], FEW[3]]),
        ("olmo", "olmo2", FEW[:3]), ("olmo", "olmo3", FEW[:3]), ("more_dense", "hunyuan_v1_moe", FEW[:3]),
        ("llama4", "llama4_text", FEW + [("eager", "selective", "fp32")]), ("glm", "glm4_moe", FEW),
        ("minimax_m2", "minimax_m2", FEW), ("gemma", "gemma", FEW), ("gemma", "gemma3_text", FEW),
        ("minimax_m3", "minimax_m3", FEW + [("eager", "selective", "fp32"), ("sdpa", "none", "bf16")]),
        ("minimax_m3", "minimax_m3_vl_text", FEW + [("eager", "selective", "fp32")]),
        # DeepSeek-V4 has no SDPA path in transformers (sinks): eager only
        ("deepseek_v4", "deepseek_v4", [FEW[0], FEW[2], FEW[3], ("eager", "selective", "fp32")])]
#: configs per case of a MORE family (default 1)
MORE_SEEDS = {"minimax_m3": 4, "minimax_m3_vl_text": 3, "deepseek_v4": 4, "gemma4_text": 4, "gemma4": 4, "gemma3n_text": 3}
#: dense variants. Helium: fp32 weight multiply in its RMSNorm, cos/sin re-interleaved per layer;
#: Cohere / Cohere2: parallel attention + MLP on one CohereLayerNorm written out in fp32 (Cohere's
#: use_qk_norm, off at seed 0, in test_variant_switches);
#: StableLM (seed 0: per-head q/k LayerNorms, parallel residual, partial rotary); Nemotron
#: (LayerNorm1P's weight + 1, partial rotary); GPT-NeoX (fused qkv, MHA: v a view of it; partial
#: rotary; seed 0 is serial, test_variant_switches measures the parallel residual);
#: Phi (parallel block, partial rotary); StarCoder2 (fused tanh GELU). Their bf16 cases carry the
#: CPU LayerNorm statistics difference (``cpu_layernorm_stats``). Gemma 2 (attention and final
#: logit soft-capping) eager only: transformers refuses SDPA for Gemma2ForCausalLM.
SEL = [("eager", "selective", "fp32")]
MORE += [("relu2_dense", "helium", FEW + SEL), ("dense", "cohere", FEW + SEL),
         ("dense", "cohere2", FEW + [("sdpa", "none", "bf16")]), ("relu2_dense", "stablelm", FEW + SEL),
         ("relu2_dense", "nemotron", FEW + SEL), ("classic", "gpt_neox", FEW + SEL), ("classic", "phi", FEW + SEL),
         ("classic", "starcoder2", FEW + SEL), ("gemma", "gemma2", [FEW[0], FEW[2], FEW[3]] + SEL)]
#: gpt_oss and mimo_v2_flash have no SDPA case: transformers refuses an SDPA implementation for them.
MORE += [("olmo", "olmoe", FEW), ("olmo", "flex_olmo", FEW), ("granite", "granite", FEW),
         ("granite", "granitemoe", FEW), ("granite", "granitemoeshared", FEW), ("ernie", "ernie4_5", FEW),
         ("ernie", "ernie4_5_moe", FEW), ("moe_more", "dots1", FEW), ("phimoe", "phimoe", FEW),
         ("moe_more", "dbrx", FEW), ("dense", "seed_oss", FEW),
         ("more_dense", "apertus", FEW), ("gpt_oss", "gpt_oss", [FEW[0], FEW[2], FEW[3]]),
         ("mimo_v2_flash", "mimo_v2_flash", [FEW[0], FEW[2], FEW[3]])]
#: Gemma 4 text: Gemma4RMSNorm everywhere (pow keeps the mean square; weight multiplied in fp32),
#: a weightless v_norm, one RoPE table per layer type, per-layer inputs, the MoE beside the FFN,
#: K = V and KV-shared layers. Four configs per case: the n-th config of tests/tiny/gemma4.py switches
#: those features on in turn (n % 4), so every case measures all four combinations.
MORE += [("gemma4", "gemma4_text", FEW + [("eager", "selective", "fp32"), ("eager", "selective", "bf16"),
                                          ("sdpa", "none", "bf16"), ("sdpa", "full", "fp32"),
                                          ("eager", "full", "bf16")])]
#: the Gemma 4 wrapper (Gemma4ForConditionalGeneration with its vision and audio towers, fed text only:
#: the towers save nothing) eager only: transformers refuses SDPA for Gemma4AudioModel
MORE += [("gemma4", "gemma4", [FEW[0], FEW[2], FEW[3], ("eager", "selective", "fp32")])]
#: Gemma 3n text: Gemma 4's norms, attention and per-layer inputs, plus AltUp (n_alt streams: the
#: layer input and full recomputation's checkpoint are n_alt·d wide), LAuReL, KV-shared layers and
#: activation sparsity (gaussian top-k) on some layers (tests/tiny/gemma3n.py draws it per layer)
MORE += [("gemma3n", "gemma3n_text", FEW + [("eager", "selective", "fp32"), ("eager", "selective", "bf16"),
                                            ("sdpa", "none", "bf16"), ("sdpa", "full", "fp32"),
                                            ("eager", "full", "bf16")])]
#: DeepSeek-V2 (complex RoPE, softmax router with fp32 copies, group-limited masked top-k): three
#: configs per case (q_lora_rank null, greedy and group-limited top-k come in turn); the odd
#: d_kv + D_rope its RoPE cannot run in fp32 is avoided in ``tiny``
MORE += [("deepseek", "deepseek_v2", FEW + SEL + [("eager", "selective", "bf16"), ("sdpa", "full", "fp32")])]
MORE_SEEDS.update(deepseek_v2=3)
#: LongCat-Flash (double blocks: 2 × (MLA + SwiGLU) + a shortcut MoE with zero experts; one
#: checkpoint per decoder layer). How many of a token's k slots run a real expert is the router's
#: choice; these configs fix it (tests/tiny/longcat_flash.py: no zero experts, or k = E + E_z so every
#: token takes every expert), so the engine's k_r = min(k, E) is what runs;
#: ``test_longcat_flash_routing_as_taken`` measures free routing with the count the router took.
#: No SDPA bf16 case: MLA's math-backend upcast (see ``MLA`` below)
MORE += [("longcat_flash", "longcat_flash", FEW + SEL + [("eager", "selective", "bf16"), ("sdpa", "full", "bf16")])]
MORE_SEEDS.update(longcat_flash=4)
#: OLMo 2 / OLMo 3 below fp32: Olmo2RMSNorm multiplies its weight into the fp32 x̂ (the normed
#: output is kept in fp32, ``Norms(kind="fp32_normed")``, q/k norms too) and the rotary tables are fp32;
#: OLMo 3 keeps one table per layer type. Three configs each (OLMo 3 seeds 1, 2 mix sliding layers)
MORE += [("olmo", "olmo2", [FEW[3], ("sdpa", "none", "bf16"), ("eager", "selective", "bf16"), ("sdpa", "full", "bf16")]),
         ("olmo", "olmo3", [FEW[3], ("sdpa", "none", "bf16"), ("eager", "selective", "bf16"), ("sdpa", "full", "bf16")])]
MORE_SEEDS.update(olmo2=3, olmo3=3)
#: HunYuan-MoE below fp32: its gate casts the fp32 routing weights back to the compute dtype
MORE += [("more_dense", "hunyuan_v1_moe", [FEW[3], ("sdpa", "none", "bf16"), ("eager", "selective", "bf16")])]
MORE_SEEDS.update(hunyuan_v1_moe=3)
#: EXAONE 4 under SDPA (its sliding layers' explicit masks and repeated K/V: ``sdpa_window_masks``,
#: ``sdpa_masked_gqa``) and in bf16 beyond seed 0, three configs
MORE += [("more_dense", "exaone4", [FEW[1], ("sdpa", "none", "bf16"), ("eager", "selective", "bf16"), ("sdpa", "full", "fp32")])]
MORE_SEEDS.update(exaone4=3)
BYTES = {"fp32": 4, "bf16": 2}
#: (B, T) of each measurement. The chunked scans (Mamba-2 SSD with C ∈ {4, 8}) are measured past one
#: chunk: with a single chunk (T ≤ C) some of einsum's reshapes become views and fewer copies are
#: kept, a regime the engine does not model (it counts the copies, as every T > C run makes them)
SHAPES = ((1, 5), (2, 7))
#: Qwen3-Next / Qwen3.5 measured on linear-attention stacks; T = 70 is two 64-token chunks
LINEAR_ONLY = {"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"}
SCAN_SHAPES = ((1, 9), (2, 13))
SCAN_FAMILIES = {"mamba2", "nemotron_h", "bamba", "granitemoehybrid", "falcon_h1", "zamba2"}


#: hybrids with Gated DeltaNet (or KDA) layers beside attention, measured over one padded chunk and two chunks
TWO_CHUNKS = {"olmo_hybrid", "kimi_linear"}


#: xLSTM's cell runs ⌊T/C⌋ chunks and T mod C recurrent steps, and whether its input slices are
#: views depends on B, H and the remainder: shapes with no remainder, one step and several, B = 1 to 3
XLSTM_SHAPES = ((1, 5), (2, 7), (1, 12), (3, 9))


def shapes(model_type):
    if model_type == "xlstm":
        return XLSTM_SHAPES
    if model_type in LINEAR_ONLY or model_type in TWO_CHUNKS:
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
    if model_type == "deepseek_v2" and (raw["kv_lora_rank"] + raw["qk_rope_head_dim"]) % 2:
        # DeepSeek-V2's complex RoPE (``apply_rotary_emb``) views the shared rotary key k_pe, a column
        # slice of kv_a_proj_with_mqa's output with row stride d_kv + D_rope, as complex pairs; in fp32
        # ``xk.float()`` is that same view and ``view_as_complex`` refuses an odd stride (RuntimeError
        # "Tensor must have a stride divisible by 2", in the forward, on any device; below fp32 the
        # cast is a contiguous copy and it runs). Every published config has d_kv + D_rope even
        # (512 + 64); an even sum leaves the saved set as it is (k_pe stays a view either way)
        raw["kv_lora_rank"] += 1
    if model_type == "longcat_flash":
        # LongcatFlashExperts' ``torch.where(expert_mask[e].squeeze(0))`` squeezes the slot axis away
        # when moe_topk = 1 and fails to unpack ("not enough values to unpack", a transformers bug
        # for k = 1 on any device; LongCat-Flash routes 12 slots): the draw's k = 1 becomes 2
        key = "moe_topk" if "moe_topk" in raw else "num_experts_per_tok"
        raw[key] = max(raw[key], 2)
    if model_type == "seed_oss":  # dropout off, as the convention states (Seed-OSS defaults to 0.1)
        raw.update(attention_dropout=0.0, residual_dropout=0.0)
    return raw


def checkpointed_mask(raw, kernel, recompute, B, T, dtype) -> int:
    """Itemised difference: GPT-2's blocks (and Zamba's, Zamba2's and RecurrentGemma's layers) take the attention mask as a
    positional tensor, so full checkpointing saves it with each layer's input (one [B, 1, T, T]
    tensor shared by all layers; SDPA runs with is_causal and no mask); the engine's
    full-recompute count keeps only the hidden-state input (and Zamba's original embeddings)."""
    if raw["model_type"] == "recurrent_gemma" and recompute == "full" and kernel == "sdpa":
        # SDPA: the windowed layers' boolean [1, 1, T, T] mask once T >= W (below it, no mask)
        m = built(raw)
        return T * T if sym.W in m.values and T >= int(m.values[sym.W]) else 0
    if raw["model_type"] not in ("gpt2", "zamba", "zamba2", "recurrent_gemma") or recompute != "full" or kernel != "eager":
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
    if kernel != "sdpa":
        return "eager"
    for c in m.components():
        if isinstance(c, MLA) and (c.D_nope + c.D_rope - c.D_v).xreplace(m.values) != 0:
            return "eager"
    return "flash"


@functools.lru_cache(maxsize=None)
def _built(key: str):
    return symcost.build(json.loads(key))


def built(raw):
    """The engine's model of a tiny config, built once per config (the tests ask several times)."""
    return _built(json.dumps(raw, sort_keys=True))


@functools.lru_cache(maxsize=None)
def _tree(key: str, kernel: str, recompute: str, dtype: str):
    m = _built(key)
    return activations(m, Backward(kernel=engine_kernel(m, kernel), recompute=recompute, act_dtype=dtype,
                                   scan="reference"))


def engine_bytes(raw, kernel, recompute, dtype, B, T) -> int:
    m = built(raw)
    v = m.values_with(T=T, B=B)
    v.update({sym.b_a: BYTES[dtype], sym.N_tp: 1, sym.N_cp: 1})
    return _tree(json.dumps(raw, sort_keys=True), kernel, recompute, dtype).total_at(v)


def sdpa_window_masks(raw, kernel, B, T, dtype) -> int:
    """Itemised difference: SDPA on CPU takes a sliding window as an explicit additive mask
    [B, 1, T, T] in the compute dtype, which it saves for backward in every windowed layer once
    T >= W (transformers drops the mask and uses is_causal below that). FlashAttention takes the
    window as an argument and saves no mask, which is what the engine's ``flash`` counts. Llama 4's
    chunked local attention is the same: an explicit [B, 1, T, T] mask once T exceeds the chunk."""
    if kernel != "sdpa":
        return 0
    from symcost.components.chunked_attention import ChunkedAttention
    m = built(raw)
    n = 0
    for g in m.groups:
        for c in g.components:
            W = getattr(c, "W", None)
            # Llama 4's chunked layers: the chunk mask, once T passes a chunk (other components' ``C``
            # is a scan's chunk length, not a mask)
            C = c.C if isinstance(c, ChunkedAttention) else None
            if (W is not None and T >= int(W.xreplace(m.values))) or (C is not None and T > int(C.xreplace(m.values))):
                n += int(g.count.xreplace(m.values)) * B * T * T * BYTES[dtype]
    return n


def cpu_layernorm_stats(raw, recompute, B, T, dtype) -> int:
    """Itemised difference (negative): on CPU, ``torch.nn.LayerNorm`` / ``F.layer_norm`` of a
    bf16 input returns its mean and rstd in bf16 (CUDA keeps them in fp32, which the engine
    counts, 4 bytes each), so each LayerNorm row that sees a compute-dtype input keeps 2·2 bytes
    fewer: the layers' LayerNorms (with a bias) and per-head q/k LayerNorms, and the final norm;
    under full recomputation only the final norm's (the layers' are inside the checkpoints).
    LayerNorms of an fp32 upcast (OLMo's weightless ``x.float()``) are not affected."""
    if dtype == "fp32":
        return 0
    from symcost.components.attention import Attention
    from symcost.components.norm import Norms
    m = built(raw)

    def rows(c):
        if isinstance(c, Norms) and ((c.bias and c.kind != "rms_stats") or c.kind == "layer_stats") and not c.weightless:  # DBRX: layer_stats
            return len(c.names)
        if isinstance(c, Attention) and ((c.qk_norm and c.qk_norm_bias) or (c.qk_norm_full and c.saves.qk_norm == "per_head_layernorm")):
            return c.H_q + c.H_kv
        return 0
    n = sum(rows(c) for c in m.post)
    if recompute != "full":
        n += sum(g.count * rows(c) for g in m.groups for c in g.components)
    return -int(sympy.sympify(n).xreplace(m.values)) * 2 * (4 - BYTES[dtype]) * B * T


def sdpa_masked_gqa(raw, kernel, recompute, B, T, dtype) -> int:
    """Itemised difference: with an explicit mask (a sliding window once T >= W, as in
    ``sdpa_window_masks``) transformers does not hand GQA to CPU SDPA (``use_gqa_in_sdpa`` needs
    no mask) but repeats K and V to H_q heads first, so SDPA saves the repeated copies,
    (H_q − H_kv)·(D_h + D_v) more per token in each such layer (with one KV head
    ``repeat_kv``'s expand-and-reshape is a view: no copy). A KV-consumer layer (Gemma 4's
    ``num_kv_shared_layers``) repeats the producer's k and v (when H_q > H_kv): all H_q·(D_h + D_v)
    are its own copy (the flash convention keeps none for it, the producer's tensors being read as they are).
    FlashAttention takes GQA and the window as arguments."""
    if kernel != "sdpa" or recompute == "full":
        return 0
    from symcost.components.attention import Attention
    m = built(raw)
    n = 0
    for g in m.groups:
        for c in g.components:
            c = getattr(c, "inner", c)  # a KV-consumer layer's components are wrapped (LastPosition)
            if isinstance(c, Attention) and c.W is not None and T >= int(c.W.xreplace(m.values)):
                if int(c.H_kv.xreplace(m.values)) == 1:
                    continue
                extra = (c.H_q - c.H_kv) * (c.D_h + c.D_val)
                if getattr(c, "consumer", False) and (c.H_q - c.H_kv).xreplace(m.values) != 0:
                    extra = c.H_q * (c.D_h + c.D_val)
                n += int((g.count * extra).xreplace(m.values)) * B * T * BYTES[dtype]
    return n



#: families whose apply_rotary_pos_emb always splits q at the rotary width and concatenates it back
#: (also with the whole head rotated): their q reaches SDPA head-major
#: (Phi-3 concatenates [q_rot, q_pass] even with the whole head rotated; DBRX's fused Wqkv
#: slices, rotated without a concatenation, keep the token-major layout: no copy)
CAT_ROPE = {"glm4_moe", "minimax_m2", "minimax_m3", "minimax_m3_vl_text", "phi3"}


def sdpa_output_copy(raw, kernel, recompute, B, T, dtype) -> int:
    """Itemised difference: CPU SDPA's flash kernel returns its output in q's memory layout. When q
    reaches it head-major contiguous — built by a concatenation (MLA's [q_nope, q_rope] when the
    flash kernel runs, partial RoPE's [q_rot, q_pass], Phi-3's RoPE) — the output is head-major
    and ``transpose(1, 2).contiguous()`` copies it (H_q·D_v per token per layer, both kept) —
    unless H_q = 1, where the two layouts coincide and the transpose is already contiguous.
    FlashAttention returns [B, T, H, D]-major output, which the engine's ``flash`` counts once."""
    if kernel != "sdpa" or recompute == "full" or engine_kernel(built(raw), kernel) != "flash":
        return 0
    m = built(raw)
    from symcost.components.attention import Attention
    from symcost.components.mla import MLA
    n = 0
    for g in m.groups:
        for c in g.components:
            if isinstance(c, MLA) or (isinstance(c, Attention) and (c.saves.rope.D_rot is not None
                                                                     or raw["model_type"] in CAT_ROPE)):
                if int(c.H_q.xreplace(m.values)) == 1:  # one head: head-major is token-major, no copy
                    continue
                width = c.H_q * (c.D_v if isinstance(c, MLA) else c.D_val)
                n += int((g.count * width).xreplace(m.values)) * B * T * BYTES[dtype]
    return n


def sdpa_msa_masks(raw, kernel, recompute, B, T, dtype) -> int:
    """Itemised difference: MiniMax-M3's MSA layers under SDPA take the indexer's block selection
    as an explicit additive mask [B, H_q, T, T] in the compute dtype (``build_block_mask``), which
    SDPA saves for backward; a block-sparse kernel reads the block indices and saves no mask. With
    a mask transformers does not pass GQA to SDPA (``use_gqa_in_sdpa``) but repeats k and v to H_q
    heads first, a copy SDPA keeps instead of k and v when H_kv > 1 (with H_kv = 1 the repeat is a
    view): (H_q − H_kv)·D_h more per token for each."""
    if kernel != "sdpa" or recompute == "full":
        return 0
    from symcost.components.msa import MSAAttention
    m = built(raw)
    n = 0
    for g in m.groups:
        for c in g.components:
            if isinstance(c, MSAAttention):
                per = B * T * T * c.H_q + (2 * B * T * (c.H_q - c.H_kv) * c.D_h if c.H_kv.xreplace(m.values) > 1 else 0)
                n += int((g.count * per).xreplace(m.values)) * BYTES[dtype]
    return n


#: families whose measured storages include a graph branch the loss never reaches that stays alive
#: (``saved.saved(unreached=...)``): MiniMax-M3's MSA indexer ends in integer block indices (no
#: gradient), yet its graph is not freed — ``amax`` saves the block scores that ``scatter_`` then
#: overwrites in place (the local blocks), an autograd reference cycle; DeepSeek-V4's CSA indexer
#: (integer top-k indices) likewise, its overlapped windows built by in-place slice assignments. Not
#: needed by the backward (it never unpacks them), so not the engine's count; the test subtracts
#: exactly those storages. Kimi Linear's KDA (``chunk_kimi_delta_attention``): the last chunk's
#: state update is computed and dropped (no final state is asked for), yet two of its exp() results,
#: e^(g_last) [B, H, D] and e^(g_last − g) [B, H, C, D], stay alive.
UNREACHED = {"minimax_m3", "minimax_m3_vl_text", "deepseek_v4", "kimi_linear"}


def measure(model, model_type, B, T) -> int:
    """Measured saved bytes, less (for ``UNREACHED`` families) what the loss's backward never unpacks."""
    if model_type not in UNREACHED:
        return saved.saved_bytes(model, B, T)
    unreached: list = []
    got = saved.saved(model, B, T, unreached)
    return sum(n for n, _, _ in got) - sum(n for n, _, _ in unreached)


#: MLA under CPU SDPA runs the math backend (q/k and v head dims differ), which in bf16 upcasts q,
#: k and v to fp32 — neither FlashAttention's nor eager's saved set, so not a case the engine names.
#: In fp32 it saves exactly what eager does and is tested as such (``engine_kernel``).
#: GPT-2 and RWKV only in fp32: on CPU torch's LayerNorm returns its mean and rstd in the input dtype
#: for bf16 (CUDA keeps them in fp32, which the engine counts; tests/test_rwkv_xlstm.py pins RWKV's).
#: RWKV has no attention: transformers refuses an SDPA implementation for it (eager is its only kernel).
MLA = {"deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe_lite", "glm_moe_dsa"}
MATRIX = [(f, c) for f in FAMILIES for c in CASES
          if not (f[1] in MLA and c[0] == "sdpa" and c[2] == "bf16") and not (f[0] in ("gpt2", "rwkv") and c[2] == "bf16")
          and not (f[0] == "rwkv" and c[0] == "sdpa")]
MATRIX += [((m, t, MORE_SEEDS.get(t, 1)), c) for m, t, cases in MORE for c in cases]

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
           # OLMo-Hybrid: OlmoHybridRMSNorm keeps its weighted output in fp32 (as OLMo 2's does)
           ("olmo_hybrid", "olmo_hybrid", (1, 3), (EAGER32, ("sdpa", "none", "fp32"), ("eager", "full", "fp32"),
                                                   ("eager", "selective", "fp32"), EAGER16, SDPA16, FULL16)),
           ("zamba2", "zamba2", (0, 3), (EAGER32, SDPA16, ("eager", "selective", "fp32"), FULL16,
                                         ("eager", "full", "bf16"))),
           # RecurrentGemma: seed 1 (GQA, window 3) under SDPA once T >= W repeats K/V to H_q heads
           # (``sdpa_masked_gqa``)
           ("recurrent_gemma", "recurrent_gemma", (0, 1, 3), (EAGER32, EAGER16, ("eager", "selective", "fp32"),
                                                             ("eager", "full", "fp32"), FULL16, SDPA16)),
           # xLSTM (mLSTM cells, transformers' native chunkwise + recurrent kernels) in fp32 only: below
           # fp32 the native chunkwise kernel fails in transformers (its fp32 initial states meet bf16
           # keys in one matmul: "expected m1 and m2 to have the same dtype"); no attention, so no
           # SDPA case (transformers refuses one) and selective recomputation changes nothing
           ("xlstm", "xlstm", 4, (EAGER32, ("eager", "full", "fp32"), ("eager", "selective", "fp32"))),
           # Kimi Linear: KDA (transformers' torch chunk_kimi_delta_attention, no fla) beside MLA (NoPE)
           # layers and the DeepSeek-V3-style MoE; no SDPA bf16 case (MLA's math-backend upcast, ``MLA``)
           ("kimi_linear", "kimi_linear", 3, (EAGER32, ("sdpa", "none", "fp32"), ("eager", "full", "fp32"), EAGER16,
                                              ("eager", "selective", "fp32"))),
           ("zamba", "zamba", (0, 1, 3), (EAGER32, EAGER16, SDPA16, ("eager", "selective", "fp32"),
                                       ("eager", "full", "fp32"), FULL16)),
           ]
MATRIX += [((m, t, seeds), c) for m, t, seeds, cases in HYBRIDS for c in cases]


@pytest.mark.parametrize("module,model_type,n,kernel,recompute,dtype", [f + c for f, c in MATRIX])
def test_saved_bytes_equal_measured(module, model_type, n, kernel, recompute, dtype):
    for seed in (range(n) if isinstance(n, int) else n):
        raw = tiny(module, model_type, seed)
        model = saved.build(raw, kernel, recompute, dtype)
        for B, T in shapes(model_type):
            measured = measure(model, model_type, B, T)
            mask = sdpa_window_masks(raw, kernel, B, T, dtype) if recompute != "full" else 0
            mask += checkpointed_mask(raw, kernel, recompute, B, T, dtype)
            mask += sdpa_output_copy(raw, kernel, recompute, B, T, dtype)
            mask += fp32_stream_inputs(raw, recompute, B, T, dtype)
            mask += sdpa_msa_masks(raw, kernel, recompute, B, T, dtype)
            mask += sdpa_masked_gqa(raw, kernel, recompute, B, T, dtype)
            mask += cpu_layernorm_stats(raw, recompute, B, T, dtype)
            assert engine_bytes(raw, kernel, recompute, dtype, B, T) + mask == measured, json.dumps([raw, B, T])


def test_the_measured_list_the_train_notes_quote_is_this_file():
    """``train`` says whether a model type's activations are measured from
    symcost/data/activations_measured.json; it must list exactly the types this file measures."""
    from importlib.resources import files
    data = json.loads(files("symcost.data").joinpath("activations_measured.json").read_text())
    here = {f[1] for f in FAMILIES} | {m[1] for m in MORE} | {h[1] for h in HYBRIDS}
    assert set(data["exact"]) == here and data["bounded"] == []
    m = symcost.build("qwen3-next-80b-a3b-thinking")
    from symcost.training.memory import measured_note
    assert "measured equal" in measured_note(m)
    # a bundled config of a type measured nowhere (the first one, whichever helpers have measured)
    for path in sorted(files("symcost.configs").iterdir()):
        if path.name.endswith(".json"):
            other = symcost.build(path.name[:-5])
            if not {other.model_type, other.text_model_type} & set(data["exact"] + data["bounded"]):
                assert "not measured" in measured_note(other)
                break


#: switches the seed-0 configs of MORE leave off, measured once each: GPT-NeoX's parallel residual
#: (its default: LN₁(x) and LN₂(x) read one x, kept once, ``Norms.same_input``) and Cohere's
#: use_qk_norm (CohereLayerNorms over [H, D_h] on q and k, ``AttentionSaves(qk_norm="centred_fp32")``) and
#: Phi's qk_layernorm (per-head LayerNorms on q and k)
VARIANTS = [("classic", "gpt_neox", {"use_parallel_residual": True}),
            ("dense", "cohere", {"use_qk_norm": True, "num_attention_heads": 2, "num_key_value_heads": 1}),
            ("classic", "phi", {"qk_layernorm": True})]


@pytest.mark.parametrize("module,model_type,extra", VARIANTS)
@pytest.mark.parametrize("kernel,dtype", [("eager", "fp32"), ("sdpa", "bf16")])
def test_variant_switches(module, model_type, extra, kernel, dtype):
    raw = {**tiny(module, model_type, 0), **extra}
    model = saved.build(raw, kernel, "none", dtype)
    for B, T in SHAPES:
        known = cpu_layernorm_stats(raw, "none", B, T, dtype) + sdpa_output_copy(raw, kernel, "none", B, T, dtype)
        assert engine_bytes(raw, kernel, "none", dtype, B, T) + known == saved.saved_bytes(model, B, T), (B, T)


@pytest.mark.parametrize("kernel,dtype", [("eager", "fp32"), ("eager", "bf16"), ("sdpa", "fp32")])
def test_longcat_flash_routing_as_taken(kernel, dtype):
    """LongCat-Flash with free routing (zero experts and k < E + E_z, as trained models run): how
    many of the k·B·T slots land on a real expert is the router's choice. A forward hook on every
    ``LongcatFlashTopkRouter`` reads the indices the measured forward took (an index below E is a
    real expert); the engine's count with k_r = (real slots over all layers) / (L·B·T) — its
    per-slot declarations are linear in the rows — equals the measured bytes."""
    import dataclasses

    from symcost.components.zero_experts import ZeroExpertMoE
    for seed in range(3):
        raw = tiny("longcat_flash", "longcat_flash", seed)
        E = raw.get("n_routed_experts", raw.get("num_local_experts"))
        k_key = "moe_topk" if "moe_topk" in raw else "num_experts_per_tok"
        raw["zero_expert_num"] = Z = 2 + seed % 2
        raw[k_key] = min(2 + seed, E + Z - 1)  # some slots may take a zero expert, none must
        model = saved.build(raw, kernel, "none", dtype)
        taken: list = []
        for layer in model.model.layers:
            layer.mlp.router.register_forward_hook(lambda mod, args, out: taken.append(out[2].detach().clone()))
        m = built(raw)
        L = int(m.values[sym.L])
        for B, T in SHAPES:
            taken.clear()
            measured = saved.saved_bytes(model, B, T)
            assert len(taken) == L
            real = sum(int((idx < E).sum()) for idx in taken)
            groups = tuple(dataclasses.replace(g, components=tuple(
                dataclasses.replace(c, k_r=sympy.Rational(real, L * B * T)) if isinstance(c, ZeroExpertMoE) else c
                for c in g.components)) for g in m.groups)
            v = m.values_with(T=T, B=B)
            v.update({sym.b_a: BYTES[dtype], sym.N_tp: 1, sym.N_cp: 1})
            bw = Backward(kernel=engine_kernel(m, kernel), recompute="none", act_dtype=dtype, scan="reference")
            engine = activations(dataclasses.replace(m, groups=groups), bw).total_at(v)
            assert engine + sdpa_output_copy(raw, kernel, "none", B, T, dtype) == measured, (seed, B, T, real)


def test_deepseek_v2_odd_latent_width():
    """``tiny`` makes DeepSeek-V2's d_kv + D_rope even. With an odd sum transformers' complex RoPE
    fails in fp32 (``view_as_complex`` of the strided k_pe view, in the forward), which this pins;
    below fp32 (a contiguous copy first) it runs, and the engine's count, which does not depend on
    the parity, equals the measured bytes there."""
    from tests.tiny import deepseek
    odd = []
    for seed in range(12):
        raw = deepseek.tiny(random.Random(f"act-deepseek_v2-{seed}"), "deepseek_v2")
        raw.pop("num_nextn_predict_layers", None)
        if (raw["kv_lora_rank"] + raw["qk_rope_head_dim"]) % 2:
            odd.append(raw)
    assert len(odd) >= 2
    with pytest.raises(RuntimeError, match="stride divisible by 2"):
        saved.saved_bytes(saved.build(odd[0], "eager", "none", "fp32"), 1, 5)
    for raw in odd[:2]:
        model = saved.build(raw, "eager", "none", "bf16")
        for B, T in SHAPES:
            assert engine_bytes(raw, "eager", "none", "bf16", B, T) == saved.saved_bytes(model, B, T)
