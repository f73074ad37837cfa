"""Per-GPU training memory: model states of the heaviest pipeline stage plus the activations 1F1B
keeps in flight there, and the transients of one micro-batch's backward.

    per GPU = max over stages s of  states_s + gathered_s + all_gather_pool_s + fp8_s
                                    + min(m, N_pp − s) · A_s + pipeline_buffers_s
                                    + max(loss_peak_s, working_s)

(``formula``'s ``total`` is this sum as one term tree.) ``fp8_s``: FP8 training's weight copies
(``fp8``, ``--precision``); under DualPipe (``--schedule dualpipe``) rank s also holds stage
N_pp − 1 − s: both stages' states and (N_pp + 1)/2 micro-batches of each one's activations
(``schedule.dualpipe_held``); with ``--offload-activations`` the offloaded layers' saved sets are on
the host (``host_activations``) and one of them in transit on the GPU (``offload``); the MTP modules
(``--mtp``, ``mtp.with_mtp``) are layers of the last stage like any other.

Beyond the tensors alive, what the CUDA caching allocator is known to keep reserved then
(``allocator``; torchtitan's logged memory is the reserve): FSDP2's all-gather output pool
(``all_gather_pool``, with the states) and, inside ``loss_peak``, the logits' cached segment
(``allocator_cached``); under ``--framework torchtitan`` with N_pp > 1, ``torch.distributed.
pipelining``'s per-micro-batch boundary buffers (``pipeline_buffers``, with the activations).

``gathered_s``: ZeRO-3 / FSDP's unsharded working set (``states.gathered_terms``, the framework's
wrapping unit and prefetch, every offload mode); ``loss_peak_s``: the logits and cross-entropy
gradients on the last stage (``activations.loss_peak``); ``working_s``: the backward's working set
of one layer (its recomputed saved set under full / op-level recompute, its gradient buffers
``activations.backward_buffers``, its EP dispatch buffers) — the loss's and a layer's transients
come at different moments, so the larger counts. Bytes per parameter of each state are the
``--framework``'s (``framework``).

with m micro-batches per step, A_s the bytes one micro-batch's backward keeps on stage s (its
layers, plus the embedding on the first stage and the final norm, head and loss on the last;
``activations``) and states_s its weights, gradients and optimizer state (``state_formula``: the
ZeRO rule ``states.zero_terms`` in the layout symbols, substituted per stage). Under 1F1B
the first stage has started N_pp micro-batches (or all m) before the first backward frees one.
Interleaved 1F1B (``virtual`` = v model chunks per stage): the in-flight chunks at each rank's
peak come from replaying Megatron's schedule (``schedule.peak``): p·(1 + (p−1)/(p·v))
micro-batches' worth on the first stage when the chunks are alike (Korthikanti et al. 2022).
Working memory on top: one recomputed layer's saved set under full recompute, and with EP > 1 one
MoE layer's dispatch/combine buffers (``activations.dispatch_buffers``). Offloaded states are
reported as ``host``, not in the GPU total. ``train_memory(model, setup)`` takes one
``setup.TrainSetup``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from importlib.resources import files
from math import ceil

import sympy

from ..components.moe import MoE
from ..core.errors import SymcostError
from ..core.memo import PerModel
from ..core.notation import sym
from ..core.terms import exact, largest
from .activations import (
    _bytes,
    _records,
    activations,
    backward_buffers,
    dispatch_buffers,
    korthikanti,
    loss_peak,
    module_records,
    per_layer,
    shared_tensors,
)
from . import fp8
from . import activation_offload as act_offload
from . import pipeline_buffers as pipe
from .allocator import all_gather_pool
from .flops import padded_expert_flops, train_flops
from .mtp import describe as describe_mtp
from .mtp import with_mtp
from .framework import framework
from .plan import _split, param_kind, rank_stages, stages
from .recompute import add_up, recomputed_units
from .schedule import dualpipe_held, in_flight, peak
from .setup import TrainSetup, has_experts
from .states import estimator_host_node, gathered_terms, param_groups, rounded_states, zero_terms


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
    host: int = 0  # offloaded states on the host (per GPU), not in per_gpu
    gathered: int = 0  # ZeRO-3 / FSDP's unsharded working set (``states.gathered_terms``)
    loss_peak: int = 0  # the head and loss transient (``activations.loss_peak``)
    host_node: int | None = None  # --framework deepspeed: the estimators' host bytes per node
    fp8_weights: int = 0  # FP8 training's weight copies (``fp8``)
    host_activations: int = 0  # offloaded saved activations on the host (``offload``), not in per_gpu
    pipeline_buffers: int = 0  # torch.distributed.pipelining's boundary buffers (``pipeline_buffers``)
    all_gather_pool: int = 0  # FSDP2's all-gather output pool, reserved (``allocator.all_gather_pool``)
    allocator_cached: int = 0  # part of loss_peak: the allocator's cached logits block (``allocator``)


def layout_values(model, setup) -> dict:
    """The model's values with the setup's layout symbols (N_dp, N_tp, N_pp, N_ep, N_cp, N_sh under
    HSDP), B, T, m_mb and b_a: what every training formula is substituted with."""
    p = setup.plan
    v = model.values_with(T=setup.seq, B=setup.micro_batch)
    v.update({sym.b_a: setup.act_bytes, sym.N_tp: p.tp, sym.N_cp: p.cp, sym.N_dp: p.dp, sym.N_pp: p.pp,
              sym.N_ep: p.ep})
    if setup.states.shard is not None:
        v[sym.N_sh] = setup.states.shard
    return v


def state_formula(stage: dict, setup) -> dict:
    """One pipeline rank's model states as expressions in the layout symbols, its parameter counts
    as numbers: ``states.zero_terms`` (THE ZeRO rule) over ``states.param_groups``."""
    st = setup.states
    groups = param_groups(stage["split"], stage["whole"], stage["experts"],
                          None if st.shard is None else sym.N_sh)
    bw, bg, K = st.bytes(setup.plan.zero)
    return {k: sympy.sympify(x) for k, x in zero_terms(groups, setup.plan.zero, K, bg, bw, st.offload).items()}


def modules(components, v):
    """DeepSpeed's modules of some components, (split, whole, experts) parameters each: every weight
    with its bias is one module (an ``nn.Linear``, a norm, the embedding), and a component's routed
    experts are one (transformers' fused expert tensors ``gate_up_proj`` / ``down_proj`` live on one
    module) — what ``stage3.model_to_params`` takes the largest of."""
    out = []
    for c in components:
        routed = 0
        for p in c.primitives(None):
            n = p.params()
            if n == 0:
                continue
            n = exact(n, v)
            kind = param_kind(c, p)  # the TP rule of ``plan._split``, per module here
            if kind == "routed":
                routed += n
            else:
                out.append((n, 0, 0) if kind == "split" else (0, n, 0))
        if routed:
            out.append((0, 0, routed))
    return out


def rank_units(model, setup, r: int, layers_only: bool = False) -> list[tuple]:
    """The wrapping units on pipeline rank ``r`` (``framework``): (split, whole, experts) parameters
    of each distinct decoder layer it holds (tower blocks on rank 0 too), the embedding (rank 0) and
    the final norm + head (the last rank) — torchtitan's ``fully_shard`` of each block, of
    ``tok_embeddings`` and of ``[norm, output]``; under DeepSpeed each module of those."""
    pp, virtual, unit = setup.plan.pp, setup.virtual, framework(setup.states.framework).unit
    return list(_RANK_UNITS.get(model, (pp, virtual, unit, r, layers_only),
                                lambda: _rank_units(model, pp, virtual, unit, r, layers_only)))


#: ``rank_units`` by model and what it reads: the search costs the ZeRO-3 gathered unit and pool of
#: every pipeline rank of every (N_pp, v) it meets, and ``train_memory`` of each setup again
_RANK_UNITS = PerModel(256)


def _rank_units(model, pp: int, virtual: int, unit: str, r: int, layers_only: bool) -> tuple:
    v = model.values
    order = model.layers()
    rk = rank_stages(model, pp, virtual)[r]
    ids = [i for ch in rk.get("chunks", [rk]) for i in ch["layer_ids"]]
    layers = {tuple(g.name for g in order[i]) for i in ids}
    groups = {g.name: g for g in model.groups}
    parts = [[groups[n] for n in names] for names in sorted(layers)]
    if r == 0:
        parts += [[g] for g in model.groups if g.tower]
    comps = [[c for g in p for c in g.components] for p in parts]
    if r == 0 and not layers_only:
        comps.append(list(model.pre))
    if r == pp - 1 and not layers_only:
        comps.append(list(model.post))
    if unit == "module":
        return tuple({u for cs in comps for u in modules(cs, v)})
    return tuple({_split(cs, v) for cs in comps})


def gathered_formula(model, setup, r: int, rank: dict) -> sympy.Expr:
    """Rank ``r``'s ZeRO-3 / FSDP working set (``states.gathered_terms``) in N_tp and N_ep."""
    p = setup.plan
    if p.zero < 3:
        return sympy.Integer(0)
    fw = framework(setup.states.framework)
    return gathered_terms(rank_units(model, setup, r), (rank["split"], rank["whole"], rank["experts"]), fw, p.zero,
                          fw.resharded(p.pp, setup.reshard), p.pp)


