"""The summary rows of a model's documents (the HTML page and the PDF sheet show the same ones).

``summary(model, raw, Inputs(...))`` returns a list of ``Row``: key, label, exact value, unit, the
formula that gave it (a SymPy term tree's total, in the notation) and the convention it was
counted under. Every value comes from the SAME library call, with the same defaults, that the
command line's ``--json`` makes (``symcost.cli.commands``), so a row and the CLI agree to the
integer:

    params_total, params_active   ``params``: ``Model.params()`` / ``active_params()``
    prefill_flops                 ``flops --phase prefill --T T_prefill --batch B`` (attention full,
                                  logits all, MLA auto = expanded prefill)
    decode_flops                  ``flops --phase decode --T T_decode --batch B`` (MLA auto = absorbed)
    kv_per_token, kv_at_T         ``cache --T T_decode --batch B --dtype kv_dtype``: d(bytes)/dT when
                                  the cache is a polynomial in T (None under a window), and the bytes
    weights_stored                ``memory``'s ``weights_bytes``: the checkpoint's quantization_config
                                  (scales included) or ``--weights-dtype``; MTP modules not loaded
    serve_per_gpu, kv_capacity    ``memory --T T_decode --batch B --gpu G --tp/--pp/--dp/--ep``
                                  (vLLM accounting: ``serving.plan.memory``)
    serve_gpus                    ``memory``'s ``gpus_needed``: the smallest TP (power of two) that holds B
    train_per_gpu                 ``train --seq T_prefill --micro-batch B --dp/--tp/--pp/--ep
                                  --zero Z --recompute R`` (``training.train_memory``)
    train_gpus                    the smallest power-of-two N for which ``train ... --dp N --zero 3
                                  --recompute full --gpu G`` fits (FSDP full shard, micro-batch B)

and the rules of thumb beside the exact values, each with the ratio exact / rule:
``2N`` (forward FLOPs per token, N = active parameters; Kaplan et al. 2020), ``6N`` (training
FLOPs per token), ``12·L·d²`` (parameters of a GPT layer stack without embeddings) and
``16 B/param`` (bf16 weights + bf16 gradients + AdamW's fp32 master copy and two moments).

>>> from symcost.architectures import loader
>>> rows = summary(loader.build("llama-3.1-8b"), loader.read_json("llama-3.1-8b")[1])
>>> by_key(rows)["params_total"].value
8030261248
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import sympy

from ..core.conventions import Phase
from ..core.errors import SymcostError
from ..core.memo import PerModel
from ..core.notation import sym
from ..core.terms import exact
from ..hardware.gpus import gpu as find_gpu
from ..model.parallel import Layout
from ..serving.memory import cache_bytes, cache_bytes_total
from ..serving.plan import NOTE as SERVE_NOTE
from ..serving.plan import ServeSetup, memory, plan
from ..training import train_memory
from ..training.framework import HEADROOM_GIB, budget_bytes
from ..training.setup import TrainSetup

PARAMS_CONVENTION = ("total: parameters the transformers class registers (tied head once); active: all "
                     "non-expert parameters + router + k routed + shared experts")
#: top-level parameter terms that are embeddings or the head (left out of the 12·L·d² comparison)
EMBEDDINGS = ("embed_tokens", "lm_head", "wte", "wpe")
#: the largest data-parallel size ``train_gpus`` tries (2^16 GPUs)
MAX_TRAIN_GPUS = 2**16


@dataclass(frozen=True)
class Inputs:
    """What the summary is computed at: the CLI's defaults unless said (``T_prefill``/``T_decode``
    as the sheet's, 4096; the GPU as ``memory --gpu``; the training setup as ``train``'s)."""

    T_prefill: int = 4096
    T_decode: int = 4096
    batch: int = 1
    kv_dtype: str = "bf16"
    weights_dtype: str | None = None  # None: the checkpoint's quantization_config
    gpu: str = "H100"
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    train_tp: int | None = None  # training's layout when it differs (None: the serving --tp/--pp/--dp/--ep;
    train_pp: int | None = None  # training's --ep is N_ep itself, serving's vLLM's group N_tp·N_ep)
    train_dp: int | None = None
    train_ep: int | None = None
    zero: int = 0
    recompute: str = "none"
    optimizer: str = "adamw"
    mla: str = "auto"


@dataclass
class Row:
    """One summary line. ``value`` is exact (an int for counts and bytes; a Fraction/float only for
    ratios); ``formula`` the SymPy expression it was substituted from (None for a search result);
    ``rule``/``ratio``: for a rule of thumb, the key of the exact row it approximates and exact / rule."""

    key: str
    label: str
    value: int | float | None
    unit: str
    formula: sympy.Expr | None
    convention: str
    rule_of: str | None = None
    ratio: float | None = None
    notes: list = field(default_factory=list)


def by_key(rows: list[Row]) -> dict[str, Row]:
    return {r.key: r for r in rows}


def _phase(kind: str, mla: str) -> Phase:
    return Phase(kind=kind, mla=mla)


def serve_setup(model, inp: Inputs) -> ServeSetup:
    """``memory``'s ``ServeSetup`` for these inputs (``cli.commands.serve._setup`` with its defaults)."""
    lay = Layout.vllm(model, tp=inp.tp, pp=inp.pp, dp=inp.dp, ep=inp.ep)
    return ServeSetup(layout=lay, gpu=find_gpu(inp.gpu) if inp.gpu else None, kv_dtype=inp.kv_dtype,
                      weights_dtype=inp.weights_dtype, mla=inp.mla)


