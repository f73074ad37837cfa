"""The "Training" and "Communication" sections of a model's sheet (``symcost sheet``, ``reports/``).

The setup is the model's own, not one layout for every model: the fastest setup that fits which
``train --search`` finds on the stated card (``CARD``, 8 GPUs per node) with the fewest GPUs — the
smallest power of two (1, 2, 4, ...) for which any candidate fits — at a global batch of
``GLOBAL_BATCH`` sequences of the sheet's T tokens, AdamW, bf16 weights, gradients and
activations, FlashAttention, no CPU offload (pinned: host memory is not modelled, so offloading
would "fit" anything). The command line that reproduces it is printed on the page.

Every figure then comes from ``training.train_memory`` and ``training.comm`` on that setup (what
``symcost train`` and ``symcost comm`` print), and is derived on the page as a formula whose every
constant is a notation symbol or a quantity defined on the page with its value:

    model states   ``states.zero_terms`` over ``states.param_groups`` called with symbols: the
                   stage's parameters Ψ_split (tensor-parallel), Ψ_rep (replicated), Ψ_exp
                   (routed experts), bytes b_w, b_g and K per parameter;
    activations    Σ over the stage's model chunks of c_j · (Σ_g n_g · A_g + A_embed + A_head):
                   c_j micro-batches in flight (1F1B), n_g layers of group g on the stage, A_g one
                   layer's saved bytes in the notation (``training.activations``, cf. Korthikanti
                   et al. 2022's s·b·h·(34 + 5·a·s/h));
    communication  ``comm.dp_collectives`` and ``comm.activation_collectives`` called with symbols:
                   each dimension's bytes as (bytes per collective) × (collectives), the counts
                   (TP blocks, stage boundaries, MoE layers, ring rounds) defined on the page.
"""
from __future__ import annotations

import sympy

from .mtp import with_mtp
from ..core.errors import SymcostError
from ..core.escape import tex_math_text
from ..core.notation import sym
from ..core.terms import Terms
from ..core.units import human_bytes
from ..hardware.gpus import gpu as find_gpu
from .activations import activations
from .comm import Composition, activation_collectives, comm, composition, dp_collectives
from .framework import HEADROOM_GIB, budget_bytes
from .memory import layout_values, train_memory
from .plan import layer_kinds, rank_stages
from .recompute import add_up, recomputed_units
from .run import comm_recompute
from .setup import TrainSetup
from .states import WEIGHT_BYTES, param_groups, zero_terms

#: the card the sheet's training setup is searched on
CARD = "H100"
#: sequences per optimizer step (4,096-token sequences: 4 Mi tokens, a common pre-training batch)
GLOBAL_BATCH = 1024
#: the world sizes tried, smallest first: 1 up to 4,096 GPUs
WORLDS = tuple(2 ** i for i in range(13))

STATE_LHS = {"weights": r"M_{\text{weights}}", "gradients": r"M_{\text{grads}}",
             "optimizer": r"M_{\text{optimizer}}", "activations": r"M_{\text{act}}",
             "gathered": r"M_{\text{gathered}}", "loss_peak": r"M_{\text{loss}}"}
DIM_TEXT = {
    "dp": "data parallel: the ZeRO stage's gradient and weight collectives over each parameter group's own "
          "ranks (n = N_dp·N_cp for dense parameters, N_dp·N_cp/N_ep for routed experts)",
    "tp": "tensor parallel: per TP block (an attention, MLP, MoE or mixer ending in a row-parallel "
          "projection) and micro-batch, forward and backward collectives of one micro-batch's hidden "
          "states s·B·d·b_a, plus the embedding's forward and the head's backward all-reduce",
    "pp": "pipeline: one activation forward and one gradient backward of s·B·d·b_a per micro-batch and "
          "stage boundary (÷N_tp with sequence parallelism)",
    "ep": "expert parallel: dispatch and combine all-to-alls of the k·s·B routed rows of d elements, "
          "forward and backward, per MoE layer and micro-batch; (N_ep−1)/N_ep of them leave the GPU",
    "cp": "context parallel (ring attention): K/V chunks of s·B·w elements passed around the ring "
          "forward, K/V and dK/dV backward, per attention layer and micro-batch",
}


