"""The per-layer work of a routed-expert (MoE) layer that a real training step runs beside the expert
GEMMs' FLOPs: the router's scoring passes, the token permutation passes around the all-to-all, the
grouped GEMM at its measured row regime (with the memory term and launch floor of the calibration's
model), and the launch floor of every kernel.

Mechanism (Megatron-Core's dropless ``MoEAlltoAllTokenDispatcher`` with the fused router and the
fused permutation, ``megatron/core/transformer/moe/token_dispatcher.py``, ``moe_utils.permute`` /
``unpermute`` / ``sort_chunks_by_idxs``; Transformer Engine's ``GroupedLinear`` for the experts).
Per MoE layer and micro-batch on one GPU, with M = B·T/N_cp token rows (the experts of a TP group see
all its tokens: Megatron gathers the sequence-parallel shards before the experts; the same M as
``compute``'s expert rows), A = k·M routed rows, E_loc = E/N_ep local experts, b = 2 bytes
per activation element (the dispatcher moves bf16):

  router      scores (fp32) written by the router GEMM's epilogue, read by the fused softmax/top-k,
              probabilities written:  Q_r = 3·M·E·4 bytes forward, the same backward; 1 kernel each way
  permute     gather the rows to their experts (read M·d·b, write A·d·b) and, after the all-to-all
              when N_ep > 1 and E_loc > 1, sort the received chunks by local expert (read and write
              A·d·b); unpermute and the chunk sort back mirror them in the combine:
              Q_p = 2·A·d·b·(1 + s) per direction and pass, s = [N_ep > 1 and E_loc > 1]
              (the issue's "rows·k·d·dtype ×2 each way"), forward; the same backward
  grouped     t = max(F/(P·η_c), Q/(BW·η_m)) + t_0, the grouped_gemm class's own model
  GEMM        (``hardware.calibration``): F the layer's expert FLOPs on this GPU, Q the GPU's share
              of the experts' weights (3·d·d_moe·E_loc/N_tp at the GEMM dtype's bytes: the engine
              splits an expert layer over N_tp·N_ep ranks, Megatron's --etp folded into N_ep) plus
              the rows in and out
              (2·A·d·b); once forward, twice backward (dgrad and wgrad), η at the rows per local
              expert M_e = A·N_ep/E (balanced routing)

Every elementwise kernel costs Q/(BW·η_m) + t_0 at the ``elementwise`` row; counted kernels: router
1 + permute 1 (+1 sort) + unpermute 1 (+1 sort) per direction. The dense GEMMs' and attention's
launch floors are added by ``compute.class_times`` from the number of their leaves.

The all-to-all itself is communication (``comm``: the ``ep`` dimension, exposed or hidden by
``overlap``). The host's kernel-issue time of eager execution is ``host_launch``'s floor (one cuBLAS GEMM
per local expert there). Not modelled: routing imbalance.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.notation import sym
from ..hardware.calibration import efficiency

ROUTER_BYTES = 4  # fp32 router logits / probabilities (Megatron keeps the router in fp32)
ACT_BYTES = 2     # bf16 rows through the dispatcher


@dataclass
class MoeShape:
    """One rank's MoE layers and their shapes per micro-batch on one GPU."""
    layers: float = 0       # MoE layers on the rank (layer share of each group with routed experts)
    rows: int = 0           # M, token rows into the router on one GPU
    routed: int = 0         # A = k·M rows to experts
    local_experts: int = 0  # E_loc
    experts: int = 0        # E
    d: int = 0
    d_moe: int = 0
    sort: bool = False      # the chunk sort after the all-to-all runs


