"""The engines' start-up memory accounting as named term trees: what vLLM's profiling run
allocates (the "peak activation" it subtracts before sizing the KV cache), the engine's non-torch
memory, and SGLang's ``mem_fraction_static`` pool. Every term is a SymPy expression in the layout
(N_tp, N_ep, N_pp) and the step's tokens M (max_num_batched_tokens); S = max_num_seqs is
substituted as a number (the engine's default for the GPU, or --max-num-seqs).

vLLM V1 (>= 0.8; ``vllm/v1/worker/gpu_worker.py`` ``Worker.determine_available_memory``):
    available_kv = total · gpu_memory_utilization − weights − peak_activation − non_torch
    peak_activation = max(forward, sampler)        (torch allocator peak over the weights)
      forward  (``gpu_model_runner.GPUModelRunner._dummy_run(max_num_tokens)``, M tokens):
        hidden_and_residual  2·M·d·b_a         decoder output + the fused add-RMSNorm residual
        norm_output          M·d·b_a           the RMSNorm output fed to the next GEMM
        layer_transient      M·b_a·w           w = the widest component's GEMM outputs held at
                                               once (q/k/v, gate_up + act; a routed-expert layer's
                                               fused-MoE workspaces at M·k rows: gate_up 2·N/e,
                                               its activation N/e, the down output d —
                                               ``fused_moe.fused_experts`` intermediate caches /
                                               ``modular_kernel`` workspace13 + workspace2)
        router               M·E·b_a + 8·M·k   router logits, top-k weights (fp32) and ids (int32)
      sampler  (``_dummy_sampler_run``, S = min(max_num_seqs, M) sequences, top-k = V − 1 and
                top-p < 1 so the widest path runs; at its widest, inside logits.sort()):
        hidden_states        M·d·b_a           held from the forward
        logits               S·V·b_a           lm_head output gathered to the full vocabulary
        logits_fp32          4·S·V             logits.to(float32)
        sorted_logits        4·S·V             logits.sort() values
        sort_indices         8·S·V             logits.sort() int64 indices
        sort_iota            8·S·V             the segmented radix sort's int64 index input
        sort_double_buffer   12·S·V            cub SortPairs' alternate keys and values
    non_torch (``non_torch_terms``) = kernel modules (+ the CUDA context before 0.6.5)
      + (N_tp·N_pp − 1)·W_peer (NCCL buffers per peer, NVLink or PCIe class)
      + Min(1, N_tp − 1)·2·8 MiB (the custom all-reduce's IPC buffers, where it runs)
      — each constant with its logs in ``engine_memory.json``
    CUDA graphs (``cudagraph_terms``): vLLM >= 0.21 subtracts ``profile_cudagraph_memory``'s
      estimate before sizing the KV cache (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, on by default
      from 0.21): graph_pool (the forward's transient at the largest capture size) + graph_objects
      ((n − 1) · 1 MiB per further graph); 0.13–0.20 estimate only when that variable is set
      (the Model Runner V2, default for dense models from 0.25.1, returned 0 from its
      ``profile_cudagraph_memory`` until it implemented it — PR #49233; not modelled)
      (PR #30515) and earlier versions capture after sizing (``compile_or_warm_up_model``): there
      --cudagraph-gib states an allowance, 0 by default.
vLLM Model Runner V2 (``vllm/v1/worker/gpu/model_runner.py``; the default runner by release in
``model_runner``: from 0.22 for a few dense architectures, 0.25 for every dense model, 0.29 for all):
    the same budget and the same forward (``_dummy_run(max_num_tokens)``); what differs, term by term:
      sampler (``sampler_terms_v2``): the dummy requests carry the default sampling state (greedy,
        no top-k/top-p, no penalties), so no fp32 copy and no sort — the logits and the Gumbel
        argmax's per-block partials; from 0.33 a second pass with ``SamplingParams.for_sampler_warmup``
        runs the fp32 pipeline and FlashInfer's top-k/top-p sampler
      runner_buffers (``runner_buffer_terms``): sampler state the runner allocates after the init
        snapshot (``PenaltiesState`` bins, the grammar bitmask), last pipeline stage only — counted
        in ``memory_profiling``'s total_consumed
      CUDA graphs: ``profile_cudagraph_memory`` returned 0 before 0.29 (nothing subtracted although
        the V1 runner's estimate is on from 0.21); from 0.29 it captures into a throwaway pool
        (``cudagraph_utils.profile_cudagraph_memory``): the same terms as V1's (``cudagraph_terms``)
vLLM V0 (<= 0.7; ``vllm/worker/worker.py`` ``determine_num_available_blocks``): the same
    budget; the profile runs max_num_batched_tokens = max(max_model_len, 2048) without chunked
    prefill (chunked prefill, on by default past 32K: 512 tokens in 0.6, 2048 from 0.7), and
    samples S = 256 sequences inside the forward with the same top-k/top-p worst case.
SGLang (``python/sglang/srt/model_executor/model_runner.py`` ``profile_max_num_token``):
    rest = free_after_weights − total_at_init·(1 − mem_fraction_static)
         = mem_fraction_static·(usable − kernel modules) − weights − communicators
    max_total_num_tokens = ⌊rest / cell_size⌋, cell_size = the rank's KV bytes per token over all
    its layers; activations and CUDA graphs live outside the fraction (not subtracted).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import cached_property
from fractions import Fraction
from importlib import resources

import sympy

from ..core.errors import SymcostError
from ..core.memo import PerModel
from ..core.notation import sym
from ..core.primitives import Linear
from ..core.terms import Terms, exact, largest

t, p, M = sym.N_tp, sym.N_pp, sym.M
e = sym.N_tp * sym.N_ep
GiB = 2**30
ENGINES = ("vllm", "sglang")
#: the vLLM release modelled by default: the newest on PyPI on 2026-12-02 (0.33.0; V1 engine, the CUDA-graph
#: estimate subtracted before KV sizing as from 0.21 — the newest start-up log in the test set is 0.31)
DEFAULT_VLLM = "0.33"
#: fused-MoE chunking: VLLM_FUSED_MOE_CHUNK_SIZE (tokens per fused_experts call)
MOE_CHUNK = 32768
#: runners: vLLM's V1 ``GPUModelRunner`` (``vllm/v1/worker/gpu_model_runner.py``) and Model Runner V2
#: (``vllm/v1/worker/gpu/model_runner.py``)
RUNNERS = ("v1", "v2")
#: the first release whose default is Model Runner V2 for some models, and the first where it is for all
#: (``VllmConfig.use_v2_model_runner`` of each release's ``vllm/config/vllm.py``)
RUNNER_V2_FROM = (0, 22, 0)
RUNNER_V2_ALL = (0, 29, 0)
#: 0.22-0.24: Model Runner V2 by default only for these architectures (``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES``;
#: 0.22 and 0.23 also require a dense, unquantized checkpoint, ``_is_default_v2_model_runner_model``)
V2_ARCHS = {
    (0, 22): frozenset({"Qwen3ForCausalLM"}),
    (0, 23): frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"}),
    (0, 24): frozenset({"Qwen3ForCausalLM", "DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM",
                        "LlamaForCausalLM", "MistralForCausalLM"}),
}
#: 0.25-0.28: every dense, non-hybrid, attention-bearing model, and these MoE architectures
_V2_MOE_025 = frozenset({"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM"})
_V2_MOE_026 = _V2_MOE_025 | {"InklingForCausalLM", "InklingForConditionalGeneration", "LongcatFlashNgramForCausalLM"}
V2_MOE_ARCHS = {(0, 25): _V2_MOE_025, (0, 26): _V2_MOE_026, (0, 27): _V2_MOE_026 | {"KimiK3ForConditionalGeneration"},
                (0, 28): _V2_MOE_026 | {"KimiK3ForConditionalGeneration", "DeepseekV4ForCausalLM"}}


def _data() -> dict:
    return json.loads((resources.files("symcost.serving") / "engine_memory.json").read_text(encoding="utf-8"))


ENGINE_DATA = _data()


def version_tuple(v: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a release X.Y or X.Y.Z (patch 0 when not given)."""
    parts = v.split(".")
    try:
        if not 1 <= len(parts) <= 3:
            raise ValueError
        nums = [int(x) for x in parts] + [0] * (3 - len(parts))
        return nums[0], nums[1], nums[2]
    except ValueError:
        raise SymcostError(f"--vllm-version: expected X.Y or X.Y.Z (e.g. 0.11), got {v!r}") from None


