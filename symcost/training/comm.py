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

from dataclasses import dataclass
from fractions import Fraction

import sympy

from ..core.errors import SymcostError
from ..core.notation import sym
from .activations import routed_rows
from .memory import layout_values, model_states
from .plan import layer_kinds, rank_stages
from .recompute import add_up, recomputed_units
from .setup import TrainSetup, check_capacity, check_pipeline
from .states import WEIGHT_BYTES, host_ops, host_traffic, param_groups


def _ratio(num, den):
    """num/den: an exact Fraction for integers, the expression for symbols."""
    if isinstance(num, int) and isinstance(den, int):
        return Fraction(num, den)
    return sympy.sympify(num) / den


def comm(model, setup: TrainSetup, *, grad_sync="every", sp_regather=True) -> dict:
    """Bytes each GPU sends per step, and the collectives it takes part in, by dimension
    (``dp_replicate`` with HSDP, ``host`` — PCIe, both directions — with CPU offload). A layer that
    full recomputation reruns (``recompute.Recompute``: all of them, or Megatron's ``block`` of the
    first N per chunk) repeats its forward collectives. The bytes are ``formulas`` (one expression
    per dimension and pipeline rank, in the layout symbols) substituted with the setup's layout;
    the busiest rank of each dimension is reported."""
    from .mtp import with_mtp
    model = with_mtp(model, setup.mtp)  # the MTP modules trained (their EP all-to-alls, their states)
    plan, states_opt, rc = setup.plan, setup.states, setup.recompute
    plan.check(model, setup.seq)
    states_opt.check(plan)
    check_capacity(model, setup.capacity)
    if rc.mode == "selective" and plan.cp == 1:
        raise SymcostError("--recompute selective does not change communication unless --cp > 1 "
                           "(the attention core it recomputes has no collectives otherwise)")
    m = setup.micro_batches
    check_pipeline(model, plan, m, setup.virtual)
    rc.check()
    all_stages = rank_stages(model, plan.pp, setup.virtual, plan)
    again = [add_up(recomputed_units(model, rc, st.get("chunks", [st]))) for st in all_stages]
    states = model_states(model, setup)
    kinds = layer_kinds(model)
    vals = {k: sympy.Integer(x) if isinstance(x, int) else x for k, x in layout_values(model, setup).items()}
    vals[sym.m_mb] = sympy.Integer(m)
    best = where = None
    for i, st in enumerate(all_stages):
        f = formulas(model, setup, i, st, again[i], kinds, grad_sync=grad_sync, sp_regather=sp_regather)
        o = {k: sympy.sympify(e).xreplace(vals) for k, e in f.items()}
        c = _counts(i, states[i], st["layers"], again[i], kinds, setup, m, grad_sync, sp_regather)
        if best is None:
            best, where, fs = (o, c), {k: 0 for k in o}, dict(f)
        else:  # the busiest GPU of each dimension
            for key in o:
                if o[key] > best[0][key]:
                    best[0][key], best[1][key], where[key], fs[key] = o[key], c[key], i, f[key]
    out, count = best
    return {"bytes": {k: int(sympy.ceiling(x)) for k, x in out.items()}, "collectives": count, "micro_batches": m,
            "formula": fs}


def formulas(model, setup, i, st, again, kinds, *, grad_sync="every", sp_regather=True) -> dict:
    """Pipeline rank i's bytes on each dimension as expressions in N_dp, N_tp, N_cp, N_ep, m_mb,
    B (micro-batch), T, b_a (and N_sh under HSDP), with the rank's parameter and layer counts as
    numbers (``again``: the units of each group it recomputes). Every volume is the collective
    rule below, called with symbols."""
    plan, states_opt = setup.plan, setup.states
    zero, bg, bw = plan.zero, states_opt.bg, WEIGHT_BYTES["bf16"]
    v = model.values
    Ndp, M = sym.N_dp, sym.m_mb
    zero_ = sympy.Integer(0)
    hsdp = states_opt.shard is not None
    (n_dense, rep), (n_exp, _) = states_opt.groups(plan)
    groups = [(psi, n, n_val) for (psi, n), n_val in
              zip(param_groups(st["split"], st["whole"], st["experts"], sym.N_sh if hsdp else None),
                  (n_dense, n_exp))]
    out = {}
    dp = zero_
    for psi, n, n_val in groups:
        if n_val != 1 and psi != 0:
            dp += dp_collectives(psi, n, zero, M, bg, bw, grad_sync)[0]
    out["dp"] = dp
    rk = composition(i, st["layers"], again, kinds, plan.pp, setup.virtual, setup.recompute.mode)
    vol, _ = activation_collectives(rk, setup.plan.sp, setup.capacity, v, sp_regather)
    # a dimension the layout does not split sends nothing (its formula prints 0)
    out["tp"] = vol["tp"] if plan.tp > 1 else zero_
    out["pp"] = vol["pp"] if plan.pp > 1 else zero_
    out["ep"] = vol["ep"] if plan.ep > 1 and rk.n_moe else zero_
    out["cp"] = vol["cp"] if plan.cp > 1 else zero_
    if hsdp:
        out["dp_replicate"] = sum((replicate_collectives(psi / n, Ndp / sym.N_sh, zero, M, bg, grad_sync)[0]
                                   for psi, n, _ in groups if psi != 0), zero_)
    if states_opt.offload != "none":
        out["host"] = sum((host_traffic(psi, n, M, bg, bw, states_opt.offload, grad_sync)
                           for psi, n, _ in groups if psi != 0), zero_)
    return out


