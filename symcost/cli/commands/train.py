"""Training: ``train`` (memory per GPU, FLOPs, step time; ``--search``), ``comm``, ``budget``, ``presets``.

Every call into ``symcost.training`` is made here, from the keyword arguments ``_training`` turns the
parsed options into (one place: ported whole when the training API takes one settings object).
"""
from __future__ import annotations

import argparse
import time

import sympy

from ...architectures import loader
from ...core.errors import SymcostError
from ...core.notation import sym
from ...core.terms import Terms
from ...core.units import human_bytes, human_count
from ...hardware.gpus import gpu as find_gpu
from ...training import compare_presets, run, train_memory
from ...training.comm import comm
from ...training.framework import budget_bytes, framework, padded_vocab
from ...training.mtp import with_mtp
from ...training.recompute import Recompute
from ...training.setup import TrainSetup, check_capacity
from .. import options as o
from .common import check_positions

_SHARED = (o.SEQ.but(required=True), o.MICRO_BATCH.but(required=True), o.GLOBAL_BATCH,
           o.DP, o.TP, o.PP, o.EP, o.CP, o.ETP)
_STATES = (o.RECOMPUTE_METHOD, o.RECOMPUTE_LAYERS, o.OPTIMIZER, o.GRAD_DTYPE, o.ACT_DTYPE, o.ATTENTION_KERNEL)
_STEP = (o.GPU, o.MFU, o.OVERLAP, o.IB_GBS, o.GPUS_PER_NODE, o.ALPHA_US, o.ATTENTION_IMPL)
_TAIL = (o.CAPACITY_FACTOR, o.PCIE_GBS, o.PRECISION, o.FP8_ALL_GATHER, o.SCHEDULE, o.HIDE, o.FIRST_STAGE_LAYERS,
         o.LAST_STAGE_LAYERS, o.ACCOUNT_EMBEDDING, o.ACCOUNT_LOSS, o.PIPELINE_LAYOUT)
_MEMORY = (o.FRAMEWORK, o.HEADROOM_GIB, o.LOSS_CHUNKS, o.COMPILED_LOSS, o.RESHARD, o.VOCAB_PAD, o.RECOMPUTE_MODULES,
           o.OFFLOAD_ACTIVATIONS, o.MTP)
OPTIONS = {
    "train": (o.MODEL, o.SEQ.but(required=True), o.MICRO_BATCH.but(help=o.MICRO_BATCH.help + " (required without "
              "--search, which sweeps it)"), *_SHARED[2:], o.swept(o.SP), o.swept(o.ZERO), o.swept(o.RECOMPUTE), *_STATES,
              o.SEARCH, o.GPUS.but(help="world size for --search"), o.ACTIVATIONS, o.SCAN, *_STEP,
              o.swept(o.VIRTUAL_STAGES), o.swept(o.OFFLOAD), o.swept(o.HSDP_SHARD), *_TAIL, o.CUDA_GRAPHS, *_MEMORY),
    "comm": (o.MODEL, *_SHARED, o.SP, o.ZERO, o.RECOMPUTE, *_STATES, *_STEP, o.VIRTUAL_STAGES, o.OFFLOAD,
             o.HSDP_SHARD, *_TAIL, o.FRAMEWORK, o.MTP),
    "budget": (o.MODEL, o.TOKENS.but(required=True), o.GPUS.but(required=True), o.GPU.but(required=True),
               o.MFU.but(default=None, help="default: 0.4, or implied by --gpu-hours"), o.GPU_HOURS, o.FLOPS,
               o.PEAK_DTYPE, o.FLOPS_CONVENTION,
               o.SEQ.but(default=4096), o.GLOBAL_BATCH.but(help="sequences per step, for the step time"), o.MTP),
    "presets": (o.MODEL, o.SEQ.but(required=True), o.BATCH, o.MTP),
}

#: options ``train --search`` sweeps unless given, and the value each has when it is not given
SWEPT_DEFAULTS = {"zero": 0, "recompute": "none", "sp": False, "virtual_stages": 1, "offload": "none",
                  "hsdp_shard": None}
COMM_NOTE = ("bytes the busiest GPU of each dimension sends per step (ring collectives); step time: alpha-beta "
             "per collective, NVLink inside a node, scale-out link across nodes (the expert all-to-all: its off-node "
             "share over the scale-out link while the rest crosses NVLink); compute per kernel class at its "
             "measured efficiency, each framework's overlap and the schedule's bubble (with --mfu: compute at that "
             "share of the dense BF16 peak, --overlap hidden, bubble (p-1)/(v*m+p-1)); dp_replicate: HSDP's all-reduce "
             "across replicas; host: CPU offload's PCIe bytes, both directions, at --pcie-gbs")