def all_gather_pool_formula(model, setup, r: int) -> sympy.Expr:
    """Rank ``r``'s FSDP2 all-gather output pool (``allocator.all_gather_pool``) in N_tp and N_ep."""
    p = setup.plan
    group = setup.states.groups(p)[0][0]
    return all_gather_pool(rank_units(model, setup, r), rank_units(model, setup, r, layers_only=True),
                           setup.states.framework, p.zero, group)


def model_states(model, setup) -> list[dict]:
    """Bytes of weights, gradients and optimizer state (and ``host``: offloaded) on one GPU of each
    pipeline rank: ``state_formula`` substituted with the setup's layout, rounded up per kind.
    With ``virtual`` > 1 rank r holds the model chunks r, r + N_pp, ... of the N_pp·v chunks."""
    setup.states.check_dtypes()
    p = setup.plan
    vals = {sym.N_dp: p.dp, sym.N_tp: p.tp, sym.N_cp: p.cp, sym.N_ep: p.ep}
    if setup.states.shard is not None:
        vals[sym.N_sh] = setup.states.shard
    vals = {k: sympy.Integer(x) for k, x in vals.items()}
    rows = []
    for st in rank_stages(model, p.pp, setup.virtual, p):
        f = state_formula(st, setup)
        sub = {k: x.xreplace(vals) for k, x in f.items()}
        rows.append({"host": int(sympy.ceiling(sub["host"])),
                     **{k: int(x) for k, x in rounded_states(sub, setup.states.framework).items()},
                     "params_dense": Fraction(st["split"], p.tp) + st["whole"],
                     "params_experts": Fraction(st["experts"], p.ep * p.tp), "layers": st["layers"],
                     "chunks": st.get("chunks", [st])})
    return rows