#: the release whose ``get_batch_defaults`` gives GPUs of >= 160 GiB 16384 batched tokens (the OpenAI server's)
LARGEST_DEFAULTS = (0, 28, 0)


@dataclass(frozen=True)
class Engine:
    """Which engine's accounting, which version, and its scheduler limits (None: the default)."""

    name: str = "vllm"
    version: str = DEFAULT_VLLM
    max_num_seqs: int | None = None
    max_batched_tokens: int | None = None

    def __post_init__(self):
        if self.name not in ENGINES:
            raise SymcostError(f"--engine: unknown engine {self.name!r} (known: {', '.join(ENGINES)})")
        version_tuple(self.version)

    @property
    def v1(self) -> bool:
        return version_tuple(self.version) >= (0, 8)

    def limits(self, gpu, max_model_len: int) -> tuple[int, int]:
        """(max_num_batched_tokens, max_num_seqs) as the engine defaults them for the OpenAI server.

        vLLM >= 0.9 (``EngineArgs._set_default_args``): 8192 / 1024 on a GPU of >= 70 GiB that is
        not an A100, else 2048 / 256; from 0.28 16384 / 1024 on a GPU of >= 160 GiB (``EngineArgs.
        get_batch_defaults``: "for GPUs like B200/B300"); 0.8: 2048 / 256; V0: max(max_model_len, 2048) / 256 without
        chunked prefill (on by default past 32K contexts, then 512). SGLang: chunked_prefill_size
        8192, max_running_requests from the pool (taken as 1024 here; no sampler peak is costed)."""
        m, s = self.max_batched_tokens, self.max_num_seqs
        if self.name == "sglang":
            return m or 8192, s or 1024
        big = gpu is not None and gpu.usable_bytes >= 70 * GiB and not gpu.name.upper().startswith(("A100", "A800"))
        if not self.v1:
            chunk = 512 if version_tuple(self.version) < (0, 7) else 2048
            dm = max(max_model_len, 2048) if max_model_len <= 32768 else chunk
            return m or dm, min(s or 256, m or dm)
        if version_tuple(self.version) >= LARGEST_DEFAULTS and gpu is not None and gpu.usable_bytes >= 160 * GiB:
            dm, ds = 16384, 1024
        elif version_tuple(self.version) >= (0, 9) and big:
            dm, ds = 8192, 1024
        else:
            dm, ds = 2048, 256
        m = m or dm
        return m, min(s or ds, m)