# -- parsed options -> symcost.training ------------------------------------------------------------
def _single(args) -> argparse.Namespace:
    """One layout (``train`` without --search, ``comm``): an option not given takes its default
    (--hsdp-shard none = shard over all of dp)."""
    given = vars(args)
    return argparse.Namespace(**{**given, **{k: d for k, d in SWEPT_DEFAULTS.items() if given[k] is None
                                             or (k == "hsdp_shard" and given[k] == "none")}})


def _parallel(args) -> dict:
    return {k: getattr(args, k) for k in ("dp", "tp", "pp", "ep", "cp")}


def _training(args) -> TrainSetup:
    """Every setting of ``symcost.training`` the options say, as one ``TrainSetup``."""
    return TrainSetup.of(seq=args.seq, micro_batch=args.micro_batch, global_batch=args.global_batch, zero=args.zero,
                sp=args.sp, recompute=args.recompute, hsdp_shard=args.hsdp_shard, offload=args.offload,
                virtual=args.virtual_stages, capacity=args.capacity_factor,  # an exact Fraction (``ratio``)
                recompute_method=args.recompute_method, recompute_layers=args.recompute_layers,
                **_parallel(args), optimizer=args.optimizer, grad_dtype=args.grad_dtype,
                kernel=args.attention_kernel, act_dtype=args.act_dtype,
                activation_model=getattr(args, "activations", "engine"), scan=getattr(args, "scan", "fused"),
                framework=args.framework, reshard=getattr(args, "reshard_after_forward", "default"),
                loss_chunks=getattr(args, "loss_chunks", 1), recompute_modules=_modules(args),
                etp=args.etp, first_stage_layers=args.first_stage_layers, last_stage_layers=args.last_stage_layers,
                account_embedding=args.account_embedding, account_loss=args.account_loss,
                pipeline_layout=args.pipeline_layout, precision=getattr(args, "precision", "bf16"),
                schedule=getattr(args, "schedule", None), act_offload=getattr(args, "offload_activations", None),
                mtp=getattr(args, "mtp", "auto"), compiled_loss=getattr(args, "compiled_loss", False),
                attention_impl=getattr(args, "attention_impl", "fused"))


def _links(args, g):
    return run.links(g, ib_gbs=args.ib_gbs, gpus_per_node=args.gpus_per_node, alpha_us=args.alpha_us,
                     pcie_gbs=args.pcie_gbs)


def _step(m, args, g, tm, cm, setup: TrainSetup) -> dict:
    """Without --mfu: kernels by class, the framework's overlap, the schedule's bubble
    (``run.kernel_step``); with --mfu: compute at that MFU, --overlap hidden (``run.step``)."""
    if args.mfu is None:
        from ...training.overlap import parse_hide
        return run.kernel_step(m, tm, cm, setup, gpu=g, links=_links(args, g), schedule=args.schedule,
                               precision=args.precision, hide=parse_hide(args.hide),
                               fp8_all_gather=args.fp8_all_gather, overlap=args.overlap,
                               cuda_graphs=getattr(args, "cuda_graphs", None))  # comm has no --cuda-graphs
    if args.schedule not in (None, "1f1b", "interleaved") or args.hide or args.precision != "bf16" \
            or args.fp8_all_gather or getattr(args, "cuda_graphs", None):
        raise SymcostError("--schedule zb-h1/dualpipe, --hide, --precision, --fp8-all-gather and --cuda-graphs "
                           "shape the computed "
                           "step time: "
                           "drop --mfu (which replaces it by compute at one utilisation)")
    return run.step(tm, cm, setup, gpu=g, links=_links(args, g), mfu=args.mfu, overlap=args.overlap or 0.0)


def _memory_and_step(m, args, g):
    """``train``: the memory of the layout, and its step time on ``g`` (None without a GPU)."""
    setup = _training(args)
    tm = train_memory(m, setup, gpus_per_node=args.gpus_per_node)
    if g is None:
        return tm, None
    cm = comm(m, setup.replace(recompute=run.comm_recompute(args.recompute, args.cp)))
    return tm, _step(m, args, g, tm, cm, setup)


