"""Serving memory on one GPU, as vLLM accounts for it, for a parallel layout (``parallel.Layout``:
N_tp, N_pp, N_dp and N_ep; vLLM's ``--ep`` group is N_tp·N_ep).

Per rank (the most-loaded one):
    budget        = usable GPU memory (as the driver reports it) · mem_util          (0.9)
    weights       = Σ checkpoint bytes of each weight · its share on the rank:
                    column/row-parallel matrices, the vocab-parallel embedding/head and shared
                    experts 1/tp; k/v projections ⌈H_kv/tp⌉/H_kv (KV heads replicated past H_kv);
                    routed experts 1/ep with expert parallelism (⌈E/n⌉ of E on EP rank 0 when they
                    do not divide: ``uneven_experts``), else 1/tp; replicated weights
                    (norms, routers, MLA's q_a/kv_a, latent projections) whole; under pipeline
                    parallelism (vLLM) each stage is costed by its own layers (``stage_formulas``:
                    its weights, its profiled peak — the sampler on the last stage only — and its
                    pages) and the fewest blocks over the stages decide (``get_kv_cache_configs``);
                    the formulas in N_pp (and SGLang) bound a stage by ⌈count/pp⌉ of every layer
                    group and the larger of embedding and head
    activations   = the engine's profiled peak (``profile``: the forward over M = max_num_batched_tokens
                    tokens, the dummy sampler over S = max_num_seqs sequences, their larger; vLLM's
                    Model Runner V2 — its default by release, ``profile.model_runner`` — adds the
                    sampler state it holds, ``runner_buffers``), as
                    named terms in ``activation_terms``; the older single-formula estimate
                    (``formulas.activation_per_gpu``) stays for the symbolic metrics
    overhead      = non-torch memory by mechanism (``profile.non_torch_terms``: kernel modules, the
                    CUDA context before vLLM 0.6.5, NCCL buffers per peer rank, the custom
                    all-reduce's IPC buffers; --overhead-gib replaces it) + CUDA graphs (vLLM
                    >= 0.21's estimate before KV sizing, ``profile.cudagraph_terms``; --cudagraph-gib
                    replaces it)
    kv available  = budget − weights − activations − overhead
KV capacity in tokens and the maximum concurrency at a context follow from vLLM's block and page
rules (``vllm.kv_capacity``).

The serving options travel as one ``ServeSetup``; ``memory`` (``symcost memory``) adds the KV cache of
a batch and the smallest tensor-parallel size that holds it (``gpus_needed``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from fractions import Fraction

import sympy

from ..core.errors import SymcostError
from ..core.memo import PerModel
from ..core.notation import sym
from ..core.terms import exact
from ..hardware.gpus import GPU
from ..model.parallel import Layout
from .formulas import (ServeFormulas, StageFormula, activation_per_gpu, layout_values, pipeline_stages, pp_partition,
                       serve_formulas, symbolic_stage, weights_per_gpu)
from .memory import cache_bytes_total
from .profile import DEFAULT_VLLM, Engine, Profile, kv_cell_bytes, model_runner, profile, version_tuple
from .quant import checkpoint, default_moe_backend, expert_padding, nvfp4_scale_padding, placed, scheme
from .vllm import KVConfig

GiB = 2**30


def check_layout(model, lay: Layout, gpus: int | None = None) -> None:
    """Parallel sizes must divide what they split (``Layout.check``: one set of constraints)."""
    lay.check(model, gpus=gpus)


@dataclass
class Plan:
    layout: Layout
    gpu: GPU | None
    weights_total: int  # checkpoint bytes an engine loads (no MTP unless asked)
    weights_rank: int
    activation_rank: int
    overhead_rank: int
    budget_rank: int | None
    kv_available_rank: int | None
    kv: KVConfig | None
    dtypes: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    formulas: object = None
    values: dict = field(default_factory=dict)
    profile: Profile | None = None
    weights_loaded_rank: int = 0  # as the engine loads them (kernel-layout padding included)
    non_torch_rank: int = 0
    cudagraph_rank: int = 0
    deciding_rank: dict = field(default_factory=dict)
    tokens_override: int | None = None  # SGLang's max_total_num_tokens (no block rounding)
    kv_cache_memory_given: bool = False

    def activation_terms(self) -> dict:
        """Every profiled term on this rank: {path: {"bytes": int, "formula": str}}."""
        if self.profile is None:
            return {}
        out = {}
        for path, expr in self.profile.activation_terms().flatten().items():
            out[path] = {"bytes": _int(expr, self.values), "formula": str(expr)}
        return out

    def kv_needed_rank(self, batch: int) -> int:
        """Bytes of KV blocks ``batch`` requests of max_model_len need on the rank."""
        return batch * self.kv.blocks_per_request * self.kv.block_bytes if self.kv else 0

    def per_gpu_bytes(self, batch: int) -> int:
        return (self.weights_loaded_rank or self.weights_rank) + self.activation_rank + self.overhead_rank \
            + self.kv_needed_rank(batch)

    @property
    def max_batch(self) -> int | None:
        if self.gpu is None:
            return None
        if self.kv_available_rank is None or self.kv_available_rank <= 0 or not self.kv.blocks_per_request:
            return 0
        return self.kv.num_blocks // self.kv.blocks_per_request


def _values(lay: Layout, extra: dict | None = None) -> dict:
    return {**layout_values(lay), **(extra or {})}


def _int(expr, values) -> int:
    return int(sympy.ceiling(sympy.sympify(expr).xreplace(values)))


def weights_per_rank(model, ck, lay: Layout) -> int:
    """Checkpoint bytes on the most-loaded rank (``formulas.weights_per_gpu`` substituted)."""
    return _int(weights_per_gpu(model, ck).total, _values(lay))


def activation_peak(model, tokens: int, lay: Layout) -> int:
    """Peak bytes of one chunked-prefill step of ``tokens`` tokens on a rank (an estimate)."""
    return _int(activation_per_gpu(model), _values(lay, {sym.M: sympy.Integer(tokens)}))


@dataclass(frozen=True)
class ServeSetup:
    """What the serving options say (``symcost memory``, ``roofline``, ``deploy``), passed whole to
    ``plan``, ``roofline.roofline`` and ``deploy.deploy``: the layout, the GPU (None: no budget), the
    checkpoint's dtypes, the engine's settings. ``deploy`` sweeps the layouts itself (``layout`` unused)."""

    layout: Layout = Layout()
    gpu: GPU | None = None
    kv_dtype: str = "bf16"
    weights_dtype: str | None = None
    experts_dtype: str | None = None
    quant_fallback: bool = False
    mem_util: float = 0.9
    # the defaults are the engine's, as ``symcost memory`` applies them (callers of the library get the
    # same answer as the command line); the symbolic metrics pass their fixed 8192 and 1 GiB explicitly
    max_batched_tokens: int | None = None  # None: the engine's default for the GPU
    overhead_gib: float | None = None  # None: the engine's non-torch memory, modelled (profile.py)
    cudagraph_gib: float | None = None  # None: vLLM's estimate where the version counts it (>= 0.21), else 0
    block_size: int | None = None
    state_dtype: str | None = None
    mla: str = "auto"
    engine: str = "vllm"  # vllm | sglang (mem_util is then mem_fraction_static)
    vllm_version: str = DEFAULT_VLLM
    max_num_seqs: int | None = None  # None: the engine's default for the GPU
    kv_cache_memory: int | None = None  # bytes: vLLM's --kv-cache-memory-bytes, the profile skipped
    moe_backend: str | None = None  # MXFP4 expert kernel (None: vLLM's default for the GPU)
    pp_partition: tuple[int, ...] | None = None  # VLLM_PP_LAYER_PARTITION: layers per stage (None: vLLM's split)
    model_runner: str | None = None  # vLLM's GPU model runner, v1 | v2 (VLLM_USE_V2_MODEL_RUNNER; None: the
    # release's default for the model, ``profile.model_runner``)
    schedule: str | None = None  # whose scheduler times TTFT/TPOT under load (``workload.ENGINES``: vllm |
    # sglang | trtllm); None: the engine's own

    @property
    def scheduler(self) -> str:
        """The engine whose closed-loop schedule ``workload.closed_loop`` applies."""
        return self.schedule or self.engine

    def checkpoint(self, model, raw: dict):
        """The checkpoint's weight bytes as these options cost them (``quant.checkpoint``), derived once
        per model, config and options: ``memory``'s plans and the summary's stored-weights row ask for the
        same checkpoint (``_CHECKPOINTS``; callers copy before changing its trees)."""
        key = (json.dumps(raw, sort_keys=True, default=str), self.weights_dtype, self.quant_fallback,
               self.experts_dtype)
        return _CHECKPOINTS.get(model, key, lambda: checkpoint(model, raw, self.weights_dtype, self.quant_fallback,
                                                              self.experts_dtype))


_CHECKPOINTS = PerModel()


def plan(model, raw: dict, setup: ServeSetup = ServeSetup(), *, T: int, gpus: int | None = None) -> Plan:
    """``setup.layout`` on ``setup.gpu`` serving requests of ``T`` tokens, as the engine accounts for it.

    vLLM: kv available = usable·mem_util − weights as loaded − profiled peak − non-torch (− the
    --cudagraph-gib allowance); --kv-cache-memory replaces all of it with the stated size.
    SGLang: kv pool = mem_fraction_static·(usable − base non-torch) − weights − communicators;
    max_total_num_tokens = ⌊pool / cell_size⌋ (``profile``)."""
    lay, gpu, mem_util = setup.layout, setup.gpu, setup.mem_util
    check_layout(model, lay, gpus)
    if not 0 < mem_util <= 1:
        raise SymcostError(f"--mem-util must be in (0, 1], got {mem_util}")
    f, prof, ck, base_weights, notes = _engine_formulas(model, raw, setup, T=T, tp=lay.tp)
    engine = prof.engine
    vals = _values(lay, {sym.M: sympy.Integer(prof.max_batched_tokens), sym.T: sympy.Integer(T)})
    budget = int(gpu.usable_bytes * Fraction(str(mem_util))) if gpu is not None else None
    stage_rows = None
    if f.stages:  # vLLM's workers, each sized by its own layers; the fewest blocks decide
        stage_rows = _stage_rows(f, vals, budget, setup.kv_cache_memory)
        decided = deciding_rank(model, lay, stage_rows)
        f = f.at_stage(decided["pp_stage"])
        prof, base_weights = f.stages[f.deciding].profile, f.stages[f.deciding].file_weights
    weights = f.weights
    graphs = _int(_graphs(setup, prof), vals)
    non_torch = f.overhead - _graphs(setup, prof)
    w_total = ck.total(model.values, served=True)
    w_rank = _int(base_weights.total, vals)
    w_loaded = _int(weights.total, vals)
    act = _int(f.activation, vals)
    nt_rank = _int(non_torch, vals)
    over = nt_rank + graphs
    if gpu is not None and not gpu.usable_measured:
        notes.append(f"{gpu.name}: no driver-reported memory in the catalogue; the nominal "
                     f"{gpu.memory_gib} GiB is used")
    if setup.kv_cache_memory is not None:
        avail = setup.kv_cache_memory
        vals[sym.M_gpu] = sympy.Integer(avail + w_loaded + act + over)  # M_gpu − fixed = the stated size
        notes.append("--kv-cache-memory: the profile is skipped, the KV cache gets the stated size")
    else:
        avail = budget - w_loaded - act - over if gpu is not None else None
        vals[sym.M_gpu] = sympy.Integer(budget or 0)
    block = _int(f.kv.block, vals)
    block_bytes = _int(f.kv.block_bytes, vals)
    known = gpu is not None or setup.kv_cache_memory is not None
    if stage_rows is not None:  # the fewest over the stages (the formula's Min at a GPU budget)
        num_blocks = min((r["num_blocks"] for r in stage_rows if r["num_blocks"] is not None), default=0)
    else:
        num_blocks = _int(f.num_blocks, vals) if known else 0
    if setup.kv_cache_memory is not None and block_bytes and setup.kv_cache_memory < block_bytes:
        raise SymcostError(f"--kv-cache-memory: {setup.kv_cache_memory} bytes is below one KV block "
                           f"({block_bytes} bytes across the rank's layers)")
    groups = _int(f.kv.groups, vals)
    need = _int(f.kv.need, vals)
    tokens = num_blocks // groups * block
    tokens_override = None
    if engine.name == "sglang" and known:
        cell = kv_cell_bytes(model, setup.kv_dtype, lay.tp)
        tokens_override = max(avail, 0) // cell if cell else 0
        tokens = tokens_override
    kv = KVConfig(block, block_bytes,
                  [(k[0], k[3]) for k in f.kv.kinds], num_blocks, tokens,
                  num_blocks / need if need else float("inf"), need, block_bytes, [], list(f.kv.notes))
    p = Plan(lay, gpu, w_total, w_rank, act, over, budget, avail, kv, ck.dtypes, notes)
    p.formulas = f
    p.values = vals
    p.profile = prof
    p.weights_loaded_rank = w_loaded
    p.non_torch_rank = nt_rank
    p.cudagraph_rank = graphs
    p.tokens_override = tokens_override
    p.kv_cache_memory_given = setup.kv_cache_memory is not None
    if stage_rows is not None:
        for r in stage_rows:
            r["kv_tokens"] = r["num_blocks"] // groups * block if r["num_blocks"] is not None else None
        p.deciding_rank = decided
        notes.append(f"pipeline stages: {decided['why']}")
        if setup.kv_cache_memory is not None:
            notes.append("--kv-cache-memory with pipeline stages: every worker gets the stated size; the stage "
                         "with the widest pages decides (the formulas' M_gpu stands for that stage's budget)")
    else:
        p.deciding_rank = deciding_rank(model, lay)
    return p


def _stage_rows(f: ServeFormulas, vals: dict, budget: int | None, kv_memory: int | None) -> list[dict]:
    """Each stage's figures at ``vals``: weights (file, as loaded), peak, overhead, block bytes, and the
    blocks its worker affords — ⌊(budget − fixed)/block bytes⌋, or ⌊stated KV size / block bytes⌋ with
    --kv-cache-memory (None without either, or for a stage without cached layers)."""
    rows = []
    for st in f.stages:
        fixed = _int(st.fixed, vals)
        bb = _int(st.block_bytes, vals)
        room = kv_memory if kv_memory is not None else (budget - fixed if budget is not None else None)
        rows.append({"stage": st.stage.index, "layers": st.stage.layers, "groups": dict(st.stage.counts),
                     "weights_bytes": _int(st.file_weights.total, vals), "weights_loaded_bytes": _int(st.weights.total, vals),
                     "activation_bytes": _int(st.activation, vals), "overhead_bytes": _int(st.overhead, vals),
                     "fixed_bytes": fixed, "kv_block_bytes": bb, "kv_available_bytes": room,
                     "num_blocks": max(room, 0) // bb if bb and room is not None else None,
                     "sampler": st.stage.last})
    return rows


def _engine_formulas(model, raw: dict, setup: ServeSetup, *, T: int, lazy: bool = False, tp: int | None = None,
                     pp: int | None = None, sweep: bool = False):
    """``tp``: the layout's N_tp when it is fixed (it decides whether the custom all-reduce is on);
    None keeps the formulas valid for any N_tp (``deploy`` sweeps it). ``pp``: the pipeline stages to
    cost one by one (None: the layout's; 1: none, the formulas' ⌈count/p⌉ bound in N_pp). ``sweep``:
    the experts' placement of every layout (whole or sliced) in the symbol x_ep instead of
    ``setup.layout``'s (``deploy``: one set of formulas for layouts with and without EP)."""
    engine = Engine(setup.engine, setup.vllm_version, setup.max_num_seqs, setup.max_batched_tokens)
    ck, base = _layout_free(model, raw, setup, lazy)
    runner = setup.model_runner or runner_of(model, raw, engine, ck, base.kv)
    prof = profile(model, setup.gpu, engine, max_model_len=T, tp=tp, quant=ck.scheme.layout.kind, runner=runner)
    notes = list(ck.notes)
    backend = setup.moe_backend or default_moe_backend(setup.gpu, version_tuple(engine.version))
    weights, load_notes = loaded_weights(model, ck, base.weights, backend, setup, sweep=sweep)
    notes += load_notes
    graphs = _graphs(setup, prof)
    if setup.overhead_gib is not None:
        non_torch = sympy.Integer(int(Fraction(str(setup.overhead_gib)) * GiB))
    elif engine.name == "sglang":  # the base is outside the fraction's total, the communicators inside
        nt = prof.non_torch.flatten()
        comm = nt.get("nccl", sympy.Integer(0)) + nt.get("custom_allreduce", sympy.Integer(0))
        non_torch = comm + _rational(setup.mem_util) * nt["kernel_modules"]
    else:
        non_torch = prof.non_torch.total
    peak = prof.peak
    if lazy and isinstance(peak, sympy.Max):
        peak = sympy.Max(*peak.args, evaluate=False)
    f = ServeFormulas(weights, peak, non_torch + graphs, base.kv)
    pp = setup.layout.pp if pp is None else pp
    if pp > 1:
        f.stages, why = stage_formulas(model, ck, setup, prof, base.kv, non_torch, backend, pp=pp, lazy=lazy)
        if why:
            notes.append(why)
    return f, prof, ck, base.weights, notes


