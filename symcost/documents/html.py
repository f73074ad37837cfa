"""One self-contained HTML page per model: the summary, the derivation per component with its
formulas typeset, and inputs a reader moves (T, batch, KV and weight dtypes, card, TP/PP/DP/EP);
every number is recomputed in the page from the exported formulas.

How the page is made, and why:

* **Numbers**: every figure is a SymPy formula with the config's values substituted, exported by
  ``analysis.export.js_function`` (the functions ``export --to js`` prints) over the exact runtime
  ``analysis/exact.js`` (rationals over BigInt). The page script (``static/page.js``, fixed, from
  symcost's package data) only calls those functions with the inputs; it parses no formula text and
  never calls ``eval``. The discrete inputs pick among formulas computed here by the library (a KV
  dtype, a weights dtype, a pipeline size change the formula, not just a symbol's value); the
  layout rules (``Layout.vllm`` / ``TrainSetup.check``) are applied here for every offered
  combination, and the page shows their message for a combination they refuse.
* **Serving** is ``memory``'s engine accounting (``serving.plan.engine_formulas``: weights as loaded,
  the profiled peak, the modelled non-torch memory, the engine's step size M, the KV pages with the
  hybrid page unification) for every card: the catalogue's cards fall into a few engine classes
  (``_engine_classes``: the same M, sampler size, NVLink communicators, MXFP4 kernel), each part is
  computed once where it depends (``_EngineParts``), and the serving formulas (bytes per GPU, KV left,
  KV capacity, requests held) are written once over *slots* that the page fills, as data, with the
  parts of the chosen weights dtype × KV dtype × card class. Where the weights and the engine's memory
  exceed the card, the page says "does not fit" and why, never a capacity of 0. The fewest GPUs to
  serve is ``gpus_needed``'s search over TP, run in the page over the same formulas.
* **Training** is ``train``'s per-GPU bytes as one formula per pipeline size
  (``train_per_gpu_formula``: states, in-flight activations, the gathered unit, max(loss peak, a
  layer's backward working set incl. the EP dispatch buffers)); the fewest GPUs to train is the sheet's
  search over N = 1, 2, 4, … (``summary.train_gpus``: ZeRO-3, full recompute), run in the page over
  the FSDP setup's formula; the 6N ratio is ``train``'s FLOPs per token.
* **Size**: a sub-formula several formulas use is written once (``_Functions.shared``, by its code),
  a formula equal to another is an alias, a section total equal to a formula-view formula is cloned
  in the page, the layout tables are arrays: every bundled model's page is under 300 KB.
* **Formulas**: MathML Core from SymPy's presentation printer, which Chromium (109+), Firefox and
  Safari render natively: no fonts or typesetter to vendor, and the page stays small. Input symbols carry ``data-sym``; the page's formula view clones the math and
  puts the current values in their place (the substituted form).
* **Safety**: jinja2 autoescape for every config-derived string; the data block is JSON with ``<``,
  ``>`` and ``&`` escaped; a Content-Security-Policy meta tag allows only the page's own two scripts
  and one stylesheet (by SHA-256) and nothing from the network (``default-src 'none'``).
"""
from __future__ import annotations

import base64
import hashlib
import json
import math
from dataclasses import replace
from fractions import Fraction
from functools import partial
from importlib import resources
from pathlib import Path

import jinja2
import sympy
from markupsafe import Markup
from sympy.printing.mathml import MathMLPresentationPrinter

from ..analysis.export import js_function, js_runtime
from ..core.conventions import Phase
from ..core import unevaluated
from ..core.errors import SymcostError
from ..core.notation import sym
from ..core.terms import Terms
from ..core.units import dtype_bytes
from ..hardware.gpus import CATALOGUE
from ..model.parallel import Layout
from ..serving.formulas import KVFormula, ServeFormulas
from ..serving.memory import cache_bytes_terms
from ..serving.plan import ServeSetup, engine_formulas
from ..serving.profile import Engine, version_tuple
from ..serving.quant import checkpoint, default_moe_backend
from ..training.flops import train_flops
from ..training.mtp import with_mtp
from ..training.framework import HEADROOM_GIB, budget_bytes
from ..training.setup import ACT_BYTES, TrainSetup
from .summary import MAX_TRAIN_GPUS, Inputs, summary, train_setup

