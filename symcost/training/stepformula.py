"""The computed step time (``run.kernel_step``) as a SymPy term tree in the notation and the layout
symbols, evaluated for the numbers ``train`` prints.

For the slowest pipeline rank, with micro-batch B, sequence T and the layout N_tp, N_cp, N_pp, m_mb
(micro-batches per step) left as symbols and every hardware constant substituted (the peaks, the
calibrated shares η and floors t_0 of each kernel class at this layout's row regime, the HBM
bandwidth):

    t_F = Σ_c F_c(B, T)/(N_tp·N_cp) / (P_c·η_c) + n_c·t_0,c          c ∈ gemm, head, attention
          + Σ_MoE layers max(F_x/(P·η_x), Q_x/(BW·η_m,x)) + t_0,x       (``moe_work``)
          + router and permutation passes (rows B·T/N_cp)               (``moe_work``)
          + t_ew                                                        (elementwise traffic)
    t_B = the same with 2× the GEMM work, attention at 2.5× its forward FLOPs and η_attn,bwd
    t_W = the weight-gradient half of t_B (GEMMs' forward time)
    t_R = the recomputed share of t_F (full) or the attention forward (selective)
    step = m_mb·max(t_F + t_B + t_R, t_host) + t_opt + bubble + Σ_dim e_dim
    t_host = the rank's host kernel-issue time per micro-batch (``host_launch``), a number

F_c(B, T) are the rank's forward FLOPs of class c from the engine's FLOP tree (``Model.flops``,
causal, the rank's layer share ``plan.rank_stages``); the bubble is the schedule's closed form
(``schedule.bubble_seconds``) in N_pp. What enters as a number (a named term of the tree, not
rewritten in symbols): the elementwise traffic t_ew (the saved activations' bytes of
``train_memory``), the optimizer step t_opt (and the host's CPU-Adam step, ``offload``), and each
collective's exposed seconds e_dim (``overlap``'s rules: min/max against the compute windows).
The efficiencies are table look-ups, piecewise in the row count M = B·T/N_cp: the tree is exact at
the printed layout and its derivative holds inside the row regime the look-up chose.
"""
from __future__ import annotations

import sympy

from ..core.conventions import Phase
from ..core.notation import sym
from ..core.terms import exact
from .compute import ATTN_BWD_FACTOR, CLASSES, kernel_class

LAYOUT = (sym.B, sym.T, sym.N_tp, sym.N_cp, sym.N_pp, sym.m_mb)


def rank_flops(model, stage: dict, last: bool) -> dict:
    """The rank's forward FLOPs per micro-batch by class as expressions in B and T (whole tensor
    work: divided by N_tp·N_cp by the caller); the LM head apart (``head``)."""
    tree = model.flops(Phase(kind="prefill", attention="causal", logits="all"))
    counts = {g.name: exact(g.count, model.values) for g in model.groups}
    vals = {s: v for s, v in model.values.items() if s not in (sym.B, sym.T)}
    out = {c: sympy.Integer(0) for c in CLASSES}
    out["head"] = sympy.Integer(0)
    for path, e in tree.flatten().items():
        group = path.split("/", 1)[0]
        c = kernel_class(path)
        f = sympy.sympify(e).xreplace(vals)
        if group in counts:
            mine = stage["layers"].get(group, 0)
            if mine:
                out[c] += f * sympy.Rational(mine) / counts[group]
        elif last:
            out["head" if c == "gemm" else c] += f
    return out


