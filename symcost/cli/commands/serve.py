"""Serving: ``memory``, ``roofline``, ``deploy``, ``gpus``."""
from __future__ import annotations

from ...core.conventions import Phase
from ...core.errors import SymcostError
from ...core.notation import sym
from ...core.units import human_bytes
from ...serving.deploy import NOTE as DEPLOY_NOTE
from ...serving.deploy import deploy
from ...hardware.gpus import CATALOGUE
from ...hardware.gpus import gpu as find_gpu
from ...serving.plan import NOTE as SERVE_NOTE
from ...serving.plan import Layout, ServeSetup, memory
from ...serving.roofline import NOTE as ROOF_NOTE
from ...serving.roofline import MAX_BATCH, roofline
from .. import options as o
from .common import check_positions, read_model

OPTIONS = {
    "memory": (o.MODEL, o.T.but(required=True, help="context per request (max_model_len)"),
               o.BATCH.but(default=None, required=True, help="concurrent requests of T tokens"), *o.SERVE,
               o.PHASE.but(default="prefill", help="accepted for compatibility: the activation peak is one "
                                                   "chunked-prefill step")),
    "roofline": (o.MODEL, o.PHASE.but(required=True), o.T.but(required=True),
                 o.BATCH.but(default=None, required=True), o.SERVE_GPU.but(required=True), *o.SERVE[1:],
                 o.COMPUTE_DTYPE, o.COMPUTE_EFF, o.BW_EFF),
    "deploy": (o.MODEL, o.DEPLOY_GPUS, o.T.but(required=True, help="context per request"),
               o.BATCH.but(help="concurrent requests per replica"), o.TOP, o.SERVE_GPU.but(required=True),
               *o.SERVE[1:]),
    "gpus": (),
}

#: the layout symbols whose values ``memory`` reports
LAYOUT_SYMBOLS = (sym.N_tp, sym.N_ep, sym.N_pp, sym.N_dp, sym.M, sym.T, sym.M_gpu)


def _setup(args, m, layout: bool = True) -> ServeSetup:
    """The serving options as one ``ServeSetup`` (``layout``: build the one --tp/--pp/--dp/--ep say)."""
    g = find_gpu(args.gpu) if args.gpu else None
    lay = Layout.vllm(m, tp=args.tp, pp=args.pp, dp=args.dp, ep=args.ep) if layout else Layout()
    return ServeSetup(layout=lay, gpu=g, kv_dtype=args.kv_dtype, weights_dtype=args.weights_dtype,
                      experts_dtype=args.experts_dtype, quant_fallback=args.quant_fallback, mem_util=args.mem_util,
                      max_batched_tokens=args.max_batched_tokens, overhead_gib=args.overhead_gib,
                      cudagraph_gib=args.cudagraph_gib, block_size=args.block_size, mla=args.mla)


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
            "max_batched_tokens": args.max_batched_tokens, "mem_util": args.mem_util,
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
    payload, p, kv, g = _memory_payload(m, args, r), r.plan, r.plan.kv, r.plan.gpu
    lines = [f"{m.name}: serving memory at T={args.T}, B={args.batch}, layout {p.layout.label()} "
             f"(weights {payload['quantization']}, KV {args.kv_dtype})"]
    for key in ("weights_bytes", "cache_bytes", "weights_per_gpu_bytes", "activation_bytes",
                "overhead_bytes_per_gpu", "per_gpu_bytes"):
        lines.append(f"  {key:<24} {payload[key]:>22,}  {human_bytes(payload[key])}")
    if g:
        lines.append(f"  on {g.name} ({human_bytes(g.usable_bytes)} usable, x{args.mem_util}) x {p.layout.gpus}: "
                     f"KV available {human_bytes(max(p.kv_available_rank, 0))} per GPU -> "
                     f"{kv.tokens:,} tokens (block {kv.block_size}), max concurrency at T={args.T}: "
                     f"{kv.max_concurrency:.2f}x; fits B={args.batch}: {payload['fits']}; "
                     f"GPUs needed (TP, powers of two): "
                     f"{r.gpus_needed if r.gpus_needed is not None else 'none up to TP=64 holds it'}")
    lines += [f"  note: {n}" for n in p.notes + kv.notes]
    lines.append(f"  ({SERVE_NOTE}; MLA form {args.mla}: FLOPs only, bytes unchanged)")
    out.emit(payload, "\n".join(lines))