def runner_of(model, raw: dict, engine: Engine, ck, kv) -> str:
    """vLLM's default GPU model runner for this model (``profile.model_runner``), from what vLLM's
    ``ModelConfig`` reads: the config's ``architectures``, routed experts (``is_moe``), a quantised
    checkpoint (``is_quantized``), and the cache kinds — attention beside a recurrent state is a hybrid
    (``is_hybrid``), a state alone is attention-free."""
    archs = raw.get("architectures") or (raw.get("text_config") or {}).get("architectures") or ()
    kinds = [k[0] for k in kv.kinds]
    states, attn = "state" in kinds, any(k != "state" for k in kinds)
    return model_runner(engine, architectures=archs, moe=sym.E in model.values, hybrid=states and attn,
                        attention_free=states and not attn, quantized=ck.scheme.layout.kind != "dense")


#: the weights terms the engine adds to the checkpoint's bytes as it loads them (kernel layouts, the
#: uneven expert split): ``weights_loaded_bytes`` includes them, ``weights_per_gpu_bytes`` does not
LOAD_TERMS = ("expert_padding", "nvfp4_scale_padding", "uneven_experts")


def loaded_weights(model, ck, file_w, backend: str, setup: ServeSetup, *, sweep: bool = False,
                   counts: dict | None = None):
    """A rank's weights as the engine loads them: the checkpoint's (``file_w``, ``weights_per_gpu``)
    plus the ``LOAD_TERMS`` — MXFP4 experts padded for the MoE ``backend``'s kernel
    (``quant.expert_padding``), NVFP4 expert scales swizzled (``quant.nvfp4_scale_padding``, over a
    stage's ``counts`` of layers or ⌈n/N_pp⌉), expert-parallel rank 0's ⌈E/n⌉ experts
    (``uneven_experts``) — for ``setup.layout``'s expert placement, or every layout's (x_ep) with
    ``sweep``. Returns (terms, notes)."""
    whole = sym.x_ep if sweep else setup.layout.whole_experts
    w, notes = file_w.copy(), []
    pad, more = expert_padding(model, ck, file_w, backend, whole)
    notes += more
    if pad != 0:
        w.add("expert_padding", pad, f"MXFP4 experts padded for the {backend} kernel")
    scales, more = nvfp4_scale_padding(model, ck, whole_experts=whole, backend=backend, counts=counts)
    notes += more
    if scales != 0:
        w.add("nvfp4_scale_padding", scales, "NVFP4 expert scales swizzled for the FlashInfer FP4 MoE kernel")
    uneven = uneven_experts(model, None if sweep else setup.layout, file_w)
    if uneven != 0:
        w.add("uneven_experts", uneven, "EP rank 0 holds ⌈E/n⌉ experts (vLLM determine_expert_map)")
    return w, notes