#: the choices the page offers (every one computed here; the URL fragment may name only these)
KV_DTYPES = ("bf16", "fp8", "fp32")
WEIGHT_DTYPES = ("ckpt", "bf16", "fp8", "int4")
TPS, PPS, DPS, EPS = (1, 2, 4, 8, 16), (1, 2, 4, 8), (1, 2, 4, 8, 16), (1, 2, 4, 8, 16, 32, 64)
SERVE_TPS = (1, 2, 4, 8, 16, 32, 64)  # memory's gpus_needed tries these
#: the parts of one serving combination (weights dtype, KV dtype, card class) the serving formulas take
SERVE_SLOTS = ("weights", "activations", "overhead", "weights_exact", "activations_exact", "overhead_exact",
               "block", "block_bytes", "groups", "need")
#: symbols the page's inputs bind (everything else is the config's value, substituted here)
INPUTS = (sym.T, sym.B, sym.N_tp, sym.N_pp, sym.N_dp, sym.N_ep, sym.x_ep, sym.M_gpu)
PLOTS = {"prefill_flops": "prefill FLOPs", "decode_flops": "decode FLOPs per step", "kv_at_T": "cache bytes",
         "serve_per_gpu": "serving bytes per GPU"}
SIZE_LIMIT = 300 * 1024
#: ``memory``'s defaults (the engine's step size, profiled peak and non-torch memory for the card)
SERVE = ServeSetup()



# -- MathML --------------------------------------------------------------------------------------------
class _Printer(MathMLPresentationPrinter):
    """SymPy's presentation MathML; an input symbol's element carries ``data-sym`` (its name)."""

    def _print_Symbol(self, s, style="plain"):
        el = super()._print_Symbol(s, style)
        if s in INPUTS:
            el.setAttribute("data-sym", s.name)
        return el