def _s(name: str, tex: str, meaning: str) -> sympy.Symbol:
    """A quantity defined on the page (not a config field): LaTeX ``tex``, what it is ``meaning``."""
    s = sympy.Symbol(name, positive=True)
    PAGE_LATEX[s] = tex
    PAGE_MEANING[s] = meaning
    return s


PAGE_LATEX: dict[sympy.Symbol, str] = {}
PAGE_MEANING: dict[sympy.Symbol, str] = {}
PSI_SPLIT = _s("Psi_split", r"\Psi_{\mathrm{split}}", "the stage's dense parameters split by tensor parallelism")
PSI_REP = _s("Psi_rep", r"\Psi_{\mathrm{rep}}", "the stage's dense parameters every tensor-parallel rank keeps whole")
PSI_EXP = _s("Psi_exp", r"\Psi_{\mathrm{exp}}", "the stage's routed-expert parameters")
B_G = _s("b_g", r"b_{g}", "bytes per gradient element (bf16)")
K_OPT = _s("K_opt", r"K", "optimizer bytes per parameter (AdamW: fp32 master copy and two fp32 moments)")
N_BLK = _s("n_blk", r"n_{\mathrm{blk}}", "TP blocks on the GPU (attention, MLP, MoE or mixer blocks of its layers)")
N_BLK_AGAIN = _s("n_blk_re", r"n_{\mathrm{blk,re}}", "TP blocks whose forward full recomputation reruns")
N_SEND = _s("n_send", r"n_{\mathrm{send}}", "pipeline sends per micro-batch (stage boundaries, both directions)")
N_MOE = _s("n_moe", r"n_{\mathrm{moe}}", "MoE layers on the GPU")
N_A2A = _s("n_a2a", r"n_{\mathrm{a2a}}", "all-to-alls per micro-batch (dispatch and combine, forward and backward)")
R_CP = _s("R_cp", r"R_{\mathrm{cp}}", "ring passes per micro-batch over the attention layers")
W_CP = _s("w_cp", r"w_{\mathrm{cp}}", "K/V elements per token summed over the ring passes (2 H_kv D_h per GQA layer)")


def page_symbol(name: str, tex: str, meaning: str) -> sympy.Symbol:
    """A per-group page quantity (``n_layers``, ``A_layers``), made once."""
    for s in PAGE_LATEX:
        if s.name == name:
            return s
    return _s(name, tex, meaning)


def _ceil(expr, values: dict) -> int:
    """The exact value of ``expr`` at ``values``, rounded up to whole bytes."""
    return int(sympy.ceiling(sympy.sympify(expr).xreplace(values)))