def model_runner(engine: "Engine", *, architectures=(), moe: bool = False, hybrid: bool = False,
                 attention_free: bool = False, quantized: bool = False) -> str:
    """The GPU model runner vLLM picks by default (``VllmConfig.use_v2_model_runner``, without
    VLLM_USE_V2_MODEL_RUNNER), "v1" or "v2", read from each release's ``vllm/config/vllm.py``:

        < 0.22       V1 (Model Runner V2 only on request)
        0.22, 0.23   V2 for the architectures of ``V2_ARCHS`` with a dense, unquantized checkpoint
        0.24         V2 for the architectures of ``V2_ARCHS``
        0.25 - 0.28  V2 unless the model is hybrid (attention + Mamba/linear state; from 0.26 unless its
                     architecture is listed) or attention-free, or a MoE outside ``V2_MOE_ARCHS``
        >= 0.29      V2 (the features it lacks, ``_get_v2_model_runner_unsupported_features``, are
                     options symcost does not model: speculative methods, DBO, elastic EP, ...)

    ``architectures``: the config's ``architectures``; SGLang has no such choice ("v1" stands for
    its one path). The V0 engine (< 0.8) has no V1 runner either; its profile is ``Engine.v1``'s."""
    if engine.name != "vllm":
        return "v1"
    v = version_tuple(engine.version)
    if v < RUNNER_V2_FROM:
        return "v1"
    if v >= RUNNER_V2_ALL:
        return "v2"
    archs, key = set(architectures or ()), v[:2]
    if key in V2_ARCHS:
        if not archs & V2_ARCHS[key] or (key < (0, 24) and (moe or quantized)):
            return "v1"
        return "v2"
    listed = bool(archs & V2_MOE_ARCHS[key])
    if attention_free or (hybrid and (key == (0, 25) or not listed)):
        return "v1"
    return "v2" if listed or not moe else "v1"


def default_fraction(engine: str, tp: int) -> float:
    """The budget's fraction when none is given: vLLM's gpu_memory_utilization 0.9; SGLang's
    mem_fraction_static by tensor-parallel size (``server_args.ServerArgs.__post_init__``, 0.4:
    0.79 from 16 ranks, 0.81 from 8, 0.85 from 4, 0.87 from 2, else 0.88)."""
    if engine != "sglang":
        return 0.9
    for n, f in ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87)):
        if tp >= n:
            return f
    return 0.88


def _R(x) -> sympy.Rational:
    x = Fraction(x)
    return sympy.Rational(x.numerator, x.denominator)


def _widths(model, c) -> tuple[sympy.Expr, bool]:
    """Elements per token a component's GEMMs hold at once on one rank (``formulas.working_set``, the
    one rule: M·k rows for routed experts), and whether it is a routed-expert layer."""
    from .formulas import working_set  # the serving layout's shares, written once there
    routed = any(isinstance(q, Linear) and q.active is not None and q.name != "lm_head" and not q.tied
                 for q in c.primitives(None))
    return working_set(model, c), routed


def _b(dtype_bytes: int = 2) -> sympy.Integer:
    return sympy.Integer(dtype_bytes)


#: bytes per activation element of a quantised GEMM input, by weight layout kind, and the
#: per-group scale they carry: vLLM quantises the input on the fly for W8A8 / W4A4 kernels
#: (``fp8_utils.per_token_group_quant_fp8``: fp8 copy + one fp32 scale per 128 inputs;
#: ``Fp8LinearOp`` per-tensor dynamic: fp8 copy; NVFP4 W4A4 ``scaled_fp4_quant``: e2m1 (½ B) + one
#: fp8 scale per 16); weight-only kernels (Marlin AWQ/GPTQ/MXFP4, W4A16) leave it in bf16: no term
QUANT_INPUT = {"fp8_block": sympy.Rational(1) + sympy.Rational(4, 128), "fp8_tensor": sympy.Rational(1),
               "nvfp4": sympy.Rational(1, 2) + sympy.Rational(1, 16)}
#: FlashInfer's attention workspace (``VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE``, 394 MiB; 256 MiB in
#: earlier releases), allocated by the metadata builder on the first forward, i.e. in the profile
FLASHINFER_WORKSPACE = 394 * 2**20