def _comm_and_step(m, args):
    """``comm``: the bytes of the layout, and its GPU and step time with --gpu (else None, None)."""
    check_capacity(m, args.capacity_factor)  # a dense model first says it has no experts
    if args.capacity_factor is not None and args.ep == 1 and not args.gpu:
        raise SymcostError("--capacity-factor changes communication only with --ep > 1 (the all-to-all) "
                           "or --gpu (the padded expert FLOPs in the step time)")
    setup = _training(args)
    cm = comm(m, setup)
    if not args.gpu:
        return cm, None, None
    tm = train_memory(m, setup)
    g = find_gpu(args.gpu)
    return cm, g, _step(m, args, g, tm, cm, setup)


def _hide(args):
    from ...training.overlap import parse_hide
    return parse_hide(args.hide)


def _search(m, args):
    """``train --search``: the sweep (``training.search``) and the time it took."""
    if args.mfu is None and args.overlap is not None:
        raise SymcostError("--overlap (one hidden share for every collective) applies with --mfu; without it "
                           "each framework's overlap is computed per dimension (override one with --hide DIM=on|off)")
    from ...training.search import search  # lazy: NumPy (~70 ms), which only --search needs
    g = find_gpu(args.gpu)
    base = TrainSetup.of(seq=args.seq, global_batch=args.global_batch, capacity=args.capacity_factor,
                         kernel=args.attention_kernel, act_dtype=args.act_dtype, scan=args.scan,
                         grad_dtype=args.grad_dtype, optimizer=args.optimizer, framework=args.framework,
                         loss_chunks=args.loss_chunks, mtp=args.mtp, compiled_loss=args.compiled_loss,
                         attention_impl=args.attention_impl)
    t0, c0 = time.perf_counter(), time.process_time()
    r = search(m, base, gpus=args.gpus, gpu=g, zero=args.zero, recompute=args.recompute, sp=args.sp,
               virtual=args.virtual_stages, hsdp=args.hsdp_shard, offload=args.offload, links=_links(args, g),
               mfu=args.mfu, overlap=args.overlap or 0.0, headroom_gib=args.headroom_gib,
               precision=args.precision, hide=_hide(args), cuda_graphs=args.cuda_graphs)
    r["seconds"] = time.perf_counter() - t0
    r["cpu_seconds"] = time.process_time() - c0
    return r


def _modules(args):
    text = getattr(args, "recompute_modules", None)
    return None if text is None else tuple(x.strip() for x in text.split(",") if x.strip())


def _convention(args) -> str:
    return framework(args.framework).label


def _grad_dtype(args) -> str:
    """The gradient dtype the gradients line uses: the option, or the framework's."""
    if args.grad_dtype is not None:
        return args.grad_dtype
    setup = _training(args)
    bg = setup.states.bytes(args.zero)[1]
    return {2: "bf16", 4: "fp32"}.get(bg, f"{bg} B (bf16 + fp32 partitions)")


# -- commands --------------------------------------------------------------------------------------
def _capacity(args):
    return None if args.capacity_factor is None else str(args.capacity_factor)


def _formula(m, tm) -> dict:
    def tot(v):
        return v.total if isinstance(v, Terms) else v
    # "total": states + gathered + fp8 copies + activations + Max(loss_peak, working) (``memory.total_formula``)
    return {k: str(tot(v).xreplace(m.values)) for k, v in tm.formula.items()
            if not (k == "fp8_weights" and v == 0)}


