"""Step time and training budgets: an α–β model per collective, compute at a stated MFU, bubbles.

    t_step = (t_compute + (1 − overlap)·Σ_dim t_dim) · (1 + bubble)
    t_compute = FLOPs per GPU / (peak · MFU)
    t_dim = n_dim·α + bytes_dim / β_dim      β = the GPU's NVLink bandwidth when the group fits in
                                             one node (``gpus_per_node``), else the per-GPU
                                             scale-out link (InfiniBand/RoCE, ``ib_gbs``); CPU
                                             offload's host traffic over PCIe (``pcie_gbs``,
                                             both directions summed: a conservative bound)
    bubble = (N_pp − 1) / (v·m)              1F1B (v = 1) or interleaved with v virtual stages;
                                             as a share of the step, (N_pp − 1)/(v·m + N_pp − 1)

Group spans follow Megatron's rank order (TP fastest, then CP, then DP with EP folded in, then
PP): the TP group spans N_tp ranks, CP N_tp·N_cp, EP N_tp·N_ep, DP N_tp·N_cp·N_dp, PP the world.
A budget is FLOPs / (GPUs · peak · MFU); a published GPU-hour figure implies
MFU = FLOPs / (GPU-hours · 3600 · peak). Peaks are the catalogue's dense BF16 figures.
"""
from __future__ import annotations

from ..core.errors import SymcostError
from ..hardware.links import Links, collective_seconds, link_bytes_s


def bubble(pp, m, virtual=1):
    """Pipeline bubble as a share of the step: (p − 1)/(v·m + p − 1), 0 without a pipeline
    (numbers or NumPy arrays)."""
    return (pp - 1) / (virtual * m + pp - 1)


def step_seconds(compute, comm_s, overlap, bubble_share):
    """t_step = (t_compute + (1 − overlap)·Σ t_dim) / (1 − bubble share)."""
    return (compute + (1 - overlap) * comm_s) / (1 - bubble_share)


def spans(dp, tp, pp, ep, cp, shard=None) -> dict[str, int]:
    """Ranks each dimension's group spans in Megatron's order; with HSDP the shard group is the
    inner N_sh data-parallel ranks (``dp``) and the replicas span all of them (``dp_replicate``)."""
    inner = dp if shard is None else shard
    return {"tp": tp, "cp": tp * cp, "ep": tp * ep, "dp": tp * cp * inner, "dp_replicate": tp * cp * dp,
            "pp": tp * cp * dp * pp}


def step_time(flops_per_gpu: int, cm: dict, setup, *, peak_flops: float, mfu: float, links: Links,
              overlap: float = 0.0) -> dict:
    """One step's time for ``setup`` (``setup.TrainSetup``: its layout, HSDP shard, micro-batches
    and virtual stages) from ``comm.comm``'s answer ``cm`` (bytes and collectives per dimension)."""
    if not 0 < mfu <= 1:
        raise SymcostError(f"--mfu must be in (0, 1], got {mfu}")
    if not 0 <= overlap <= 1:
        raise SymcostError(f"--overlap must be in [0, 1], got {overlap}")
    compute = flops_per_gpu / (peak_flops * mfu)
    p = setup.plan
    span = spans(p.dp, p.tp, p.pp, p.ep, p.cp, setup.states.shard)
    counts = cm["collectives"]
    per_dim = {dim: float(collective_seconds(nbytes, counts.get(dim, 0), link_bytes_s(dim, span.get(dim), links),
                                             links.alpha_s))
               for dim, nbytes in cm["bytes"].items()}
    b = float(bubble(p.pp, cm["micro_batches"], setup.virtual))
    total = step_seconds(compute, sum(per_dim.values()), overlap, b)
    return {"step_time_s": total, "compute_s": compute, "comm_s": per_dim,
            "exposed_comm_s": {k: (1 - overlap) * t for k, t in per_dim.items()},
            "bubble": b, "mfu": mfu, "overlap": overlap,
            "hfu_implied": flops_per_gpu / (total * peak_flops)}  # FLOPs run (recomputation included) per second


def budget(flops: float, *, gpus: int, peak_flops: float, mfu: float | None = None,
           gpu_hours: float | None = None, tokens: int) -> dict:
    """Wall time, tokens/s and GPU-hours at an MFU; or the MFU a published GPU-hour figure implies."""
    out = {"flops": flops, "gpus": gpus, "tokens": tokens, "peak_flops_per_gpu": peak_flops}
    if gpu_hours is not None:
        implied = flops / (gpu_hours * 3600 * peak_flops)
        out["implied_mfu"] = implied
        mfu = implied if mfu is None else mfu
    if mfu is None:
        mfu = 0.4
    if not 0 < mfu <= 1:
        raise SymcostError(f"--mfu must be in (0, 1], got {mfu}")
    seconds = flops / (gpus * peak_flops * mfu)
    out.update({"mfu": mfu, "wall_time_s": seconds, "gpu_hours": seconds * gpus / 3600,
                "tokens_per_s": tokens / seconds, "days": seconds / 86400})
    return out


