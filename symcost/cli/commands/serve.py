"""Serving: ``memory``, ``roofline``, ``deploy``, ``gpus``."""
from __future__ import annotations

import math

from ...core.conventions import Phase
from ...core.errors import SymcostError
from ...core.notation import sym
from ...core.units import human_bytes
from ...hardware.gpus import CATALOGUE, custom
from ...hardware.gpus import gpu as find_gpu
from ...serving.deploy import NOTE as DEPLOY_NOTE
from ...serving.deploy import Workload, deploy
from ...serving.plan import NOTE as SERVE_NOTE
from ...serving.plan import Layout, ServeSetup, memory
from ...serving.profile import default_fraction
from ...serving.roofline import MAX_BATCH, draft_modules, roofline
from ...serving.roofline import NOTE as ROOF_NOTE
from .. import options as o
from .common import check_positions, read_model

OPTIONS = {
    "memory": (o.MODEL, o.T.but(required=True, help="context per request (max_model_len)"),
               o.BATCH.but(default=None, required=True, help="concurrent requests of T tokens"), *o.MEMORY_SERVE,
               o.PHASE.but(default="prefill", help="accepted for compatibility: the activation peak is the "
                                                   "engine's start-up profile (activation_terms)")),
    "roofline": (o.MODEL, o.PHASE.but(required=True), o.T.but(required=True),
                 o.BATCH.but(default=None, required=True, help="sequences B in the step, per replica (with --osl "
                                                              "alone: the load is their closed loop)"),
                 o.SERVE_GPU.but(required=True), *o.SERVE_MODELLED[1:],
                 o.COMPUTE_DTYPE, o.COMPUTE_EFF, o.BW_EFF, o.IDEAL, o.CONCURRENCY, o.REQUEST_RATE, o.ENGINE_LOAD,
                 o.OSL.but(help="output tokens per request: TTFT and TPOT under the load --batch (per replica), "
                                "--concurrency or --request-rate states (prompts of --T tokens; "
                                "symcost.serving.workload)")),
    "deploy": (o.MODEL, o.DEPLOY_GPUS, o.T.but(help="context per request (or --isl/--osl)"),
               o.BATCH.but(default=None, help="concurrent requests per replica (default 1; or --concurrency, or "
                                              "solved for under --max-tpot)"),
               o.CONCURRENCY, o.REQUEST_RATE, o.ISL, o.OSL, o.MAX_TTFT, o.MAX_TPOT, o.SORT, o.TOP, o.IDEAL, o.DISAGG, o.ACCEPT_RATE,
               o.ENGINE_LOAD,
               o.SERVE_GPU.but(required=True),
               *(r for r in o.SERVE_MODELLED[1:] if r not in (o.TP, o.PP, o.DP, o.EP)),
               o.pin(o.TP, "the tensor-parallel size"), o.pin(o.PP, "the pipeline stages"),
               o.pin(o.DP, "the data-parallel replicas"),
               o.pin(o.EP, "vLLM's expert-parallel group size (1: off; else tp x dp)")),
    "gpus": (),
}

#: the layout symbols whose values ``memory`` reports
LAYOUT_SYMBOLS = (sym.N_tp, sym.N_ep, sym.N_pp, sym.N_dp, sym.M, sym.T, sym.M_gpu)