def file_bytes(weights) -> sympy.Expr:
    """The checkpoint's bytes of a rank's loaded ``weights`` terms: without the ``LOAD_TERMS``."""
    flat = weights.flatten()
    return weights.total - sum((flat[k] for k in LOAD_TERMS if k in flat), sympy.Integer(0))


def _stages(model, setup: ServeSetup, prof: Profile, pp: int) -> tuple[list, str | None]:
    """vLLM's stages at ``pp`` (``formulas.pipeline_stages``), or (none, why they are not costed one by
    one: SGLang's own pipeline accounting, not modelled, or a model the stage costing cannot follow)."""
    if prof.engine.name != "vllm":
        return [], f"pipeline stages: {prof.engine.name}'s per-stage accounting is not modelled; each stage is " \
                   f"bounded by ceil(count/pp) layers of every group + the larger of embedding and head"
    try:
        return pipeline_stages(model, pp, setup.pp_partition), None
    except ValueError as exc:
        if setup.pp_partition is not None:
            raise SymcostError(f"--pp-layer-partition: {exc}") from None
        return [], f"pipeline stages not costed one by one ({exc}); each is bounded by ceil(count/pp) layers of " \
                   f"every group + the larger of embedding and head"


def stage_formula(model, ck, setup: ServeSetup, prof: Profile, kv, non_torch, backend: str, st, *,
                  lazy: bool = False, sweep: bool = False) -> StageFormula:
    """One pipeline stage as its vLLM worker sizes its KV cache: the weights its own layers hold
    (``weights_per_gpu`` of the stage: embedding on the first, final norm and head on the last, with
    the MXFP4/NVFP4 kernel padding and the uneven expert split of those layers), its own profiled peak
    (``Profile.at_stage``: the sampler only on the last), the non-torch memory (every rank alike) and
    CUDA graphs (its own forward), its own pages (``KVFormula.stage_block_bytes``). MTP layers are not
    loaded without speculative decoding (``Checkpoint.served_terms``), so no stage holds them. The
    stage's layer counts may be symbols (``formulas.symbolic_stage``). ``sweep``: the experts'
    placement in x_ep (``_engine_formulas``)."""
    file_w = weights_per_gpu(model, ck, st)
    w, _ = loaded_weights(model, ck, file_w, backend, setup, sweep=sweep, counts=st.counts)
    sp = prof.at_stage(model, st)
    peak = sp.peak
    if lazy and isinstance(peak, sympy.Max):
        peak = sympy.Max(*peak.args, evaluate=False)
    return StageFormula(st, w, peak, non_torch + _graphs(setup, sp), kv.stage_block_bytes(st), file_w, sp, lazy=lazy)