def search_setup(model, seq: int, card: str = CARD) -> dict:
    """The sheet's setup: ``train --search`` on the fewest GPUs of ``card`` that fit (``WORLDS``),
    ``GLOBAL_BATCH`` sequences of ``seq`` tokens, offload pinned off. Returns {"setup", "gpus",
    "best", "argv", "candidates", "fitting"} or {"error"}."""
    try:
        from .search import search, state_floor  # lazy: NumPy, an optional dependency (symcost[plan])
    except ImportError:
        return {"error": "the setup comes from train --search, which needs NumPy (pip install 'symcost[plan]')"}
    g = find_gpu(card)
    base = TrainSetup.of(seq=seq, global_batch=GLOBAL_BATCH)
    budget = budget_bytes(g, HEADROOM_GIB)
    r = None
    for n in WORLDS:
        try:
            # a world size whose model states alone exceed the card holds no fitting setup (``state_floor``'s
            # proof): it is not searched (DeepSeek-V3 on H100: 1 search instead of 9)
            if n < WORLDS[-1] and state_floor(model, base, n) > budget:
                continue
            r = search(model, base, gpus=n, gpu=g, top=1, offload="none")
        except (SymcostError, NotImplementedError) as e:  # a mechanism without saved-tensor declarations
            return {"error": f"no training setup searched: {e}"}
        if r["best"]:
            break
    if not r or not r["best"]:
        return {"error": f"no setup of up to {WORLDS[-1]:,} {g.name} fits (train --search, no CPU offload)"}
    b = r["best"][0]
    setup = TrainSetup.of(seq=seq, micro_batch=b["micro_batch"], global_batch=GLOBAL_BATCH, dp=b["dp"], tp=b["tp"],
                          pp=b["pp"], ep=b["ep"], cp=b["cp"], zero=b["zero"], sp=b["sp"],
                          virtual=b["virtual_stages"], hsdp_shard=b["hsdp_shard"], offload="none",
                          recompute=b["recompute"])
    search_argv = ["train", model.name, "--seq", str(seq), "--micro-batch", "1", "--global-batch",
                   str(GLOBAL_BATCH), "--search", "--gpus", str(n), "--gpu", g.name, "--offload", "none"]
    return {"setup": setup, "gpus": n, "gpu": g.name, "best": b, "search_argv": search_argv,
            "train_argv": setup_argv(model.name, setup), "candidates": r["candidates"], "fitting": r["fitting"]}


def setup_argv(name: str, setup: TrainSetup) -> list[str]:
    """``symcost train`` options that give ``setup`` (the sheet prints them; the tests run them)."""
    o = setup.options()
    argv = ["train", name, "--seq", str(o["seq"]), "--micro-batch", str(o["micro_batch"]), "--global-batch",
            str(o["global_batch"])]
    for k in ("dp", "tp", "pp", "ep", "cp"):
        argv += [f"--{k}", str(o[k])]
    argv += ["--zero", str(o["zero"]), "--recompute", o["recompute"], "--sp" if o["sp"] else "--no-sp",
             "--virtual-stages", str(o["virtual"]), "--offload", o["offload"],
             "--hsdp-shard", "none" if o["hsdp_shard"] is None else str(o["hsdp_shard"])]
    return argv


def describe(setup: TrainSetup, gpus: int, card: str) -> str:
    """The setup in words, for the section title and page 1."""
    p = setup.plan
    dims = "·".join(f"{k}{getattr(p, k)}" for k in ("dp", "tp", "pp", "cp")) + (f", ep{p.ep}" if p.ep > 1 else "")
    rc = setup.recompute.mode
    return (f"{gpus} × {card}, {dims}{', SP' if p.sp else ''}, ZeRO-{p.zero}"
            + (f", {setup.virtual} virtual stages" if setup.virtual > 1 else "")
            + (f", recompute {rc}" if rc != "none" else ", no recompute")
            + f", micro-batch {setup.micro_batch} × {setup.micro_batches}")


def _stage_values(st: dict, setup: TrainSetup) -> dict:
    return {PSI_SPLIT: st["split"], PSI_REP: st["whole"], PSI_EXP: st["experts"], B_G: setup.states.bg,
            K_OPT: int(setup.states.K), sym.b_w: WEIGHT_BYTES["bf16"]}


def state_forms(setup: TrainSetup) -> dict:
    """weights/gradients/optimizer bytes of one GPU in Ψ, b_w, b_g, K and the layout symbols."""
    groups = param_groups(PSI_SPLIT, PSI_REP, PSI_EXP, None if setup.states.shard is None else sym.N_sh)
    terms = zero_terms(groups, setup.plan.zero, K_OPT, B_G, sym.b_w, setup.states.offload)
    return {k: sympy.sympify(terms[k]) for k in ("weights", "gradients", "optimizer")}