def _setup(args, m, layout: bool = True) -> ServeSetup:
    """The serving options as one ``ServeSetup`` (``layout``: build the one --tp/--pp/--dp/--ep say);
    ``memory``'s engine options where the command has them (the others keep their fixed defaults)."""
    g = find_gpu(args.gpu) if args.gpu else None
    if getattr(args, "gpu_memory", None):
        g = custom(args.gpu_memory, g)
    lay = Layout.vllm(m, tp=args.tp, pp=args.pp, dp=args.dp, ep=args.ep) if layout else Layout()
    extra = {k: getattr(args, a) for k, a in (("engine", "engine"), ("vllm_version", "vllm_version"),
                                              ("max_num_seqs", "max_num_seqs"), ("kv_cache_memory", "kv_cache_memory"),
                                              ("moe_backend", "moe_backend"), ("pp_partition", "pp_layer_partition"),
                                              ("model_runner", "model_runner"))
             if getattr(args, a, None) is not None}
    if extra.get("engine") == "trtllm":  # TensorRT-LLM: its scheduler times the load, its memory is vLLM's
        extra.update(engine="vllm", schedule="trtllm")
    if "pp_partition" in extra and lay.pp == 1:
        raise SymcostError("--pp-layer-partition needs --pp (the stages it splits the layers over)")
    if args.mem_util is None:  # memory: the engine's own default
        args.mem_util = default_fraction(extra.get("engine", "vllm"), lay.tp)
    return ServeSetup(layout=lay, gpu=g, kv_dtype=args.kv_dtype, weights_dtype=args.weights_dtype,
                      experts_dtype=args.experts_dtype, quant_fallback=args.quant_fallback, mem_util=args.mem_util,
                      max_batched_tokens=args.max_batched_tokens, overhead_gib=args.overhead_gib,
                      cudagraph_gib=args.cudagraph_gib, block_size=args.block_size, mla=args.mla, **extra)


def _memory_payload(m, args, r) -> dict:
    p, kv, g = r.plan, r.plan.kv, r.plan.gpu
    return {"model": m.name, "T": args.T, "batch": args.batch,
            "weights_dtype": args.weights_dtype or "checkpoint", "kv_dtype": args.kv_dtype,
            "quantization": r.quantization, "weights_bytes": p.weights_total, "cache_bytes": r.cache_bytes,
            "activation_bytes": p.activation_rank, "total_bytes": r.total_bytes, "per_gpu_bytes": r.per_gpu_bytes,
            "gpus": p.layout.gpus, "gpus_needed": r.gpus_needed, "max_batch": p.max_batch, "fits": r.fits,
            "gpu": g.name if g else None, "usable_bytes_per_gpu": g.usable_bytes if g else None,
            "budget_bytes_per_gpu": p.budget_rank, "weights_per_gpu_bytes": p.weights_rank,
            "overhead_bytes_per_gpu": p.overhead_rank, "kv_available_bytes_per_gpu": p.kv_available_rank,
            "kv_capacity_tokens": kv.tokens if g else None, "max_concurrency": kv.max_concurrency if g else None,
            "kv_block_size": kv.block_size, "kv_page_bytes": kv.page_bytes,
            "kv_blocks_per_request": kv.blocks_per_request, "kv_notes": kv.notes,
            "max_batched_tokens": p.profile.max_batched_tokens, "max_num_seqs": p.profile.max_num_seqs,
            "mem_util": args.mem_util, "engine": p.profile.engine.name,
            "engine_version": p.profile.engine.version if p.profile.engine.name == "vllm" else None,
            "model_runner": p.profile.runner if p.profile.engine.name == "vllm" and p.profile.engine.v1 else None,
            "activation_terms": p.activation_terms(), "non_torch_bytes_per_gpu": p.non_torch_rank,
            "cudagraph_bytes_per_gpu": p.cudagraph_rank, "weights_loaded_bytes": p.weights_loaded_rank,
            "weights_file_bytes_per_gpu": p.weights_rank, "deciding_rank": p.deciding_rank,
            "tp": args.tp, "pp": args.pp, "dp": args.dp, "ep": args.ep, "mla": args.mla,
            "component_dtypes": p.dtypes, "notes": p.notes,
            "formula": {k: str(v) for k, v in p.formulas.formula().items()},
            "formula_values": {str(k): int(v) for k, v in p.values.items() if k in LAYOUT_SYMBOLS},
            "convention": SERVE_NOTE,
            "activation_note": "activations: peak of one chunked-prefill step, an estimate (symcost.serving.plan)"}