def train_setup(inp: Inputs, **over) -> TrainSetup:
    """``train``'s ``TrainSetup`` for these inputs (seq = T_prefill, micro-batch = batch)."""
    opts = dict(seq=inp.T_prefill, micro_batch=inp.batch, **train_layout(inp), zero=inp.zero,
                recompute=inp.recompute, optimizer=inp.optimizer)
    return TrainSetup.of(**{**opts, **over})


def train_layout(inp: Inputs) -> dict:
    """Training's --dp/--tp/--pp/--ep: the ``train_*`` fields, else the serving ones."""
    return {k: getattr(inp, "train_" + k) or getattr(inp, k) for k in ("dp", "tp", "pp", "ep")}


def train_total_formula(tm) -> sympy.Expr:
    """The per-GPU training bytes as one expression (``train --json``'s ``formula.total``)."""
    return sum((tm.formula[k] for k in ("weights", "gradients", "optimizer", "activations") if k in tm.formula),
               sympy.Integer(0))


def train_gpus(model, inp: Inputs) -> tuple[int | None, list[str]]:
    """The fewest GPUs of ``inp.gpu`` that train the model: the smallest power of two N for which
    ``train --dp N --zero 3 --recompute full --seq T_prefill --micro-batch B`` fits (per-GPU bytes <=
    the card's usable memory less the headroom, ``train``'s ``fits``); None if none up to ``MAX_TRAIN_GPUS`` does."""
    return _TRAIN_GPUS.get(model, (inp.gpu, inp.T_prefill, inp.batch, inp.optimizer),
                           lambda: _train_gpus(model, inp))


#: train_gpus by (model, the inputs it reads): the sheet asks twice (its rows and the served rows)
_TRAIN_GPUS = PerModel(64)


def _train_gpus(model, inp: Inputs) -> tuple[int | None, list[str]]:
    g = find_gpu(inp.gpu)
    budget = budget_bytes(g, HEADROOM_GIB)
    n, states = 1, None
    while n <= MAX_TRAIN_GPUS:
        try:
            tm = train_memory(model, train_setup(inp, dp=n, tp=1, pp=1, ep=1, zero=3, recompute="full"),
                              formulas=False)
        except SymcostError:
            tm = None
        if tm is not None and tm.per_gpu <= budget:  # as ``train`` judges fits
            return n, []
        if tm is not None and states is None:
            # ZeRO-3 over N ranks holds at least states/N (weights, gradients and optimizer state, each
            # sharded N ways), so every N with states/N above the budget is skipped without costing it
            states = (tm.weights + tm.gradients + tm.optimizer) * n
            while n * 2 <= MAX_TRAIN_GPUS and states > budget * n * 2:
                n *= 2
        n *= 2
    return None, [f"no power of two up to {MAX_TRAIN_GPUS} GPUs fits"]