def measured_note(model) -> str:
    """How far this model's activation count is proven (``symcost/data/activations_measured.json``,
    kept equal to the families tests/test_activations.py measures)."""
    data = json.loads(files("symcost.data").joinpath("activations_measured.json").read_text())
    mt = model.model_type
    if mt not in data["exact"] + data["bounded"] and model.text_model_type:
        # a multimodal wrapper trained on text: its towers run no forward and save nothing
        # (Component.modality), so what is saved is its text model's
        mt = model.text_model_type
        whose = f"{model.model_type}'s text model ({mt}; the towers save nothing on text-only batches)"
    else:
        whose = f"{mt}'s"
    if mt in data["exact"]:
        return (f"activations: {whose} saved tensors measured equal to the engine's count on tiny configs "
                f"of the transformers class, in the cases tests/test_activations.py lists")
    if mt in data["bounded"]:
        return f"activations: {whose} count measured within a stated share below the real saved tensors"
    return (f"activations: {whose} not measured; its components' declarations are those measured in "
            f"other families")


def _tree_total(c, bw, capacity, sp, tp, cp):
    """The bytes component ``c`` saves as declared (no recomputation), per layer."""
    return sum((_bytes(r, sp=sp, tp=tp, cp=cp) for r in _records(c, bw, capacity)), sympy.Integer(0))