def cmd_memory(args, out):
    m, raw = read_model(args.model)
    check_positions(m, args.T)
    r = memory(m, raw, _setup(args, m), T=args.T, batch=args.batch)
    p = r.plan
    if args.gpu_memory and p.kv_cache_memory_given is False and p.budget_rank < p.weights_loaded_rank:
        raise SymcostError(f"--gpu-memory: {args.gpu_memory:,} bytes x --mem-util {args.mem_util} is below the "
                           f"weights one GPU loads ({p.weights_loaded_rank:,} bytes)")
    payload, p, kv, g = _memory_payload(m, args, r), r.plan, r.plan.kv, r.plan.gpu
    e = p.profile.engine
    lines = [f"{m.name}: serving memory at T={args.T}, B={args.batch}, layout {p.layout.label()} "
             f"(weights {payload['quantization']}, KV {args.kv_dtype})",
             f"  engine {e.name}" + (f" {e.version} ({'V1' if e.v1 else 'V0'}"
                                     + (", Model Runner V2" if p.profile.runner == "v2" else "") + ")"
                                     if e.name == "vllm" else "")
             + f": profile over M = {p.profile.max_batched_tokens:,} tokens, S = {p.profile.max_num_seqs:,} "
               f"sequences; deciding rank: pp stage {p.deciding_rank['pp_stage']}"
             + (f", ep rank {p.deciding_rank['ep_rank']} ({p.deciding_rank['local_experts']} experts)"
                if "ep_rank" in p.deciding_rank else "")]
    for key in ("weights_bytes", "cache_bytes", "weights_per_gpu_bytes", "weights_loaded_bytes", "activation_bytes",
                "non_torch_bytes_per_gpu", "overhead_bytes_per_gpu", "per_gpu_bytes"):
        lines.append(f"  {key:<24} {payload[key]:>22,}  {human_bytes(payload[key])}")
    if g:
        lines.append(f"  on {g.name} ({human_bytes(g.usable_bytes)} usable, x{args.mem_util}) x {p.layout.gpus}: "
                     f"KV available {human_bytes(max(p.kv_available_rank, 0))} per GPU -> "
                     f"{kv.tokens:,} tokens (block {kv.block_size}), max concurrency at T={args.T}: "
                     f"{kv.max_concurrency:.2f}x; fits B={args.batch}: {payload['fits']}; "
                     f"GPUs needed (TP, powers of two): "
                     f"{r.gpus_needed if r.gpus_needed is not None else 'none up to TP=64 holds it'}")
    for r in p.deciding_rank.get("stages", ()):
        blocks = f"{r['num_blocks']:,} KV blocks" if r["num_blocks"] is not None else "KV blocks unknown (no budget)"
        lines.append(f"  {'*' if r['stage'] == p.deciding_rank['pp_stage'] else ' '} pp stage {r['stage']}: "
                     f"{r['layers']} layers, weights {human_bytes(r['weights_loaded_bytes'])}, peak "
                     f"{human_bytes(r['activation_bytes'])}" + (" (sampler)" if r["sampler"] else "")
                     + f", block {r['kv_block_bytes']:,} B -> {blocks}")
    lines += [f"  note: {n}" for n in p.notes + kv.notes]
    lines.append(f"  ({SERVE_NOTE}; MLA form {args.mla}: FLOPs only, bytes unchanged)")
    out.emit(payload, "\n".join(lines))