def stage_formulas(model, ck, setup: ServeSetup, prof: Profile, kv, non_torch, backend: str, *, pp: int,
                   lazy: bool = False) -> tuple[list, str | None]:
    """vLLM's pipeline stages at ``pp``, each as its worker sizes its KV cache (``stage_formula``).
    Returns (stages, a note or None); no stages — the ⌈count/pp⌉ bound of the formulas stays — for
    SGLang and where the stage costing cannot follow the model (``_stages``). A stage's terms depend
    on its own layers only, so the stages alike (the middle stages of an even split) are built once."""
    stages, why = _stages(model, setup, prof, pp)
    out, seen = [], {}
    for st in stages:
        key = (tuple(sorted(st.counts.items())), st.first, st.last)
        if key not in seen:
            seen[key] = stage_formula(model, ck, setup, prof, kv, non_torch, backend, st, lazy=lazy)
        out.append(replace(seen[key], stage=st))
    return out, why


def engine_stages(model, raw: dict, setup: ServeSetup, *, T: int, lazy: bool = False):
    """For a sweep over layouts (``deploy``): ``engine_formulas``' (formulas, M) with the experts'
    placement in x_ep, and a function N_pp -> vLLM's stages at that size as (stage formula, its count
    symbols, the stage's counts), each costed as ``memory`` costs it but with its layer counts as
    symbols (``formulas.symbolic_stage``): one formula per kind of stage — its groups, first, last —
    whatever the split, built once over every pipeline size; None: one stage, or no stage costing
    (``_stages``: the ⌈count/p⌉ bound of the formulas stays)."""
    f, prof, ck, _, _ = _engine_formulas(model, raw, setup, T=T, lazy=lazy, pp=1, sweep=True)
    backend = setup.moe_backend or default_moe_backend(setup.gpu, version_tuple(prof.engine.version))
    non_torch = f.overhead - _graphs(setup, prof)
    kinds: dict = {}  # (groups, first, last) -> (formula, group names, count symbols)

    def at(pp: int) -> list | None:
        stages = _stages(model, setup, prof, pp)[0] if pp > 1 else []
        out = []
        for st in stages:
            key = (frozenset(st.counts), st.first, st.last)
            if key not in kinds:
                kst, names, syms = symbolic_stage(st)
                kinds[key] = (stage_formula(model, ck, setup, prof, f.kv, non_torch, backend, kst, lazy=lazy,
                                            sweep=True), names, syms)
            sf, names, syms = kinds[key]
            out.append((sf, syms, tuple(st.counts[n] for n in names)))
        return out or None
    return f, prof.max_batched_tokens, at