def forward_terms(model, act_bytes: int = 2, *, quant: str | None = None, flashinfer: bool = False,
                  groups: frozenset | None = None) -> Terms:
    """The forward of the profiling run over M tokens on one rank (see the module docstring).

    ``groups``: the layer groups a pipeline stage holds (its widest transient and its router come
    from its own layers; every stage runs the same M-token forward: ``profile_run`` calls
    ``_dummy_run(max_num_tokens)`` on each rank, the later ones on the received hidden states and
    residual); None: every group.

    ``quant``: the weight layout kind of the checkpoint (``quant.Layout.kind``), for the input
    quantisation scratch of W8A8/W4A4 GEMMs; ``flashinfer``: the attention backend is FlashInfer
    (its workspace is allocated during the profile).

    Expert parallelism across data-parallel ranks (N_ep > 1): vLLM's default all2all backend
    (``VLLM_ALL2ALL_BACKEND=allgather_reducescatter``, ``AgRsAll2AllManager.dispatch``) all-gathers
    the N_ep ranks' tokens before the routed experts, so each rank's MoE layer sees N_ep·M token
    rows (its fused-MoE workspaces grow with them) and holds the gathered hidden states:
    ``expert_dispatch`` = Min(1, N_ep − 1)·N_ep·M·d·b_a. DeepEP/pplx buffers (other backends,
    not the default) are not modelled.

    Attention metadata: V1's per-step metadata (query_start_loc, seq_lens, slot_mapping, block
    tables) are views of persistent buffers ``GPUModelRunner.__init__`` allocates before the
    profile, outside both ``weights_memory`` and the torch peak increase that
    ``memory_profiling`` measures — vLLM does not subtract them, so neither does symcost; only
    workspaces the first forward allocates (FlashInfer's) are terms. Marlin's GEMM workspace
    (``marlin_make_workspace_new``: one int32 per SM) is allocated with the weights and is below
    1 KiB: left out."""
    vals = model.values
    d = sympy.Integer(exact(sym.d, vals))
    b = _b(act_bytes)
    moe_rows = sympy.Min(sym.N_ep * M, MOE_CHUNK)
    per, moe = [], False
    for g in model.groups:
        if exact(g.count, vals) == 0 or (groups is not None and g.name not in groups):
            continue
        for c in g.components:
            w, routed = _widths(model, c)
            moe = moe or routed
            if w != 0:
                per.append((routed, w))
    if not per:
        widest = sympy.Integer(0)
    elif not moe:  # one row count: M · (the widest set), the form hand derivations write
        widest = M * largest(*(w for _, w in per))
    else:
        widest = largest(*((moe_rows if r else M) * w for r, w in per))
    out = Terms()
    out.add("hidden_and_residual", 2 * M * d * b, "decoder output + fused add-RMSNorm residual, M·d each")
    out.add("norm_output", M * d * b, "RMSNorm output, M·d")
    out.add("layer_transient", b * widest,
            "widest component's GEMM outputs at once (fused-MoE workspaces at M·k rows, N_ep·M under DP+EP)")
    if quant in QUANT_INPUT:
        # the quantised input of the GEMM whose outputs are the widest transient: the layer input,
        # M·d (gate_up / qkv read the normed hidden states); the down projection's quantised input
        # is made after the gated activation, once the gate_up output can be freed
        out.add("quant_scratch", QUANT_INPUT[quant] * M * d,
                f"{quant} input quantisation of the layer input M·d (quantised copy + scales)")
    if moe and sym.E in vals:
        E, k = sympy.Integer(exact(sym.E, vals)), sympy.Integer(exact(sym.k, vals))
        out.add("router", M * E * b + 8 * M * k, "router logits M·E, top-k weights (fp32) and ids (int32)")
        out.add("expert_dispatch", sympy.Min(1, sym.N_ep - 1) * sym.N_ep * M * d * b,
                "all-gathered hidden states of the N_ep data-parallel ranks (allgather_reducescatter)")
    if flashinfer:
        out.add("attention_workspace", sympy.Integer(FLASHINFER_WORKSPACE),
                "FlashInfer attention workspace, allocated by the first forward's metadata builder")
    return out


def _sampler_inputs(model, S: int, act_bytes: int) -> tuple[Terms, sympy.Expr, sympy.Integer]:
    """What every dummy sampler run starts from: the forward's hidden states held (M·d·b_a) and the
    logits of the S sampled rows gathered to the full vocabulary (b_a·S·V); with S (at most M) and V."""
    vals = model.values
    d = sympy.Integer(exact(sym.d, vals))
    V = sympy.Integer(exact(sym.V, vals))
    b = _b(act_bytes)
    S = sympy.Min(M, S)
    out = Terms()
    out.add("hidden_states", M * d * b, "the forward's output, held")
    out.add("logits", S * V * b, "lm_head output gathered to the full vocabulary, S·V")
    return out, S, V


def sampler_terms(model, S: int, *, act_bytes: int = 2) -> Terms:
    """The dummy sampler run over S sequences, at its widest point. Both engines profile the sampler
    with top-k = V − 1 and top-p < 1 (V1 ``GPUModelRunner._dummy_sampler_run``'s dummy
    ``SamplingMetadata``; V0 ``ModelRunner.profile_run``: ``SamplingParams(top_p=0.99,
    top_k=vocab_size - 1)``), so the PyTorch path ``topk_topp_sampler.apply_top_k_top_p`` runs and
    starts with ``logits.sort()``. On CUDA a row of V > 4096 entries is sorted by ATen's segmented
    radix sort (``Sort.cu`` → ``cub::DeviceSegmentedRadixSort::SortPairs``), which takes an int64
    iota of the indices as its input values and a temporary double buffer of keys and values. At
    that moment the rank holds, per sequence and vocabulary entry: the gathered logits (b_a), their
    fp32 copy (4), the sorted values (4) and int64 indices (8), the iota (8) and cub's double buffer
    (4 + 8) — (b_a + 36)·S·V, more than the later top-p stage (masks, sorted probabilities,
    scattered logits: (b_a + 26)·S·V) or the softmax and exponential noise after it."""
    out, S, V = _sampler_inputs(model, S, act_bytes)
    out.add("logits_fp32", 4 * S * V, "logits.to(float32)")
    out.add("sorted_logits", 4 * S * V, "top-k/top-p: logits.sort() values")
    out.add("sort_indices", 8 * S * V, "top-k/top-p: logits.sort() int64 indices")
    out.add("sort_iota", 8 * S * V, "segmented radix sort: int64 iota of the indices (its input values)")
    out.add("sort_double_buffer", 12 * S * V, "cub SortPairs temporary storage: alternate keys (fp32) + values (int64)")
    return out