def _workload(args) -> Workload:
    """The workload the options state, or exit 2 naming the conflict."""
    if args.T is None and args.isl is None:
        raise SymcostError("deploy: give --T (context per request) or --isl (input tokens, with --osl)")
    if args.T is not None and args.isl is not None:
        raise SymcostError("--T and --isl both given: --T is the context, --isl + --osl state it instead")
    if args.osl is not None and args.isl is None:
        raise SymcostError("--osl needs --isl (the context is ISL + OSL)")
    if args.batch is not None and args.concurrency is not None:
        raise SymcostError("--batch (per replica) and --concurrency (in all) both given: give one")
    if args.request_rate is not None and args.batch is not None:
        raise SymcostError("--batch (per replica) and --request-rate (open loop) both given: give one")
    from ...serving.workload import check_workload
    check_workload(concurrency=args.concurrency, rate=args.request_rate, osl=args.osl)
    if args.batch is not None and args.max_tpot is not None:
        raise SymcostError("--batch and --max-tpot both given: under --max-tpot the batch is solved for "
                           "(or give --concurrency to check a load against the SLA)")
    isl = args.isl if args.isl is not None else args.T
    return Workload(isl=isl, osl=args.osl or 0, batch=args.batch or 1, concurrency=args.concurrency,
                    max_ttft=args.max_ttft, max_tpot=args.max_tpot, accept=args.accept_rate, rate=args.request_rate)


def _num(v, scale, digits) -> str:
    """A latency in the table, or a dash where there is none (an overloaded open loop)."""
    return "-" if v is None else f"{v * scale:.{digits}f}"