def served(model, raw: dict, inp: Inputs, formulas: bool = True) -> dict[str, Row]:
    """The rows ``serve_per_gpu`` and ``kv_capacity`` of ``summary(model, raw, inp)``, from the one
    ``plan`` call ``memory`` makes for them (the sheet asks for them again on the fewest GPUs that
    serve, where the rest of the summary, and ``memory``'s own search for that count, are not needed).
    ``formulas``: as ``summary``'s."""
    setup = serve_setup(model, inp)
    return by_key(_served(plan(model, raw, setup, T=inp.T_decode), setup, inp, formulas))


def _served(p, setup: ServeSetup, inp: Inputs, formulas: bool = True) -> list[Row]:
    """The per-GPU serving rows of plan ``p`` (``memory``'s ``per_gpu_bytes`` and KV capacity)."""
    f, B = p.formulas, inp.batch
    lay = f"TP{inp.tp}·PP{inp.pp}·DP{inp.dp}·EP{inp.ep}"
    return [Row("serve_per_gpu", f"serving memory per GPU, {lay}, T = {inp.T_decode:,}, B = {B}",
                p.per_gpu_bytes(B), "B", f.per_gpu() if formulas else None, SERVE_NOTE),
            Row("kv_capacity", f"KV capacity per GPU on {p.gpu.name} ({lay})", p.kv.tokens, "tokens",
                f.kv_tokens if formulas else None, f"{SERVE_NOTE}; budget = usable memory x {setup.mem_util}")]


def _layer_count(model) -> int:
    return sum(exact(g.count, model.values) for g in model.groups)


