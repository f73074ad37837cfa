"""Communication of one training step, per dimension: bytes each GPU sends, and collective counts.

Ring collectives over n ranks send, per GPU, 2·(n−1)/n of the buffer for an all-reduce and
(n−1)/n for an all-gather or a reduce-scatter. Per step, with m micro-batches, s = T/N_cp tokens
per sequence on a GPU, b the micro-batch, b_a activation bytes, Ψ_g a GPU's parameters of group g
(dense over N_dp·N_cp ranks, routed experts over N_dp·N_cp/N_ep; ``plan``):

  dp   ZeRO-0 (DDP): one gradient all-reduce per step, 2·(n−1)/n·b_g·Ψ_g (gradient accumulation
       reduces once, after the last micro-batch);
       ZeRO-1/2 (distributed optimizer): reduce-scatter of the gradients + all-gather of the
       updated parameters, (n−1)/n·(b_g + b_w)·Ψ_g, once per step;
       ZeRO-3 / FSDP: every micro-batch all-gathers the parameters for the forward and again for
       the backward and reduce-scatters the gradients, m·(n−1)/n·(2·b_w + b_g)·Ψ_g — with m = 1
       and b_g = b_w, 3·(n−1)/n·b_w·Ψ: the ZeRO paper's 1.5× of plain data parallelism.
       HSDP (``--hsdp-shard N_sh``): the above inside each shard group of n = N_sh·N_cp ranks
       (experts N_sh·N_cp/N_ep), and ``dp_replicate``: the r = N_dp/N_sh replicas all-reduce the
       gradient shard, 2·(r−1)/r·b_g·Ψ_g/n, once per step at ZeRO-1/2 (Megatron's distributed-
       optimizer instances), after every reduce-scatter at ZeRO-3 (FSDP2 HSDP).
  host CPU offload (``states``): PCIe bytes per step, both directions — ZeRO-Offload
       (b_g + b_w)·Ψ_g/n, parameter offload (2·m·b_w + m_rs·b_g)·Ψ_g/n.
  tp   Megatron TP, per layer with two TP blocks (mixer, FFN), per micro-batch: forward one
       all-reduce of s·b·d after each block, backward one before each (2 + 2 all-reduces);
       with sequence parallelism each all-reduce becomes an all-gather + a reduce-scatter (same
       bytes) and the backward re-gathers each block's input (+2 all-gathers). Full recompute
       repeats the forward's collectives. Plus the vocab-parallel embedding's forward all-reduce
       and the head input gradient's backward all-reduce, s·b·d each.
  pp   per micro-batch, an interior stage sends one activation forward and one gradient
       backward of s·b·d (÷N_tp with sequence parallelism); the heaviest stage's bytes. Interleaved
       (v model chunks per stage) every chunk does: 2·v sends per micro-batch on an interior rank,
       2·v − 1 on the first and last.
  ep   per MoE layer and micro-batch: dispatch and combine all-to-alls of R·d forward and
       backward, R = k·s·b rows dropless (balanced routing) or E·⌈c_f·k·s·b/E⌉ with a capacity
       factor (padded to capacity; ``activations.routed_rows``), ×(N_ep−1)/N_ep leaves the GPU;
       full recompute repeats the two forward ones.
  cp   ring attention (Megatron's p2p CP), per attention layer and micro-batch: forward passes
       every K/V chunk around the ring (N_cp−1 sends of s·b·w), backward passes K/V again and
       dK/dV back (2·(N_cp−1) more): 3·(N_cp−1)·s·b·w·b_a, w = 2·H_kv·D_h (GQA), or the
       expanded H_q·(D_nope + D_rope + D_v) for MLA. Full or selective recompute re-runs the
       forward ring (+1·(N_cp−1)).
Layers per GPU are the heaviest stage's (L/N_pp). Cross-entropy statistics (two fp32 per token)
and the MoE router's load-balancing reductions are not counted.
"""
from __future__ import annotations

from fractions import Fraction
from math import ceil

import sympy

from ..errors import SymcostError
from ..notation import sym
from ..terms import exact
from .memory import ACT_BYTES, micro_batches
from .plan import GRAD_BYTES, WEIGHT_BYTES, Plan, model_states, layer_kinds, rank_stages