def cmd_deploy(args, out):
    m, raw = read_model(args.model)
    work = _workload(args)
    if args.accept_rate is not None and not draft_modules(m):
        raise SymcostError(f"--accept-rate: {m.name} ships no draft (no MTP / next-n layers in its config), "
                           f"so there is nothing to speculate with")
    check_positions(m, work.context)
    setup = _setup(args, m, layout=False)
    counts = o.gpu_counts(args.gpus) if args.gpus else None
    if args.gpus and not counts:
        raise SymcostError(f"--gpus: expected N or MIN-MAX (positive integers; N at most {o.MAX_GPUS:,}, a range "
                           f"at most {o.MAX_GPU_RANGE} counts up to {o.MAX_GPU_RANGE_END:,}), got {args.gpus!r}")
    pins = {"tp": args.tp, "pp": args.pp, "dp": args.dp, "ep": args.ep}
    if counts is None and all(pins[k] is not None for k in ("tp", "pp", "dp")):
        counts = [args.tp * args.pp * args.dp]
        if counts[0] > o.MAX_GPUS:  # the same bound as --gpus N: the layouts of a count are its divisors
            raise SymcostError(f"--tp {args.tp} x --pp {args.pp} x --dp {args.dp} = {counts[0]:,} GPUs: at most "
                               f"{o.MAX_GPUS:,}")
    if args.disagg and (work.concurrency is not None or work.rate is not None):
        raise SymcostError("--disagg with --concurrency or --request-rate: the disaggregated plan is sized by its "
                           "pools' rates; "
                           "give --max-tpot/--max-ttft (or --batch) instead")
    res = deploy(m, raw, setup, gpus=counts, T=work.context, batch=work.batch, work=work, pins=pins,
                 sort=args.sort, ideal=args.ideal, disagg=args.disagg)
    rows = res["layouts"][: args.top] if args.top else res["layouts"]
    hidden = len(res["layouts"]) - len(rows)
    # an open loop a replica cannot keep up with has no steady state: no TTFT/TPOT (None, not Infinity)
    rows = [{k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in r.items()} for r in rows]
    g = setup.gpu
    n_fit = sum(r["fits"] for r in res["layouts"])
    n_sla = sum(r["meets_sla"] for r in res["layouts"])
    payload = {"model": m.name, "gpu": g.name, "T": work.context, "batch": args.batch if args.batch else work.batch,
               "isl": work.isl, "osl": work.osl, "concurrency": work.concurrency, "request_rate": work.rate, "max_ttft_s": work.max_ttft,
               "max_tpot_s": work.max_tpot, "sort": args.sort, "latency_model": "ideal" if args.ideal else "calibrated",
               "gpus": counts if counts else [rows[0]["gpus"]] if rows else [],
               "layouts": rows, "count": len(res["layouts"]), "hidden": hidden, "fitting": n_fit,
               "meeting_sla": n_sla,
               "fewest_gpus": res["fewest_gpus"], "closest": res["closest"],
               "compute_dtype": res["compute_dtype"], "peak_dtype_used": res["peak_dtype_used"],
               "kernel_dtypes": res["kernel_dtypes"], "convention": DEPLOY_NOTE}
    sla = "" if not (work.max_ttft or work.max_tpot) else (
        " SLA" + (f" TTFT <= {work.max_ttft * 1e3:g} ms" if work.max_ttft else "")
        + (f" TPOT <= {work.max_tpot * 1e3:g} ms" if work.max_tpot else "") + ";")
    load = ("" if work.accept is None else f"MTP speculation at acceptance {work.accept:g}, ") + (
            f"Poisson arrivals at {work.rate:g} requests/s in all (open loop)" if work.rate is not None else
            f"concurrency {work.concurrency} in all (closed loop)" if work.concurrency is not None else
            "batch per replica solved for" if work.solve else f"batch {work.batch} per replica")
    if res.get("schedule"):  # under load, closed loop: whose scheduler times it
        load += f", {res['schedule']}'s schedule"
    payload["accept_rate"] = work.accept
    payload["schedule"] = res.get("schedule")
    ctx = f"ISL {work.isl}, OSL {work.osl}" if work.osl else f"T={work.context}"
    lines = [f"{m.name} on {g.name}: {len(res['layouts'])} layouts, {n_fit} fit, {n_sla} meet the workload "
             f"({ctx}, {load};{sla} {'ideal bound' if args.ideal else 'calibrated kernels'}; "
             f"{res['compute_dtype']} compute, {res['peak_dtype_used']} peak)",
             f"  {'layout':<22} {'GPUs':>4} {'fits':>5} {'SLA':>5} {'KV tokens':>12} {'conc@T':>8} {'B/rep':>6} "
             f"{'TTFT s':>8} {'TPOT ms':>8} {'tok/s/GPU':>10}"]
    for r in rows:
        lines.append(f"  TP{r['tp']}·PP{r['pp']}·DP{r['dp']}·EP{r['ep']:<7} {r['gpus']:>4} {str(r['fits']):>5} "
                     f"{str(r['meets_sla']):>5} {r['kv_capacity_tokens']:>12,} {r['max_concurrency']:>8.2f} "
                     f"{r['batch_per_replica']:>6} {_num(r['ttft_s'], 1, 3):>8} {_num(r['tpot_s'], 1e3, 2):>8} "
                     f"{r['tokens_per_s_per_gpu']:>10.1f}")
    if hidden:
        lines.append(f"  ... {hidden} more layout{'s' if hidden > 1 else ''} hidden, ranked below these "
                     f"(--top all lists every one)")
    if not res["fits_any"]:
        few = res["fewest_gpus"]
        lines.append(f"  no layout fits: the weights and one request's KV ({work.context:,} tokens) do not fit "
                     + (f"on these GPU counts; the fewest {g.name} that would: {few}" if few else
                        f"on up to 1,024 {g.name}"))
    elif n_sla == 0 and res["closest"]:
        c = res["closest"]
        lines.append(f"  no layout meets the workload; the closest: TP{c['tp']}·PP{c['pp']}·DP{c['dp']}·EP{c['ep']} "
                     f"({c['gpus']} GPUs) with TTFT {c['ttft_s'] * 1e3:.1f} ms, TPOT {c['tpot_s'] * 1e3:.2f} ms at "
                     f"batch {max(c['batch_per_replica'], 1)} per replica")
    elif n_sla == 0 and work.rate is not None:
        lines.append(f"  no layout keeps up with {work.rate:g} requests/s: every replica's prefill is saturated "
                     f"(rho >= 1) or its KV holds fewer requests than Little's law puts in flight")
    elif n_sla == 0:
        lines.append("  no layout meets the workload (the KV of every fitting layout holds fewer requests "
                     "than asked)")
    if args.disagg:
        dp_ = res["disagg"]
        agg = next((r for r in res["layouts"] if r["meets_sla"]), None)
        payload["disagg"] = None if dp_ is None else {
            "prefill": {k: dp_.prefill[k] for k in ("tp", "pp", "dp", "ep", "gpus", "ttft_s")}, "x": dp_.x,
            "decode": {k: dp_.decode[k] for k in ("tp", "pp", "dp", "ep", "gpus", "tpot_s", "batch_per_replica")},
            "y": dp_.y, "gpus": dp_.gpus, "ttft_s": dp_.ttft_s, "tpot_s": dp_.tpot_s,
            "kv_bytes_per_request": dp_.kv_bytes_per_request, "kv_transfer_s": dp_.kv_transfer_s,
            "kv_link": dp_.link, "requests_per_s": dp_.served, "prefill_rate": dp_.rate_prefill,
            "decode_rate": dp_.rate_decode, "tokens_per_s_per_gpu": dp_.tokens_per_s_per_gpu}
        payload["aggregated_best"] = agg
        if agg:
            lines.append(f"  aggregated best:    TP{agg['tp']}·PP{agg['pp']}·DP{agg['dp']}·EP{agg['ep']} x1 "
                         f"({agg['gpus']} GPUs): TTFT {agg['ttft_s'] * 1e3:.1f} ms, TPOT {agg['tpot_s'] * 1e3:.2f} ms, "
                         f"{agg['tokens_per_s_per_gpu']:.1f} tok/s/GPU")
        if dp_ is None:
            lines.append("  disaggregated: no prefill/decode pair fits and meets the SLA")
        else:
            P, D = dp_.prefill, dp_.decode
            lines.append(f"  disaggregated {dp_.x}P{dp_.y}D: prefill TP{P['tp']}·PP{P['pp']}·DP{P['dp']}·EP{P['ep']} x{dp_.x}, "
                         f"decode TP{D['tp']}·PP{D['pp']}·DP{D['dp']}·EP{D['ep']} x{dp_.y} at batch "
                         f"{D['batch_per_replica']} ({dp_.gpus} GPUs): TTFT {dp_.ttft_s * 1e3:.1f} ms (KV "
                         f"{dp_.kv_bytes_per_request / 2**20:.1f} MiB over {dp_.link} {dp_.kv_transfer_s * 1e3:.2f} ms), "
                         f"TPOT {dp_.tpot_s * 1e3:.2f} ms, {dp_.tokens_per_s_per_gpu:.1f} tok/s/GPU "
                         f"({dp_.served:.1f} requests/s)")
    kd = res["kernel_dtypes"]
    lines.append("  kernels: " + "; ".join(f"{k} {v['runs']} ({v['peak_dtype']} peak)" for k, v in kd.items()))
    out.emit(payload, "\n".join(lines))