#: (checkpoint, serve_formulas) by model, config and the options they read: ``gpus_needed`` plans every
#: tensor-parallel size and the sheet asks again on the fewest GPUs, while neither depends on the layout
#: (the formulas are in N_tp, N_pp, N_ep)
_LAYOUT_FREE = PerModel(32)


def _layout_free(model, raw: dict, setup: ServeSetup, lazy: bool):
    """The checkpoint's bytes (``ServeSetup.checkpoint``) and the layout-free serving formulas
    (``serve_formulas``, no overhead) of ``setup``, derived once per model, config and options."""
    key = (json.dumps(raw, sort_keys=True, default=str), setup.weights_dtype, setup.quant_fallback,
           setup.experts_dtype, setup.kv_dtype, setup.block_size, setup.state_dtype, lazy)

    def build():
        ck = setup.checkpoint(model, raw)
        return ck, serve_formulas(model, ck, kv_dtype=setup.kv_dtype, overhead_bytes=0,
                                  block_size=setup.block_size, state_dtype=setup.state_dtype, lazy=lazy)
    return _LAYOUT_FREE.get(model, key, build)


def _graphs(setup: ServeSetup, prof: Profile) -> sympy.Expr:
    """CUDA-graph bytes subtracted before the KV cache: --cudagraph-gib when stated (an allowance),
    else the engine's estimate where the version counts it (``Profile.cudagraph_bytes``), else 0."""
    if setup.cudagraph_gib is not None:
        return sympy.Integer(int(Fraction(str(setup.cudagraph_gib)) * GiB))
    return prof.cudagraph_bytes


