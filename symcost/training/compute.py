"""A training step's compute time from the hardware, per kernel class, with no guessed MFU.

The forward FLOPs of one micro-batch (B sequences of T tokens) are split by kernel class, leaf by
leaf of the engine's FLOP tree (``Model.flops``, causal pairs):

  gemm          every weight GEMM (projections, dense and shared-expert FFN, router, LM head)
  grouped_gemm  the routed experts (``experts_*`` leaves): Megatron's grouped GEMM
  attention     the QKᵀ and PV pairs (``scores``/``values`` leaves): a FlashAttention-class kernel

A pipeline rank runs its own layers (``plan.rank_stages``: each group's layers on the rank, the
head on the last), each GEMM and attention split over N_tp and the tokens over N_cp, so one GPU's
forward FLOPs of class c per micro-batch are

    F_c = Σ_g (ℓ_g / L_g)·F_c,g / (N_tp·N_cp)  (+ the head's on the last rank)

and each class runs at its measured efficiency (``hardware.calibration.efficiency``, most specific
row for the GPU, the compute dtype and the GEMM's row count M):

    t_F = F_gemm/(P_g·η_gemm(M)) + F_grouped/(P_g·η_grouped(M_e)) + F_attn/(P_bf16·η_attn,fwd) + Q_ew,F/(BW·η_ew)
    t_B = 2·F_gemm/(P_g·η_gemm) + 2·F_grouped/(P_g·η_grouped) + 2.5·F_attn/(P_bf16·η_attn,bwd) + Q_ew,B/(BW·η_ew)
    t_W = F_gemm/(P_g·η_gemm) + F_grouped/(P_g·η_grouped)        (the weight-gradient half of t_B)
    t_R = t_F of the recomputed layers (full) or the attention forward again (selective)
    t_opt = (2·K + b_g + b_w)·Ψ_shard / (BW·η_opt)              (fused Adam: read and write the
            states, read the gradient, write the weights; K optimizer bytes per parameter)

M = B·T/N_cp token rows per micro-batch; M_e = k·B·T/N_cp / (E/N_ep) rows per local expert
(balanced routing); P_g the dense peak of the GEMMs' dtype (``precision``: bf16, or the FP8 peak
for fp8/mxfp8, with the LM head kept in bf16 as Transformer Engine and torchao do by default);
attention always at the BF16 peak. The attention backward is 2.5× the forward's FLOPs
(FlashAttention's count: dQ, dK, dV and the recomputed scores), at the ``attn_backward`` row.

Elementwise traffic (norms, activations, RoPE, residual adds, casts) is bandwidth-bound. Stated
approximation: each tensor a layer saves for backward (``activations_per_micro_batch`` without
recomputation) is written and read once in the forward (Q_ew,F = 2·A) and read, its gradient
written and read in the backward (Q_ew,B = 3·A). FP8 adds the weight casts, once per step (weights
cached across micro-batches): 3·Ψ bytes forward (bf16 read, fp8 write) and 3·Ψ for the transposed
copy the backward uses. Grouped GEMMs with no row of their own run at the dense GEMM's efficiency
at their per-expert M (said in the output).

Routed-expert layers add the router and permutation passes and run the grouped GEMM under its
class's max(compute, memory) + floor model (``moe_work``); every dense GEMM leaf and attention kernel
adds its class's launch floor. The step as a SymPy term tree in B, T and the layout symbols, with
these efficiencies substituted (table look-ups, piecewise in M), is ``stepformula``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.conventions import Phase
from ..core.errors import SymcostError
from ..core.notation import sym
from ..core.terms import exact
from ..hardware.calibration import efficiency, has_variant
from .plan import rank_stages
from .states import OPTIMIZER_BYTES, WEIGHT_BYTES

PRECISIONS = ("bf16", "fp8", "mxfp8")
CLASSES = ("gemm", "grouped_gemm", "attention")
ATTN_BWD_FACTOR = 2.5  # FlashAttention's backward FLOPs per forward FLOP (recomputes QKᵀ)


def has_mx(gpu) -> bool:
    """Whether ``gpu``'s tensor cores take MX block-scaled operands (MXFP8 training): the cards with an FP4
    peak in the catalogue, since their FP4 path is the block-scaled MMA that MXFP8 also runs on (NVIDIA
    Blackwell's sm_100/sm_103/sm_120 block-scaled MMA: B200, B300, GB200, GB300, RTX 5090, RTX PRO 6000;
    AMD CDNA 4's MX formats: MI355X); Hopper, Ada and CDNA 3 have FP8 without block scales."""
    return "fp4" in gpu.peak_tflops


def kernel_class(path: str) -> str:
    """The kernel class of a FLOP-tree leaf (module docstring)."""
    leaf = path.rsplit("/", 1)[-1]
    if leaf in ("scores", "values") or leaf.endswith(("_scores", "_values")):
        return "attention"
    if leaf.startswith("experts"):
        return "grouped_gemm"
    return "gemm"


def check_precision(precision: str, gpu) -> None:
    if precision not in PRECISIONS:
        raise SymcostError(f"--precision: unknown {precision!r} ({', '.join(PRECISIONS)})")
    if precision != "bf16" and "fp8" not in gpu.peak_tflops:
        raise SymcostError(f"--precision {precision}: {gpu.name} has no FP8 tensor cores")
    if precision == "mxfp8" and not has_mx(gpu):
        raise SymcostError(f"--precision mxfp8 needs MX block scaling in the tensor cores (Blackwell, "
                           f"CDNA 4: the cards with an FP4 peak, symcost gpus); {gpu.name} has none — use --precision fp8")


def gemm_dtype(precision: str) -> str:
    """The calibration dtype of the GEMMs under ``precision``."""
    return precision


def fp8_weight_cast_bytes(params: int, precision: str) -> int:
    """FP8 training's weight casts per step on one GPU: 3 bytes per parameter for the forward copy
    (bf16 read, fp8 write) and 3 for the transposed copy the backward's dgrad uses; 0 in bf16.
    (The memory side's FP8 weight copies are ``fp8_weight_copy_bytes``.)"""
    return 0 if precision == "bf16" else 6 * params


def fp8_weight_copy_bytes(params: int, precision: str) -> int:
    """Bytes one GPU holds for FP8 training beside the bf16 weights: an fp8 copy of each GEMM
    weight and its transpose (Transformer Engine keeps both across micro-batches, 2 bytes per
    parameter), plus the scales — per tensor (fp8: negligible, counted 0 here) or one e8m0 byte per
    32 elements of each copy (mxfp8: 2/32 per parameter, rounded up)."""
    if precision == "bf16":
        return 0
    extra = -(-2 * params // 32) if precision == "mxfp8" else 0
    return 2 * params + extra


def fp8_all_gather_share(setup, precision: str) -> float:
    """The share of the ZeRO-3 data-parallel seconds left when the parameter all-gathers move FP8
    weights (torchao's ``enable_fsdp_float8_all_gather`` under FSDP2/torchtitan): per micro-batch
    2·b_w → 2·1 bytes of gathers beside the b_g of the reduce-scatter (``comm.dp_collectives``):
    (2·m + rs·b_g)/(2·m·b_w + rs·b_g), rs = m reduce-scatters. Refused outside ZeRO-3 / FP8."""
    from .states import WEIGHT_BYTES
    if precision == "bf16":
        raise SymcostError("--fp8-all-gather needs --precision fp8 or mxfp8")
    if setup.plan.zero != 3:
        raise SymcostError("--fp8-all-gather needs --zero 3 (FSDP gathers the parameters every micro-batch)")
    m, bg, bw = setup.micro_batches, setup.states.bg, WEIGHT_BYTES["bf16"]
    return (2 * m + m * bg) / (2 * m * bw + m * bg)


@dataclass
class StageWork:
    """One pipeline rank's forward FLOPs per micro-batch on one GPU, by kernel class, and the
    row counts the efficiencies are looked up at."""

    flops: dict = field(default_factory=dict)     # class -> forward FLOPs (layers)
    head: int = 0                                  # the LM head's forward FLOPs (last rank)
    recompute_flops: dict = field(default_factory=dict)  # class -> FLOPs full recompute reruns
    rows: int = 0                                  # M, token rows per micro-batch per GPU
    expert_rows: int = 0                           # M_e, rows per local expert
    launches: dict = field(default_factory=dict)   # class -> forward kernel launches (leaves × layers)
    moe_layers: float = 0                          # routed-expert layers on the rank


def stage_work(model, setup, fwd_leaves: dict, stage: dict, last: bool, recomputed: dict | None) -> StageWork:
    """``StageWork`` of one rank (``plan.rank_stages`` entry ``stage``) from the forward leaves of
    one micro-batch on the whole model (``fwd_leaves``: path -> FLOPs)."""
    p = setup.plan
    split = p.tp * p.cp
    counts = {g.name: exact(g.count, model.values) for g in model.groups}
    w = StageWork(flops={c: 0 for c in CLASSES}, recompute_flops={c: 0 for c in CLASSES},
                  launches={c: 0 for c in CLASSES})
    moe_groups = set()
    for path, f in fwd_leaves.items():
        group = path.split("/", 1)[0]
        c = kernel_class(path)
        if group in counts:
            mine = stage["layers"].get(group, 0)
            if not mine:
                continue
            share = f * mine / counts[group] / split
            w.flops[c] += share
            w.launches[c] += mine
            if c == "grouped_gemm" and group not in moe_groups:
                moe_groups.add(group)
                w.moe_layers += mine
            if recomputed is not None:
                again = recomputed.get(group, 0)
                w.recompute_flops[c] += f * again / counts[group] / split
        elif last:
            w.launches[c] += 1
            if c == "gemm":
                w.head += f / split
            else:
                w.flops[c] += f / split
    w.rows = setup.micro_batch * setup.seq // p.cp
    v = model.values
    if sym.E in v:
        local = max(int(v[sym.E]) // p.ep, 1)
        w.expert_rows = int(v[sym.k]) * w.rows // local
    return w


#: ``--attention-impl``: the attention kernels a training run calls, by speed class, and the calibration
#: variant each is costed at (``hardware/kernels/attn_prefill.json``, ``attn_backward.json``): ``fused`` --
#: cuDNN fused attention and FlashAttention-3 (Transformer Engine's DotProductAttention in Megatron; PyTorch
#: SDPA's default on Hopper and Blackwell from 2.9, pytorch/pytorch#162073), the class rows; ``fa2`` --
#: FlashAttention-2 (PyTorch SDPA's flash backend, its default on Hopper before 2.9: pytorch/pytorch#142132
#: measures a 2024-12 nightly's default SDPA at 329 TFLOPS where cuDNN runs 631; the flash-attn 2 package),
#: the ``fa2`` rows where the card has them, else the class rows (stated in the step's notes)
ATTENTION_IMPLS = {"fused": None, "fa2": "fa2"}


def _eff(gpu, op_class, dtype, m, fallback=None, variant=None):
    if variant is not None:
        note = None if has_variant(gpu.name, op_class, variant) else (
            f"{op_class}: no {variant} row for {gpu.name}, the class's (cuDNN / FlashAttention-3 speed)")
        return efficiency(gpu.name, op_class, dtype=dtype, m=m, variant=variant), note
    try:
        return efficiency(gpu.name, op_class, dtype=dtype, m=m), None
    except SymcostError:
        if fallback is None:
            raise
        return efficiency(gpu.name, fallback, dtype=dtype, m=m), f"{op_class}: no row, {fallback}'s at M={m}"


def class_times(work: StageWork, gpu, precision: str, ew_fwd_bytes: float, ew_bwd_bytes: float,
                recompute: str, moe=None, etp: int = 1, attention_impl: str = "fused") -> dict:
    """Per micro-batch times (seconds) of one rank: t_F, t_B, t_W, t_R and their terms. ``moe``
    (``moe_work.MoeShape``): the rank's routed-expert layers, whose router and permutation passes
    and grouped GEMMs follow ``moe_work``; every dense GEMM leaf and attention kernel adds its
    class's launch floor t_0 once forward and twice backward; ``attention_impl`` (``ATTENTION_IMPLS``) the
    attention kernels' speed class."""
    from .moe_work import MoeShape, elementwise_seconds, grouped_seconds
    moe = moe or MoeShape()
    gd = gemm_dtype(precision)
    P, peak_dtype = gpu.peak("bf16" if precision == "bf16" else "fp8")
    P16 = gpu.peak("bf16")[0]
    BW = gpu.bandwidth_bytes_per_s
    notes = []
    e_g, _ = _eff(gpu, "gemm", gd, max(work.rows, 1))
    e_h, _ = _eff(gpu, "gemm", "bf16", max(work.rows, 1))
    e_x = e_g
    if work.flops["grouped_gemm"]:
        e_x, n = _eff(gpu, "grouped_gemm", gd, max(work.expert_rows, 1), fallback="gemm")
        if n:
            notes.append(n)
    variant = ATTENTION_IMPLS[attention_impl]
    e_af, n_af = _eff(gpu, "attn_prefill", "bf16", max(work.rows, 1), variant=variant)
    e_ab, n_ab = _eff(gpu, "attn_backward", "bf16", max(work.rows, 1), variant=variant)
    notes += [x for x in (n_af, n_ab) if x]
    e_ew, _ = _eff(gpu, "elementwise", "bf16", max(work.rows, 1))
    F = work.flops
    n = work.launches or {c: 0 for c in CLASSES}
    wbytes = 2 if precision == "bf16" else 1
    n_attn = n.get("attention", 0) / 2  # QKᵀ and PV: one fused attention kernel
    t_x = grouped_seconds(float(F["grouped_gemm"]), moe, gpu, e_x, P, wbytes, etp)
    fwd = {"gemm": float(F["gemm"]) / (P * e_g.eta_compute) + n.get("gemm", 0) * e_g.floor_s,
           "head": float(work.head) / (P16 * e_h.eta_compute),
           "grouped_gemm": t_x,
           "attention": float(F["attention"]) / (P16 * e_af.eta_compute) + n_attn * e_af.floor_s,
           "elementwise": ew_fwd_bytes / (BW * e_ew.eta_memory)}
    fwd.update({f"moe_{k}": t for k, t in elementwise_seconds(moe, gpu).items()})
    bwd = {"gemm": 2 * fwd["gemm"], "head": 2 * fwd["head"], "grouped_gemm": 2 * fwd["grouped_gemm"],
           "attention": ATTN_BWD_FACTOR * float(F["attention"]) / (P16 * e_ab.eta_compute) + n_attn * e_ab.floor_s,
           "elementwise": ew_bwd_bytes / (BW * e_ew.eta_memory),
           "moe_router": fwd["moe_router"], "moe_permute": fwd["moe_permute"]}
    W = fwd["gemm"] + fwd["head"] + fwd["grouped_gemm"]
    R = work.recompute_flops
    if recompute == "full":
        layer_share = sum(float(F[c]) for c in CLASSES) or 1.0
        again = sum(float(R[c]) for c in CLASSES) / layer_share
        t_r = again * (fwd["gemm"] + fwd["grouped_gemm"] + fwd["attention"] + fwd["elementwise"]
                       + fwd["moe_router"] + fwd["moe_permute"])
    elif recompute == "selective":
        t_r = fwd["attention"]
    else:
        t_r = 0.0
    eff = {"gemm": e_g.eta_compute, "grouped_gemm": e_x.eta_compute, "attn_forward": e_af.eta_compute,
           "attn_backward": e_ab.eta_compute, "elementwise_memory": e_ew.eta_memory, "head_bf16": e_h.eta_compute}
    eff["grouped_gemm"] = e_x.eta_compute
    return {"forward": fwd, "backward": bwd, "t_F": sum(fwd.values()), "t_B": sum(bwd.values()), "t_W": W,
            "t_R": t_r, "eta": eff, "notes": notes, "gemm_peak": P, "gemm_dtype": peak_dtype,
            "floors": {"gemm": e_g.floor_s, "attn_forward": e_af.floor_s, "attn_backward": e_ab.floor_s},
            "grouped_eff": e_x}


def optimizer_shard_seconds(shard, optimizer: str, bg: int, gpu):
    """t_opt of ``shard`` parameters (a number or a NumPy array: ``search`` applies the rule to its
    candidates): (2·K + b_g + b_w)·Ψ_shard / (BW·η_opt)."""
    K = OPTIMIZER_BYTES[optimizer]
    e = efficiency(gpu.name, "optimizer", dtype="bf16")
    return shard * float(2 * K + bg + WEIGHT_BYTES["bf16"]) / (gpu.bandwidth_bytes_per_s * e.eta_memory)


def optimizer_seconds(setup, optimizer_bytes: int, gpu) -> float:
    """t_opt = (2·K + b_g + b_w)·Ψ_shard / (BW·η_opt), Ψ_shard = optimizer bytes / K."""
    K = OPTIMIZER_BYTES[setup.states.optimizer]
    if not optimizer_bytes:
        return 0.0
    return optimizer_shard_seconds(float(optimizer_bytes / K), setup.states.optimizer, setup.states.bg, gpu)


def forward_leaves(model, setup) -> dict:
    """Forward FLOPs of one micro-batch (B = micro-batch, T = seq; causal pairs, logits on all
    positions) by leaf path, exact integers."""
    fwd = model.flops(Phase(kind="prefill", attention="causal", logits="all"))
    vals = model.values_with(T=setup.seq, B=setup.micro_batch)
    return {k: exact(e, vals) for k, e in fwd.flatten().items()}


def rank_work(model, setup, recomputed_by_rank=None) -> list[StageWork]:
    """``StageWork`` of every pipeline rank."""
    leaves = forward_leaves(model, setup)
    ranks = rank_stages(model, setup.plan.pp, setup.virtual, setup.plan)
    out = []
    for i, st in enumerate(ranks):
        again = None
        if setup.recompute.mode == "full":
            again = recomputed_by_rank[i] if recomputed_by_rank is not None else st["layers"]
        out.append(stage_work(model, setup, leaves, st, i == len(ranks) - 1, again))
    return out