def _train_payload(m, args, tm, g) -> dict:
    return {"model": m.name, "seq": args.seq, "micro_batch": args.micro_batch,
            "global_batch": args.global_batch or args.micro_batch * args.dp, "per_gpu_bytes": tm.per_gpu,
            "breakdown": {"weights": tm.weights, "gradients": tm.gradients, "optimizer": tm.optimizer,
                          "gathered": tm.gathered,
                          **({"all_gather_pool": tm.all_gather_pool} if tm.all_gather_pool else {}),
                          **({} if args.precision == "bf16" else {"fp8_weights": tm.fp8_weights}),
                          "activations": tm.activations,
                          **({"pipeline_buffers": tm.pipeline_buffers} if tm.pipeline_buffers else {}),
                          "loss_peak": tm.loss_peak,
                          **({"allocator_cached": tm.allocator_cached} if tm.allocator_cached else {}),
                          "recompute_working": tm.recompute_working},
            "framework": args.framework, "convention": _convention(args),
            "headroom_gib": args.headroom_gib, "budget_bytes": None if g is None else budget_bytes(g, args.headroom_gib),
            "host_bytes_per_gpu": tm.host, "offload": args.offload,
            **({} if args.offload_activations is None else {"host_activations_bytes_per_gpu": tm.host_activations}),
            **({} if tm.host_node is None else {"host_bytes_per_node_deepspeed_estimator": tm.host_node}), "hsdp_shard": args.hsdp_shard,
            "virtual_stages": args.virtual_stages, "capacity_factor": _capacity(args),
            "heaviest_stage": tm.stage, "micro_batches": tm.micro_batches, "in_flight_micro_batches": tm.in_flight,
            "stages": [{k: v for k, v in r.items() if not (k == "fp8_weights" and args.precision == "bf16")
                        and not (k == "host_activations" and args.offload_activations is None)} for r in tm.stages],
            "flops_per_step": tm.flops_per_step, "gpus": args.dp * args.tp * args.pp * args.cp,
            "fits": None if g is None else tm.per_gpu <= budget_bytes(g, args.headroom_gib), "gpu": g.name if g else None,
            "zero": args.zero, "sp": args.sp, "recompute": args.recompute,
            "recompute_method": args.recompute_method, "recompute_layers": args.recompute_layers,
            "optimizer": args.optimizer, "grad_dtype": _grad_dtype(args), "attention_kernel": args.attention_kernel,
            "reshard_after_forward": args.reshard_after_forward, "loss_chunks": args.loss_chunks,
            **({"compiled_loss": True} if args.compiled_loss else {}),
            "vocab_size": int(m.values[sym.V]) if sym.V in m.values else None,
            "act_dtype": args.act_dtype, "scan": args.scan, "activations_model": args.activations,
            "notes": tm.notes, "formula": _formula(m, tm), **_parallel(args)}


def cmd_train(args, out):
    m = with_mtp(loader.build(args.model), args.mtp)
    check_positions(m, args.seq, "--seq")
    if args.search:
        if args.vocab_pad:
            raise SymcostError("--vocab-pad with --search: the padding depends on each candidate's tp; pin a layout "
                               "(drop --search)")
        return _cmd_search(m, args, out)
    if args.vocab_pad:
        m = padded_vocab(m, args.vocab_pad, args.tp)
    if args.micro_batch is None:
        raise SymcostError("train: --micro-batch is required (without --search)")
    args = _single(args)
    g = find_gpu(args.gpu) if args.gpu else None
    tm, step = _memory_and_step(m, args, g)
    payload = _train_payload(m, args, tm, g)
    if step is not None:
        payload["step"] = step
    label = Recompute(args.recompute, args.recompute_method, args.recompute_layers, _modules(args)).describe()
    lines = [f"{m.name}: training memory per GPU (heaviest pipeline stage {tm.stage}), seq={args.seq}, "
             f"micro-batch={args.micro_batch}, ZeRO-{args.zero}, {label}, {args.optimizer}"]
    tag = f"[{args.framework or 'symcost'}]"
    lines += [f"  {k:<18} {v:>22,}  {human_bytes(v)}  {tag}" for k, v in payload["breakdown"].items()]
    lines.append(f"  {'per GPU':<18} {tm.per_gpu:>22,}  {human_bytes(tm.per_gpu)}"
                 + (f"   fits on {g.name}: {payload['fits']} (driver-reported {human_bytes(g.usable_bytes)} "
                    f"- headroom {args.headroom_gib:g} GiB)" if g else ""))
    if args.offload != "none":
        lines.append(f"  {'host (offloaded)':<18} {tm.host:>22,}  {human_bytes(tm.host)}  per GPU, in CPU memory")
    if args.offload_activations is not None:
        lines.append(f"  {'host activations':<18} {tm.host_activations:>22,}  {human_bytes(tm.host_activations)}  "
                     f"per GPU, offloaded saved activations in pinned CPU memory")
    if tm.host_node is not None:
        lines.append(f"  {'host per node':<18} {tm.host_node:>22,}  {human_bytes(tm.host_node)}  DeepSpeed's estimator "
                     f"(x1.5 buffer factor, {args.gpus_per_node} GPUs per node)")
    lines.append(f"  micro-batches per step {tm.micro_batches}, in flight on that stage {tm.in_flight}")
    lines.append(f"  FLOPs per step (exact, causal): {tm.flops_per_step:,} = {human_count(tm.flops_per_step)}FLOP")
    if step is not None:
        lines.append(_step_line(step, g, args))
    lines += [f"  note: {n}" for n in tm.notes]
    out.emit(payload, "\n".join(lines))