def engine_formulas(model, raw: dict, setup: ServeSetup, *, T: int, lazy: bool = False,
                    sweep: bool = False) -> tuple[ServeFormulas, int]:
    """The serving formulas of ``setup`` as ``plan`` evaluates them — weights as loaded, the engine's
    profiled peak, its non-torch memory, the KV pages — with the engine's step size M (the one
    implementation ``memory``, ``deploy`` and ``roofline`` share). Returns (formulas, M). ``sweep``:
    valid for layouts with and without expert parallelism, the experts' placement in x_ep (the HTML
    page's layouts; ``_engine_formulas``)."""
    f, prof, *_ = _engine_formulas(model, raw, setup, T=T, lazy=lazy, sweep=sweep)
    return f, prof.max_batched_tokens


def _rational(x: float) -> sympy.Rational:
    f = Fraction(str(x))
    return sympy.Rational(f.numerator, f.denominator)


def uneven_experts(model, lay: Layout | None, weights) -> sympy.Expr:
    """Bytes the deciding expert-parallel rank holds beyond an even split when the routed experts
    do not divide over the N_tp·N_ep ranks (vLLM ``determine_expert_map``: the first E mod n ranks
    hold ⌈E/n⌉ experts, the rest ⌊E/n⌋): the rank's routed-expert bytes (an even 1/n share,
    ``weights``: ``formulas.weights_per_gpu``) · (⌈E/n⌉·n/E − 1). 0 when they divide or the experts
    are sliced. ``lay`` None: for every layout of a sweep (``deploy``), x_ep · that factor with
    n = N_tp·N_ep."""
    vals = model.values
    if (lay is not None and not lay.whole_experts) or sym.E not in vals:
        return sympy.Integer(0)
    E = int(vals[sym.E])
    if lay is None:
        n = sym.N_tp * sym.N_ep
        factor = placed(sym.x_ep, sympy.ceiling(sympy.Integer(E) / n) * n / E - 1, sympy.Integer(0))
    else:
        n = lay.expert_ranks
        if E % n == 0:
            return sympy.Integer(0)
        factor = sympy.Rational(-(-E // n) * n, E) - 1
    routed = sum((v for path, v in weights.flatten().items() if path.rsplit("/", 1)[-1].startswith("experts_")),
                 sympy.Integer(0))
    return routed * factor


def deciding_rank(model, lay: Layout, stages: list[dict] | None = None) -> dict:
    """The rank vLLM's KV sizing is decided on (``get_kv_cache_configs`` takes the fewest blocks
    over the workers).

    Expert parallelism: when the routed experts do not divide over the N_tp·N_ep ranks, EP rank 0
    holds ⌈E/n⌉ of them (``determine_expert_map``), one more than the last ranks: it decides
    (``uneven_experts`` adds the difference to the weights). Pipeline stages: vLLM splits the layers
    by ``pp_partition``; ``stages`` (``plan``: each stage costed by its own layers, ``StageFormula``,
    evaluated) name the one with the fewest KV blocks (ties: the later stage); without them, the
    stage with the most layers (ties: the last, which holds the head and runs the sampler)."""
    vals = model.values
    out = {"pp_stage": 0, "tp_rank": 0}
    if lay.whole_experts and sym.E in vals and int(vals[sym.E]) % lay.expert_ranks:
        E, n = int(vals[sym.E]), lay.expert_ranks
        out.update(ep_rank=0, local_experts=-(-E // n),
                   why_ep=f"E = {E} over {n} expert ranks: ranks 0..{E % n - 1} hold {-(-E // n)}, "
                          f"the rest {E // n} (vLLM determine_expert_map); rank 0 decides")
    if lay.pp == 1:
        out["why"] = "one stage: every tensor-parallel rank holds the same" + (
            "; the expert-parallel rank with the most experts decides" if "ep_rank" in out else "")
        return out
    layers = sum(exact(g.count, vals) for g in model.groups if not g.tower)
    parts = [s_["layers"] for s_ in stages] if stages else pp_partition(int(layers), lay.pp)
    out["layers_per_stage"] = parts
    if not max(parts):
        out["why"] = "no layers"
        return out
    if stages:
        known = [i for i, s_ in enumerate(stages) if s_.get("num_blocks") is not None]
        if known:
            stage = min(known, key=lambda i: (stages[i]["num_blocks"], -i))
            out.update(pp_stage=stage, stages=stages,
                       why=f"stage {stage} affords the fewest KV blocks ({stages[stage]['num_blocks']:,}) of vLLM's "
                           f"split {parts}, each stage costed by its own layers' weights, peak and pages "
                           f"(embedding on stage 0, head and sampler on the last); vLLM takes the fewest")
            return out
        # no budget: the stage that holds the most before its pages, then the widest pages
        stage = max(range(len(stages)), key=lambda i: (stages[i]["fixed_bytes"], stages[i]["kv_block_bytes"], i))
        out.update(pp_stage=stage, stages=stages,
                   why=f"no GPU budget: stage {stage} holds the most weights and peak of vLLM's split {parts}")
        return out
    # ties go to the last stage: it holds the head and runs the sampler (``is_last_rank``), whose
    # terms are the profile's widest on large vocabularies
    stage = max(range(lay.pp), key=lambda i: (parts[i], i == lay.pp - 1, i == 0))
    out.update(pp_stage=stage,
               why=f"stage {stage} holds {parts[stage]} of {layers} layers (vLLM's split {parts}); "
                   f"symcost bounds it as ⌈L/pp⌉ = {-(-int(layers) // lay.pp)} layers + the larger of "
                   f"embedding and head")
    return out


#: the accounting ``memory`` states with every answer
NOTE = ("engine accounting per GPU (--engine, --vllm-version): budget = usable memory x --mem-util; weights "
        "= checkpoint bytes (quantization_config, scales included) split by the layout, as loaded (MXFP4 "
        "experts padded for the MoE kernel); activations = vLLM's profiled peak, the larger of the forward over "
        "M = max_num_batched_tokens tokens and the dummy sampler over S = max_num_seqs sequences "
        "(activation_terms; Model Runner V2, --model-runner, adds the sampler state it holds); overhead = non-torch "
        "memory (modelled, or --overhead-gib) + CUDA graphs (vLLM >= 0.21's estimate, Model Runner V2's from 0.29, or "
        "--cudagraph-gib); the "
        "rest holds KV pages (vLLM block sizes, hybrid page alignment); SGLang: mem_fraction_static pool, "
        "activations outside it")


def gpus_needed(model, raw: dict, setup: ServeSetup, *, T: int, batch: int, max_tp: int = 64,
                plans: dict | None = None) -> int | None:
    """The smallest tensor-parallel size (a power of two up to ``max_tp``, nothing else split) whose
    plan holds ``batch`` requests of ``T`` tokens on ``setup.gpu``; None without a GPU or if none does.
    ``plans``: {layout: plan of ``setup`` at that layout} already made (``memory``'s own), not made again;
    each plan made here is added to it."""
    if setup.gpu is None:
        return None
    plans = {} if plans is None else plans
    tp = 1
    while tp <= max_tp:
        try:
            check_layout(model, Layout(tp=tp))
            q = plans.get(Layout(tp=tp))
            if q is None:
                q = plans[Layout(tp=tp)] = plan(model, raw, replace(setup, layout=Layout(tp=tp)), T=T)
            if q.max_batch is not None and q.max_batch >= batch:
                return tp
        except SymcostError:
            pass
        tp *= 2
    return None


def quantization(raw: dict, setup: ServeSetup) -> str:
    """How the weights are costed, in words: the dtype asked for, or the checkpoint's scheme."""
    if setup.weights_dtype:
        return setup.weights_dtype
    s = scheme(raw, None, setup.quant_fallback)
    return s.base.label if s.method == "none" else f"{s.method}: {s.layout.label}"


@dataclass(frozen=True)
class Memory:
    """``symcost memory``: the plan of one layout, and what it means for ``batch`` requests of ``T``."""

    plan: Plan
    T: int
    batch: int
    cache_bytes: int  # the KV cache of the batch, whole model, in --kv-dtype
    total_bytes: int  # weights + cache + every rank's activations and overhead
    per_gpu_bytes: int
    gpus_needed: int | None
    quantization: str

    @property
    def fits(self) -> bool | None:
        p = self.plan
        return None if p.gpu is None else bool(p.max_batch and p.max_batch >= self.batch)


def memory(model, raw: dict, setup: ServeSetup, *, T: int, batch: int) -> Memory:
    """Serving memory per GPU of ``setup`` for ``batch`` requests of ``T`` tokens, and the smallest
    tensor-parallel size that holds them (``gpus_needed``)."""
    p = plan(model, raw, setup, T=T)
    cache, _ = cache_bytes_total(model, setup.kv_dtype, model.values_with(T=T, B=batch))
    per_gpu = p.per_gpu_bytes(batch)
    needed = gpus_needed(model, raw, setup, T=T, batch=batch, plans={setup.layout: p})
    total = p.weights_total + cache + setup.layout.gpus * (p.activation_rank + p.overhead_rank)
    return Memory(p, T, batch, cache, total, per_gpu, needed, quantization(raw, setup))