#: the release whose Model Runner V2 dummy sampler adds the warmup-parameter pass (``_dummy_sampler_run``)
SAMPLER_WARMUP_PASS = (0, 33, 0)
#: ``gumbel_sample``'s vocabulary block (BLOCK_SIZE): one partial argmax (int64) and max (fp32) per block
GUMBEL_BLOCK = 1024


def sampler_terms_v2(model, S: int, version: str, *, act_bytes: int = 2) -> Terms:
    """Model Runner V2's dummy sampler run (``vllm/v1/worker/gpu/model_runner.py``
    ``GPUModelRunner._dummy_sampler_run``) over S sequences, at its widest point. The forward's hidden
    states are held; ``compute_logits`` gathers the S sampled rows to the full vocabulary (b_a·S·V).

    Before 0.33 the sampler runs once with the dummy requests' default sampling state (temperature 0,
    top-k = V, top-p = 1, no penalties or bias: ``gpu/sample/sampler.py`` ``Sampler.apply_sampling_params``
    returns the logits untouched, no fp32 copy, and ``apply_top_k_top_p`` gets no k or p, so nothing is
    sorted); ``gumbel_sample`` holds one int64 argmax and one fp32 max per row and vocabulary block of
    1024: 12·S·⌈V/1024⌉ — vLLM's own note: the profile "may skip top_k, top_p, and logprobs".

    From 0.33 a second pass follows with ``SamplingParams.for_sampler_warmup()`` (temperature 0.9,
    top-k 50, top-p 0.9, penalties, logprobs): ``apply_sampling_params`` copies the logits to fp32
    (4·S·V), then FlashInfer's fused sampler (``topk_topp_sampler.flashinfer_sample`` →
    ``flashinfer.sampling.top_k_top_p_sampling_from_logits``, filter order top_k_first) masks the
    logits (``top_k_mask_logits``, 4·S·V) and takes their softmax (4·S·V) while the fp32 copy is held:
    (b_a + 12)·S·V, wider than the first pass. (On GPUs without FlashInfer's sampler — 16 SMs or
    fewer — vLLM takes the Triton top-k/top-p path instead; not modelled.)"""
    out, S, V = _sampler_inputs(model, S, act_bytes)
    if version_tuple(version) >= SAMPLER_WARMUP_PASS:
        out.add("logits_fp32", 4 * S * V, "warmup-parameter pass: apply_sampling_params' fp32 copy of the logits")
        out.add("topk_masked_logits", 4 * S * V, "FlashInfer top_k_top_p_sampling_from_logits: top_k_mask_logits")
        out.add("topk_probs", 4 * S * V, "FlashInfer top_k_top_p_sampling_from_logits: softmax of the masked logits")
    else:
        blocks = -(-int(V) // GUMBEL_BLOCK)
        out.add("gumbel_partials", S * 12 * blocks,
                f"gumbel_sample: int64 argmax + fp32 max per row and {GUMBEL_BLOCK}-entry block (⌈V/{GUMBEL_BLOCK}⌉ = {blocks})")
    return out


def runner_buffer_terms(model, S: int) -> Terms:
    """Model Runner V2's sampler state, allocated by ``GPUModelRunner.load_model`` on the last pipeline
    stage after the weights are measured and before the profile (``vllm/v1/worker/gpu/model_runner.py``):
    not weights, not the profile's transient peak, but inside ``memory_profiling``'s total_consumed
    (the free-memory drop from the worker's init snapshot), so subtracted before the KV cache:

        penalty_output_bins   4·S·V        ``gpu/sample/penalties.py`` ``PenaltiesState``:
                                           output_bin_counts, int32 [max_num_reqs, V]
        penalty_prompt_mask   4·S·⌈V/32⌉   prompt_bin_mask, int32 [max_num_reqs, ⌈V/32⌉]
        grammar_bitmask       4·S·⌈V/32⌉   ``gpu/structured_outputs.py`` ``StructuredOutputsWorker``:
                                           int32 [max_num_reqs · decode_query_len, ⌈V/32⌉] (1 without
                                           speculative decoding)

    The per-request sampling parameters and token ids (``SamplingStates``, ``RequestState.all_token_ids``)
    are UVA buffers in pinned host memory: no device bytes. S is max_num_seqs (the buffers' size, not
    the rows a step samples)."""
    V = int(exact(sym.V, model.values))
    words = -(-V // 32)
    S = sympy.Integer(S)
    out = Terms()
    out.add("penalty_output_bins", 4 * S * V, "PenaltiesState.output_bin_counts, int32 [max_num_seqs, V]")
    out.add("penalty_prompt_mask", 4 * S * words, f"PenaltiesState.prompt_bin_mask, int32 [max_num_seqs, ⌈V/32⌉ = {words}]")
    out.add("grammar_bitmask", 4 * S * words, f"StructuredOutputsWorker.grammar_bitmask, int32 [max_num_seqs, {words}]")
    return out


def intermediate_buffer_terms(model, act_bytes: int = 2) -> Terms:
    """A pipeline stage after the first receives the previous stage's hidden states and residual into
    buffers of max_num_batched_tokens rows, held for the worker's life: Model Runner V2 allocates them in
    ``GPUModelRunner.load_model`` (``make_empty_intermediate_tensors(batch_size=max_num_tokens)``), the
    V1 runner on its first ``_dummy_run`` (the profile); either way they are counted before the KV
    cache. The profiled forward then reads them, and its own hidden/residual are new tensors."""
    d = sympy.Integer(exact(sym.d, model.values))
    out = Terms()
    out.add("intermediate_buffers", 2 * M * d * _b(act_bytes),
            "received hidden states + residual, M·d each (make_empty_intermediate_tensors)")
    return out


def _gib(key: str) -> sympy.Integer:
    return sympy.Integer(int(Fraction(str(ENGINE_DATA["non_torch"][key]["value"])) * GiB))


#: vLLM's custom all-reduce world sizes (``CustomAllreduce._SUPPORTED_WORLD_SIZES``)
CUSTOM_AR_SIZES = (2, 4, 6, 8)


def non_torch_terms(gpu, engine: Engine, tp: int | None = None) -> Terms:
    """Memory outside torch's allocator on one rank, by mechanism (constants with their logs in
    ``engine_memory.json``):

        kernel_modules     lazily loaded kernel images and library handles the profile brings in
        device_baseline    vLLM < 0.6.5 only: the CUDA context the device already held (no baseline
                           snapshot before PR #10511; ``worker.determine_num_available_blocks`` took
                           total device use − ``torch.cuda.memory_reserved()``)
        nccl               (N_tp·N_pp − 1) · per-peer connection buffers of the two communicators
                           (``PyNcclCommunicator`` + torch.distributed; NCCL's P2P/NVLS buffers
                           are per connected peer and channel), by link class (NVLink/PCIe)
        custom_allreduce   Min(1, N_tp − 1) · 2·8 MiB of IPC buffers (``CustomAllreduce.__init__``:
                           meta_size() + max_size and max_size, cudaMalloc'd), only at the world
                           sizes it supports (2, 4, 6, 8) and, past 2 GPUs, inside an NVLink domain

    ``tp`` (the layout's N_tp, when known) decides whether the custom all-reduce is on; without it
    the term is kept for any N_tp > 1."""
    out = Terms()
    out.add("kernel_modules", _gib("kernel_modules_gib"),
            "kernel images and library handles loaded lazily during the profile (calibrated)")
    if engine.name == "vllm" and version_tuple(engine.version) < (0, 6, 5):
        out.add("device_baseline", _gib("device_baseline_gib"),
                "vLLM < 0.6.5: the CUDA context held before the profile (no baseline snapshot yet)")
    nvlink = gpu is None or gpu.nvlink_domain > 1
    nccl = _gib("nccl_nvlink_per_peer_gib" if nvlink else "nccl_pcie_per_peer_gib")
    out.add("nccl", (t * p - 1) * nccl,
            "NCCL connection buffers of two communicators, per peer rank (" + ("NVLink" if nvlink else "PCIe") + ")")
    ar_on = tp is None or (tp in CUSTOM_AR_SIZES and (nvlink or tp <= 2))
    if ar_on:
        ar = sympy.Integer(ENGINE_DATA["non_torch"]["custom_allreduce_bytes"]["value"])
        out.add("custom_allreduce", sympy.Min(1, t - 1) * ar, "custom all-reduce IPC buffers, 2·8 MiB (N_tp > 1)")
    return out


#: vLLM release from which the CUDA-graph estimate is subtracted before the KV cache by default
#: (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS on; vLLM logs "CUDA graph memory profiling is enabled
#: (default since v0.21.0)"); PR #30515 added it, off by default, in 0.13
CUDAGRAPH_COUNTED = (0, 21, 0)
CUDAGRAPH_OPT_IN = (0, 13, 0)
#: Model Runner V2's ``profile_cudagraph_memory`` returned 0 ("It is TBD whether we keep this API") up to
#: 0.28; 0.29 implements it (PR #53306, ``vllm/v1/worker/gpu/cudagraph_utils.py`` ``profile_cudagraph_memory``)
CUDAGRAPH_COUNTED_V2 = (0, 29, 0)
#: ``profile_cudagraph_memory``'s floor per graph beyond the first ("at least 1 MiB per graph for
#: driver overhead")
PER_GRAPH_FLOOR = 1 << 20


def capture_sizes(max_num_seqs: int, max_batched_tokens: int) -> list[int]:
    """vLLM's default CUDA-graph capture sizes (``VllmConfig._set_cudagraph_sizes``; the grid is
    ``CompilationConfig``'s docstring): the largest is min(2·max_num_seqs, 512, max_num_batched_tokens),
    and the sizes are [1, 2, 4] + range(8, 256, 8) + range(256, largest + 1, 16) up to it."""
    top = min(2 * max_num_seqs, 512, max_batched_tokens)
    sizes = [i for i in (1, 2, 4) if i <= top]
    if top >= 8:
        sizes += list(range(8, min(top + 1, 256), 8))
    if top >= 256:
        sizes += list(range(256, top + 1, 16))
    return sizes


#: the graph pool of a model's forward at B_g, by (layer groups, B_g): the same for every input quantisation,
#: attention backend and runner (``profile``'s other keys), and substituting B_g re-evaluates the
#: forward's maxima (tenths of a second on a large MoE) — the HTML page's card classes ask for it six times
_POOLS = PerModel()


def cudagraph_terms(model, max_num_seqs: int, max_batched_tokens: int, groups: frozenset | None = None) -> Terms:
    """vLLM's CUDA-graph memory estimate (``GPUModelRunner.profile_cudagraph_memory``, called by
    ``Worker.determine_available_memory`` before the KV cache is sized): per graph mode it captures
    the two largest descriptors, takes the first capture's memory (the graph pool) and charges each
    further descriptor the second capture's increase, at least 1 MiB; the modes share one pool, so

        estimate = max_mode(first capture) + Σ_mode (n_mode − 1) · per_graph

    Under the default FULL_AND_PIECEWISE mode, PIECEWISE graphs are captured at every capture size
    and FULL graphs at the uniform-decode sizes ≤ max_num_seqs. Symcost takes the first capture as
    the profiling forward's transient at the largest size B_g (``forward_terms`` at M = B_g: the pool
    holds one forward's intermediates) and each further graph at the source's 1 MiB floor — a lower
    bound: vLLM 0.31 logged 0.23 GiB for Llama-3.1-8B on an A100, this gives 0.14 GiB. ``groups``: a
    pipeline stage's layer groups (``forward_terms``).

    Model Runner V2 from 0.29 (``vllm/v1/worker/gpu/cudagraph_utils.py`` ``profile_cudagraph_memory``)
    captures every PIECEWISE graph into a throwaway pool and extrapolates the FULL ones from their two
    largest (``_extrapolate_full_graph_memory``: first + (n − 1)·max(second, 1 MiB)): the same pool
    and per-graph terms; before 0.29 it subtracts nothing (``Profile.cudagraph_counted``)."""
    sizes = capture_sizes(max_num_seqs, max_batched_tokens)
    if not sizes:
        return Terms()
    top = sizes[-1]
    full = [b for b in sizes if b <= max_num_seqs]
    pool = _POOLS.get(model, (groups, top),
                      lambda: forward_terms(model, groups=groups).total.xreplace({M: sympy.Integer(top)}))
    out = Terms()
    out.add("graph_pool", pool, f"first capture: the forward's transient at the largest size B_g = {top}")
    out.add("graph_objects", sympy.Integer((len(sizes) - 1 + max(len(full) - 1, 0)) * PER_GRAPH_FLOOR),
            f"(n − 1) · 1 MiB per further graph: {len(sizes)} PIECEWISE + {len(full)} FULL sizes")
    return out


@dataclass
class Profile:
    """The engine's accounting of one rank: named terms, their total, and what is subtracted."""

    engine: Engine
    forward: Terms
    sampler: Terms
    non_torch: Terms
    max_batched_tokens: int
    max_num_seqs: int
    cudagraph: Terms = None  # vLLM's CUDA-graph estimate (``cudagraph_terms``)
    quant: str | None = None  # the weight layout whose input quantisation the forward holds
    flashinfer: bool = False  # FlashInfer's attention workspace in the forward
    _stages: dict = None  # (layer groups, first, last) -> the stage's profile, built once (``at_stage``)
    runner: str = "v1"  # vLLM's GPU model runner (``model_runner``): "v1" or "v2" (Model Runner V2)
    #: buffers the runner holds for the worker's life, counted before the KV cache (Model Runner V2's
    #: sampler state, ``runner_buffer_terms``; a later pipeline stage's ``intermediate_buffer_terms``)
    buffers: Terms = None

    @cached_property
    def peak(self) -> sympy.Expr:
        """The profiled peak activation: the larger of the forward and the sampler run, plus the
        runner's persistent buffers (built once per profile: a pipeline's alike stages share their
        ``at_stage`` profile; the instance is not mutated after construction, ``replace`` makes a new
        one). SymPy's Max compares its arguments pairwise on every build, so the maximum is
        ``terms.largest``'s, built once per pair of totals: the profiles of one model on cards of the
        same limits share their forward and sampler terms (``_PROFILED``), so the HTML page's many
        setups build few of them."""
        if self.engine.name == "sglang":
            return sympy.Integer(0)  # outside mem_fraction_static
        if not self.sampler.flatten():  # a pipeline stage before the last: no sampler run
            peak = self.forward.total
        else:
            peak = largest(self.forward.total, self.sampler.total)
        return peak + self.buffers.total if self.buffers is not None and self.buffers.flatten() else peak

    def at_stage(self, model, stage) -> "Profile":
        """This profile on one pipeline stage (``GPUModelRunner.profile_run``): every rank runs the
        forward over M tokens through its own layers (``forward_terms`` with the stage's groups; the
        later ranks start from the received hidden states and residual, held in their
        ``intermediate_buffer_terms``); only the last (``get_pp_group().is_last_rank``) runs
        ``_dummy_sampler_run`` and, under Model Runner V2, holds the sampler state
        (``runner_buffer_terms``: the Sampler is built on the last rank only); the others end with
        ``output = None``; the CUDA-graph pool is the stage's own forward."""
        groups = frozenset(stage.counts)
        if self._stages is None:
            self._stages = {}
        key = (groups, stage.first, stage.last)
        if key not in self._stages:
            fwd = forward_terms(model, quant=self.quant, flashinfer=self.flashinfer, groups=groups)
            graphs = cudagraph_terms(model, self.max_num_seqs, self.max_batched_tokens, groups=groups) \
                if self.cudagraph is not None else None
            bufs = runner_buffer_terms(model, self.max_num_seqs) if self.runner == "v2" and stage.last else Terms()
            if not stage.first:
                bufs.add("intermediate_buffers", intermediate_buffer_terms(model).total,
                         "received hidden states + residual, M·d each (make_empty_intermediate_tensors)")
            self._stages[key] = replace(self, forward=fwd, sampler=self.sampler if stage.last else Terms(),
                                        cudagraph=graphs, buffers=bufs)
        return self._stages[key]

    @property
    def cudagraph_counted(self) -> bool:
        """Whether the engine subtracts its CUDA-graph estimate before sizing the KV cache: vLLM's V1
        runner from 0.21 (on by default; before, graphs are captured after sizing: an allowance,
        --cudagraph-gib), Model Runner V2 from 0.29 (``CUDAGRAPH_COUNTED_V2``)."""
        first = CUDAGRAPH_COUNTED_V2 if self.runner == "v2" else CUDAGRAPH_COUNTED
        return self.engine.name == "vllm" and version_tuple(self.engine.version) >= first

    @property
    def cudagraph_bytes(self) -> sympy.Expr:
        return self.cudagraph.total if self.cudagraph_counted and self.cudagraph is not None else sympy.Integer(0)

    def activation_terms(self) -> Terms:
        out = Terms()
        out.add("forward", self.forward.copy(), f"profiling forward over M = {self.max_batched_tokens} tokens")
        if self.sampler.flatten():
            out.add("sampler", self.sampler.copy(), f"dummy sampler run over S = {self.max_num_seqs} sequences")
        if self.buffers is not None and self.buffers.flatten():
            out.add("runner_buffers", self.buffers.copy(), "buffers the model runner holds, counted before the KV cache")
        if self.cudagraph_counted and self.cudagraph is not None and self.cudagraph.flatten():
            out.add("cudagraph", self.cudagraph.copy(), "profile_cudagraph_memory estimate, before KV sizing")
        return out


#: cards whose default vLLM V1 attention backend is FlashInfer (``cuda.py`` backend priorities: SM100)
FLASHINFER_CARDS = ("B200", "B300", "GB200", "GB300")


def profile(model, gpu, engine: Engine, *, max_model_len: int, tp: int | None = None,
            quant: str | None = None, runner: str = "v1") -> Profile:
    """The engine's profiled terms for ``model`` on ``gpu`` (None: defaults of a small GPU);
    ``quant``: the checkpoint's weight layout kind (its input-quantisation scratch); ``runner``: vLLM's
    GPU model runner (``model_runner``), "v2" for Model Runner V2's sampler, buffers and graphs."""
    if runner not in RUNNERS:
        raise SymcostError(f"--model-runner: unknown runner {runner!r} (known: {', '.join(RUNNERS)})")
    m, s = engine.limits(gpu, max_model_len)
    fi = engine.name == "vllm" and engine.v1 and gpu is not None and gpu.name.upper().startswith(FLASHINFER_CARDS)
    nvfp4_a4 = quant != "nvfp4" or (gpu is not None and gpu.name.upper().startswith(FLASHINFER_CARDS))
    q = quant if nvfp4_a4 else None
    v2 = runner == "v2" and engine.name == "vllm" and engine.v1

    def terms():
        smp = sampler_terms_v2(model, s, engine.version) if v2 else sampler_terms(model, s)
        bufs = runner_buffer_terms(model, s) if v2 else Terms()
        # under N_pp > 1 (the formulas' bound, before ``at_stage`` costs each stage): a later stage's buffers
        bufs.add("intermediate_buffers", sympy.Min(1, p - 1) * intermediate_buffer_terms(model).total,
                 "a pipeline stage after the first: received hidden states + residual (Min(1, N_pp − 1)·2·M·d·b_a)")
        return forward_terms(model, quant=q, flashinfer=fi), smp, cudagraph_terms(model, s, m), bufs
    fwd, smp, graphs, bufs = _PROFILED.get(model, (q, fi, m, s, v2, engine.version if v2 else None), terms)
    return Profile(engine, fwd, smp, non_torch_terms(gpu, engine, tp), m, s, graphs, q, fi,
                   runner="v2" if v2 else "v1", buffers=bufs)


#: the profiling forward, sampler run, runner buffers and CUDA-graph terms of a model, by what they read (the
#: input quantisation, FlashInfer, M and S, the runner and its release): none depends on N_tp — only the
#: non-torch memory does — and ``memory``'s ``gpus_needed`` profiles every tensor-parallel size it tries (the
#: sheet six times). Shared between profiles: never mutated (``at_stage`` and ``activation_terms`` copy)
_PROFILED = PerModel()


def kv_cell_bytes(model, kv_dtype: str, tp: int) -> int:
    """SGLang's cell_size: KV bytes of one token over every layer of one rank."""
    from .memory import cache_bytes_per_gpu
    vals = model.values_with(T=1, B=1)
    two = model.values_with(T=2, B=1)
    return cache_bytes_per_gpu(model, kv_dtype, two, tp) - cache_bytes_per_gpu(model, kv_dtype, vals, tp)