def comm(model, *, seq: int, micro_batch: int, global_batch: int | None = None,
         dp=1, tp=1, pp=1, ep=1, cp=1, zero=0, sp=False, recompute="none",
         grad_dtype="bf16", act_dtype="bf16", grad_sync="every", sp_regather=True,
         hsdp_shard=None, offload="none", virtual=1, capacity=None, recompute_method="uniform",
         recompute_layers=1) -> dict:
    """Bytes each GPU sends per step, and the collectives it takes part in, by dimension
    (``dp_replicate`` with HSDP, ``host`` — PCIe, both directions — with CPU offload). A layer that
    full recomputation reruns (``recompute.Recompute``: all of them, or Megatron's ``block`` of the
    first N per chunk) repeats its forward collectives."""
    from .memory import check_capacity, check_pipeline
    from .recompute import Recompute, add_up, recomputed_units
    from .states import States
    plan = Plan(dp=dp, tp=tp, pp=pp, ep=ep, cp=cp, zero=zero, sp=sp)
    plan.check(model, seq)
    states_opt = States(shard=hsdp_shard, offload=offload)
    states_opt.check(plan)
    check_capacity(model, capacity)
    if recompute == "selective" and cp == 1:
        raise SymcostError("--recompute selective does not change communication unless --cp > 1 "
                           "(the attention core it recomputes has no collectives otherwise)")
    m = micro_batches(global_batch, micro_batch, dp)
    check_pipeline(model, plan, m, virtual)
    rc = Recompute(recompute, recompute_method, recompute_layers)
    rc.check()
    all_stages = rank_stages(model, pp, virtual)
    again = [add_up(recomputed_units(model, rc, st.get("chunks", [st]))) for st in all_stages]
    ctx = {"states": states_opt, "virtual": virtual, "capacity": capacity, "again": again}
    v = model.values
    a, bg, bw = ACT_BYTES[act_dtype], GRAD_BYTES[grad_dtype], WEIGHT_BYTES["bf16"]
    s, b, d = seq // cp, micro_batch, exact(sym.d, v)
    out = {k: Fraction(0) for k in ("dp", "tp", "pp", "ep", "cp")}
    count = {k: 0 for k in out}
    states = model_states(model, plan, grad_dtype=grad_dtype, states=states_opt, virtual=virtual)
    kinds = layer_kinds(model)
    best, where = None, {}
    for i in range(pp):
        o, c = _stage(i, states[i], all_stages[i]["layers"], kinds, plan, m, s, b, d, a, bg, bw, v,
                      recompute, grad_sync, sp_regather, ctx)
        if best is None:
            best, where = (o, c), {k: 0 for k in o}
        else:  # the busiest GPU of each dimension
            for key in o:
                if o[key] > best[0][key]:
                    best[0][key], best[1][key], where[key] = o[key], c[key], i
    out, count = best
    formula = {k: _formula(k, where[k], all_stages[where[k]], kinds, plan, zero, bg, bw, recompute,
                           grad_sync, sp_regather, v, ctx) for k in out}
    return {"bytes": {k: ceil(x) for k, x in out.items()}, "collectives": count, "micro_batches": m,
            "formula": formula}