def _counts(i, st, stage_layers, again, kinds, setup, m, grad_sync, sp_regather) -> dict:
    """The collectives rank i takes part in per step, by dimension (the α term)."""
    plan, states_opt = setup.plan, setup.states
    tp, pp, ep, cp, zero, sp = plan.tp, plan.pp, plan.ep, plan.cp, plan.zero, plan.sp
    count = {k: 0 for k in ("dp", "tp", "pp", "ep", "cp")}
    if states_opt.shard is not None:
        count["dp_replicate"] = 0
    if states_opt.offload != "none":
        count["host"] = 0
    (n_dense, rep), (n_exp, _) = states_opt.groups(plan)
    for psi, n in ((st["params_dense"], n_dense), (st["params_experts"], n_exp)):
        count["dp"] += sum(dp_collectives(psi, n, zero, m, 0, 0, grad_sync)[1].values())
        if states_opt.shard is not None and psi:
            count["dp_replicate"] += sum(replicate_collectives(psi / n, rep, zero, m, 0, grad_sync)[1].values())
        if states_opt.offload != "none" and psi:
            count["host"] += host_ops(m, states_opt.offload, grad_sync)
    rk = composition(i, stage_layers, again, kinds, pp, setup.virtual, setup.recompute.mode)
    _, ops = activation_collectives(rk, sp, setup.capacity, None, sp_regather)
    for dim, on in (("tp", tp > 1), ("pp", pp > 1), ("ep", ep > 1), ("cp", cp > 1)):
        if on:
            count[dim] += int(ops[dim].xreplace({sym.m_mb: m, sym.N_cp: cp}))
    return count


@dataclass(frozen=True)
class Composition:
    """What one pipeline rank runs that the activation collectives count, per micro-batch: TP
    blocks (and those full recomputation reruns), model-chunk boundaries it sends across, MoE
    all-to-alls, and the context-parallel ring's rounds (Σ over attention layers; ``cp_width``
    weights each by its K/V width). Numbers, or symbols for ``train --search``."""

    blocks: object
    blocks_again: object
    sends: object
    n_moe: object
    a2a: object
    cp_rounds: object
    cp_width: object


def composition(i: int, layers: dict, again: dict, kinds, pp: int, virtual: int, recompute: str) -> Composition:
    """Pipeline rank i of ``pp`` 's ``Composition`` (``layers``: its units per group; ``again``: those
    it recomputes; ``virtual`` model chunks per rank; ``recompute``: the mode)."""
    blocks = sum(c * kinds[n].tp_blocks for n, c in layers.items())
    blocks_again = sum(c * kinds[n].tp_blocks for n, c in again.items())
    sends = 2 * virtual - (i == 0) - (i == pp - 1) if pp > 1 else 0  # each chunk's boundary, both ways
    n_moe = sum(c for n, c in layers.items() if kinds[n].moe)
    a2a = 4 * n_moe + 2 * sum(c for n, c in again.items() if kinds[n].moe)  # dispatch + combine, fwd + bwd
    rounds = {n: 3 * c + (c if recompute == "selective" else again.get(n, 0))
              for n, c in layers.items() if kinds[n].attention}
    return Composition(blocks, blocks_again, sends, n_moe, a2a, sum(rounds.values()),
                       sum(r * kinds[n].cp_width for n, r in rounds.items()))