def _step_line(step: dict, g, args) -> str:
    if step.get("mfu") is not None:
        return (f"  step time on {g.name} at MFU {args.mfu:.0%}, overlap {args.overlap or 0:.0%}: "
                f"{step['step_time_s']:.3f} s "
                f"(bubble {step['bubble']:.1%})")
    exposed = sum(step["exposed_comm_s"].values())
    hidden = f"{step['framework']} overlap" if step["overlap"] is None else f"--overlap {step['overlap']:g}"
    attn = "" if step.get("attention_impl", "fused") == "fused" else ", attention at FlashAttention-2 speed"
    return (f"  step time on {g.name} ({step['precision']} GEMMs, kernels at measured efficiency{attn}, {hidden}, "
            f"{step['schedule']}): {step['step_time_s']:.3f} s = compute {step['compute_s']:.3f} + bubble "
            f"{step['bubble_s']:.3f} + exposed comm {exposed:.3f}; implied MFU {step['mfu_implied']:.1%}, "
            f"HFU {step['hfu_implied']:.1%}")


def _search_table(best: list[dict]) -> list[str]:
    head = ("dp", "tp", "pp", "ep", "cp", "v", "schedule", "mb", "m", "ZeRO", "hsdp", "offload", "recompute", "sp",
            "s/step", "per GPU")
    rows = [(b["dp"], b["tp"], b["pp"], b["ep"], b["cp"], b["virtual_stages"], b.get("schedule", "-"), b["micro_batch"],
             b["micro_batches"], b["zero"], "-" if b["hsdp_shard"] is None else b["hsdp_shard"], b["offload"],
             b["recompute"], "on" if b["sp"] else "off", f"{b['step_time_s']:.3f}", human_bytes(b["per_gpu_bytes"]))
            for b in best]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    return ["  " + "  ".join(str(x).rjust(w) for x, w in zip(row, widths)) for row in (head, *rows)]


def _cmd_search(m, args, out):
    missing = [f for f, x in (("--gpus", args.gpus), ("--gpu", args.gpu), ("--global-batch", args.global_batch)) if not x]
    if missing:
        raise SymcostError(f"--search needs --gpus, --gpu and --global-batch (missing: {', '.join(missing)})")
    if args.activations != "engine":
        raise SymcostError("--search evaluates the engine's activations; drop --activations korthikanti")
    if args.recompute_modules is not None:
        raise SymcostError("--recompute-modules applies to one layout (drop --search, which sweeps --recompute)")
    if (args.recompute_method, args.recompute_layers) != ("uniform", 1):
        raise SymcostError("--search sweeps --recompute none|selective|full with every layer its own "
                           "checkpoint; --recompute-method / --recompute-layers apply to one layout (drop --search)")
    fixed = [f for f, given in (("--etp", args.etp), ("--first-stage-layers", args.first_stage_layers),
                                ("--last-stage-layers", args.last_stage_layers),
                                ("--account-embedding", args.account_embedding), ("--account-loss", args.account_loss),
                                ("--pipeline-layout", args.pipeline_layout), ("--schedule", args.schedule),
                                ("--offload-activations", args.offload_activations)) if given]
    if fixed:
        raise SymcostError(f"--search sweeps even pipeline splits under 1F1B/interleaving/ZB-H1 with experts sliced "
                           f"over tp; {', '.join(fixed)} apply to one layout (drop --search)")
    r = _search(m, args)
    payload = {"model": m.name, "gpus": args.gpus, "gpu": args.gpu, "seq": args.seq,
               "global_batch": args.global_batch, "capacity_factor": _capacity(args), **r}
    pins = ", ".join(f"{k}={v}" for k, v in r["pinned"].items())
    lines = [f"{m.name}: {r['candidates']:,} candidates on {args.gpus} x {args.gpu} ({r['fitting']:,} fit), "
             f"evaluated in {r['seconds']:.2f} s ({r['cpu_seconds']:.2f} s CPU)"
             + (f"; pinned: {pins}" if pins else "") + "; fastest that fit:", *_search_table(r["best"])]
    if not r["best"]:
        lines.append(f"  (none fits in {human_bytes(budget_bytes(find_gpu(args.gpu), args.headroom_gib))}: the "
                     f"driver-reported memory minus --headroom-gib {args.headroom_gib:g})")
    if r["not_costed"]:
        lines.append(f"  {r['not_costed']:,} setups left out: an activation tensor would split into a fraction of "
                     f"a byte (a vocabulary- or sequence-parallel split that tp does not divide)")
    if args.capacity_factor is not None:
        lines.append(f"  MoE capacity factor {args.capacity_factor} (not swept: it changes what is computed)")
    out.emit(payload, "\n".join(lines))