def moe_shape(model, setup, moe_layers: float) -> MoeShape:
    """The ``MoeShape`` of a rank with ``moe_layers`` routed-expert layers (0: a dense model)."""
    v = model.values
    if not moe_layers or sym.E not in v:
        return MoeShape()
    p = setup.plan
    E, k = int(v[sym.E]), int(v[sym.k])
    d = int(v[sym.d])
    d_moe = int(v.get(sym.d_moe, v.get(sym.d_ff, 0)))
    rows = setup.micro_batch * setup.seq // p.cp
    local = max(E // p.ep, 1)
    return MoeShape(layers=moe_layers, rows=rows, routed=k * rows, local_experts=local, experts=E, d=d,
                    d_moe=d_moe, sort=p.ep > 1 and local > 1)


def elementwise_seconds(shape: MoeShape, gpu) -> dict:
    """Per micro-batch seconds of the rank's router and permutation passes, forward and backward
    (the same each way), with each kernel's launch floor: {"router": s, "permute": s} per pass."""
    if not shape.layers:
        return {"router": 0.0, "permute": 0.0}
    e = efficiency(gpu.name, "elementwise", dtype="bf16")
    bw = gpu.bandwidth_bytes_per_s * e.eta_memory
    q_router = 3 * shape.rows * shape.experts * ROUTER_BYTES
    sorts = 1 if shape.sort else 0
    q_perm = 2 * shape.routed * shape.d * ACT_BYTES * (1 + sorts)
    n_perm = 2 * (1 + sorts)  # permute and unpermute, each with its chunk sort
    return {"router": shape.layers * (q_router / bw + e.floor_s),
            "permute": shape.layers * (q_perm / bw + n_perm * e.floor_s)}


def step_extra_arrays(model, gpu, precision: str, rows, r_tp, r_ep, r_pp, r_v, m, etp=None, recompute=None,
                      r_acc=None, attention_impl: str = "fused"):
    """The search's array form (``search._kernel_compute``) of what this module and the launch floors
    add to ``compute.class_times`` on the average pipeline rank, per step and candidate row: the router
    and permutation passes (both directions), the grouped GEMM's floor and memory excess over its FLOP
    term (forward, dgrad, wgrad), and the dense GEMM and attention launch floors. ``rows`` = b·T/N_cp."""
    import numpy as np
    from ..core.conventions import Phase
    from ..core.terms import exact
    from ..hardware.calibration import efficiency_array
    from .compute import kernel_class
    from .plan import Plan, rank_stages
    rows = np.asarray(rows, dtype=float)
    v = model.values
    counts = {g.name: float(exact(g.count, v)) for g in model.groups}
    fwd = {path: float(exact(e, model.values_with(T=1, B=1))) for path, e in
           model.flops(Phase(kind="prefill", attention="causal", logits="all")).flatten().items()}
    n_gemm = n_attn = moe_layers = 0.0
    f_expert_per_row = 0.0  # expert FLOPs per token row and MoE layer (linear in the rows)
    moe_groups = set()
    for path, f in fwd.items():
        g = path.split("/", 1)[0]
        c = kernel_class(path)
        if g not in counts:
            n_gemm += c == "gemm"
            continue
        if c == "gemm":
            n_gemm += counts[g]
        elif c == "attention":
            n_attn += counts[g] / 2
        elif c == "grouped_gemm":
            f_expert_per_row += f  # over the group's layers: divided by the MoE layers below
            if g not in moe_groups:
                moe_groups.add(g)
                moe_layers += counts[g]
    gd = precision
    _, _, f_g = efficiency_array(gpu.name, "gemm", np.maximum(rows, 1), dtype=gd)
    from .compute import ATTENTION_IMPLS
    variant = ATTENTION_IMPLS[attention_impl]
    _, _, f_af = efficiency_array(gpu.name, "attn_prefill", np.maximum(rows, 1), variant=variant)
    _, _, f_ab = efficiency_array(gpu.name, "attn_backward", np.maximum(rows, 1), variant=variant)
    # the busiest rank's share of the layers (``run.kernel_step`` costs the slowest rank), per (N_pp, v)
    share_all = np.ones(len(rows))
    share_moe = np.ones(len(rows))
    total = sum(counts.values()) or 1.0
    r_acc = np.zeros_like(np.asarray(r_v)) if r_acc is None else np.asarray(r_acc)
    for pv in np.unique((np.asarray(r_pp) * 1000 + np.asarray(r_v)) * 2 + r_acc):
        a_ = int(pv % 2)
        p_, v_ = int(pv // 2 // 1000), int(pv // 2 % 1000)
        ranks = rank_stages(model, p_, v_, Plan(pp=p_, embed_slot=True, loss_slot=True) if a_ else None)
        sel = (r_pp == p_) & (r_v == v_) & (r_acc == a_)
        share_all = np.where(sel, max(sum(st["layers"].values()) for st in ranks) / total, share_all)
        if moe_layers:
            share_moe = np.where(sel, max(sum(n for g, n in st["layers"].items() if g in moe_groups)
                                          for st in ranks) / moe_layers, share_moe)
    rc = np.asarray(recompute if recompute is not None else ["none"] * len(rows))
    full, selective = (rc == "full").astype(float), (rc == "selective").astype(float)
    # full recomputation reruns the forward (its floors too), selective the attention forward
    per_mb = ((3 + full) * n_gemm * f_g + n_attn * ((1 + full + selective) * f_af + f_ab)) * share_all
    w_mb = n_gemm * f_g * share_all  # the weight-gradient GEMMs' share (one forward's floors), for ZB-H1
    if moe_layers and sym.E in v:
        E, k, d = int(v[sym.E]), int(v[sym.k]), int(v[sym.d])
        d_moe = int(v.get(sym.d_moe, v.get(sym.d_ff, 0)))
        M = rows
        A = k * M
        local = np.maximum(E // r_ep, 1)
        sort = ((r_ep > 1) & (local > 1)).astype(float)
        e = efficiency(gpu.name, "elementwise", dtype="bf16")
        bw = gpu.bandwidth_bytes_per_s * e.eta_memory
        router = 3 * M * E * ROUTER_BYTES / bw + e.floor_s
        permute = 2 * A * d * ACT_BYTES * (1 + sort) / bw + 2 * (1 + sort) * e.floor_s
        P, _ = gpu.peak("bf16" if precision == "bf16" else "fp8")
        er = np.maximum(A * r_ep // E, 1)
        try:
            ec, em, f0 = efficiency_array(gpu.name, "grouped_gemm", er, dtype=gd)
        except Exception:  # no grouped row for the dtype: the dense GEMM's (compute._eff's fallback)
            ec, em, f0 = efficiency_array(gpu.name, "gemm", er, dtype=gd)
        wbytes = 2 if precision == "bf16" else 1
        t_flop = f_expert_per_row / moe_layers * rows / r_tp / (P * ec)  # one layer's pass on one GPU
        q = 3 * d * d_moe * local * wbytes / (etp if etp is not None else r_tp) + 2 * A * d * ACT_BYTES
        t_mem = q / (gpu.bandwidth_bytes_per_s * em)
        grouped = 3 * (np.maximum(t_mem - t_flop, 0) + f0)
        per_mb = per_mb + moe_layers * share_moe * ((2 + full) * (router + permute) + grouped * (1 + full / 3))
        w_mb = w_mb + moe_layers * share_moe * grouped / 3
    return per_mb * m, w_mb


def grouped_seconds(flops: float, shape: MoeShape, gpu, eff, peak: float, weight_bytes: int, etp: int) -> float:
    """One pass (forward, or each of dgrad and wgrad) of the rank's grouped expert GEMMs per
    micro-batch: Σ_layers max(F/(P·η_c), Q/(BW·η_m)) + t_0 (module docstring), ``flops`` the pass's
    FLOPs over all the rank's MoE layers, ``eff`` the calibration row."""
    if not flops:
        return 0.0
    if not shape.layers:
        return flops / (peak * eff.eta_compute)
    per_layer = flops / shape.layers
    q = 3 * shape.d * shape.d_moe * shape.local_experts * weight_bytes / max(etp, 1) \
        + 2 * shape.routed * shape.d * ACT_BYTES
    a, b = per_layer / (peak * eff.eta_compute), q / (gpu.bandwidth_bytes_per_s * eff.eta_memory)
    if isinstance(a, sympy.Basic) or isinstance(b, sympy.Basic):  # the step's term tree (``stepformula``)
        t = sympy.Max(a, b)
    else:
        t = max(a, b)
    return shape.layers * (t + eff.floor_s)