def train_memory(model, setup: TrainSetup, *, gpus_per_node: int = 8, formulas: bool = True) -> TrainMemory:
    """Per-GPU bytes of one training setup (``setup.TrainSetup``, checked against the model here);
    ``gpus_per_node`` only for DeepSpeed's host bytes per node (``host_node``). The MTP modules the
    setup trains (``setup.mtp``) join the model first (``mtp.with_mtp``). ``formulas=False``: the
    figures only, ``formula`` holds just the activation tree (a search over setups that reads
    ``per_gpu`` and the states, as the sheet's fewest GPUs to train, skips deriving the heaviest
    stage's term tree for every candidate; the figures are the same either way)."""
    model = with_mtp(model, setup.mtp)
    setup.check(model)
    plan, states_opt, rc, bw = setup.plan, setup.states, setup.recompute, setup.backward
    seq, micro_batch, virtual, capacity = setup.seq, setup.micro_batch, setup.virtual, setup.capacity
    dp, tp, pp, ep, cp, sp = plan.dp, plan.tp, plan.pp, plan.ep, plan.cp, plan.sp
    recompute, activation_model, hsdp_shard, offload = rc.mode, setup.activations, states_opt.shard, states_opt.offload
    m = setup.micro_batches
    # the model chunks, in order (one per stage without interleaving; the plan's uneven split, if any)
    chunks = stages(model, pp * virtual, setup.plan.chunk_sizes(model.n_layers(), virtual))
    rerun = add_up(recomputed_units(model, rc, chunks))  # units of each group full recomputation reruns
    vals = layout_values(model, setup)
    states = model_states(model, setup)
    (n_dense, rep), (n_exp, _) = states_opt.groups(plan)
    notes = [bw.describe(), f"layout {plan.dp}×{plan.tp}×{plan.pp}×{plan.cp} (dp×tp×pp×cp) = {plan.world} "
             f"GPUs; experts over ep={plan.ep}, their data-parallel size dp·cp/ep = {plan.expert_dp}",
             ("DualPipe: each rank holds (pp+1)/2 micro-batches of each of its two stages" if setup.schedule == "dualpipe"
              else "1F1B: the first stage holds min(m, pp) micro-batches of activations" if virtual == 1 else
              f"interleaved 1F1B, {virtual} model chunks per stage: Megatron's schedule replayed, the first "
              f"stage holds pp·(1 + (pp−1)/(pp·v)) micro-batches' worth when the chunks are alike"),
             measured_note(model)]
    if rc.mode == "full" and not rc.per_layer:
        notes.append(f"Megatron's full recomputation, {rc.describe()[len('recompute=full, '):]} "
                     "(--recompute-method, --recompute-num-layers)")
    if hsdp_shard is not None:
        notes.append(f"HSDP: model states sharded over {n_dense} ranks (hsdp-shard × cp; experts {n_exp}) and "
                     f"replicated over {rep} groups")
    if offload != "none":
        notes.append(f"CPU offload of the {'optimizer state and gradients' if offload == 'optimizer' else 'parameters, gradients and optimizer state'}: "
                     f"host bytes per GPU under 'host', not in the GPU total")
    if has_experts(model):
        notes.append("MoE: dropless routing, balanced (k·B·T expert rows)" if capacity is None else
                     f"MoE: capacity factor {capacity}, padded to capacity: E·ceil(c_f·k·B·T/E) expert rows")
    chunk_acts = None
    if activation_model == "korthikanti":
        if virtual > 1:
            raise SymcostError("--virtual-stages needs --activations engine (the preset has no per-chunk split)")
        tree = korthikanti(model, recompute=recompute, sp=sp or tp == 1, tp=tp, cp=cp)
        if setup.act_offload is not None:
            raise SymcostError("--offload-activations needs --activations engine (the preset has no per-layer split)")
        per_stage_acts = [int(sympy.floor(tree.total.xreplace(vals) / pp))] * pp
        working = [0] * pp
        transit, host_acts = [0] * pp, [[] for _ in range(pp)]
        notes.append("activations: Korthikanti et al. 2022 Table 2 (dense GPT layer, 2-byte), preset")
    else:
        tree = activations(model, bw, sp=sp, tp=tp, cp=cp, capacity=capacity, op=rc.mode == "op",
                           modules=rc.modules, **setup.head_saved)
        try:
            flat = tree.at(vals)
        except ValueError:  # terms.exact: a saved tensor of a fractional number of bytes (as search skips it)
            bad = next(k for k, e in tree.flatten().items() if not sympy.sympify(e).xreplace(vals).is_Integer)
            raise SymcostError(f"--tp {tp} --cp {cp}: the activations {bad} are not whole bytes at this layout "
                               f"({sympy.sympify(tree.flatten()[bad]).xreplace(vals)}): a tensor-parallel or "
                               "context-parallel split of a width or a sequence that --tp/--cp does not divide; "
                               "take sizes that divide the model's widths") from None
        pre_keys, post_keys = {c.key for c in model.pre}, {c.key for c in model.post}
        pre = sum(v for k, v in flat.items() if k.split("/")[0] in pre_keys or k.startswith("shared/"))
        post = sum(v for k, v in flat.items() if k.split("/")[0] in post_keys)
        # per unit of each group (Model.layers(): a layer is one unit of one group, or several):
        # what a checkpoint keeps (the tree's mode), what it saves without recomputation, and its
        # transient buffers (one MoE layer's EP dispatch); the chunk's sums follow ``rc.chunk``
        units = {g.name: exact(g.count, model.values) for g in model.groups if g.name in tree}
        kept = {n: Fraction(exact(tree[n].total, vals), c) for n, c in units.items()}
        saved = kept
        if rc.mode in ("full", "op"):
            saved = {n: Fraction(exact(t, vals)) for n, t in saved_exprs(model, setup).items()}
        order = model.layers()
        if rc.mode == "full" and rc.method in ("block", "every"):  # the groups with layers it does not rerun keep
            all_units = add_up([ch["layers"] for ch in chunks])  # their shared tensors (RoPE tables)
            keep = {g for g, n in all_units.items() if n > rerun.get(g, 0)}
            pre += (shared_tensors(model, bw, set(rerun), keep, sp=sp, tp=tp, cp=cp).total_at(vals)
                    - (exact(tree["shared"].total, vals) if "shared" in tree else 0))
        extra = {n: exact(e, vals) for n, e in extra_exprs(model, setup, tree).items()}
        per_stage_acts, working, chunk_acts = [], [], []
        transit, host_acts = [0] * pp, [[] for _ in range(pp)]  # activation offload (``offload``)
        n_chunks = pp * virtual
        for r, st in enumerate(states):
            accs, works = [], []
            for j, ch in enumerate(st["chunks"]):
                gid = r + j * pp
                layers = [order[i] for i in ch["layer_ids"]]
                k_l = [sum(kept.get(g.name, 0) for g in u) for u in layers]
                s_l = [sum(saved.get(g.name, 0) for g in u) for u in layers]
                if setup.act_offload is not None:  # the offloaded layers' saved sets go to the host
                    if rc.mode == "op":
                        k_l, moving, away = act_offload.split(k_l, setup)
                    else:
                        s_l, moving, away = act_offload.split(s_l, setup)
                    transit[r] = max(transit[r], ceil(moving))
                    host_acts[r].append(ceil(away))
                held, work = rc.chunk(k_l, s_l, [sum(extra[g.name] for g in u) for u in layers])
                a = ceil(held) + (pre if gid == 0 else 0) + (post if gid == n_chunks - 1 else 0)
                accs.append(a)
                works.append(ceil(work))
            chunk_acts.append(accs)
            per_stage_acts.append(sum(accs))
            working.append(max(works, default=0))
    fw = framework(states_opt.framework)
    lvals = {k: sympy.Integer(x) for k, x in ((sym.N_tp, tp), (sym.N_ep, ep))}
    ranks = rank_stages(model, pp, virtual)
    gathered = [int(sympy.ceiling(gathered_formula(model, setup, r, ranks[r]).xreplace(lvals))) for r in range(pp)]
    ag_pool = [int(sympy.ceiling(all_gather_pool_formula(model, setup, r).xreplace(lvals))) for r in range(pp)]
    ltree = loss_peak(model, bw, chunks=setup.loss_chunks, logits_held=fw.holds_logits(pp), tp=tp, cp=cp,
                      kind=setup.loss_kind)
    loss = int(sympy.ceiling(ltree.total.xreplace(vals))) if ltree else 0
    notes.append(f"convention: {fw.label}" + ("" if fw.name is None else f" [--framework {fw.name}; {fw.source}]"))
    if plan.zero == 3:
        notes.append("gathered: ZeRO-3/FSDP working set, " + (
            f"{fw.unit_bytes} B per parameter of the largest module (DeepSpeed's largest_layer_memory)"
            if fw.unit == "module" else
            f"{fw.unit_bytes} B per parameter of the largest wrapping unit (decoder layer, embedding or norm+head: "
            f"the unit computed + the prefetched next in bf16, its unsharded gradients)"
            if fw.resharded(pp, setup.reshard) else
            "not resharded after forward: the rank's parameters unsharded in bf16 (2 B/param)"
            + (f" and gradients accumulated unsharded over the micro-batches ({fw.reduce_bytes} B/param)"
               if pp > 1 else "")))
    if describe_mtp(model):
        notes.append(describe_mtp(model))
    if fp8.describe(setup):
        notes.append(fp8.describe(setup))
    if setup.schedule == "dualpipe":
        notes.append("DualPipe: each rank holds stage r and stage pp-1-r (parameters 2x: both stages' weights, "
                     "gradients and optimizer states) and (pp+1)/2 micro-batches of each stage's activations "
                     "(PP+1 in all; DeepSeek-V3 report Table 2, deepseek-ai/DualPipe README)")
    if setup.act_offload is not None:
        notes.append("activation offload (Megatron --cpu-offloading): the first "
                     + ("all but one" if setup.act_offload == -1 else str(setup.act_offload))
                     + " layers of each stage keep their saved activations on the host (host_activations), one "
                       "layer's in transit on the GPU; embedding, head, loss and the backward's working set stay")
    if loss:
        notes.append("loss_peak: logits and cross-entropy gradients of one micro-batch on the last stage"
                     + (f" in {setup.loss_chunks} chunks" if setup.loss_chunks > 1 else "")
                     + "; per GPU = states + gathered + activations + max(loss_peak, recompute_working)")
    if loss and setup.loss_kind == "compiled":
        notes.append("loss_peak: the loss compiled (--compiled-loss): the bf16 logits saved by the compiled graph "
                     "and their bf16 gradient, no fp32 copy (Inductor's fused cross-entropy)")
    elif loss and setup.loss_kind == "parallel" and tp > 1:
        notes.append("loss_peak: torchtitan's loss parallel (DTensor, vocabulary shards): its backward holds "
                     "exp(log-probs) in fp32 beside the two fp32 gradients (_nll_loss_and_log_softmax_backward)")
    if "allocator_cached" in ltree:
        notes.append("allocator_cached (part of loss_peak): the logits' bf16 segment, freed before backward "
                     "(torchtitan's del pred) and too small for the fp32 gradient, stays reserved by the CUDA "
                     "caching allocator (best fit, segments never merged; torchtitan logs max_reserved)")
    if any(ag_pool):
        notes.append("all_gather_pool: FSDP2's all-gather outputs live in their copy-in stream's pool, which "
                     "serves no other stream: two consecutive units' outputs in bf16 stay reserved "
                     "(_fsdp_collectives.foreach_all_gather, _fsdp_param_group.wait_for_unshard)")
    rows = []
    dual = setup.schedule == "dualpipe"
    # torch.distributed.pipelining's receive/send buffers (``pipeline_buffers``; torchtitan under PP)
    x_pipe = (pipe.boundary(sp, tp, cp).xreplace(vals) if pipe.applies(fw.name, pp, setup.schedule) else 0)
    if x_pipe:
        notes.append("pipeline_buffers: torch.distributed.pipelining's per-micro-batch receive buffers of "
                     "activations and gradients and the stage outputs kept for backward (2m boundary "
                     "tensors per middle stage, m + c first, m − c last; stage.py _setup_forward_recv_info, "
                     "_create_grad_recv_info, fwd_cache)")
    fp8_w = [fp8.weight_copies(model, setup, st["layers"]) for st in states]
    for s, st in enumerate(states):
        if virtual == 1 or chunk_acts is None:
            inflight = in_flight(pp, s, m)
            counts = [inflight]
            held = inflight * per_stage_acts[s]
            host_a = inflight * sum(host_acts[s])
        else:
            counts = peak(pp, s, virtual, m, chunk_acts[s])
            held = sum(c * a for c, a in zip(counts, chunk_acts[s]))
            host_a = sum(c * a for c, a in zip(counts, host_acts[s]))
            inflight = sympy.Rational(sum(counts), virtual)
        mirror = pp - 1 - s
        loss_s = loss if s == pp - 1 or (dual and mirror == pp - 1) else 0
        w, g, o, hst, f8 = st["weights"], st["gradients"], st["optimizer"], st["host"], fp8_w[s]
        if dual:  # DualPipe: rank s also holds stage pp−1−s (``schedule.dualpipe_held``)
            ms = states[mirror]
            w, g, o, hst, f8 = w + ms["weights"], g + ms["gradients"], o + ms["optimizer"], hst + ms["host"], \
                f8 + fp8_w[mirror]
            inflight = sympy.Rational(pp + 1, 2)
            counts = [inflight]
            held = dualpipe_held(pp, per_stage_acts[s], per_stage_acts[mirror])
            host_a = dualpipe_held(pp, sum(host_acts[s]), sum(host_acts[mirror]))
        held += max(transit[s], transit[mirror]) if dual else transit[s]
        pb = int(sympy.ceiling(pipe.count(pp, s, m, counts) * x_pipe)) if x_pipe else 0
        agp = ag_pool[s] + (ag_pool[mirror] if dual else 0)
        total = w + g + o + f8 + gathered[s] + agp + held + pb + max(working[s], loss_s)
        rows.append({"stage": s, "weights": w, "gradients": g, "optimizer": o, "gathered": gathered[s],
                     **({"all_gather_pool": agp} if any(ag_pool) else {}),
                     "fp8_weights": f8, "loss_peak": loss_s, "host": hst, "host_activations": host_a,
                     "activations": held, "activations_per_micro_batch": per_stage_acts[s],
                     "in_flight": int(inflight) if sympy.Integer(inflight) == inflight else str(inflight),
                     "in_flight_chunks": [int(c) if sympy.Integer(c) == c else str(c) for c in counts],
                     "recompute_working": working[s], **({"pipeline_buffers": pb} if x_pipe else {}),
                     "per_gpu": total, "layers": st["layers"]})
    heavy = max(rows, key=lambda r: r["per_gpu"])
    # op-level checkpointing reruns every second dense matmul: not counted in the FLOPs per step (left out)
    ftree = train_flops(model, recompute="none" if recompute == "op" else recompute, recomputed=rerun)
    if capacity is None:
        flops = exact(ftree.total, model.values_with(T=seq, B=micro_batch * m * dp))
    else:  # the experts also compute on the padding
        flops = padded_expert_flops(model, ftree, capacity, seq=seq, micro_batch=micro_batch, cp=cp,
                                    routings=m * dp)
    trees = {"activations_per_micro_batch": tree,
             **(formula(model, setup, heavy, activation_model == "engine") if formulas else {})}
    out = TrainMemory(heavy["weights"], heavy["gradients"], heavy["optimizer"], heavy["activations"],
                      heavy["per_gpu"], flops, notes, heavy["stage"], m, heavy["in_flight"],
                      heavy["recompute_working"], trees, rows)
    out.host = heavy["host"]
    out.gathered, out.loss_peak = heavy["gathered"], heavy["loss_peak"]
    out.fp8_weights, out.host_activations = heavy["fp8_weights"], heavy["host_activations"]
    out.pipeline_buffers = heavy.get("pipeline_buffers", 0)
    out.all_gather_pool = heavy.get("all_gather_pool", 0)
    if out.all_gather_pool:
        out.formula["all_gather_pool"] = sum((all_gather_pool_formula(model, setup, r) for r in
                                                   ([heavy["stage"], pp - 1 - heavy["stage"]] if dual else
                                                    [heavy["stage"]])), sympy.Integer(0))
    if heavy["loss_peak"] and "allocator_cached" in ltree:
        out.allocator_cached = int(sympy.ceiling(sympy.sympify(ltree["allocator_cached"]).xreplace(vals)))
    if fw.name == "deepspeed":  # the estimators' host figure per node (``states.estimator_host_node``)
        psi = sum(sum(r[k] for k in ("split", "whole", "experts")) for r in stages(model, 1))
        unit = max((sum(u) for u in rank_units(model, setup.replace(pp=1, virtual=1), 0)), default=0)
        host = state_formula(ranks[heavy["stage"]], setup)["host"].xreplace(
            {k: sympy.Integer(x) for k, x in layout_values(model, setup).items() if k in (sym.N_dp, sym.N_tp, sym.N_cp,
                                                                                          sym.N_ep, sym.N_sh)})
        out.host_node = int(sympy.floor(estimator_host_node(plan.zero, offload, psi, unit, plan.world,
                                                            gpus_per_node, host)))
    if not formulas:
        return out
    out.formula["gathered"] = gathered_formula(model, setup, heavy["stage"], ranks[heavy["stage"]])
    if heavy["loss_peak"]:
        out.formula["loss_peak"] = loss_peak(model, bw, chunks=setup.loss_chunks, logits_held=fw.holds_logits(pp),
                                             kind=setup.loss_kind)
    if out.allocator_cached:
        out.formula["allocator_cached"] = sympy.sympify(
            loss_peak(model, bw, chunks=setup.loss_chunks, logits_held=fw.holds_logits(pp),
                                             kind=setup.loss_kind)["allocator_cached"])
    if x_pipe:
        out.formula["pipeline_buffers"] = (pipe.count(pp, heavy["stage"], m, heavy_counts(heavy))
                                           * pipe.boundary(sp)).xreplace(model.values)
    if "activations" in out.formula:
        out.formula["total"] = total_formula(out.formula)
    return out


