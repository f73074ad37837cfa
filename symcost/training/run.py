"""A training run on real hardware, from the results of the calculators: the cluster's links, the step
time of one layout (``steptime.step_time`` fed by ``train_memory`` and ``comm``), the token budget.

Moved down from the command line (``symcost train``, ``comm``, ``budget``); the calculators themselves
(``memory``, ``comm``, ``search``) are called by their callers.
"""
from __future__ import annotations

import math
from fractions import Fraction

from ..hardware.links import Links
from .flops import train_flops
from .steptime import budget as budget_at
from .steptime import step_time


def links(gpu, *, ib_gbs: float, gpus_per_node: int, alpha_us: float, pcie_gbs: float) -> Links:
    """``Links.of(gpu)`` from the options' units: ``ib_gbs`` GB/s per GPU across nodes, ``alpha_us`` µs per
    collective, ``pcie_gbs`` GB/s to the host per direction."""
    return Links.of(gpu, ib_bytes_s=ib_gbs * 1e9, gpus_per_node=gpus_per_node, alpha_s=alpha_us * 1e-6,
                    pcie_bytes_s=pcie_gbs * 1e9)


def comm_recompute(recompute: str, cp: int) -> str:
    """The recomputation that changes communication: selective recompute re-runs the attention core,
    which sends nothing unless context parallelism (ring attention) splits it."""
    return "none" if recompute == "op" or (recompute == "selective" and cp == 1) else recompute


def step(tm, cm: dict, setup, *, gpu, links: Links, mfu: float, overlap: float = 0.0) -> dict:
    """The step time of ``setup`` (``setup.TrainSetup``; ``steptime.step_time``): ``tm``
    (``train_memory``) gives the FLOPs per step, ``cm`` (``comm``) the bytes and collectives;
    compute at ``mfu`` of the GPU's dense BF16 peak."""
    p = setup.plan
    world = p.dp * p.tp * p.pp * p.cp
    return step_time(tm.flops_per_step // world, cm, setup, peak_flops=gpu.bf16_tflops * 1e12, mfu=mfu,
                     links=links, overlap=overlap)


def budget(model, *, gpu, tokens: int, gpus: int, seq: int = 4096, mfu: float | None = None,
           gpu_hours: float | None = None, flops: int | None = None, global_batch: int | None = None,
           peak_dtype: str = "bf16", convention: str = "exact") -> dict:
    """Wall time, tokens/s and GPU-hours to train ``tokens`` tokens on ``gpus`` × ``gpu``
    (``steptime.budget``): the FLOPs are ``flops`` if given, else the exact training FLOPs per token at
    ``seq`` × tokens; with ``global_batch``, the step time and the number of steps too. ``peak_dtype``
    fp8: the MFU is of the FP8 dense peak (FP8 training's GEMMs; refused where the GPU has none).
    ``convention``: the FLOPs per sequence counted exactly (3 × forward, causal) or by a published
    closed form (``flops.preset_6nd``, ``preset_torchtitan``, ``preset_megatron``)."""
    from ..core.errors import SymcostError
    from .flops import preset_6nd, preset_megatron, preset_torchtitan
    presets = {"6nd": preset_6nd, "torchtitan": preset_torchtitan, "megatron": preset_megatron}
    v1 = model.values_with(T=seq, B=1)
    if convention == "exact":
        per_seq = train_flops(model).total_at(v1)
    elif convention in presets:
        per_seq = presets[convention](model).xreplace(v1)
        per_seq = Fraction(int(per_seq.p), int(per_seq.q))
    else:
        raise SymcostError(f"--flops-convention: unknown {convention!r} (exact, 6nd, torchtitan, megatron)")
    # a count, kept exact: tokens/seq sequences (to the nearest FLOP when tokens is no multiple of seq)
    total = flops if flops is not None else round(Fraction(per_seq, seq) * tokens)
    if peak_dtype == "fp8" and "fp8" not in gpu.peak_tflops:
        raise SymcostError(f"--peak-dtype fp8: {gpu.name} has no FP8 tensor cores")
    peak = float(gpu.peak(peak_dtype)[0])
    r = budget_at(total, gpus=gpus, peak_flops=peak, mfu=mfu, gpu_hours=gpu_hours, tokens=tokens)
    out = {"step_time_s": None, **r, "peak_dtype": peak_dtype, "flops_convention": convention}
    if global_batch:
        steps = Fraction(tokens, global_batch * seq)
        out["step_time_s"] = r["wall_time_s"] / float(steps)
        out["steps"] = math.ceil(steps)  # a count: the optimizer steps that cover the tokens
    return out


