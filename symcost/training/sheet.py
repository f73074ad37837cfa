"""The "Training" and "Communication" sections of a model's sheet (``symcost sheet``, ``reports/``).

One stated default layout, small enough that every dimension is exercised and every bundled model
accepts it (a dimension the model cannot split falls back to 1, and the sheet says so):

    N_dp = 2, N_tp = 2 (with sequence parallelism), N_pp = 2, N_cp = 2, N_ep = 2 for MoE models
    (16 GPUs), m = 4 micro-batches of B = 1 sequence of T tokens, ZeRO-1 (Megatron's distributed
    optimizer), AdamW, bf16 weights, gradients and activations, FlashAttention, no recomputation.

Every figure is a formula from ``training.memory.train_memory`` / ``training.comm.comm`` (the
same the ``train`` and ``comm`` commands print), written three ways as the other sections are:
in the notation, with the layout's values plugged in, and as the exact integer.
"""
from __future__ import annotations

import sympy

from ..core.conventions import Backward
from ..core.errors import SymcostError
from ..core.escape import tex
from ..core.notation import sym
from ..core.units import human_bytes
from .activations import activations
from .comm import comm
from .memory import formula as memory_formula
from .memory import model_states, train_memory
from .plan import Plan, stages
from .setup import TrainSetup

LAYOUT = {"dp": 2, "tp": 2, "pp": 2, "cp": 2, "ep": 2}
MICRO_BATCHES = 4
STATE_LHS = {"weights": r"M_{\text{weights}}", "gradients": r"M_{\text{grads}}",
             "optimizer": r"M_{\text{optimizer}}", "activations": r"M_{\text{act}}"}
DIM_TEXT = {
    "dp": "data parallel: reduce-scatter of the gradients and all-gather of the updated weights "
          "(ZeRO-1), once per step, each parameter group over its own ranks",
    "tp": "tensor parallel with sequence parallelism: per TP block (each attention, MLP, MoE or "
          "mixer that ends in a row-parallel projection) and micro-batch an all-gather and a "
          "reduce-scatter forward, the same backward and a re-gather, plus the embedding and head",
    "pp": "pipeline: one activation forward and one gradient backward of s·b·d elements per "
          "micro-batch and stage boundary, split over the tensor-parallel ranks with sequence parallelism",
    "ep": "expert parallel: dispatch and combine all-to-alls of the k·s·b routed rows, forward and "
          "backward, per MoE layer and micro-batch",
    "cp": "context parallel (ring): K/V passed around the ring forward, K/V and dK/dV backward, per "
          "attention layer and micro-batch",
}


def default_layout(model, seq: int) -> tuple[dict, list[str]]:
    """The sheet's layout for ``model``, and the dimensions that fell back to 1 (with why)."""
    lay = dict(LAYOUT)
    moe = sym.E in model.values
    if not moe:
        lay["ep"] = 1
    dropped = []
    for dim in ("tp", "pp", "cp", "ep"):
        if lay[dim] == 1:
            continue
        try:
            Plan(dp=lay["dp"], tp=lay["tp"], pp=lay["pp"], cp=lay["cp"], ep=lay["ep"],
                 sp=lay["tp"] > 1).check(model, seq)
        except SymcostError as e:
            lay[dim] = 1
            dropped.append(f"N_{dim} = 1: {e}")
    return lay, dropped