def heavy_counts(row: dict) -> list:
    """The in-flight micro-batches of each chunk of a stage row (``train_memory``'s rows)."""
    return [sympy.Rational(c) for c in row["in_flight_chunks"]]


def saved_exprs(model, setup) -> dict:
    """One layer's saved bytes per group without recomputation (what a recomputed layer brings back),
    in B, T, b_a and the layout symbols."""
    p = setup.plan
    return {n: t.total for n, t in per_layer(model, setup.backward, setup.capacity, sp=p.sp).items()}


def extra_exprs(model, setup, tree) -> dict:
    """The transient working set of one layer's backward per group beyond what stays saved, in B, T,
    b_a and the layout symbols: its gradient buffers (``backward_buffers``), a module Megatron
    recomputes (``--recompute-modules``) alive again, and with EP one MoE layer's dispatch buffers."""
    p, bw, capacity, rc = setup.plan, setup.backward, setup.capacity, setup.recompute
    extra = {g.name: (backward_buffers(g.components, sp=p.sp) if g.name in tree else sympy.Integer(0))
             for g in model.groups}
    if rc.modules is not None and set(rc.modules) - {"core_attn"}:  # a recomputed module's saved set
        for g in model.groups:                                     # is alive again in its backward
            if g.name in tree:
                alive = [_tree_total(c, bw, capacity, p.sp, sym.N_tp, sym.N_cp) for c in g.components
                         if module_records(c, bw, rc.modules, capacity) != _records(c, bw, capacity)]
                if alive:
                    extra[g.name] += sympy.Max(*alive)
    if p.ep > 1:
        for g in model.groups:
            for c in g.components:
                if isinstance(c, MoE):
                    extra[g.name] += dispatch_buffers(c, capacity, sp=p.sp)
    return extra