def _formula(dim, i, st, kinds, plan, zero, bg, bw, recompute, grad_sync, sp_regather, v, ctx):
    """The busiest stage's bytes on one dimension as an expression in N_dp, N_tp, N_cp, N_ep, m_mb,
    B (micro-batch), T, b_a (and N_sh under HSDP), with the stage's parameter and layer counts as
    numbers."""
    import sympy
    from .activations import routed_rows
    again = ctx["again"][i]  # the units of each group this rank recomputes
    Ndp, Ntp, Ncp, Nep, M, B, T, a = (sym.N_dp, sym.N_tp, sym.N_cp, sym.N_ep, sym.m_mb, sym.B, sym.T, sym.b_a)
    d = v[sym.d]
    block = T / Ncp * B * d * a
    blocks = sum(c * kinds[n].tp_blocks for n, c in st["layers"].items())
    blocks_again = sum(c * kinds[n].tp_blocks for n, c in again.items())
    zero_ = sympy.Integer(0)
    hsdp = ctx["states"].shard is not None
    shard = sym.N_sh if hsdp else Ndp
    (n_dense, rep), (n_exp, _) = ctx["states"].groups(plan)
    dense = sympy.Integer(st["split"]) / Ntp + st["whole"]
    experts = sympy.Integer(st["experts"]) / (Nep * Ntp)
    groups = ((dense, shard * Ncp, n_dense), (experts, shard * Ncp / Nep, n_exp))
    rs = M if grad_sync == "every" else 1
    if dim == "dp":
        out = zero_
        for psi, n, n_val in groups:
            if n_val == 1 or psi == 0:
                continue
            r = (n - 1) / n
            if zero == 0:
                out += 2 * r * bg * psi
            elif zero in (1, 2):
                out += r * (bg + bw) * psi
            else:
                out += r * (2 * M * bw + rs * bg) * psi
        return out
    if dim == "dp_replicate":
        R = Ndp / sym.N_sh
        return sum(((rs if zero == 3 else 1) * 2 * (R - 1) / R * bg * psi / n for psi, n, _ in groups
                    if psi != 0), zero_)
    if dim == "host":
        off = ctx["states"].offload
        per = (bg + bw) if off == "optimizer" else (2 * M * bw + rs * bg)
        return sum((per * psi / n for psi, n, _ in groups if psi != 0), zero_)
    if dim == "tp":
        if plan.tp == 1:
            return zero_
        r = (Ntp - 1) / Ntp
        _, ops = tp_collectives(blocks, 1, plan.tp, plan.sp, blocks_again, sp_regather)
        n_ops = sum(ops.values()) if plan.sp else 2 * ops["all_reduce"]
        return M * (r * block * n_ops + 2 * 2 * r * block)
    if dim == "pp":
        if plan.pp == 1:
            return zero_
        sends = 2 * ctx["virtual"] - (i == 0) - (i == plan.pp - 1)
        return M * sends * block / (Ntp if plan.sp else 1)
    if dim == "ep":
        n_moe = sum(c for n, c in st["layers"].items() if kinds[n].moe)
        if plan.ep == 1 or not n_moe:
            return zero_
        rows = routed_rows(v[sym.k], v[sym.E], T / Ncp * B, ctx["capacity"])
        n_a2a = 4 * n_moe + 2 * sum(c for n, c in again.items() if kinds[n].moe)
        return M * n_a2a * (Nep - 1) / Nep * rows * d * a
    if plan.cp == 1:
        return zero_
    out = zero_
    for n, c in st["layers"].items():
        if kinds[n].attention:
            rounds = 3 * c + (c if recompute == "selective" else again.get(n, 0))
            out += M * rounds * (Ncp - 1) * T / Ncp * B * kinds[n].cp_width * a
    return out


def _stage(i, st, stage_layers, kinds, plan, m, s, b, d, a, bg, bw, v, recompute, grad_sync, sp_regather,
           ctx):
    from .activations import routed_rows
    from .states import host_ops, host_traffic
    dp, tp, pp, ep, cp, zero, sp = plan.dp, plan.tp, plan.pp, plan.ep, plan.cp, plan.zero, plan.sp
    states_opt, virtual = ctx["states"], ctx["virtual"]
    dims = ["dp", "tp", "pp", "ep", "cp"]
    if states_opt.shard is not None:
        dims.append("dp_replicate")
    if states_opt.offload != "none":
        dims.append("host")
    out = {k: Fraction(0) for k in dims}
    count = {k: 0 for k in out}

    # -- data parallel: each parameter group over its own ZeRO group (and its replicas with HSDP) ------
    (n_dense, rep), (n_exp, _) = states_opt.groups(plan)
    for psi, n in ((st["params_dense"], n_dense), (st["params_experts"], n_exp)):
        nbytes, ops = dp_collectives(psi, n, zero, m, bg, bw, grad_sync)
        out["dp"] += nbytes
        count["dp"] += sum(ops.values())
        if states_opt.shard is not None and psi:
            nbytes, ops = replicate_collectives(psi / n, rep, zero, m, bg, grad_sync)
            out["dp_replicate"] += nbytes
            count["dp_replicate"] += sum(ops.values())
        if states_opt.offload != "none" and psi:
            out["host"] += host_traffic(psi, n, m, bg, bw, states_opt.offload, grad_sync)
            count["host"] += host_ops(m, states_opt.offload, grad_sync)
    # -- per-layer activations collectives on the heaviest stage --------------------------------------
    again = ctx["again"][i]  # the units of each group this rank recomputes
    if tp > 1:
        blocks = sum(c * kinds[n].tp_blocks for n, c in stage_layers.items())
        blocks_again = sum(c * kinds[n].tp_blocks for n, c in again.items())
        nbytes, ops = tp_collectives(blocks, s * b * d * a, tp, sp, blocks_again, sp_regather)
        out["tp"] += m * nbytes + m * 2 * (2 * Fraction(tp - 1, tp) * s * b * d * a)  # + embedding fwd, head bwd
        count["tp"] += m * (sum(ops.values()) + 2)
    if pp > 1:
        msg = Fraction(s * b * d * a, tp if sp else 1)
        sends = 2 * virtual - (i == 0) - (i == pp - 1)  # each model chunk's boundary, both ways
        out["pp"] += m * sends * msg
        count["pp"] += m * sends
    if ep > 1:
        rows = int(routed_rows(sympy.Integer(exact(sym.k, v)), sympy.Integer(exact(sym.E, v)),
                               sympy.Integer(s * b), ctx["capacity"]))
        r = Fraction(ep - 1, ep)
        for name, c in stage_layers.items():
            if kinds[name].moe:
                n_a2a = 4 * c + 2 * again.get(name, 0)  # dispatch + combine, forward and backward
                out["ep"] += m * n_a2a * r * rows * d * a
                count["ep"] += m * n_a2a
    if cp > 1:
        for name, c in stage_layers.items():
            if not kinds[name].attention:
                continue
            rounds = 3 * c + (c if recompute == "selective" else again.get(name, 0))
            out["cp"] += m * rounds * (cp - 1) * s * b * kinds[name].cp_width * a
            count["cp"] += m * rounds * (cp - 1)
    return out, count