def cmd_gpus(args, out):
    rows = [{"name": g.name, "memory_bytes": g.memory_bytes, "usable_bytes": g.usable_bytes,
             "usable_measured": g.usable_measured, "bandwidth_bytes_per_s": g.bandwidth_bytes_per_s,
             "peak_flops": {k: round(v * 10**12) for k, v in g.peak_tflops.items()},
             "link_bytes_per_s": round(g.link_gbs * 10**9), "link": g.link, "nvlink_domain": g.nvlink_domain,
             "scaleout_bytes_per_s": round(g.scaleout_gbs * 10**9), "source": g.source}
            for g in CATALOGUE.values()]
    text = "\n".join(f"  {r['name']:<14} {human_bytes(r['usable_bytes']):>28}{'' if r['usable_measured'] else '*'}  "
                     f"{r['bandwidth_bytes_per_s'] / 1e12:5.2f} TB/s  x{r['nvlink_domain']:<3} "
                     + "  ".join(f"{k} {v / 1e12:,.0f}" for k, v in r["peak_flops"].items()) + " TFLOPS"
                     for r in rows)
    out.emit({"gpus": rows, "convention": "usable_bytes: total memory as the driver reports it "
              "(* = not measured, nominal used); peak_flops: dense tensor-core FLOP/s per dtype; nvlink_domain: "
              "GPUs per scale-up domain; scaleout_bytes_per_s: per-GPU scale-out NIC, one direction"},
             "GPU catalogue (usable memory, HBM bandwidth, NVLink domain, dense peaks):\n" + text
             + "\n  * no driver report in the catalogue: nominal memory")