def kernel_step(model, tm, cm: dict, setup, *, gpu, links: Links, schedule: str | None = None, precision: str = "bf16", hide: dict | None = None,
                fp8_all_gather: bool = False, overlap: float | None = None, cuda_graphs=None) -> dict:
    """The step time of ``setup`` from the hardware (no MFU): every pipeline rank's kernels by class
    (``compute``), the optimizer step, the overlap of the setup's ``--framework`` (``overlap``) and the schedule's bubble
    (``steptime.kernel_step``); ``fp8_all_gather``: ZeRO-3 gathers the weights in FP8
    (``compute.fp8_all_gather_share``); ``cuda_graphs``: the captured scopes (``host_launch``: each
    rank's micro-batch is at least its host's kernel-issue time; default none). ``tm`` (``train_memory``) gives the optimizer shard and the saved
    activations the elementwise traffic is counted from, ``cm`` (``comm``) the collectives."""
    from . import compute, host_launch, ring_attention
    from .memory import train_memory
    from .moe_work import moe_shape
    from .optimizer_offload import cpu_adam_seconds, d2h_hides, host_split, offloaded_params
    from .plan import rank_stages
    from .recompute import add_up, recomputed_units
    from .schedule import check_schedule
    from .steptime import comm_seconds
    from .steptime import kernel_step as step_at

    from .mtp import with_mtp
    model = with_mtp(model, setup.mtp)  # the MTP modules trained (their kernels on the last rank)
    compute.check_precision(precision, gpu)
    graphs = host_launch.parse_graphs(cuda_graphs)
    schedule = schedule or ("interleaved" if setup.virtual > 1 else "1f1b")
    check_schedule(schedule, setup.plan.pp, setup.micro_batches, setup.virtual)
    plain = tm if setup.recompute.mode == "none" else train_memory(model, setup.replace(recompute="none"))
    stages = rank_stages(model, setup.plan.pp, setup.virtual, setup.plan)
    again = [add_up(recomputed_units(model, setup.recompute, st.get("chunks", [st]))) for st in stages]
    works = compute.rank_work(model, setup, again)
    p = setup.plan
    ranks = []
    for i, (w, st) in enumerate(zip(works, stages)):
        acts = plain.stages[i]["activations_per_micro_batch"]
        params = int(st["split"] // p.tp + st["whole"] + st["experts"] // (p.tp * p.ep))
        cast = compute.fp8_weight_cast_bytes(params, precision) / setup.micro_batches
        shape = moe_shape(model, setup, w.moe_layers)
        ring_f, ring_b = ring_attention.rank_bytes(model, setup, st["layers"])  # torch's ring-attention passes
        r = compute.class_times(w, gpu, precision, 2 * acts + cast / 2 + ring_f, 3 * acts + cast / 2 + ring_b,
                                setup.recompute.mode, moe=shape, etp=p.tp, attention_impl=setup.attention_impl)
        r["t_opt"] = compute.optimizer_seconds(setup, tm.stages[i]["optimizer"], gpu)
        if setup.states.offload != "none":  # the host steps the offloaded shard (``offload``)
            # Ψ_h from the host bytes as ``states.zero_terms`` composes them: the framework's K and b_g
            # (torchtitan's K is 8, its b_g 4), as the search reads Ψ_h back from the host traffic
            bw_h, bg_h, K_h = setup.states.bytes(p.zero)
            psi_h = offloaded_params(tm.stages[i].get("host", 0), float(K_h), int(bg_h), int(bw_h),
                                     setup.states.offload)
            r["t_cpu_adam"] = cpu_adam_seconds(psi_h, gpu.name, p.dp * p.tp * p.pp * p.cp)
            r["t_opt"] += r["t_cpu_adam"]
        r["layers"] = sum(st["layers"].values())
        r["kernels"] = host_launch.rank_kernels(model, setup, st, i == 0, i == len(stages) - 1, precision, graphs)
        r["t_host"] = host_launch.host_seconds(r["kernels"])
        ranks.append(r)
    world = p.dp * p.tp * p.pp * p.cp
    from .flops import train_flops
    per_seq = train_flops(model).total_at(model.values_with(T=setup.seq, B=1))
    gb = setup.batch.global_batch or setup.micro_batch * p.dp
    model_flops = per_seq * gb / world
    bg, bw = setup.states.bg, 2
    comm_s = comm_seconds(cm, setup, links)
    if fp8_all_gather:
        comm_s["dp"] *= compute.fp8_all_gather_share(setup, precision)
    out = step_at(ranks, comm_s, setup, framework=setup.states.framework, schedule=schedule, hide=hide,
                  model_flops_per_gpu=float(model_flops), hardware_flops_per_gpu=tm.flops_per_step / world,
                  peak_bf16=gpu.bf16_tflops * 1e12, grad_share=bg / (bg + bw), overlap=overlap,
                  host_hidden_share=(host_split(bg, bw, setup.states.offload)
                                     if d2h_hides(setup.states.framework, p.zero) else 0.0))
    if setup.states.offload != "none":
        out["cpu_adam_s"] = max(r.get("t_cpu_adam", 0.0) for r in ranks)
    from .stepformula import as_json, step_tree
    i = out["slowest_rank"]
    shape_i = moe_shape(model, setup, works[i].moe_layers)
    out["formula"] = as_json(step_tree(model, setup, stages[i], i == len(stages) - 1, ranks[i], works[i], shape_i,
                                       gpu, precision, out, p.tp, schedule))
    out["precision"] = precision
    out["attention_impl"] = setup.attention_impl
    out["cuda_graphs"] = list(graphs) or ["none"]
    return out