def cmd_comm(args, out):
    m = with_mtp(loader.build(args.model), args.mtp)
    check_positions(m, args.seq, "--seq")
    args = _single(args)
    cm, g, step = _comm_and_step(m, args)
    per, t = cm["bytes"], None if step is None else step["step_time_s"]
    formula = {k: str(e) for k, e in cm["formula"].items()}
    formula["total"] = str(sum(cm["formula"].values(), sympy.Integer(0)))
    payload = {"model": m.name, "bytes_per_step": per, "total_bytes_per_step": sum(per.values()),
               "formula": formula, "collectives_per_step": cm["collectives"], "micro_batches": cm["micro_batches"],
               "step_time_s": t, "step": step, "gpu": g.name if g else None, "zero": args.zero,
               "sp": args.sp, "recompute": args.recompute, "recompute_method": args.recompute_method,
               "recompute_layers": args.recompute_layers, **_parallel(args),
               "offload": args.offload, "hsdp_shard": args.hsdp_shard, "virtual_stages": args.virtual_stages,
               "capacity_factor": _capacity(args), "note": COMM_NOTE}
    lines = [f"{m.name}: communication per GPU per training step ({cm['micro_batches']} micro-batches)"]
    lines += [f"  {k:<12} {v:>22,}  {human_bytes(v)}  in {cm['collectives'][k]} collectives"
              for k, v in per.items()]
    if t is not None:
        lines.append(_step_line(step, g, args))
    out.emit(payload, "\n".join(lines))


def cmd_budget(args, out):
    m = with_mtp(loader.build(args.model), args.mtp)
    check_positions(m, args.seq, "--seq")
    g = find_gpu(args.gpu)
    source = ("--flops" if args.flops is not None else
              "exact training FLOPs (3 x forward, causal) per token x tokens" if args.flops_convention == "exact" else
              f"{args.flops_convention} preset FLOPs per token x tokens")
    r = run.budget(m, gpu=g, tokens=args.tokens, gpus=args.gpus, seq=args.seq, mfu=args.mfu,
                   gpu_hours=args.gpu_hours, flops=args.flops, global_batch=args.global_batch,
                   peak_dtype=args.peak_dtype, convention=args.flops_convention)
    payload = {"model": m.name, "gpu": g.name, "seq": args.seq, "flops_source": source, **r}
    lines = [f"{m.name}: training budget for {args.tokens:,} tokens on {args.gpus} x {g.name}",
             f"  FLOPs {r['flops']:.4g} ({source})",
             f"  at MFU {r['mfu']:.1%}: {r['wall_time_s'] / 86400:.2f} days, {r['gpu_hours'] / 1e6:.3f}M GPU-hours, "
             f"{r['tokens_per_s']:.4g} tokens/s"]
    if "implied_mfu" in r:
        lines.append(f"  {args.gpu_hours:,.0f} GPU-hours imply MFU {r['implied_mfu']:.1%} of the "
                     f"{r['peak_dtype'].upper()} peak")
    out.emit(payload, "\n".join(lines))


def cmd_presets(args, out):
    m = with_mtp(loader.build(args.model), args.mtp)
    rows = compare_presets(m, args.seq, args.batch)
    lines = [f"{m.name}: training FLOPs per step, seq={args.seq}, batch={args.batch}, by convention"]
    for r in rows:
        value = f"{r['flops']:>26,}" if r["flops"] is not None else f"{'n/a':>26}"
        share = f"{r['ratio_to_exact']:.4f}x" if r["ratio_to_exact"] else "      "
        lines.append(f"  {r['preset']:<20} {value}  {share}  {r['note']}")
        if r.get("minus_exact"):
            lines.append(f"  {'':<20} minus exact, as a function of T and B: {r['minus_exact']}")
    out.emit({"model": m.name, "seq": args.seq, "batch": args.batch, "presets": rows}, "\n".join(lines))