def activation_collectives(rk: Composition, sp: bool, capacity, values, regather: bool = True):
    """({dim: bytes}, {dim: ops}) one GPU sends per step on the activation dimensions (tp, pp, ep,
    cp) for a rank of composition ``rk``, in N_tp, N_ep, N_cp, m_mb, B, T, b_a (``values``: the
    model's, for d, k and E; None when only the ops are wanted)."""
    Ntp, Nep, Ncp, M, B, T, a = sym.N_tp, sym.N_ep, sym.N_cp, sym.m_mb, sym.B, sym.T, sym.b_a
    tp_ops = tp_collectives(rk.blocks, 0, Ntp, sp, rk.blocks_again, regather)[1]
    ops = {"tp": M * (sum(tp_ops.values()) + 2), "pp": M * rk.sends, "ep": M * rk.a2a,
           "cp": M * rk.cp_rounds * (Ncp - 1)}
    ops = {k: sympy.sympify(e) for k, e in ops.items()}
    if values is None:
        return None, ops
    d = values[sym.d]
    block = T / Ncp * B * d * a  # one micro-batch's hidden states on a GPU, s·b·d·b_a
    vol = {"tp": M * (tp_collectives(rk.blocks, block, Ntp, sp, rk.blocks_again, regather)[0]
                      + 2 * ring_allreduce_bytes(Ntp, block)),  # + the embedding's fwd, the head's bwd
           "pp": M * rk.sends * block / (Ntp if sp else 1),
           "ep": (M * rk.a2a * (Nep - 1) / Nep * routed_rows(values[sym.k], values[sym.E], T / Ncp * B, capacity)
                  * d * a) if sym.E in values else sympy.Integer(0),
           "cp": M * rk.cp_width * (Ncp - 1) * T / Ncp * B * a}
    return vol, ops


def dp_collectives(psi, n, zero: int, m, bg, bw, grad_sync: str = "every"):
    """Bytes one GPU sends for ``psi`` parameters over ``n`` data-parallel ranks, and the ops
    (numbers or expressions).

    ZeRO-0: one all-reduce; ZeRO-1/2: reduce-scatter + all-gather; ZeRO-3/FSDP: per micro-batch
    an all-gather for the forward and one for the backward, and a reduce-scatter per micro-batch
    (``grad_sync="every"``) or only after the last (``"last"``: FSDP2's
    ``set_requires_gradient_sync(False)`` on the others, gradients kept unsharded meanwhile)."""
    if n == 1 or psi == 0:
        return Fraction(0), {}
    r = _ratio(n - 1, n)
    if zero == 0:
        return 2 * r * bg * psi, {"all_reduce": 1}
    if zero in (1, 2):
        return r * (bg + bw) * psi, {"reduce_scatter": 1, "all_gather": 1}
    rs = m if grad_sync == "every" else 1
    return r * (2 * m * bw + rs * bg) * psi, {"all_gather": 2 * m, "reduce_scatter": rs}


def replicate_collectives(shard_psi, r, zero: int, m, bg, grad_sync: str = "every"):
    """HSDP's second level: the gradient shard (``shard_psi`` parameters) all-reduced over the r
    replicas, 2·(r−1)/r·b_g·Ψ/n — once per step at ZeRO-1/2 (Megatron's distributed-optimizer
    instances, after the reduce-scatter), after every reduce-scatter at ZeRO-3 (FSDP2 HSDP)."""
    if r == 1 or shard_psi == 0:
        return Fraction(0), {}
    times = (m if grad_sync == "every" else 1) if zero == 3 else 1
    return times * 2 * _ratio(r - 1, r) * bg * shard_psi, {"all_reduce": times}


def tp_collectives(blocks: int, block_bytes, tp, sp: bool, recomputed: int = 0, regather: bool = True):
    """Bytes one GPU sends for the TP collectives of ``blocks`` TP blocks (``parallel.tp_blocks``:
    two per Llama layer), ``recomputed`` of which run their forward twice (full recomputation),
    over one micro-batch of ``block_bytes`` = s·b·d·b_a, and the ops. Without SP: an all-reduce
    after each block's forward and one in its backward; with SP an all-gather + a reduce-scatter
    in their place, and (Megatron, ``regather``) an all-gather of each block's saved input again
    in backward."""
    r = _ratio(tp - 1, tp)
    forwards = blocks + recomputed
    if sp:
        ops = {"all_gather": forwards + blocks + (blocks if regather else 0), "reduce_scatter": forwards + blocks}
        return r * block_bytes * (ops["all_gather"] + ops["reduce_scatter"]), ops
    ops = {"all_reduce": forwards + blocks}
    return 2 * r * block_bytes * ops["all_reduce"], ops


def ring_allreduce_bytes(n, nbytes):
    """Bytes one GPU sends in a ring all-reduce of ``nbytes`` over ``n`` ranks: 2·(n−1)/n·nbytes."""
    return 2 * _ratio(n - 1, n) * nbytes