def formula(model, setup, heavy: dict, engine: bool = True) -> dict:
    """The heaviest stage's per-GPU bytes as expressions in the parallel sizes (N_dp, N_tp, N_cp,
    N_ep, and N_sh under HSDP), B, T and b_a, with the stage's parameter counts as numbers: its
    model states (``state_formula``; under DualPipe with the mirrored stage's), the FP8 weight
    copies and, with the engine's activations, the chunks in flight (``recompute.Recompute.chunk``
    over each layer's expressions, the offloaded layers' sets away), the backward's working set
    (``working``: a layer's gradient buffers, its recomputed saved set, its EP dispatch) and
    ``total`` = states + gathered + fp8_weights + activations + Max(loss_peak, working), the
    per-GPU figure as one term tree (``gathered`` and ``loss_peak`` are added by ``train_memory``)."""
    plan, virtual, pp = setup.plan, setup.virtual, setup.plan.pp
    ranks = rank_stages(model, pp, virtual, plan)
    s_ = heavy["stage"]
    dual = setup.schedule == "dualpipe"
    own = [s_, pp - 1 - s_] if dual else [s_]
    out = {k: sympy.Integer(0) for k in ("weights", "gradients", "optimizer", "host")}
    for r in own:
        f = state_formula(ranks[r], setup)
        for k in out:
            out[k] += f[k]
    if setup.states.offload == "none":
        del out["host"]
    out["fp8_weights"] = sympy.Integer(heavy["fp8_weights"])
    if engine:
        bw, sp, capacity, rc = setup.backward, plan.sp, setup.capacity, setup.recompute
        tree = activations(model, bw, sp=sp, capacity=capacity, op=rc.mode == "op",
                           modules=rc.modules, **setup.head_saved)
        order = model.layers()
        units = {g.name: exact(g.count, model.values) for g in model.groups if g.name in tree}
        # the config's values bound before the per-layer maxima are taken: a layer's sets are then
        # polynomials with numbers in the layout and batch symbols, alike for layers of one shape (one
        # argument of the Max each), which SymPy orders at once (``terms.largest``)
        vals = model.values
        kept = {n: (tree[n].total / c).xreplace(vals) for n, c in units.items()}
        saved = ({n: e.xreplace(vals) for n, e in saved_exprs(model, setup).items()}
                 if rc.mode in ("full", "op") else kept)
        extra = {n: e.xreplace(vals) for n, e in extra_exprs(model, setup, tree).items()}
        n_chunks = pp * virtual
        pre = sum((tree[c.key].total for c in model.pre if c.key in tree), sympy.Integer(0))
        if "shared" in tree:
            pre += tree["shared"].total
        post = sum((tree[c.key].total for c in model.post if c.key in tree), sympy.Integer(0))

        def chunk(r, j, ch):
            gid = r + j * pp
            layers = [order[i] for i in ch["layer_ids"]]
            k_l = [sum((kept.get(g.name, 0) for g in u), sympy.Integer(0)) for u in layers]
            s_l = [sum((saved.get(g.name, 0) for g in u), sympy.Integer(0)) for u in layers]
            moving = sympy.Integer(0)
            if setup.act_offload is not None:
                if rc.mode == "op":
                    k_l, moving, _ = act_offload.split(k_l, setup)
                else:
                    s_l, moving, _ = act_offload.split(s_l, setup)
            held, work = rc.chunk(k_l, s_l, [sum((extra[g.name] for g in u), sympy.Integer(0)) for u in layers])
            held += (pre if gid == 0 else 0) + (post if gid == n_chunks - 1 else 0)
            return held, work, moving

        acts, works, moves = [], [], []
        for r in own:
            per = sympy.Integer(0)
            counts = heavy["in_flight_chunks"] if not dual else [1]
            for j, ch in enumerate(ranks[r].get("chunks", [ranks[r]])):
                held, work, moving = chunk(r, j, ch)
                per += sympy.Rational(counts[j]) * held
                works.append(work)
                moves.append(moving)
            acts.append(per)
        a = sympy.Rational(pp + 1, 2) * (acts[0] + acts[1]) if dual else acts[0]
        out["activations"] = (a + (largest(*moves) if moves else 0)).xreplace(model.values)
        out["working"] = largest(*works).xreplace(model.values) if works else sympy.Integer(0)
    return out


def total_formula(parts: dict) -> sympy.Expr:
    """``formula``'s total: the sum of the per-GPU lines, the loss peak and the backward's working
    set at their moments (the larger counts)."""
    keys = ("weights", "gradients", "optimizer", "fp8_weights", "gathered", "all_gather_pool", "activations",
            "pipeline_buffers")
    tot = sum((_total(parts[k]) for k in keys if k in parts), sympy.Integer(0))
    return tot + largest(_total(parts.get("loss_peak", sympy.Integer(0))), parts.get("working", sympy.Integer(0)))


def _total(x):
    return x.total if hasattr(x, "total") else sympy.sympify(x)