def _roofline_payload(m, args, s) -> dict:
    p, F, BW = s.plan, s.peak_flops, s.bandwidth
    return {"model": m.name, "phase": args.phase, "T": args.T, "batch": args.batch, "gpu": p.gpu.name,
            "flops": s.flops, "bytes": s.bytes, "intensity": s.flops / s.bytes if s.bytes else None,
            "ridge_intensity": float(F / BW), "bound": s.bound, "time_s": s.time,
            "compute_time_s": s.compute_time, "memory_time_s": s.memory_time, "comm_time_s": s.comm_time,
            "ttft_s": s.ttft, "tpot_s": s.tpot,
            "tokens_per_s": args.batch * args.dp / s.tpot if s.tpot else None,
            "tokens_per_s_per_gpu": args.batch / s.tpot / (args.tp * args.pp) if s.tpot else None,
            "compute_bound_batch": s.compute_bound_batch, "compute_dtype": s.compute_dtype,
            "peak_dtype_used": s.peak_dtype_used, "peak_flops": int(F), "bandwidth_bytes_per_s": int(BW),
            "tp": args.tp, "pp": args.pp, "dp": args.dp, "ep": args.ep, "mla": args.mla,
            "fits": bool(p.max_batch and p.max_batch >= args.batch),
            "kv_capacity_tokens": p.kv.tokens, "max_concurrency": p.kv.max_concurrency,
            "per_gpu_weights_bytes": p.weights_rank, "weight_bytes": s.weight_bytes, "formula": s.formula(),
            "convention": ROOF_NOTE + "; " + Phase(kind=args.phase, attention="causal", logits="last",
                                                    mla=args.mla).describe(),
            "note": f"{p.layout.label()} on {p.gpu.name}, {s.peak_dtype_used} dense peak x {args.compute_eff}, "
                    f"HBM x {args.bw_eff} (compute/memory/comm_time_s: the pure split; time_s, ttft_s, tpot_s: the "
                    f"{'ideal bound' if args.ideal else 'calibrated kernel model'})",
            "latency_model": "ideal" if args.ideal else "calibrated",
            "latency_terms": {k: {"seconds": v, "formula": s.calibrated.formula[k]} for k, v in s.calibrated.terms.items()},
            "latency_values": s.calibrated.values, "latency_sources": s.calibrated.sources,
            "latency_kernels_engine": s.calibrated.engine,
            "kernel_dtypes": {k: {"op_class": v[0], "dtype": v[1], "peak_dtype": v[2], "runs": v[3]}
                              for k, v in s.calibrated.dtypes.items()}}


def _turns(batch: int | None) -> str:
    """Where decode turns compute-bound, in words (the bisection's None: never, up to its limit)."""
    if batch is None:
        return f"never turns compute-bound (memory-bound at every batch up to {MAX_BATCH:,})"
    return f"turns compute-bound at B={batch}"


def _roofline_workload(args) -> None:
    """``roofline``'s load (the step itself is always --batch's): --osl alone is the closed loop of --batch
    requests per replica (B·N_dp in all); --concurrency N (in all) or --request-rate R with --osl another closed
    or the open loop; a workload needs --osl (exit 2 naming the conflict)."""
    from ...serving.workload import check_workload
    check_workload(concurrency=args.concurrency, rate=args.request_rate, osl=args.osl)
    if args.concurrency is not None and args.osl is None:
        raise SymcostError("roofline: --concurrency needs --osl (the output tokens each request decodes)")
    if args.osl is not None and args.concurrency is None and args.request_rate is None:
        args.concurrency = args.batch * args.dp


