"""Per-GPU training memory: model states of the heaviest pipeline stage plus the activations 1F1B
keeps in flight there.

    per GPU = max over stages s of  states_s + min(m, N_pp − s) · A_s  (+ one layer's working set
                                                                         under full recompute)

with m micro-batches per step, A_s the bytes one micro-batch's backward keeps on stage s (its
layers, plus the embedding on the first stage and the final norm, head and loss on the last;
``activations``) and states_s its weights, gradients and optimizer state (``plan``). Under 1F1B
the first stage has started N_pp micro-batches (or all m) before the first backward frees one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from ..conventions import Backward
from ..errors import SymcostError
from ..notation import sym
from ..terms import Terms, exact
from .activations import activations, korthikanti, per_layer
from .flops import train_flops
from .plan import Plan, model_states

ACT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


@dataclass
class TrainMemory:
    weights: int
    gradients: int
    optimizer: int
    activations: int
    per_gpu: int
    flops_per_step: int
    notes: list
    stage: int = 0
    micro_batches: int = 1
    in_flight: int = 1
    recompute_working: int = 0
    formula: dict = field(default_factory=dict)
    stages: list = field(default_factory=list)


def micro_batches(global_batch: int | None, micro_batch: int, dp: int) -> int:
    gb = global_batch or micro_batch * dp
    if gb % (micro_batch * dp):
        raise SymcostError(f"--global-batch {gb} is not a multiple of micro-batch × dp "
                           f"({micro_batch} × {dp})")
    return gb // (micro_batch * dp)


def _values(model, seq, micro_batch, plan, act_dtype):
    v = model.values_with(T=seq, B=micro_batch)
    v.update({sym.b_a: ACT_BYTES[act_dtype], sym.N_tp: plan.tp, sym.N_cp: plan.cp,
              sym.N_dp: plan.dp, sym.N_pp: plan.pp, sym.N_ep: plan.ep})
    return v


def train_memory(model, *, seq: int, micro_batch: int, global_batch: int | None = None,
                 dp=1, tp=1, pp=1, ep=1, cp=1, zero=0, sp=False, recompute="none",
                 optimizer="adamw", grad_dtype="bf16", kernel="flash", act_dtype="bf16",
                 activation_model="engine") -> TrainMemory:
    plan = Plan(dp=dp, tp=tp, pp=pp, ep=ep, cp=cp, zero=zero, sp=sp)
    plan.check(model, seq)
    if recompute not in ("none", "selective", "full"):
        raise SymcostError(f"--recompute: unknown mode {recompute!r}")
    m = micro_batches(global_batch, micro_batch, dp)
    bw = Backward(kernel=kernel, recompute=recompute, act_dtype=act_dtype)
    vals = _values(model, seq, micro_batch, plan, act_dtype)
    states = model_states(model, plan, optimizer=optimizer, grad_dtype=grad_dtype)
    notes = [bw.describe(), f"layout {plan.dp}×{plan.tp}×{plan.pp}×{plan.cp} (dp×tp×pp×cp) = {plan.world} "
             f"GPUs; experts over ep={plan.ep}, their data-parallel size dp·cp/ep = {plan.expert_dp}",
             "1F1B: the first stage holds min(m, pp) micro-batches of activations",
             "activations measured exactly against transformers (tests/test_activations.py) for "
             "GPT-2, Llama, Mistral, Qwen2, Qwen3, Mixtral, Qwen2/3-MoE and DeepSeek-V3; other families' "
             "declarations follow the same modules but are not measured"]
    if activation_model == "korthikanti":
        tree = korthikanti(model, recompute=recompute, sp=sp or tp == 1, tp=tp, cp=cp)
        per_stage_acts = [int(sympy.floor(tree.total.xreplace(vals) / pp))] * pp
        working = [0] * pp
        notes.append("activations: Korthikanti et al. 2022 Table 2 (dense GPT layer, 2-byte), preset")
    else:
        tree = activations(model, bw, sp=sp, tp=tp, cp=cp)
        flat = tree.at(vals)
        groups = {g.name: g for g in model.groups}
        layer_tot = {name: exact(tree[name].total, vals) // exact(g.count, model.values)
                     for name, g in groups.items() if name in tree}
        pre = sum(v for k, v in flat.items() if k.split("/")[0] in {c.key for c in model.pre} or k.startswith("shared/"))
        post = sum(v for k, v in flat.items() if k.split("/")[0] in {c.key for c in model.post})
        working_layer = {}
        if recompute == "full":
            for name, t in per_layer(model, bw, sp=sp, tp=tp, cp=cp).items():
                working_layer[name] = exact(t.total, vals)
        per_stage_acts, working = [], []
        from .plan import stages as _stages
        for s, st in enumerate(_stages(model, pp)):
            a = sum(layer_tot.get(n, 0) * c for n, c in st["layers"].items())
            a += pre if s == 0 else 0
            a += post if s == pp - 1 else 0
            per_stage_acts.append(a)
            working.append(max((working_layer.get(n, 0) for n in st["layers"]), default=0))
    rows = []
    for s, st in enumerate(states):
        inflight = min(m, pp - s)
        total = st["weights"] + st["gradients"] + st["optimizer"] + inflight * per_stage_acts[s] + working[s]
        rows.append({"stage": s, "weights": st["weights"], "gradients": st["gradients"],
                     "optimizer": st["optimizer"], "activations": inflight * per_stage_acts[s],
                     "activations_per_micro_batch": per_stage_acts[s], "in_flight": inflight,
                     "recompute_working": working[s], "per_gpu": total, "layers": st["layers"]})
    heavy = max(rows, key=lambda r: r["per_gpu"])
    flops = exact(train_flops(model, recompute=recompute).total,
                  model.values_with(T=seq, B=micro_batch * m * dp))
    formula = {"activations_per_micro_batch": tree,
               **_state_formula(model, plan, heavy, optimizer, grad_dtype, bw, sp,
                                activation_model == "engine")}
    return TrainMemory(heavy["weights"], heavy["gradients"], heavy["optimizer"], heavy["activations"],
                       heavy["per_gpu"], flops, notes, heavy["stage"], m, heavy["in_flight"],
                       heavy["recompute_working"], formula, rows)


def _state_formula(model, plan: Plan, heavy: dict, optimizer, grad_dtype, bw, sp, engine) -> dict:
    """The heaviest stage's per-GPU bytes as expressions in the parallel sizes (N_dp, N_tp, N_cp,
    N_ep), B, T and b_a, with the stage's parameter counts as numbers."""
    from .plan import GRAD_BYTES, OPTIMIZER_BYTES, stages as _stages
    st = _stages(model, plan.pp)[heavy["stage"]]
    n_dense, n_exp = sym.N_dp * sym.N_cp, sym.N_dp * sym.N_cp / sym.N_ep
    dense = sympy.Integer(st["split"]) / sym.N_tp + st["whole"]
    experts = sympy.Integer(st["experts"]) / (sym.N_ep * sym.N_tp)
    K = sympy.Rational(OPTIMIZER_BYTES[optimizer].numerator, OPTIMIZER_BYTES[optimizer].denominator)
    z = plan.zero
    out = {"weights": 2 * (dense / (n_dense if z >= 3 else 1) + experts / (n_exp if z >= 3 else 1)),
           "gradients": GRAD_BYTES[grad_dtype] * (dense / (n_dense if z >= 2 else 1)
                                                  + experts / (n_exp if z >= 2 else 1)),
           "optimizer": K * (dense / (n_dense if z >= 1 else 1) + experts / (n_exp if z >= 1 else 1))}
    if engine:
        tree = activations(model, bw, sp=sp)
        per = sympy.Integer(0)
        for g in model.groups:
            if g.name in st["layers"] and g.name in tree:
                per += st["layers"][g.name] * tree[g.name].total / g.count
        for c in model.pre:
            if heavy["stage"] == 0 and c.key in tree:
                per += tree[c.key].total
        if heavy["stage"] == 0 and "shared" in tree:
            per += tree["shared"].total
        for c in model.post:
            if heavy["stage"] == plan.pp - 1 and c.key in tree:
                per += tree[c.key].total
        out["activations"] = heavy["in_flight"] * per.xreplace(model.values)
    return out