# -- the step from the hardware: kernels by class, each framework's overlap, the schedule's bubble ----
def comm_seconds(cm: dict, setup, links: Links) -> dict:
    """t_dim = n_dim·α + bytes_dim/β_dim per dimension (``comm.comm``'s answer ``cm``)."""
    p = setup.plan
    span = spans(p.dp, p.tp, p.pp, p.ep, p.cp, setup.states.shard)
    counts = cm["collectives"]
    return {dim: float(collective_seconds(nbytes, counts.get(dim, 0), link_bytes_s(dim, span.get(dim), links),
                                          links.alpha_s))
            for dim, nbytes in cm["bytes"].items()}


def kernel_step(ranks: list[dict], comm_s: dict, setup, *, framework: str = "megatron", schedule: str = "1f1b",
                hide: dict | None = None, model_flops_per_gpu: float, hardware_flops_per_gpu: float,
                peak_bf16: float, grad_share: float = 0.5, overlap: float | None = None,
                host_hidden_share: float = 0.0) -> dict:
    """One step's time with no MFU given: each pipeline rank's per-micro-batch kernel times
    (``ranks``: ``compute.class_times`` answers with ``t_opt`` and ``layers`` added), the framework's
    overlap (``overlap.exposed``) and the schedule's bubble (``schedule.bubble_seconds``):

        t_rank = m·max(t_F + t_B + t_R, t_host) + t_opt
        t_step = max_rank t_rank + bubble(F, B, W of the slowest rank) + Σ_dim exposed_dim

    t_host: the rank's host kernel-issue time per micro-batch (``host_launch``; 0 when absent).

    Implied MFU = model FLOPs per GPU / (t_step · P_bf16), HFU the same with the FLOPs the
    hardware runs (recomputation included), both against the dense BF16 peak. ``overlap``: one hidden
    share for every collective (``--overlap``) in place of the framework's rules."""
    from .overlap import exposed as exposed_comm
    from .schedule import bubble_seconds
    p = setup.plan
    m = setup.micro_batches
    per_rank = [m * max(r["t_F"] + r["t_B"] + r["t_R"], r.get("t_host", 0.0)) + r["t_opt"] for r in ranks]
    slow = max(range(len(ranks)), key=per_rank.__getitem__)
    r = ranks[slow]
    bub = bubble_seconds(schedule, p.pp, r["t_F"] + r["t_R"], r["t_B"], r["t_W"], setup.virtual)
    t_gemm = m * sum(r[ph][c] for ph in ("forward", "backward") for c in ("gemm", "grouped_gemm", "head"))
    t_attn = m * (r["forward"]["attention"] + r["backward"]["attention"])
    ex = exposed_comm(framework, comm_s, t_F=r["t_F"], t_B=r["t_B"], t_gemm=t_gemm, t_attn=t_attn, m=m,
                      zero=p.zero, layers=max(r["layers"], 1), virtual=setup.virtual, schedule=schedule,
                      grad_share=grad_share, hide=hide, host_hidden_share=host_hidden_share)
    if overlap is not None:  # the user's single share replaces the per-dimension rules
        ex = {k: {"time_s": d["time_s"], "exposed_s": (1 - overlap) * d["time_s"], "hidden_s": overlap * d["time_s"],
                  "rule": f"--overlap {overlap:g}"} for k, d in ex.items()}
    exposed_total = sum(d["exposed_s"] for d in ex.values())
    total = per_rank[slow] + bub + exposed_total
    classes = {c: m * (r["forward"][c] + r["backward"][c]) for c in r["forward"]}
    classes["recompute"] = m * r["t_R"]
    classes["optimizer"] = r["t_opt"]
    host = m * r.get("t_host", 0.0)
    device = m * (r["t_F"] + r["t_B"] + r["t_R"])
    return {"step_time_s": total, "compute_s": per_rank[slow], "kernel_s": classes,
            "comm_s": {k: d["time_s"] for k, d in ex.items()},
            "exposed_comm_s": {k: d["exposed_s"] for k, d in ex.items()},
            "hidden_comm_s": {k: d["hidden_s"] for k, d in ex.items()},
            "overlap_rules": {k: d["rule"] for k, d in ex.items()},
            "bubble_s": bub, "bubble": bub / total if total else 0.0, "slowest_rank": slow,
            "host_issue_s": host, "host_bound": host > device, "kernels_per_micro_batch": r.get("kernels"),
            "mfu_implied": model_flops_per_gpu / (total * peak_bf16),
            "hfu_implied": hardware_flops_per_gpu / (total * peak_bf16),
            "mfu": None, "overlap": overlap, "framework": framework or "megatron (no --framework)", "schedule": schedule,
            "efficiency": r["eta"], "gemm_peak_dtype": r["gemm_dtype"], "notes": r["notes"],
            "convention": "MFU/HFU against the dense BF16 peak; model FLOPs = 3 x forward (causal), "
                          "hardware FLOPs add recomputation"}