def _measured_by(sources: dict) -> str:
    """Whose measurements each class's calibration row is (the framework directory of the row's source
    file, ``hardware/kernels``): ``gemm trtllm, grouped_gemm sglang, ...``."""
    import re
    found = {k: re.search(r"/(trtllm|vllm|sglang|nccl)/", v) for k, v in sources.items()}
    return ", ".join(f"{k} {m.group(1)}" for k, m in found.items() if m)


def _load_text(load: dict) -> str:
    head = (f"  under load ({load['mode']}" + (f", {load['schedule']}'s schedule" if load.get("schedule") else "") + ": "
            + (f"{load['concurrency']} requests in flight in all" if load["concurrency"] is not None
               else f"{load['request_rate']:g} requests/s in all")
            + f", ISL {load['isl']}, OSL {load['osl']}, M {load['max_batched_tokens']}): ")
    if not load["stable"]:
        return head + f"the replica cannot keep up (prefill utilisation {load['utilisation']:.2f} >= 1)\n"
    return (head + f"TTFT {load['ttft_s'] * 1e3:.1f} ms   TPOT {load['tpot_s'] * 1e3:.2f} ms   "
            f"batch per replica {_per_replica(load['batch_per_replica'])}\n")


def _per_replica(b) -> str:
    """Requests per replica: a count in a closed loop (an int, printed whole), a mean in an open loop."""
    return str(b) if isinstance(b, int) else f"{b:.2f}"


def cmd_roofline(args, out):
    _roofline_workload(args)
    m, raw = read_model(args.model)
    check_positions(m, args.T + (args.osl or 0) + (1 if args.phase == "decode" else 0),
                    "--T + --osl" if args.osl else "--T")
    s = roofline(m, raw, _setup(args, m), phase=args.phase, T=args.T, batch=args.batch,
                 compute_dtype=args.compute_dtype, compute_eff=args.compute_eff, bw_eff=args.bw_eff, ideal=args.ideal,
                 osl=args.osl, concurrency=args.concurrency, rate=args.request_rate)
    payload, p = _roofline_payload(m, args, s), s.plan
    if s.load is not None:
        payload["load"] = s.load
    c = s.calibrated
    text = (f"{m.name}: roofline of one {args.phase} step, T={args.T}, B={args.batch}, {p.layout.label()} on "
            f"{p.gpu.name}\n"
            f"  per rank: FLOPs {s.flops:,}   bytes {s.bytes:,}   intensity {payload['intensity']:.1f} FLOP/B "
            f"(ridge {payload['ridge_intensity']:.1f}, {s.peak_dtype_used} peak)\n"
            f"  {s.bound}-bound: compute {s.compute_time * 1e3:.3f} ms, memory {s.memory_time * 1e3:.3f} ms, "
            f"communication {s.comm_time * 1e3:.3f} ms -> step {s.time * 1e3:.3f} ms\n"
            f"  TTFT (one prompt of T) {s.ttft * 1e3:.1f} ms   TPOT at B={args.batch} {s.tpot * 1e3:.2f} ms   "
            f"{payload['tokens_per_s_per_gpu']:.0f} tokens/s per GPU   decode {_turns(s.compute_bound_batch)}\n"
            f"  fits at B={args.batch}: {payload['fits']} (KV {p.kv.tokens:,} tokens per GPU)\n"
            + (_load_text(s.load) if s.load is not None else "")
            + f"  latency model ({'ideal bound' if args.ideal else 'calibrated'}), one stage of the {args.phase} step:\n"
            + "".join(f"    {k:<28} {v * 1e3:>10.3f} ms\n" for k, v in c.terms.items())
            + "".join(f"    {k:<12} runs {v[3]} ({v[0]}/{v[1]}, {v[2]} peak)\n" for k, v in c.dtypes.items())
            + ("" if args.ideal else f"    kernels as measured under: {_measured_by(c.sources)}\n")
            + f"  ({ROOF_NOTE})")
    out.emit(payload, text)