def activation_form(model, setup: TrainSetup, stage: int, counts) -> tuple[sympy.Expr, dict, list]:
    """The stage's activation bytes as Σ_j c_j·(Σ_g n_g·A_g + A_pre + A_post) in page symbols,
    their values, and the per-layer / per-end derivations [(symbol, formula in the notation)]."""
    plan, virtual = setup.plan, setup.virtual
    tree = activations(model, setup.backward, sp=plan.sp, capacity=setup.capacity, **setup.head_saved)
    st = rank_stages(model, plan.pp, virtual)[stage]
    n_chunks = plan.pp * virtual
    values, parts, total = {}, {}, sympy.Integer(0)
    for j, ch in enumerate(st.get("chunks", [st])):
        gid = stage + j * plan.pp
        a = sympy.Integer(0)
        for grp in model.groups:
            if grp.name in ch["layers"] and grp.name in tree and ch["layers"][grp.name]:
                tag = tex_math_text(grp.name)  # a spec's group name: text, never markup
                n = page_symbol(f"n_{grp.name}_{j}" if virtual > 1 else f"n_{grp.name}",
                                rf"n_{{{tag}" + (f",{j}" if virtual > 1 else "") + "}",
                                f"layers of group {grp.name} on the stage" + (f" (chunk {j})" if virtual > 1 else ""))
                A = page_symbol(f"A_{grp.name}", rf"A_{{{tag}}}",
                                f"bytes one layer of group {grp.name} saves for backward, one micro-batch")
                values[n] = ch["layers"][grp.name]
                parts[A] = sympy.factor_terms(sympy.expand(tree[grp.name].total / grp.count))
                a += n * A
        ends = []
        if gid == 0:
            ends += [c.key for c in model.pre if c.key in tree] + (["shared"] if "shared" in tree else [])
        if gid == n_chunks - 1:
            ends += [c.key for c in model.post if c.key in tree]
        for key in ends:
            tag = tex_math_text(key)
            A = page_symbol(f"A_{key}", rf"A_{{{tag}}}", f"bytes {key} saves for backward, one micro-batch")
            parts[A] = sympy.factor_terms(sympy.expand(tree[key].total))
            a += A
        c = (page_symbol(f"c_{j}", rf"c_{{{j}}}", f"micro-batches of chunk {j} in flight at the stage's peak")
             if virtual > 1 else page_symbol("c_mb", r"c", "micro-batches in flight on the stage (1F1B)"))
        values[c] = counts[j]
        total += c * a
    return total, values, list(parts.items())


def _busiest(model, setup: TrainSetup, cm: dict) -> dict:
    """dim → (rank, Composition) of the GPU whose bytes ``comm`` reports (the busiest of each)."""
    plan, rc = setup.plan, setup.recompute
    ranks = rank_stages(model, plan.pp, setup.virtual)
    again = [add_up(recomputed_units(model, rc, st.get("chunks", [st]))) for st in ranks]
    kinds = layer_kinds(model)
    vals = {k: sympy.Integer(x) if isinstance(x, int) else x for k, x in layout_values(model, setup).items()}
    vals[sym.m_mb] = sympy.Integer(setup.micro_batches)
    out = {}
    for dim in ("dp", "tp", "pp", "ep", "cp"):
        for i, st in enumerate(ranks):
            rk = composition(i, st["layers"], again[i], kinds, plan.pp, setup.virtual, rc.mode)
            f = comm_form(model, setup, dim, st, rk)
            if f is not None and int(sympy.ceiling(f[0].xreplace({**vals, **f[1]}))) == cm["bytes"].get(dim):
                out[dim] = (i, rk, f)
                break
    return out