def step_tree(model, setup, stage: dict, last: bool, r: dict, work, shape, gpu, precision: str, out: dict,
              etp: int, schedule: str) -> dict:
    """{"step": expr, "terms": {name: expr}, "at": {symbol: value}} for the slowest rank (``r`` its
    ``compute.class_times`` answer, ``work`` its ``StageWork``, ``shape`` its ``moe_work.MoeShape``),
    ``out`` the numeric step (``steptime.kernel_step``)."""
    from .moe_work import MoeShape, elementwise_seconds, grouped_seconds
    B, T, tp, cp, pp, m = LAYOUT
    F = rank_flops(model, stage, last)
    split = tp * cp
    eta = r["eta"]
    P = r["gemm_peak"]
    P16 = gpu.peak("bf16")[0]
    fl = r.get("floors", {})
    n = work.launches or {}
    n_attn = n.get("attention", 0) / 2
    fwd = {"gemm": F["gemm"] / split / (P * eta["gemm"]) + n.get("gemm", 0) * fl.get("gemm", 0.0),
           "head": F["head"] / split / (P16 * eta["head_bf16"]),
           "attention": F["attention"] / split / (P16 * eta["attn_forward"]) + n_attn * fl.get("attn_forward", 0.0)}
    bwd = {"gemm": 2 * fwd["gemm"], "head": 2 * fwd["head"],
           "attention": ATTN_BWD_FACTOR * F["attention"] / split / (P16 * eta["attn_backward"])
           + n_attn * fl.get("attn_backward", 0.0)}
    if shape.layers:
        sym_shape = MoeShape(layers=shape.layers, rows=B * T / cp, routed=shape.routed // shape.rows * B * T / cp,
                             local_experts=shape.local_experts, experts=shape.experts, d=shape.d, d_moe=shape.d_moe,
                             sort=shape.sort)
        fx = grouped_seconds(F["grouped_gemm"] / split, sym_shape, gpu, r["grouped_eff"], P,
                             2 if precision == "bf16" else 1, etp)
        ew = elementwise_seconds(sym_shape, gpu)
        fwd.update({"grouped_gemm": fx, "moe_router": ew["router"], "moe_permute": ew["permute"]})
        bwd.update({"grouped_gemm": 2 * fx, "moe_router": ew["router"], "moe_permute": ew["permute"]})
    elif F["grouped_gemm"] != 0:
        fx = F["grouped_gemm"] / split / (P * eta["grouped_gemm"])
        fwd["grouped_gemm"], bwd["grouped_gemm"] = fx, 2 * fx
    fwd["elementwise"] = sympy.Float(r["forward"]["elementwise"])
    bwd["elementwise"] = sympy.Float(r["backward"]["elementwise"])
    t_F, t_B = sum(fwd.values()), sum(bwd.values())
    t_W = fwd["gemm"] + fwd["head"] + fwd.get("grouped_gemm", 0)
    if setup.recompute.mode == "full":
        layer_share = sum(float(work.flops[c]) for c in CLASSES) or 1.0
        again = sum(float(work.recompute_flops[c]) for c in CLASSES) / layer_share
        t_R = again * sum(v for k, v in fwd.items() if k != "head")
    elif setup.recompute.mode == "selective":
        t_R = fwd["attention"]
    else:
        t_R = sympy.Integer(0)
    v = setup.virtual
    if schedule in ("1f1b", "interleaved"):
        bubble = (pp - 1) * (t_F + t_R + t_B) / v
    elif schedule == "zb-h1":
        bubble = (pp - 1) * (t_F + t_R + t_B - 2 * t_W)
    else:  # dualpipe: (p/2 − 1)·((F + B) + B − 3W)
        bubble = (pp / 2 - 1) * ((t_F + t_R + t_B) + t_B - 3 * t_W)
    if setup.plan.pp == 1:
        bubble = sympy.Integer(0)
    t_opt = sympy.Float(r["t_opt"])
    exposed = {k: sympy.Float(x) for k, x in out["exposed_comm_s"].items() if x}
    t_host = sympy.Float(r.get("t_host", 0.0))  # the host's kernel-issue time (``host_launch``)
    step = m * sympy.Max(t_F + t_B + t_R, t_host) + t_opt + bubble + sum(exposed.values())
    p = setup.plan
    at = {B: setup.micro_batch, T: setup.seq, tp: p.tp, cp: p.cp, pp: p.pp, m: setup.micro_batches}
    terms = {"t_F": t_F, "t_B": t_B, "t_W": t_W, "t_R": t_R, "t_opt": t_opt, "t_host": t_host, "bubble": bubble,
             **{f"forward_{k}": e for k, e in fwd.items()}, **{f"exposed_{k}": e for k, e in exposed.items()}}
    return {"step": step, "terms": terms, "at": at}


def as_json(tree: dict) -> dict:
    """The tree as the output prints it: each formula a string in the notation, its value at the layout."""
    at = tree["at"]

    def val(e):
        return float(sympy.sympify(e).xreplace(at))

    return {"formula": str(tree["step"]), "value_s": val(tree["step"]),
            "at": {str(k): int(x) for k, x in at.items()},
            "terms": {k: {"formula": str(e), "value_s": val(e)} for k, e in tree["terms"].items()},
            "convention": "the slowest rank; B, T, N_tp, N_cp, N_pp, m_mb free, the calibrated hardware "
                          "constants of this layout substituted; t_ew, t_opt and the exposed collectives "
                          "enter as their computed seconds"}