def dp_collectives(psi, n: int, zero: int, m: int, bg, bw, grad_sync: str = "every"):
    """Bytes one GPU sends for ``psi`` parameters over ``n`` data-parallel ranks, and the ops.

    ZeRO-0: one all-reduce; ZeRO-1/2: reduce-scatter + all-gather; ZeRO-3/FSDP: per micro-batch
    an all-gather for the forward and one for the backward, and a reduce-scatter per micro-batch
    (``grad_sync="every"``) or only after the last (``"last"``: FSDP2's
    ``set_requires_gradient_sync(False)`` on the others, gradients kept unsharded meanwhile)."""
    if n == 1 or psi == 0:
        return Fraction(0), {}
    r = Fraction(n - 1, n)
    if zero == 0:
        return 2 * r * bg * psi, {"all_reduce": 1}
    if zero in (1, 2):
        return r * (bg + bw) * psi, {"reduce_scatter": 1, "all_gather": 1}
    rs = m if grad_sync == "every" else 1
    return r * (2 * m * bw + rs * bg) * psi, {"all_gather": 2 * m, "reduce_scatter": rs}


def replicate_collectives(shard_psi, r: int, zero: int, m: int, bg, grad_sync: str = "every"):
    """HSDP's second level: the gradient shard (``shard_psi`` parameters) all-reduced over the r
    replicas, 2·(r−1)/r·b_g·Ψ/n — once per step at ZeRO-1/2 (Megatron's distributed-optimizer
    instances, after the reduce-scatter), after every reduce-scatter at ZeRO-3 (FSDP2 HSDP)."""
    if r == 1 or shard_psi == 0:
        return Fraction(0), {}
    times = (m if grad_sync == "every" else 1) if zero == 3 else 1
    return times * 2 * Fraction(r - 1, r) * bg * shard_psi, {"all_reduce": times}


def tp_collectives(blocks: int, block_bytes, tp: int, sp: bool, recomputed: int = 0, regather: bool = True):
    """Bytes one GPU sends for the TP collectives of ``blocks`` TP blocks (``parallel.tp_blocks``:
    two per Llama layer), ``recomputed`` of which run their forward twice (full recomputation),
    over one micro-batch of ``block_bytes`` = s·b·d·b_a, and the ops. Without SP: an all-reduce
    after each block's forward and one in its backward; with SP an all-gather + a reduce-scatter
    in their place, and (Megatron, ``regather``) an all-gather of each block's saved input again
    in backward."""
    r = Fraction(tp - 1, tp)
    forwards = blocks + recomputed
    if sp:
        ops = {"all_gather": forwards + blocks + (blocks if regather else 0), "reduce_scatter": forwards + blocks}
        return r * block_bytes * (ops["all_gather"] + ops["reduce_scatter"]), ops
    ops = {"all_reduce": forwards + blocks}
    return 2 * r * block_bytes * ops["all_reduce"], ops


def ring_allreduce_bytes(n: int, nbytes: int) -> Fraction:
    """Bytes one GPU sends in a ring all-reduce of ``nbytes`` over ``n`` ranks: 2·(n−1)/n·nbytes."""
    return Fraction(2 * (n - 1), n) * nbytes