def comm_form(model, setup: TrainSetup, dim: str, st: dict, rk: Composition):
    """(formula, page values) of one dimension's bytes for a rank: the collective rules of
    ``training.comm`` called with symbols (Ψ, b_g, b_w; the composition's counts as page symbols;
    d, k, E from the notation)."""
    plan, states_opt = setup.plan, setup.states
    if dim == "dp":
        (n_dense, _), (n_exp, _) = states_opt.groups(plan)
        groups = param_groups(PSI_SPLIT, PSI_REP, PSI_EXP, sym.N_sh if states_opt.shard is not None else None)
        e = sympy.Integer(0)
        for (psi, n), n_val, zero_psi in zip(groups, (n_dense, n_exp), (st["split"] + st["whole"], st["experts"])):
            if n_val != 1 and zero_psi:
                e += sympy.sympify(dp_collectives(psi, n, plan.zero, sym.m_mb, B_G, sym.b_w)[0])
        return e, _stage_values(st, setup)
    sym_rk = Composition(N_BLK, N_BLK_AGAIN, N_SEND, N_MOE, N_A2A, R_CP, W_CP)
    values = {N_BLK: rk.blocks, N_BLK_AGAIN: rk.blocks_again, N_SEND: rk.sends, N_MOE: rk.n_moe, N_A2A: rk.a2a,
              R_CP: rk.cp_rounds, W_CP: rk.cp_width}
    v = {sym.d: sym.d, sym.k: sym.k, sym.E: sym.E} if sym.E in model.values else {sym.d: sym.d}
    vol, _ = activation_collectives(sym_rk, plan.sp, setup.capacity, v)
    on = {"tp": plan.tp > 1, "pp": plan.pp > 1, "ep": plan.ep > 1 and rk.n_moe, "cp": plan.cp > 1}
    if not on.get(dim):
        return None
    return sympy.sympify(vol[dim]), values


def _values(model, setup: TrainSetup) -> dict:
    vals = {k: sympy.Integer(x) if isinstance(x, int) else x for k, x in layout_values(model, setup).items()}
    vals[sym.m_mb] = sympy.Integer(setup.micro_batches)
    vals[sym.b_w] = sympy.Integer(WEIGHT_BYTES["bf16"])
    return vals


def reduced(expr, values: dict) -> sympy.Expr:
    """``expr`` with the layout sizes that are 1 and the quantities that are 0 in this setup put in
    (the plugged-in line then shows only what counts)."""
    trivial = {s: sympy.Integer(v) for s, v in values.items()
               if (v == 1 and s.name.startswith("N_")) or (v == 0 and s in PAGE_LATEX)}
    return sympy.sympify(expr).xreplace(trivial)


def _page_rows(values: dict) -> list[dict]:
    return [{"latex": PAGE_LATEX[s], "meaning": PAGE_MEANING[s], "value": int(v)}
            for s, v in values.items() if s in PAGE_LATEX]