def cmd_deploy(args, out):
    m, raw = read_model(args.model)
    check_positions(m, args.T)
    setup = _setup(args, m, layout=False)
    counts = o.gpu_counts(args.gpus) if args.gpus else None
    if args.gpus and not counts:
        raise SymcostError(f"--gpus: expected N or MIN-MAX (positive integers; N at most {o.MAX_GPUS:,}, a range "
                           f"at most {o.MAX_GPU_RANGE} counts up to {o.MAX_GPU_RANGE_END:,}), got {args.gpus!r}")
    res = deploy(m, raw, setup, gpus=counts, T=args.T, batch=args.batch)
    rows = res["layouts"][: args.top] if args.top else res["layouts"]
    g = setup.gpu
    payload = {"model": m.name, "gpu": g.name, "T": args.T, "batch": args.batch,
               "gpus": counts if counts else [rows[0]["gpus"]] if rows else [],
               "layouts": rows, "count": len(res["layouts"]), "compute_dtype": res["compute_dtype"],
               "peak_dtype_used": res["peak_dtype_used"], "convention": DEPLOY_NOTE}
    lines = [f"{m.name} on {g.name}: {len(res['layouts'])} valid layouts, T={args.T}, batch={args.batch} "
             f"({res['compute_dtype']} compute, {res['peak_dtype_used']} peak)",
             f"  {'layout':<22} {'GPUs':>4} {'fits':>5} {'KV tokens':>12} {'conc@T':>8} {'TTFT s':>8} "
             f"{'TPOT ms':>8} {'tok/s/GPU':>10}"]
    for r in rows:
        lines.append(f"  TP{r['tp']}·PP{r['pp']}·DP{r['dp']}·EP{r['ep']:<7} {r['gpus']:>4} {str(r['fits']):>5} "
                     f"{r['kv_capacity_tokens']:>12,} {r['max_concurrency']:>8.2f} {r['ttft_s']:>8.3f} "
                     f"{r['tpot_s'] * 1e3:>8.2f} {r['tokens_per_s_per_gpu']:>10.1f}")
    out.emit(payload, "\n".join(lines))


def cmd_gpus(args, out):
    rows = [{"name": g.name, "memory_bytes": g.memory_bytes, "usable_bytes": g.usable_bytes,
             "usable_measured": g.usable_measured, "bandwidth_bytes_per_s": g.bandwidth_bytes_per_s,
             "peak_flops": {k: round(v * 10**12) for k, v in g.peak_tflops.items()},
             "link_bytes_per_s": round(g.link_gbs * 10**9), "link": g.link, "source": g.source}
            for g in CATALOGUE.values()]
    text = "\n".join(f"  {r['name']:<12} {human_bytes(r['usable_bytes']):>28}{'' if r['usable_measured'] else '*'}  "
                     f"{r['bandwidth_bytes_per_s'] / 1e12:5.2f} TB/s  "
                     + "  ".join(f"{k} {v / 1e12:,.0f}" for k, v in r["peak_flops"].items()) + " TFLOPS"
                     for r in rows)
    out.emit({"gpus": rows, "convention": "usable_bytes: total memory as the driver reports it "
              "(* = not measured, nominal used); peak_flops: dense tensor-core FLOP/s per dtype"},
             "GPU catalogue (usable memory, HBM bandwidth, dense peaks):\n" + text
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
                    f"HBM x {args.bw_eff}"}


def _turns(batch: int | None) -> str:
    """Where decode turns compute-bound, in words (the bisection's None: never, up to its limit)."""
    if batch is None:
        return f"never turns compute-bound (memory-bound at every batch up to {MAX_BATCH:,})"
    return f"turns compute-bound at B={batch}"


def cmd_roofline(args, out):
    m, raw = read_model(args.model)
    check_positions(m, args.T + (1 if args.phase == "decode" else 0))
    s = roofline(m, raw, _setup(args, m), phase=args.phase, T=args.T, batch=args.batch,
                 compute_dtype=args.compute_dtype, compute_eff=args.compute_eff, bw_eff=args.bw_eff)
    payload, p = _roofline_payload(m, args, s), s.plan
    text = (f"{m.name}: roofline of one {args.phase} step, T={args.T}, B={args.batch}, {p.layout.label()} on "
            f"{p.gpu.name}\n"
            f"  per rank: FLOPs {s.flops:,}   bytes {s.bytes:,}   intensity {payload['intensity']:.1f} FLOP/B "
            f"(ridge {payload['ridge_intensity']:.1f}, {s.peak_dtype_used} peak)\n"
            f"  {s.bound}-bound: compute {s.compute_time * 1e3:.3f} ms, memory {s.memory_time * 1e3:.3f} ms, "
            f"communication {s.comm_time * 1e3:.3f} ms -> step {s.time * 1e3:.3f} ms\n"
            f"  TTFT (one prompt of T) {s.ttft * 1e3:.1f} ms   TPOT at B={args.batch} {s.tpot * 1e3:.2f} ms   "
            f"{payload['tokens_per_s_per_gpu']:.0f} tokens/s per GPU   decode {_turns(s.compute_bound_batch)}\n"
            f"  fits at B={args.batch}: {payload['fits']} (KV {p.kv.tokens:,} tokens per GPU)\n"
            f"  ({ROOF_NOTE})")
    out.emit(payload, text)