def training_context(model, *, seq: int, lines_for) -> dict:
    """Everything the two sections print (``lines_for`` is ``report.lines_for``)."""
    try:
        lay, dropped = default_layout(model, seq)
        setup = TrainSetup.of(seq=seq, micro_batch=1, global_batch=MICRO_BATCHES * lay["dp"], zero=1,
                              sp=lay["tp"] > 1, **lay)
        cm = comm(model, setup)
    except SymcostError as e:
        return {"error": str(e)}
    act_error = ""
    try:
        tm = train_memory(model, setup)
    except SymcostError as e:  # a mechanism without saved-tensor declarations yet: states only
        act_error = str(e).split(" (use --activations")[0]
        tm = None
    vals = {**model.values, sym.N_dp: lay["dp"], sym.N_tp: lay["tp"], sym.N_pp: lay["pp"],
            sym.N_cp: lay["cp"], sym.N_ep: lay["ep"], sym.m_mb: MICRO_BATCHES, sym.B: 1, sym.T: seq,
            sym.b_a: 2}
    world = lay["dp"] * lay["tp"] * lay["pp"] * lay["cp"]
    layout_text = (f"$N_{{\\mathrm{{dp}}}} = {lay['dp']}$, $N_{{\\mathrm{{tp}}}} = {lay['tp']}$"
                   + (" (sequence parallel)" if lay["tp"] > 1 else "")
                   + f", $N_{{\\mathrm{{pp}}}} = {lay['pp']}$, $N_{{\\mathrm{{cp}}}} = {lay['cp']}$"
                   + (f", $N_{{\\mathrm{{ep}}}} = {lay['ep']}$" if sym.E in model.values else "")
                   + f" ({world} GPUs), $m_{{\\mathrm{{mb}}}} = {MICRO_BATCHES}$ micro-batches of $B = 1$ "
                     f"sequence of $T = " + f"{seq:,}".replace(",", "{,}") + "$ tokens")
    # -- memory: model states and activations of the heaviest stage ------------------------------------
    if tm is None:
        rows = model_states(model, setup)
        stage = max(range(len(rows)), key=lambda i: rows[i]["weights"] + rows[i]["gradients"] + rows[i]["optimizer"])
        heavy = {**rows[stage], "stage": stage}
        formula = memory_formula(model, setup, heavy, engine=False)
        figures = {k: heavy[k] for k in ("weights", "gradients", "optimizer")}
        per_gpu, working, in_flight = sum(figures.values()), 0, min(MICRO_BATCHES, lay["pp"])
    else:
        stage, heavy, formula = tm.stage, tm.stages[tm.stage], tm.formula
        figures = {k: getattr(tm, k) for k in ("weights", "gradients", "optimizer", "activations")}
        per_gpu, working, in_flight = tm.per_gpu, tm.recompute_working, tm.in_flight
    states = []
    for key, value in figures.items():
        expr = formula[key]
        states.append({"name": key, "value": value, "human": human_bytes(value),
                       "lines": lines_for(STATE_LHS[key], [expr if key != "activations" else
                                                           sympy.factor_terms(expr)], vals, value, "bytes")})
    per_layer = []
    if tm is not None:
        tree = activations(model, Backward(), sp=lay["tp"] > 1)
        for g in model.groups:
            if g.name not in tree:
                continue
            e = sympy.factor_terms(sympy.expand(tree[g.name].total / g.count))
            v = int(sympy.ceiling(e.xreplace(vals)))
            per_layer.append({"name": g.name, "lines": lines_for(
                r"A_{\text{" + tex(g.name) + "}}", [e], vals, v, "bytes"), "value": v,
                "human": human_bytes(v)})
    st = stages(model, lay["pp"])[stage]
    memory = {"states": states, "per_layer": per_layer, "total": per_gpu, "total_human": human_bytes(per_gpu),
              "recompute_working": working, "stage": stage, "in_flight": in_flight,
              "layers": ", ".join(f"{n} of group {g}" for g, n in heavy["layers"].items()),
              "psi": {"split": st["split"], "whole": st["whole"], "experts": st["experts"]},
              "act_error": act_error}
    # -- communication per dimension -----------------------------------------------------------------
    dims = []
    for dim, nbytes in cm["bytes"].items():
        if not nbytes:
            continue
        e = sympy.factor_terms(cm["formula"][dim])
        dims.append({"name": dim, "text": DIM_TEXT.get(dim, ""), "value": nbytes, "human": human_bytes(nbytes),
                     "collectives": cm["collectives"][dim],
                     "lines": lines_for(r"C_{\text{" + tex(dim) + "}}", [e], vals, nbytes, "bytes")})
    zero_dims = [d for d, x in cm["bytes"].items() if not x]
    return {"error": "", "layout": layout_text, "dropped": dropped, "memory": memory, "comm": dims,
            "comm_zero": zero_dims, "comm_total": sum(cm["bytes"].values()),
            "comm_total_human": human_bytes(sum(cm["bytes"].values())), "seq": seq}