def training_context(model, *, seq: int, lines_for, card: str = CARD) -> dict:
    """Everything the two sections print (``lines_for`` is ``report.lines_for``)."""
    found = search_setup(model, seq, card)
    if "error" in found:
        return {"error": found["error"]}
    setup = found["setup"]
    model = with_mtp(model, setup.mtp)  # the MTP modules trained, as train_memory and comm count them
    try:
        tm = train_memory(model, setup)
        comm_setup = setup.replace(recompute=comm_recompute(setup.recompute.mode, setup.plan.cp))
        cm = comm(model, comm_setup)
    except SymcostError as e:
        return {"error": str(e)}
    vals = _values(model, setup)
    stage = tm.stage
    st = rank_stages(model, setup.plan.pp, setup.virtual)[stage]
    sv = _stage_values(st, setup)
    forms = state_forms(setup)
    states, checks = [], {}
    for key in ("weights", "gradients", "optimizer"):
        value = getattr(tm, key)
        expr = forms[key]
        checks[key] = (expr, {**vals, **sv}, value)
        states.append({"name": key, "value": value, "human": human_bytes(value),
                       "lines": lines_for(STATE_LHS[key], [expr, reduced(expr, {**vals, **sv})], {**vals, **sv}, value, "bytes",
                                          names=PAGE_LATEX)})
    act_expr, act_vals, parts = activation_form(model, setup, stage, tm.stages[stage]["in_flight_chunks"])
    part_vals = {A: _ceil(f, vals) for A, f in parts}
    checks["activations"] = (act_expr.xreplace(dict(parts)), {**vals, **act_vals}, tm.activations)
    states.append({"name": "activations", "value": tm.activations, "human": human_bytes(tm.activations),
                   "lines": lines_for(STATE_LHS["activations"], [act_expr, reduced(act_expr, act_vals)], {**act_vals, **part_vals},
                                      tm.activations, "bytes", names=PAGE_LATEX)})
    # ZeRO-3/FSDP's gathered unit and the loss peak (issue 24): the library's expressions as they stand
    for key in ("gathered", "loss_peak"):
        value, expr = getattr(tm, key, 0), tm.formula.get(key)
        expr = expr.total if isinstance(expr, Terms) else expr
        if value and expr is not None:
            states.append({"name": key, "value": value, "human": human_bytes(value),
                           "lines": lines_for(STATE_LHS[key], [expr, reduced(expr, vals)], vals, value, "bytes")})
    per_layer = []
    for A, f in parts:
        v = part_vals[A]
        per_layer.append({"name": A.name[2:], "value": v, "human": human_bytes(v),
                          "lines": lines_for(PAGE_LATEX[A], [f, reduced(f, vals)], vals, v, "bytes", names=PAGE_LATEX)})
    memory = {"states": states, "per_layer": per_layer, "total": tm.per_gpu, "total_human": human_bytes(tm.per_gpu),
              "recompute_working": tm.recompute_working, "stage": stage, "in_flight": tm.in_flight,
              "layers": ", ".join(f"{n} of group {g}" for g, n in tm.stages[stage]["layers"].items()),
              "page": _page_rows({**sv, **act_vals}), "fits": tm.per_gpu <= budget_bytes(find_gpu(found["gpu"]), HEADROOM_GIB)}
    # -- communication per dimension: (bytes per collective) x (collectives) ------------------------
    busiest = _busiest(model, comm_setup, cm)
    dims, comm_checks = [], {}
    for dim, nbytes in cm["bytes"].items():
        if not nbytes:
            continue
        text = DIM_TEXT.get(dim, "")
        if dim in busiest:
            _, rk, (expr, pv) = busiest[dim]
            comm_checks[dim] = (expr, {**vals, **pv}, nbytes)
            lines = lines_for(r"C_{\text{" + dim + "}}", [sympy.factor_terms(expr), reduced(expr, {**vals, **pv})],
                              {**vals, **pv}, nbytes,
                              "bytes", names=PAGE_LATEX)
            used = expr.free_symbols & set(pv)
            page = _page_rows({s: x for s, x in pv.items() if s in used})
        else:  # HSDP's replica all-reduce, the host link: the library's expression as it stands
            lines = lines_for(r"C_{\text{" + dim.replace("_", r"\_") + "}}", [sympy.factor_terms(cm["formula"][dim])],
                              vals, nbytes, "bytes")
            page = []
        dims.append({"name": dim, "text": text, "value": nbytes, "human": human_bytes(nbytes),
                     "collectives": cm["collectives"][dim], "lines": lines, "page": page})
    zero_dims = [d for d, x in cm["bytes"].items() if not x]
    return {"error": "", "setup": setup, "gpus": found["gpus"], "card": found["gpu"],
            "described": describe(setup, found["gpus"], found["gpu"]),
            "search_argv": found["search_argv"], "train_argv": found["train_argv"],
            "comm_argv": ["comm", *setup_argv(model.name, comm_setup)[1:]],
            "candidates": found["candidates"], "fitting": found["fitting"],
            "memory": memory, "comm": dims, "comm_zero": zero_dims, "comm_total": sum(cm["bytes"].values()),
            "comm_total_human": human_bytes(sum(cm["bytes"].values())), "seq": seq, "checks": checks,
            "comm_checks": comm_checks, "step_per_gpu": found["best"]["per_gpu_bytes"],
            "step_time_s": found["best"]["step_time_s"]}