def summary(model, raw: dict, inp: Inputs = Inputs(), formulas: bool = True) -> list[Row]:
    """The summary rows of ``model`` (with its raw ``config.json``) at ``inp``; see the module docstring.
    ``formulas=False``: the values only, ``Row.formula`` None where building it costs more than the
    value (the training-memory term tree, the serving rows' KV-page formulas): the sheet prints the
    rows' figures and derives its formulas in its own sections."""
    vals, rows = model.values, []
    B = inp.batch
    # parameters (``params``)
    total_t, active_t = model.params(), model.active_params()
    total, active = total_t.total_at(vals), active_t.total_at(vals)
    rows.append(Row("params_total", "parameters, total", total, "params", total_t.total, PARAMS_CONVENTION))
    rows.append(Row("params_active", "parameters, active per token", active, "params", active_t.total,
                    PARAMS_CONVENTION))
    # FLOPs (``flops``)
    pre_ph, dec_ph = _phase("prefill", inp.mla), _phase("decode", inp.mla)
    pre_t, dec_t = model.flops(pre_ph), model.flops(dec_ph)
    pre = pre_t.total_at(model.values_with(T=inp.T_prefill, B=B))
    dec = dec_t.total_at(model.values_with(T=inp.T_decode, B=B))
    rows.append(Row("prefill_flops", f"prefill FLOPs, T = {inp.T_prefill:,}, B = {B}", pre, "FLOP", pre_t.total,
                    pre_ph.describe()))
    rows.append(Row("decode_flops", f"decode FLOPs per step, T = {inp.T_decode:,}, B = {B}", dec, "FLOP",
                    dec_t.total, dec_ph.describe()))
    # the cache (``cache``)
    c_terms = model.cache()
    c_vals = model.values_with(T=inp.T_decode, B=B)
    c_total, _ = cache_bytes_total(model, inp.kv_dtype, c_vals, c_terms)
    c_formula = cache_bytes(model, inp.kv_dtype, c_terms)
    in_T = sympy.expand(c_formula.xreplace(vals))
    per_token = sympy.diff(in_T, sym.T) if in_T.is_polynomial(sym.T) else None
    per_token_value = (int(per_token.xreplace({sym.B: B})) if per_token is not None
                       and not per_token.free_symbols - {sym.B} else None)
    cache_conv = (f"transformers' cache tensors (KV + recurrent/conv state), {inp.kv_dtype} KV elements; "
                  "state dtypes as the model keeps them")
    rows.append(Row("kv_per_token", f"cache bytes per token (B = {B})", per_token_value, "B",
                    per_token if per_token_value is not None else None,
                    cache_conv + ("" if per_token_value is not None else
                                  "; not linear in T (a window or fixed state): no single per-token figure")))
    rows.append(Row("kv_at_T", f"cache at T = {inp.T_decode:,}, B = {B}", c_total, "B", c_formula, cache_conv))
    # serving memory (``memory``)
    setup = serve_setup(model, inp)
    r = memory(model, raw, setup, T=inp.T_decode, batch=B)
    p = r.plan
    rows.append(Row("weights_stored", f"weights as stored ({r.quantization})", p.weights_total, "B",
                    setup.checkpoint(model, raw).served_terms().total,
                    "checkpoint bytes as the engine loads them: quantization_config (scales included) or "
                    "--weights-dtype; MTP / next-n modules not loaded"))
    rows += _served(p, setup, inp, formulas)
    rows.append(Row("serve_gpus", f"fewest {p.gpu.name} to serve B = {B} at T = {inp.T_decode:,}",
                    r.gpus_needed, "GPUs", None,
                    "smallest tensor-parallel size (a power of two up to 64, nothing else split) whose KV pages "
                    "hold the batch (memory's gpus_needed)"))
    # training memory (``train``)
    ts = train_setup(inp)
    tm = train_memory(model, ts, formulas=formulas)
    rec, tl = f"recompute {inp.recompute}", train_layout(inp)
    rows.append(Row("train_per_gpu", f"training memory per GPU, seq = {inp.T_prefill:,}, micro-batch = {B}, "
                    f"dp{tl['dp']}·tp{tl['tp']}·pp{tl['pp']}·ep{tl['ep']}, ZeRO-{inp.zero}", tm.per_gpu, "B",
                    train_total_formula(tm) if formulas else None,
                    f"bf16 weights and gradients, {inp.optimizer} state, ZeRO-{inp.zero}, {rec}, heaviest "
                    f"pipeline stage ({tm.stage}), 1F1B"))
    n_train, notes = train_gpus(model, inp)
    rows.append(Row("train_gpus", f"fewest {p.gpu.name} to train (FSDP, seq = {inp.T_prefill:,}, "
                    f"micro-batch = {B})", n_train, "GPUs", None,
                    "smallest power of two N with train --dp N --zero 3 --recompute full fitting the card's "
                    "memory", notes=notes))
    # rules of thumb beside the exact values
    tokens = B * inp.T_prefill
    exact_pt = Fraction(pre, tokens)
    rows.append(Row("rule_2n", "rule of thumb 2N FLOPs per token (N active)", 2 * active, "FLOP/token",
                    2 * active_t.total, "2 FLOPs per multiply-accumulate, one per active parameter; no attention",
                    rule_of="prefill_flops", ratio=float(exact_pt / (2 * active))))
    step_tokens = ts.batch.seq * (ts.batch.global_batch or ts.batch.micro_batch * tl["dp"])
    train_pt = Fraction(tm.flops_per_step, step_tokens)
    rows.append(Row("rule_6n", "rule of thumb 6N training FLOPs per token", 6 * active, "FLOP/token",
                    6 * active_t.total, "forward 2N + backward 4N; exact: train's flops_per_step (causal) "
                    "per token", rule_of="train_per_gpu", ratio=float(train_pt / (6 * active))))
    L, d = _layer_count(model), vals.get(sym.d)
    if d is not None:
        rule = 12 * L * int(d) ** 2
        body = total - sum(exact(v, vals) for k, v in total_t.depth(1).items() if k in EMBEDDINGS)
        rows.append(Row("rule_12ld2", f"rule of thumb 12·L·d² (L = {L}, d = {int(d)})", rule, "params",
                        12 * sympy.Integer(L) * sym.d ** 2,
                        "a GPT layer: 4·d² attention + 8·d² MLP (d_ff = 4d, MHA, no biases); exact: the "
                        "parameters without embedding and head", rule_of="params_total", ratio=body / rule))
    states = train_memory(model, train_setup(inp, dp=1, tp=1, pp=1, ep=1, zero=0), formulas=False)
    rows.append(Row("rule_16b", "rule of thumb 16 B per parameter (training states)", 16 * total, "B",
                    16 * total_t.total, "bf16 weights 2 + bf16 gradients 2 + AdamW fp32 master and moments 12; "
                    "exact: train's weights + gradients + optimizer on one GPU, ZeRO-0",
                    rule_of="train_per_gpu",
                    ratio=(states.weights + states.gradients + states.optimizer) / (16 * total)))
    return rows