def mathml(expr, display: bool = False) -> str:
    """``expr`` as one ``<math>`` element (MathML Core)."""
    p = _Printer({"order": "none", "mul_symbol": None})
    body = p._print(sympy.sympify(expr)).toxml()
    block = ' display="block"' if display else ""
    return f'<math xmlns="http://www.w3.org/1998/Math/MathML"{block}>{body}</math>'


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def _json_for_html(obj) -> str:
    """JSON safe inside a <script type="application/json"> element (no '</script>', no markup)."""
    return (json.dumps(obj, separators=(",", ":"), ensure_ascii=True)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


# -- the formulas the page evaluates --------------------------------------------------------------------
class _Functions:
    """The page's formulas by key: each a JS function (``js_function``) of the inputs by name."""

    def __init__(self, values: dict):
        self.values = values
        self.code: dict[str, str] = {}
        self.refs: dict = {}
        self.by_code: dict[str, str] = {}
        self.alias: dict[str, str] = {}
        self.shared_keys: list[str] = []
        self._dummies: dict[str, sympy.Dummy] = {}

    def ref(self, key: str):
        """A stand-in (a ``Dummy``) for formula ``key`` inside another formula: the page evaluates
        ``key`` once per call instead of repeating its text in every formula that uses it."""
        d = self._dummies.get(key)
        if d is None:
            d = self._dummies[key] = sympy.Dummy(key.replace("|", "_").replace("=", "_").replace("/", "_"))
            self.refs[d] = key
        return d

    def _code(self, key: str, expr, whole: bool, extra: dict | None) -> str:
        vals = {**self.values, **extra} if extra else self.values
        e = unevaluated.xreplace(expr, vals)  # SymPy's automatic simplification of floor/Max is slow; JS is exact anyway
        left = e.free_symbols - set(INPUTS) - set(self.refs)
        if left:
            raise SymcostError(f"html: formula {key} keeps {', '.join(sorted(s.name for s in left))}")
        return js_function(e, whole=whole, refs=self.refs)

    def add(self, key: str, expr, whole: bool = True, extra: dict | None = None) -> str:
        """Formula ``key``; one whose code another key already has becomes an alias of it (written once)."""
        code = self._code(key, expr, whole, extra)
        if code in self.by_code:
            self.alias[key] = self.by_code[code]
        else:
            self.code[key] = code
            self.by_code[code] = key
        return key

    def shared(self, expr, extra: dict | None = None, whole: bool = False):
        """A sub-formula used by several page formulas, written once (by its code) under a short key;
        returns its stand-in (``ref``)."""
        code = self._code("shared", expr, whole, extra)
        key = self.by_code.get(code)
        if key is None:
            key = f"s{len(self.shared_keys)}"
            self.shared_keys.append(key)
            self.code[key] = code
            self.by_code[code] = key
        return self.ref(key)

    def script(self) -> str:
        body = ",\n".join(f"{json.dumps(k)}: {v}" for k, v in self.code.items())
        return (js_runtime() + "\n// another formula of this page at the same inputs\n"
                "// (a slot, @name, is the formula the inputs' $slots name for it: data, never code)\n"
                "function $ref(k, $in) { const f = k[0] === \"@\" ? $in.$slots[k.slice(1)] : k; return $arg(k, F[f]($in)); }\n"
                "const F = {\n" + body + "\n};\n"
                "// formulas equal to another one's (the same code): one function under both keys\n"
                "const $A = " + json.dumps(self.alias, separators=(",", ":")) + ";\n"
                "for (const k in $A) F[k] = F[$A[k]];\n")


def _engine_classes(model, raw: dict) -> tuple[list, dict]:
    """The catalogue's cards grouped by what the engine's accounting takes from a card besides its
    budget (``profile.Engine.limits``: the step's tokens M and the sampler's sequences S;
    ``profile.non_torch_terms``: NVLink communicators; ``quant.default_moe_backend``: the MXFP4 kernel,
    for MXFP4 checkpoints): [(a card of the class, its key)], {card name: class index}."""
    engine = Engine()
    mxfp4 = checkpoint(model, raw, None, False, None).scheme.method == "mxfp4"
    classes, index, of_card = [], {}, {}
    for g in CATALOGUE.values():
        key = (engine.limits(g, 1), g.nvlink_domain > 1,
               default_moe_backend(g, version_tuple(engine.version)) if mxfp4 else None)
        if key not in index:
            index[key] = len(classes)
            classes.append((g, key))
        of_card[g.name] = index[key]
    return classes, of_card


class _EngineParts:
    """``engine_formulas`` of (card class, weights dtype, KV dtype), each part computed once where it
    depends: the weights on the dtype and the class's MXFP4 kernel (expert padding), the profiled peak on
    the class and the weights dtype (an FP8 checkpoint's input-quantisation scratch is in the forward:
    it decides the peak once Model Runner V2's smaller sampler no longer does), the non-torch memory and
    M on the class, the KV pages on the KV dtype (``plan._engine_formulas`` composes them so;
    tests/test_html_page.py checks the composition against ``engine_formulas`` itself)."""

    def __init__(self, model, raw, classes, weights, T):
        self.model, self.raw, self.classes, self.w0, self.T = model, raw, classes, weights[0], T
        self.memo = {}

    def _ef(self, ei: int, w: str, kv: str):
        k = (ei, w, kv)
        if k not in self.memo:
            setup = ServeSetup(gpu=self.classes[ei][0], kv_dtype=kv, weights_dtype=None if w == "ckpt" else w)
            self.memo[k] = engine_formulas(self.model, self.raw, setup, T=self.T, lazy=True, sweep=True)
        return self.memo[k]

    def __call__(self, ei: int, w: str, kv: str):
        backend = self.classes[ei][1][2]
        first = next(i for i, c in enumerate(self.classes) if c[1][2] == backend)  # the first of its kernel
        engine, m_tok = self._ef(ei, w, KV_DTYPES[0])
        weights = self._ef(first, w, KV_DTYPES[0])[0].weights
        kv_pages = self._ef(0, self.w0, kv)[0].kv
        return ServeFormulas(weights, engine.activation, engine.overhead, kv_pages), m_tok


def train_per_gpu_formula(model, setup: TrainSetup, share=None) -> sympy.Expr:
    """``train``'s per-GPU bytes (``training.memory.train_memory``) as one formula in T, B, N_tp, N_dp and
    N_ep, for the page's setups (one model chunk per stage, the engine's activations, no recomputation or
    full recomputation of every layer, ZeRO as ``setup`` says):

        max over stages s of  ⌈W_s⌉ + ⌈G_s⌉ + ⌈O_s⌉ + F8_s + ⌈gathered_s⌉ + min(m, N_pp − s)·A_s
                              + ⌈pipeline_buffers_s⌉ + max(⌈working_s⌉, ⌈loss_peak⌉ on the last stage)

    W, G, O, A: ``training.memory.formula`` of stage s (the MTP modules on the last, ``training.mtp``);
    F8: the FP8 weight copies (``training.fp8``); gathered: ``gathered_formula``; working_s: the
    largest backward working set of a layer of the stage — under full recomputation its recomputed saved
    set (``activations.per_layer``) — its gradient buffers (``backward_buffers``) and, with N_ep > 1, its
    MoE dispatch buffers (``dispatch_buffers``, counted through
    min(1, N_ep − 1)); loss_peak: ``activations.loss_peak``; pipeline_buffers: ``training.pipeline_buffers``
    (torchtitan under PP). ``train_memory`` sums the same numbers; the
    browser test and tests/test_html_page.py compare the two. ``share``: called on each stage's working-set
    term (the page writes a sub-formula used by several pipeline sizes once)."""
    share = share or (lambda e: e)
    from ..components.moe import MoE
    from ..training.activations import backward_buffers, dispatch_buffers, loss_peak, per_layer
    from ..training.framework import framework
    from ..training.memory import formula as stage_formula
    from ..training.memory import all_gather_pool_formula, gathered_formula, model_states
    from ..training.plan import rank_stages
    from ..training.schedule import in_flight
    rc = setup.recompute
    if setup.virtual != 1 or rc.modules is not None or not (rc.mode == "none" or rc.per_layer) \
            or setup.activations != "engine":
        raise SymcostError("html: the page's training formula covers one chunk per stage, no recomputation "
                           "or full recomputation of every layer")
    from ..training.fp8 import weight_copies
    model = with_mtp(model, setup.mtp)  # the MTP modules trained, as train_memory counts them
    setup.check(model)
    plan, bw = setup.plan, setup.backward
    pp, m = plan.pp, setup.micro_batches
    sp, cp = plan.sp, sympy.Integer(plan.cp)
    ep_on = sympy.Min(1, sym.N_ep - 1)
    extra = {}
    for g in model.groups:
        e = backward_buffers(g.components, sp=sp, cp=cp)
        for c in g.components:
            if isinstance(c, MoE):
                e += ep_on * dispatch_buffers(c, setup.capacity, sp=sp, cp=cp)
        extra[g.name] = e.xreplace(model.values)
    if rc.mode == "full":  # a layer's backward reruns its forward: its saved set is alive again
        for name, t in per_layer(model, bw, setup.capacity, sp=sp, cp=cp).items():
            extra[name] = extra.get(name, sympy.Integer(0)) + t.total.xreplace(model.values)
    order = model.layers()
    fw = framework(setup.states.framework)
    lt = loss_peak(model, bw, chunks=setup.loss_chunks, logits_held=fw.holds_logits(pp), cp=cp,
                   kind=setup.loss_kind)
    from ..training import pipeline_buffers as pipe
    x_pipe = pipe.boundary(sp, cp=cp).xreplace(model.values) if pipe.applies(fw.name, pp, setup.schedule) else 0
    loss = _ceil(lt.total.xreplace(model.values)) if lt else sympy.Integer(0)
    ranks = rank_stages(model, pp, 1, plan)
    states = model_states(model, setup)
    per_stage = []
    for r in range(pp):
        f = stage_formula(model, setup, {"stage": r, "in_flight_chunks": [in_flight(pp, r, m)],
                                         "fp8_weights": weight_copies(model, setup, states[r]["layers"])})
        units = [order[i] for i in states[r]["chunks"][0]["layer_ids"]]
        works = list(dict.fromkeys(sum((extra[g.name] for g in u), sympy.Integer(0)) for u in units))
        work = _ceil(sympy.Max(*works, evaluate=False)) if works else sympy.Integer(0)
        gathered = gathered_formula(model, setup, r, ranks[r])
        pool = all_gather_pool_formula(model, setup, r)
        top = sympy.Max(work, loss, evaluate=False) if r == pp - 1 and loss != 0 else work
        top, acts = share(top), f["activations"]
        bufs = ([_ceil(unevaluated.build(sympy.Mul, pipe.count(pp, r, m, [in_flight(pp, r, m)]), x_pipe))]
                if x_pipe else [])
        per_stage.append(sympy.Add(*(_ceil(f[k]) for k in ("weights", "gradients", "optimizer", "fp8_weights")),
                                   _ceil(gathered), *([_ceil(pool)] if pool != 0 else []), acts, *bufs, top,
                                   evaluate=False))
    return per_stage[0] if pp == 1 else sympy.Max(*per_stage, evaluate=False)


def _variant(**kw) -> str:
    return "|".join(f"{k}={v}" for k, v in kw.items())


def _ceil(e):
    return sympy.ceiling(e, evaluate=False)


def serve_max_batch_expr(f) -> sympy.Expr:
    """``Plan.max_batch``: whole requests of T tokens the KV blocks hold (num_blocks // blocks per request)."""
    return sympy.floor(unevaluated.build(sympy.Mul, f.num_blocks, unevaluated.build(sympy.Pow, _ceil(f.kv.need), -1)),
                       evaluate=False)


def _positions(raw: dict, model) -> int:
    P = model.values.get(sym.P)
    if P is not None:
        return int(P)
    for cfg in (raw, raw.get("text_config") or {}):
        v = cfg.get("max_position_embeddings")
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return 2**21


def pp_serve_refusal(pp: int) -> str:
    """Why the page states no serving figure at ``pp`` > 1 stages: ``memory`` costs vLLM's stages one by one
    (``serving.plan.stage_formulas``: each stage's own weights, peak and pages, the fewest blocks decide),
    which the page's slot formulas, one stage in N_pp, do not split."""
    return (f"PP {pp}: vLLM sizes the KV cache on the pipeline stage with the fewest blocks, each stage costed "
            f"by its own layers (symcost memory --pp {pp}); this page's formulas do not split the stages")


def _layout_tables(model) -> tuple[list, list, list]:
    """Every offered (tp, pp, dp, ep), in the order of ``TPS`` × ``PPS`` × ``DPS`` × ``EPS`` (the page indexes
    them so): serving's N_* (``Layout.vllm`` + ``check``) or the index of its refusal (every PP > 1:
    ``pp_serve_refusal``); training's 0 (its sizes as given, ``TrainSetup.check``) or 1 + the index of its
    refusal; and the refusals."""
    serve, train, msgs = [], [], {}
    for tp in TPS:
        for pp in PPS:
            for dp in DPS:
                for ep in EPS:
                    try:
                        lay = Layout.vllm(model, tp=tp, pp=pp, dp=dp, ep=ep)
                        lay.check(model)
                        if pp > 1:
                            raise SymcostError(pp_serve_refusal(pp))
                        v = lay.values()
                        serve.append([int(v[s]) for s in (sym.N_tp, sym.N_pp, sym.N_dp, sym.N_ep)]
                                     + [lay.x_ep])  # the experts' placement
                    except SymcostError as e:
                        serve.append(msgs.setdefault(str(e), len(msgs)))
                    try:
                        TrainSetup.of(seq=4096, micro_batch=1, dp=dp, tp=tp, pp=pp, ep=ep).check(model)
                        train.append(0)
                    except SymcostError as e:
                        train.append(1 + msgs.setdefault(str(e), len(msgs)))
    return serve, train, list(msgs)


def page_context(model, raw: dict, inp: Inputs | None = None) -> dict:
    """Everything the template prints and the page's data and functions (``inp``: the initial inputs;
    the engine settings the page does not offer keep ``memory``'s and ``train``'s defaults)."""
    inp = inp or Inputs()
    T_max = _positions(raw, model)
    if inp.T_decode > T_max or inp.T_prefill > T_max:  # the page's T never passes the model's positions
        inp = replace(inp, T_prefill=min(inp.T_prefill, T_max), T_decode=min(inp.T_decode, T_max))
    T0 = inp.T_decode
    vals = dict(model.values)
    vals.update({sym.N_cp: sympy.Integer(1),
                 sym.b_a: sympy.Integer(ACT_BYTES["bf16"])})
    fns = _Functions(vals)
    rows = summary(model, raw, inp)
    # parameters and FLOPs
    params, active = model.params(), model.active_params()
    pre_ph, dec_ph = Phase(kind="prefill", mla=inp.mla), Phase(kind="decode", mla=inp.mla)
    pre, dec = model.flops(pre_ph), model.flops(dec_ph)
    fns.add("params_total", params.total)
    fns.add("params_active", active.total)
    fns.add("prefill_flops", pre.total)
    fns.add("decode_flops", dec.total)
    # the cache, per KV dtype
    cache = model.cache()
    for kv in KV_DTYPES:
        ct = cache_bytes_terms(model, kv, cache)
        fns.add(_variant(k="kv_at_T", kv=kv), ct.total)
        in_T = sympy.expand(ct.total.xreplace(model.values))
        per = sympy.diff(in_T, sym.T) if in_T.is_polynomial(sym.T) else None
        if per is not None and not per.free_symbols - {sym.B}:
            fns.add(_variant(k="kv_per_token", kv=kv), per)
    # serving, as ``memory`` accounts for it (``serving.plan.engine_formulas``: weights as loaded, the engine's
    # profiled peak, its non-torch memory, the KV pages), per weights dtype × KV dtype × engine class of the
    # card (the cards that give the engine the same step size M, sampler size S, NVLink communicators and
    # MXFP4 kernel share their formulas); every part a shared sub-formula, written once however many
    # combinations use it
    classes, card_class = _engine_classes(model, raw)
    ckpts = {}
    for w in WEIGHT_DTYPES:
        try:
            ckpts[w] = checkpoint(model, raw, None if w == "ckpt" else w, False, None)
        except SymcostError:
            continue
        fns.add(_variant(k="weights_stored", w=w), _ceil(ckpts[w].served_terms().total))
    # The page's serving formulas are written once, over slots (``@name``: the part of the chosen weights
    # dtype, KV dtype and card class, which the page names in ``$in.$slots`` from ``serve_slots``, data):
    # ``plan`` takes the blocks from the exact parts, the bytes per GPU (and whether anything is left for the
    # KV cache) from the whole bytes of each part
    slot = {n: fns.ref("@" + n) for n in SERVE_SLOTS}
    kv_slots = KVFormula(slot["block"], slot["block_bytes"], slot["groups"], slot["need"])
    exact_f = ServeFormulas(Terms({"weights": slot["weights_exact"]}), slot["activations_exact"],
                            slot["overhead_exact"], kv_slots)
    whole_f = ServeFormulas(Terms({"weights": slot["weights"]}), slot["activations"], slot["overhead"], kv_slots)
    with sympy.evaluate(False):  # the same expressions, without SymPy's ordering proofs
        kv_cache = sym.B * _ceil(slot["need"]) * _ceil(slot["block_bytes"])
        fns.add("serve/kv_cache", kv_cache)
        fns.add("serve_per_gpu", sympy.Add(slot["weights"], slot["activations"], slot["overhead"], kv_cache,
                                           evaluate=False))
        fns.add("kv_available", whole_f.kv_available)
        fns.add("kv_capacity", exact_f.kv_tokens)
        fns.add("serve_max_batch", serve_max_batch_expr(exact_f))
    serve_slots = {}
    parts_of = _EngineParts(model, raw, classes, list(ckpts), T0)
    for ei in range(len(classes)):
        for w in ckpts:
            for kv in KV_DTYPES:
                f, m_tok = parts_of(ei, w, kv)
                sh = partial(fns.shared, extra={sym.M: sympy.Integer(m_tok)})
                got = {"block": sh(f.kv.block), "block_bytes": sh(f.kv.block_bytes), "groups": sh(f.kv.groups),
                       "need": sh(f.kv.need), "weights_exact": sh(f.weights.total),
                       "activations_exact": sh(f.activation), "overhead_exact": sh(f.overhead)}
                for n in ("weights", "activations", "overhead"):
                    got[n] = sh(_ceil(got[n + "_exact"]), whole=True)
                serve_slots[_variant(w=w, kv=kv, e=ei)] = [fns.refs[got[n]] for n in SERVE_SLOTS]
    # training, per pipeline size (the stage composition); seq = T, micro-batch = B; the layout's sizes are
    # inputs (N_tp, N_dp, N_ep), the working set (gathered unit, loss peak, backward and EP dispatch
    # buffers) inside the formula
    train_pps = []
    for pp in PPS:
        try:
            ts = train_setup(replace(inp, T_prefill=T0), dp=1, tp=1, pp=pp, ep=1)
            fns.add(f"train_per_gpu|pp={pp}", train_per_gpu_formula(model, ts, share=fns.shared))
        except SymcostError:
            continue
        train_pps.append(pp)
    # the fewest GPUs to train (``summary.train_gpus``): the smallest power of two N whose FSDP setup (ZeRO-3,
    # full recomputation, dp = N) fits the card's training budget; the page searches N over the same
    # formula (the sizes TrainSetup.check accepts listed here)
    fsdp_ns = []
    try:
        fsdp = train_setup(replace(inp, T_prefill=T0), dp=1, tp=1, pp=1, ep=1, zero=3, recompute="full")
        fns.add("train_fsdp_per_gpu", train_per_gpu_formula(model, fsdp))
        n = 1
        while n <= MAX_TRAIN_GPUS:
            try:
                train_setup(replace(inp, T_prefill=T0), dp=n, tp=1, pp=1, ep=1, zero=3, recompute="full").check(model)
                fsdp_ns.append(n)
            except SymcostError:
                pass
            n *= 2
    except SymcostError:
        pass
    # the 6N rule's exact figure (``train``'s flops_per_step, its MTP modules trained as train's default)
    fns.add("train_flops", train_flops(with_mtp(model)).total)
    # the derivation per component (depth 2), each term live
    sections = []
    for title, key, terms in (("Parameters", "params", params), (f"Prefill FLOPs ({pre_ph.describe()})", "prefill",
                                                                  pre),
                              (f"Decode FLOPs ({dec_ph.describe()})", "decode", dec)):
        comps = []
        for path, e in terms.prune().depth(2).items():
            comps.append({"key": path, "fn": fns.add(f"{key}/{path}", e), "math": mathml(e)})
        sections.append({"title": title, "key": key, "components": comps, "total_math": mathml(terms.total, display=True)})
    if cache.prune():
        comps = []
        for path, e in cache_bytes_terms(model, "bf16", cache).prune().depth(2).items():
            for kv in KV_DTYPES:
                sub = cache_bytes_terms(model, kv, cache).prune().depth(2)[path]
                fns.add(_variant(k=f"cache/{path}", kv=kv), sub)
            comps.append({"key": path, "fn": f"cache/{path}", "math": mathml(e)})
        sections.append({"title": "Cache bytes at T", "key": "cache", "components": comps,
                         "total_math": mathml(cache_bytes_terms(model, "bf16", cache).total, display=True)})
    # the summary rows: how each is recomputed
    live = {"params_total": ("params_total", []), "params_active": ("params_active", []),
            "prefill_flops": ("prefill_flops", []), "decode_flops": ("decode_flops", []),
            "kv_per_token": ("kv_per_token", ["kv"]), "kv_at_T": ("kv_at_T", ["kv"]),
            "weights_stored": ("weights_stored", ["w"]), "serve_per_gpu": ("serve_per_gpu", ["w", "kv"]),
            "kv_capacity": ("kv_capacity", ["w", "kv"]), "serve_gpus": ("serve_gpus", ["w", "kv"]),
            "train_per_gpu": ("train_per_gpu", ["pp"]), "train_gpus": ("train_gpus", []),
            "rule_2n": ("rule_2n", []), "rule_6n": ("rule_6n", []), "rule_12ld2": ("rule_12ld2", []),
            "rule_16b": ("rule_16b", [])}
    # the formula view shows one variant's formula (the generation's inputs); the page says when the inputs
    # chose another (its value is then the chosen variant's, its formula not shown substituted)
    e0 = card_class[inp.gpu]
    w0 = inp.weights_dtype or "ckpt"
    m0 = Engine().limits(next(g for g in CATALOGUE.values() if g.name == inp.gpu), T0)[0]
    serve_variant = {"w": w0, "kv": inp.kv_dtype, "e": e0}
    variants = {"serve_per_gpu": serve_variant, "kv_capacity": serve_variant, "train_per_gpu": {"pp": inp.pp}}
    variant_words = {"serve_per_gpu": f"{inp.gpu} (and the cards its engine accounting treats alike), weights "
                                      f"{'checkpoint' if w0 == 'ckpt' else w0}, KV {inp.kv_dtype}",
                     "train_per_gpu": f"PP = {inp.pp}"}
    variant_words["kv_capacity"] = variant_words["serve_per_gpu"]
    page_formula = {}
    if inp.pp in train_pps:  # the page's own training formula (the working set included), not train's summary
        page_formula["train_per_gpu"] = train_per_gpu_formula(
            model, train_setup(replace(inp, T_prefill=T0), dp=1, tp=1, pp=inp.pp, ep=1))
    out_rows = []
    for r in rows:
        fn, vary = live.get(r.key, (None, []))
        symbolic = page_formula.get(r.key, r.formula)
        shown = symbolic is not None and r.key in FORMULA_VIEW
        out_rows.append({
            "key": r.key,
            "label": PAGE_LABELS.get(r.key, r.label),
            "unit": r.unit,
            "convention": (r.convention.replace(f"{inp.kv_dtype} KV elements", "KV elements in the KV dtype chosen")
                           if r.key in ("kv_per_token", "kv_at_T") else
                           TRAIN_CONVENTION if r.key == "train_per_gpu" else r.convention),
            "value": None if r.value is None else (str(r.value) if isinstance(r.value, int) else f"{r.value:.4g}"),
            "ratio": None if r.ratio is None else f"{r.ratio:.4f}", "rule_of": r.rule_of,
            "fn": fn, "vary": vary, "notes": r.notes,
            "plugged": mathml(sympy.sympify(symbolic).xreplace({**vals, sym.M: m0}), display=True) if shown else "",
            "variant": variants.get(r.key), "variant_words": variant_words.get(r.key),
        })
        # the serving and training formulas are built in the config's values (per-stage counts, the rank's
        # shares): the formula and its substituted form differ only by the engine's M, b_a and N_cp, so the
        # page shows the substituted one alone
        out_rows[-1]["math"] = (out_rows[-1]["plugged"] if r.key in IN_VALUES else
                                mathml(symbolic, display=True) if shown else "")
    # a section's total that is a formula-view row's formula is written once: the page clones it (``data-same``)
    by_math = {r["math"]: r["key"] for r in out_rows if r["math"]}
    for sec in sections:
        sec["same"] = by_math.get(sec["total_math"])
        if sec["same"]:
            sec["total_math"] = ""
    serve_tbl, train_tbl, refusals = _layout_tables(model)
    serve_tps = []
    for tp in SERVE_TPS:
        try:
            Layout(tp=tp).check(model)
            serve_tps.append(tp)
        except SymcostError:
            pass
    # M_gpu as ``plan`` computes it: usable memory × mem_util (0.9)
    # training's budget as ``train`` judges fits: usable memory less the headroom
    cards = {g.name: {"budget": str(int(g.usable_bytes * Fraction(str(SERVE.mem_util)))), "e": card_class[g.name],
                      "train": str(int(budget_bytes(g, HEADROOM_GIB)))}
             for g in CATALOGUE.values()}
    defaults = {"T": T0, "B": inp.batch, "kv": inp.kv_dtype if inp.kv_dtype in KV_DTYPES else "bf16",
                "w": inp.weights_dtype or "ckpt", "gpu": inp.gpu, "tp": inp.tp, "pp": inp.pp, "dp": inp.dp,
                "ep": inp.ep, "plot": "prefill_flops", "row": "serve_per_gpu"}
    data = {"model": model.name, "defaults": defaults, "T_max": T_max,
            "choices": {"kv": list(KV_DTYPES), "w": [w for w in WEIGHT_DTYPES if w in ckpts],
                        "gpu": list(cards), "tp": list(TPS), "pp": list(PPS), "dp": list(DPS), "ep": list(EPS),
                        "plot": list(PLOTS)},
            "cards": cards, "serve_layouts": serve_tbl, "train_layouts": train_tbl,
            "refusals": refusals, "serve_tps": serve_tps, "serve_slot_names": list(SERVE_SLOTS),
            "serve_slots": serve_slots,
            "train_pps": train_pps, "fsdp_ns": fsdp_ns,
            "rows": [{k: r[k] for k in ("key", "unit", "fn", "vary", "rule_of")} for r in out_rows],
            "sections": [{"key": s["key"], "components": [c["key"] for c in s["components"]]} for s in sections],
            "plots": PLOTS,
            "kv_bytes": {kv: int(dtype_bytes(kv)) for kv in KV_DTYPES}}
    return {"name": model.name, "model_type": model.model_type, "rows": out_rows, "sections": sections,
            "data": data, "functions": fns.script(), "plots": PLOTS, "choices": data["choices"],
            "defaults": defaults, "T_max": data["T_max"], "notes": list(model.notes)}


#: the page's row labels: the inputs move, so a label names them instead of the generation's values
PAGE_LABELS = {"prefill_flops": "prefill FLOPs (T new tokens × B)",
               "decode_flops": "decode FLOPs of one step (context T, B)",
               "kv_per_token": "cache bytes per token (× B)", "kv_at_T": "cache at T (B sequences)",
               "weights_stored": "weights as stored", "serve_per_gpu": "serving memory per GPU (B requests of T)",
               "kv_capacity": "KV capacity per GPU (tokens)", "serve_gpus": "fewest GPUs of the card to serve (TP)",
               "train_per_gpu": "training memory per GPU (seq T, micro-batch B)",
               "train_gpus": "fewest GPUs of the card to train (FSDP: ZeRO-3, full recompute, seq T, micro-batch B)",
}
#: the page's training row, whose pipeline size and layout move (``train_per_gpu_formula``)
TRAIN_CONVENTION = ("train's accounting: bf16 weights and gradients, AdamW state, ZeRO-0, no recomputation, 1F1B; "
                    "the heaviest pipeline stage's states + min(m, N_pp − s) micro-batches of activations + "
                    "max(loss peak on the last stage, a layer's backward working set: its gradient buffers and, "
                    "with EP > 1, its MoE dispatch buffers)")
#: rows whose formula is already in the config's values (shown once, substituted)
IN_VALUES = ("serve_per_gpu", "kv_capacity", "train_per_gpu")
#: summary rows whose formula the formula view shows (the others have none, or are rules)
FORMULA_VIEW = ("params_total", "params_active", "prefill_flops", "decode_flops", "kv_at_T", "serve_per_gpu",
                "kv_capacity", "train_per_gpu")


def _static(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("symcost.documents", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    env.filters["commas"] = lambda n: f"{int(n):,}"
    env.filters["log2"] = math.log2
    return env


def render_html(model, raw: dict, inp: Inputs | None = None) -> str:
    """The page as one string (see the module docstring)."""
    ctx = page_context(model, raw, inp)
    functions, script, style = ctx.pop("functions"), _static("page.js"), _static("page.css")
    csp = (f"default-src 'none'; script-src {_sha256(functions)} {_sha256(script)}; style-src {_sha256(style)}; "
           "img-src 'none'; base-uri 'none'; form-action 'none'")
    return environment().get_template("html.j2").render(
        **ctx, csp=csp, style=Markup(style), functions=Markup(functions), script=Markup(script),
        data_json=Markup(_json_for_html(ctx["data"])), math=Markup)


def write_html(model, raw: dict, path, inp: Inputs | None = None) -> tuple[int, str]:
    """Write the page; (bytes written, message)."""
    text = render_html(model, raw, inp)
    data = text.encode("utf-8")
    Path(path).write_bytes(data)
    return len(data), f"wrote {path} ({len(data):,} bytes)"

