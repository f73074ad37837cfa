"""Deployment planner: every valid TP×EP×PP×DP layout on N GPUs, evaluated at once.

The serving formulas (``formulas``) are built once per model and compiled once into NumPy
functions of the layout symbols; all layouts are then evaluated as arrays (float64 — ``memory`` and
``roofline`` give the exact integers for one layout). A layout is valid when its sizes pass
``plan.check_layout`` (heads, KV heads, experts and layers divide). Expert parallelism is off
(N_ep = 1) or on with vLLM's rule N_ep = N_dp (the expert-parallel group spans a stage's TP and DP
ranks, N_tp·N_dp of them).
Per layout: fits (the KV pages hold --batch requests of T tokens on every rank), KV capacity in
tokens, max concurrency at T, TTFT of one prompt of T, TPOT at --batch, tokens/s per GPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.errors import SymcostError
from ..core.notation import sym
from .formulas import compile_exprs, compute_dtype, gpu_values, serve_formulas
from .plan import NOTE as SERVE_NOTE
from .plan import Layout, ServeSetup, check_layout, engine_stages, file_bytes
from .quant import checkpoint
from .roofline import NOTE as ROOF_NOTE
from .roofline import Latency

#: what ``deploy`` states with every answer
NOTE = (SERVE_NOTE + "; " + ROOF_NOTE + "; layouts evaluated in float64 from formulas compiled once (symcost "
        "memory/roofline give one layout exactly)")
#: the GPU counts tried when none is given: the smallest that fits is the answer
POWERS = (1, 2, 4, 8, 16, 32, 64)

SYMS = (sym.N_tp, sym.N_ep, sym.N_pp, sym.N_dp, sym.T, sym.B, sym.M, sym.M_gpu, sym.F_gpu, sym.BW_hbm, sym.BW_link,
        sym.x_ep)


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def layouts(model, gpus: int, max_tp: int = 64, pins: dict | None = None) -> list[Layout]:
    """Every valid layout of ``gpus`` GPUs whose sizes match ``pins`` (``tp``/``pp``/``dp``/``ep``: the
    value, or None for every value); each deployment once."""
    pins = pins or {}
    out, seen = [], set()
    has_experts = sym.E in model.values
    for tp in _divisors(gpus):
        if tp > max_tp or pins.get("tp") not in (None, tp):
            continue
        for pp in _divisors(gpus // tp):
            dp = gpus // (tp * pp)
            if pins.get("pp") not in (None, pp) or pins.get("dp") not in (None, dp):
                continue
            for ep in ((1, tp * dp) if has_experts and tp * dp > 1 else (1,)):
                if pins.get("ep") not in (None, ep):
                    continue
                lay = Layout.vllm(model, tp=tp, pp=pp, dp=dp, ep=ep)
                key = (lay.tp, lay.pp, lay.dp, lay.ep, lay.whole_experts)
                if key in seen:
                    continue
                try:
                    check_layout(model, lay)
                except SymcostError:
                    continue
                seen.add(key)
                out.append(lay)
    return out


def check_pins(model, pins: dict, gpus: list[int] | None) -> None:
    """Pins that cannot hold: exit-2 errors naming the options."""
    given = {k: v for k, v in pins.items() if v is not None}
    if given.get("ep", 1) > 1 and sym.E not in model.values:
        raise SymcostError(f"--ep {given['ep']}: the model has no routed experts")
    if "ep" in given and given["ep"] > 1 and "tp" in given and given["ep"] % given["tp"]:
        raise SymcostError(f"--ep {given['ep']} must be a multiple of --tp {given['tp']} (vLLM's expert-parallel "
                           f"group is tp x dp ranks)")
    if "ep" in given and given["ep"] > 1 and "tp" in given and "dp" in given and given["ep"] != given["tp"] * given["dp"]:
        raise SymcostError(f"--ep {given['ep']} with --tp {given['tp']} --dp {given['dp']}: vLLM's expert-parallel "
                           f"group is tp x dp = {given['tp'] * given['dp']} (or 1: off)")
    fixed = 1
    for k in ("tp", "pp", "dp"):
        fixed *= given.get(k, 1)
    for n in gpus or ():
        if n % fixed or (all(k in given for k in ("tp", "pp", "dp")) and fixed != n):
            pinned = " x ".join(f"--{k} {given[k]}" for k in ("tp", "pp", "dp") if k in given)
            raise SymcostError(f"{pinned} = {fixed} GPUs {'does not divide' if n % fixed else 'is not'} --gpus {n}")
    if all(k in given for k in ("tp", "pp", "dp")):  # one layout: its own constraint, not "nothing fits"
        check_layout(model, Layout.vllm(model, tp=given["tp"], pp=given["pp"], dp=given["dp"], ep=given.get("ep", 1)))


@dataclass
class Compiled:
    """The model's serving formulas compiled once into NumPy functions of SYMS."""

    fn: object  # SYMS -> {name: array}
    dtype: str
    peak_used: str
    ck: object = None  # the checkpoint (quant.Checkpoint)
    weights: object = None  # weights_per_gpu terms
    #: N_pp -> vLLM's stages at that pipeline size (``plan.engine_stages``: (the formula of the stage's
    #: kind, its count symbols, the stage's counts)); None: the ⌈count/p⌉ bound
    stages: object = None
    stage_blocks: dict = field(default_factory=dict)
    #: a kind of stage (its count symbols) -> its block count compiled in SYMS and the counts: kinds
    #: recur across stages and pipeline sizes, so each is compiled once
    stage_fns: dict = field(default_factory=dict)

    def blocks_at(self, pp: int):
        """The block count of the stages at ``pp`` and the weights of the stage that decides it, a
        function of the SYMS arrays (the fewest over the stages, ``ServeFormulas.num_blocks``' Min
        evaluated stage by stage, each stage its kind's function at its own layer counts; ties: the
        later stage, as ``plan.deciding_rank``); None: no stage costing there."""
        if pp not in self.stage_blocks:
            fns = []
            for sf, syms, counts in (self.stages(pp) if self.stages is not None else None) or ():
                if sf.num_blocks is None:  # a stage without cached layers does not bound the count
                    continue
                if syms not in self.stage_fns:
                    self.stage_fns[syms] = compile_exprs({"num_blocks": sf.num_blocks, "weights": sf.weights.total,
                                                          "weights_file": file_bytes(sf.weights)}, SYMS + syms)
                fns.append((self.stage_fns[syms], counts))
            self.stage_blocks[pp] = _fewest(fns) if fns else None
        return self.stage_blocks[pp]


#: what a pipeline layout takes from its deciding stage (``Compiled.blocks_at``)
STAGE_KEYS = ("num_blocks", "weights", "weights_file")


def _fewest(fns):
    """The elementwise fewest blocks over the stages (``get_kv_cache_configs``) and the deciding
    stage's weights: ``fns`` pairs of a kind's compiled function and the stage's layer counts."""
    np = numpy()

    def fn(*args):
        got = [f(*args, *counts) for f, counts in fns]
        each = {k: np.stack([np.broadcast_to(np.asarray(g[k], dtype=float), np.shape(args[0])) for g in got])
                for k in STAGE_KEYS}
        last = len(got) - 1 - np.argmin(each["num_blocks"][::-1], axis=0)  # the later stage of a tie
        return {k: np.take_along_axis(v, last[None], axis=0)[0] for k, v in each.items()}
    return fn


def compile_model(model, raw, *, kv_dtype="bf16", weights_dtype=None, experts_dtype=None, quant_fallback=False,
                  overhead_bytes=2**30, mla="auto", compute=None, gpu=None, formulas=None,
                  block_size=None) -> Compiled:
    """``formulas``: the engine's serving formulas (``plan.engine_formulas``, what ``memory`` evaluates);
    None: the plain ones with a flat ``overhead_bytes``."""
    ck = checkpoint(model, raw, weights_dtype, quant_fallback, experts_dtype)
    f = formulas or serve_formulas(model, ck, kv_dtype=kv_dtype, overhead_bytes=overhead_bytes, lazy=True,
                                   block_size=block_size)
    lat = Latency(model, ck, kv_dtype=kv_dtype, mla=mla, weights=f.weights)
    exprs = {"weights": f.weights.total, "weights_file": file_bytes(f.weights), "activation": f.activation, "fixed": f.fixed,
             "num_blocks": f.num_blocks, "groups": f.kv.groups, "block": f.kv.block, "need": f.kv.need,
             "decode_step": lat.decode.step_time, "prefill_step": lat.prefill.step_time}
    numpy()  # the compiled functions need it: a clear error instead of an ImportError
    fn = compile_exprs(exprs, SYMS)
    cdt = compute_dtype(ck, compute)
    return Compiled(fn, cdt, gpu.peak(cdt)[1] if gpu is not None else cdt, ck, f.weights)


def numpy():
    """NumPy, which vectorised layout searches need (a core dependency, imported only here: the
    commands that do not sweep never load it)."""
    try:
        import numpy  # lazy: only layout searches need it
    except ImportError:
        raise SymcostError("searching layouts evaluates them with NumPy, which is not installed: "
                           "pip install numpy (a dependency of symcost)") from None
    return numpy


@dataclass(frozen=True)
class Workload:
    """What ``deploy`` is asked to serve: ``concurrency`` requests in flight in all (None: ``batch`` per
    replica), of ``isl`` input and ``osl`` output tokens; the SLA limits in seconds (None: none)."""

    isl: int
    osl: int = 0
    batch: int = 1
    concurrency: int | None = None
    max_ttft: float | None = None
    max_tpot: float | None = None
    accept: float | None = None  # speculative decoding with the model's MTP draft at this acceptance rate
    rate: float | None = None  # requests/s in all, Poisson (open loop); None: closed loop

    @property
    def loaded(self) -> bool:
        """TTFT and TPOT under load (``workload``): an output length is given, so a request's cycle is known."""
        return self.osl >= 1

    @property
    def context(self) -> int:
        """Tokens the KV holds per request."""
        return self.isl + self.osl

    @property
    def decode_context(self) -> int:
        """The mean context of a decode step: ISL + OSL/2 (T itself when no OSL is given)."""
        return self.isl + self.osl // 2

    @property
    def solve(self) -> bool:
        """The batch per replica is solved for: an SLA on TPOT (or, under load, on TTFT) and neither a
        concurrency nor a rate given."""
        limited = self.max_tpot is not None or (self.loaded and self.max_ttft is not None)
        return limited and self.concurrency is None and self.rate is None


SORTS = {"throughput": lambda r: -r["tokens_per_s_per_gpu"], "ttft": lambda r: r["ttft_s"],
         "tpot": lambda r: r["tpot_s"], "gpus": lambda r: (r["gpus"], -r["tokens_per_s_per_gpu"])}


def _arrays(lays, np):
    return {"tp": np.array([l.tp for l in lays], dtype=float), "pp": np.array([l.pp for l in lays], dtype=float),
            "dp": np.array([l.dp for l in lays], dtype=float), "ep": np.array([l.ep for l in lays], dtype=float),
            "x": np.array([float(l.x_ep) for l in lays])}


def _latency_values(a, T, B, M):
    return {sym.N_tp: a["tp"], sym.N_pp: a["pp"], sym.N_dp: a["dp"], sym.N_ep: a["ep"], sym.x_ep: a["x"],
            sym.T: T, sym.B: B, sym.M: M}


def solve_batch(tpot, limit: float, hi, np):
    """The largest batch b in [1, hi] (per layout) with tpot(b) <= limit, by bisection on the vector
    ``tpot(b) -> seconds`` (TPOT does not decrease with the batch); 0 where even b = 1 misses."""
    lo = np.zeros_like(np.asarray(hi, dtype=float))
    top = np.maximum(np.floor(hi), 0) + 1  # invariant: lo meets the limit (or is 0), top misses (or is past hi)
    while True:
        open_ = top - lo > 1
        if not open_.any():
            return lo.astype(int)
        mid = np.where(open_, np.floor((lo + top) / 2), 1)
        good = tpot(np.maximum(mid, 1)) <= limit
        lo = np.where(open_ & good, mid, lo)
        top = np.where(open_ & ~good, mid, top)


def evaluate(comp: Compiled, lays: list[Layout], *, gpu, T: int, batch: int, max_batched_tokens=8192,
             mem_util=0.9, latency=None, work: Workload | None = None, ideal: bool = False) -> list[dict]:
    """Every layout of ``lays``: memory (fits, KV capacity), TTFT, TPOT and throughput for ``work``
    (default: ``batch`` per replica at context ``T``)."""
    if not lays:
        return []
    work = work or Workload(isl=T, batch=batch)
    gv, _ = gpu_values(gpu, comp.dtype, mem_util)
    np = numpy()
    a = _arrays(lays, np)
    tp, pp, dp, ee = a["tp"], a["pp"], a["dp"], a["ep"]
    ones = np.ones_like(tp)
    Tk = work.context
    mem = comp.fn(tp, ee, pp, dp, Tk * ones, ones, max_batched_tokens * ones, float(gv[sym.M_gpu]) * ones,
                  float(gv[sym.F_gpu]) * ones, float(gv[sym.BW_hbm]) * ones, float(gv[sym.BW_link]) * ones, a["x"])
    mem = {k: np.broadcast_to(np.asarray(v, dtype=float), tp.shape).copy() for k, v in mem.items()}
    for n in sorted({lay.pp for lay in lays} - {1}):  # PP layouts: the deciding stage's blocks, as ``memory``
        fn, at = comp.blocks_at(n), pp == n
        if fn is not None:
            got = fn(tp[at], ee[at], pp[at], dp[at], Tk * ones[at], ones[at], max_batched_tokens * ones[at],
                     float(gv[sym.M_gpu]) * ones[at], float(gv[sym.F_gpu]) * ones[at],
                     float(gv[sym.BW_hbm]) * ones[at], float(gv[sym.BW_link]) * ones[at], a["x"][at])
            for k in STAGE_KEYS:  # the deciding stage's, as ``memory`` reports
                mem[k][at] = got[k]
    blocks = np.maximum(mem["num_blocks"], 0)
    conc = blocks / np.maximum(mem["need"], 1)  # requests of ISL + OSL one replica's KV holds
    tokens = np.floor(blocks / mem["groups"]) * mem["block"]
    M = float(max_batched_tokens)
    ttft1 = latency.evaluate_arrays("prefill", _latency_values(a, float(work.isl), ones, M), ideal=ideal)["total"] * pp

    def step(phase, T, b):
        t = latency.evaluate_arrays(phase, _latency_values(a, float(T), np.asarray(b, dtype=float) * ones, M),
                                    ideal=ideal)
        return t["total"] * pp, t.get("kernels/attention", 0.0 * ones) * pp

    def decode_of(b):
        step_b = step("decode", work.decode_context, b)[0]
        if work.accept is None:
            return step_b
        from .roofline import _layers, draft_modules, spec_tpot
        n = draft_modules(latency.model)
        verify = step("decode", max(1, work.decode_context // (1 + n)), b * (1 + n))[0]
        return spec_tpot(verify, step_b, _layers(latency.model), n, work.accept)

    def latencies(b):
        """(TTFT, TPOT) of b requests per replica: under load (closed loop) when an OSL is given, else one
        prompt's prefill and one decode step of b."""
        b = np.maximum(b, 1)
        if not work.loaded:
            return ttft1, decode_of(b)
        from .workload import closed_loop
        got = closed_loop(step, B=b, isl=work.isl, osl=work.osl, M=int(M), engine=latency.setup.scheduler)
        return got["ttft"], decode_of(b) + (got["tpot"] - got["decode_step"])

    stable = np.ones_like(tp, dtype=bool)
    if work.rate is not None:
        from .workload import open_loop
        got = open_loop(step, rate=work.rate / dp, isl=work.isl, osl=work.osl, M=int(M), cap=np.floor(conc))
        ttft, tpot, stable = got["ttft"], got["tpot"], got["stable"]
        b = np.ceil(got["batch"])
        if work.accept is not None:  # the draft changes the decode step; the prefill's share (1 - rho) stays
            rho = np.where(stable, got["utilisation"], 0.0)
            tpot = np.where(stable, decode_of(np.maximum(b, 1)) / (1 - rho), np.inf)
    else:
        if work.solve:
            def miss(bb):
                f, p_ = latencies(bb)
                r = 0.0 * f
                if work.max_tpot is not None:
                    r = np.maximum(r, p_ / work.max_tpot)
                if work.max_ttft is not None and work.loaded:
                    r = np.maximum(r, f / work.max_ttft)
                return r
            b = solve_batch(miss, 1.0, np.floor(conc), np).astype(float)
        elif work.concurrency is not None:
            b = np.ceil(work.concurrency / dp)
        else:
            b = float(work.batch) * ones
        ttft, tpot = latencies(b)
    if work.rate is not None:  # the weights and one request fit; keeping up with the rate is the workload's test
        fits = conc >= 1
        served = np.where(stable, np.maximum(b, 1) * dp, 0.0)
    else:
        fits = conc >= np.maximum(b, 1)
        served = np.minimum(b * dp, work.concurrency) if work.concurrency is not None else b * dp
    meets = fits & (b >= 1) & stable
    if work.max_ttft is not None:
        meets &= ttft <= work.max_ttft
    if work.max_tpot is not None:
        meets &= tpot <= work.max_tpot
    if work.rate is not None:  # every arrival served: output tokens/s = rate x OSL
        tps = np.where(meets, work.rate * work.osl, 0.0)
    elif work.loaded:  # Little's law: served requests / time each spends in the system, OSL tokens each
        tps = np.where(meets, served * work.osl / (ttft + max(work.osl - 1, 0) * tpot), 0.0)
    else:
        tps = np.where(meets, served / tpot, 0.0)
    rows = []
    for i, lay in enumerate(lays):
        gpus_i = lay.tp * lay.pp * lay.dp
        rows.append({"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "ep": lay.ep_group, "gpus": lay.gpus,
                     "fits": bool(fits[i]), "meets_sla": bool(meets[i]), "kv_capacity_tokens": int(tokens[i]),
                     "max_concurrency": float(conc[i]), "batch_per_replica": int(b[i]),
                     "concurrency_served": int(served[i]), "ttft_s": float(ttft[i]), "tpot_s": float(tpot[i]),
                     "tokens_per_s": float(tps[i]), "tokens_per_s_per_gpu": float(tps[i] / gpus_i),
                     "weights_per_gpu_bytes": int(np.ceil(mem["weights_file"][i])),
                     "weights_loaded_bytes": int(np.ceil(mem["weights"][i]))})
    return rows


def rank(rows: list[dict], sort: str = "throughput") -> list[dict]:
    """Layouts meeting the SLA (and fitting) first, by ``sort``; then the rest by how close they come."""
    return sorted(rows, key=lambda r: (not r["meets_sla"], not r["fits"], SORTS[sort](r), r["ttft_s"], r["gpus"]))


def _closest(rows: list[dict], work: Workload) -> dict | None:
    """The fitting layout nearest the SLA: the smallest worst ratio of TTFT and TPOT to their limits."""
    fit = [r for r in rows if r["max_concurrency"] >= 1]

    def miss(r):
        return max(r["ttft_s"] / work.max_ttft if work.max_ttft else 0, r["tpot_s"] / work.max_tpot if work.max_tpot else 0)
    return min(fit, key=miss) if fit else None


def fewest_gpus(comp, model, latency, setup, work, *, chunk: int = 8192, limit: int = 1024) -> int | None:
    """The fewest GPUs of ``setup.gpu`` (powers of two up to ``limit``) with a layout whose KV holds one
    request of the workload's context."""
    n = 1
    while n <= limit:
        got = evaluate(comp, layouts(model, n), gpu=setup.gpu, T=work.context, batch=1,
                       max_batched_tokens=chunk, mem_util=setup.mem_util, latency=latency,
                       work=Workload(isl=work.isl, osl=work.osl, batch=1))
        if any(r["fits"] for r in got):
            return n
        n *= 2
    return None


def deploy(model, raw, setup: ServeSetup, *, gpus: list[int] | None, T: int, batch: int,
           work: Workload | None = None, pins: dict | None = None, sort: str = "throughput", ideal: bool = False,
           disagg: bool = False) -> dict:
    """Every valid layout on each GPU count of ``gpus`` for ``setup`` (its GPU, dtypes and engine
    settings; the layouts are swept, ``setup.layout`` is not used) matching ``pins``; ``gpus`` None: the
    smallest power of two (up to 64) with a layout that fits. The formulas are built and compiled once,
    whatever the counts. ``work``: the workload and SLA (default: ``batch`` per replica at context ``T``)."""
    from .roofline import CalibratedLatency  # the calibrated step (same package)
    work = work or Workload(isl=T, batch=batch)
    pins = pins or {}
    check_pins(model, pins, gpus)
    smallest = gpus is None
    # float GiB, as deploy has always summed them; plan sums their decimal texts exactly (the two can
    # differ by a byte when the float sum falls just under a whole byte)
    # the engine's formulas, as ``memory`` evaluates them (weights as loaded, profiled peak, non-torch)
    formulas, chunk, stages = engine_stages(model, raw, setup, T=work.context, lazy=True)
    comp = compile_model(model, raw, gpu=setup.gpu, kv_dtype=setup.kv_dtype, weights_dtype=setup.weights_dtype,
                         experts_dtype=setup.experts_dtype, quant_fallback=setup.quant_fallback,
                         mla=setup.mla, formulas=formulas, block_size=setup.block_size)
    lat = CalibratedLatency(model, comp.ck, setup, kv_dtype=setup.kv_dtype, mla=setup.mla, weights=comp.weights)
    comp.stages = stages
    rows = []
    kw = dict(gpu=setup.gpu, T=work.context, batch=work.batch, max_batched_tokens=chunk, mem_util=setup.mem_util,
              latency=lat, work=work, ideal=ideal)
    if smallest:
        for n in POWERS:
            rows = evaluate(comp, layouts(model, n, pins=pins), **kw)
            if any(r["fits"] for r in rows):
                break
    else:  # every count's layouts as one set of arrays: one bisection for all of them
        rows = evaluate(comp, [lay for n in gpus for lay in layouts(model, n, pins=pins)], **kw)
    rows = rank(rows, sort)
    out = {"layouts": rows, "compute_dtype": comp.dtype, "peak_dtype_used": comp.peak_used,
           "kernel_dtypes": {k: {"op_class": v[0], "dtype": v[1], "peak_dtype": v[2], "runs": v[3]}
                             for k, v in lat.dtypes.items()},
           "fits_any": any(r["fits"] for r in rows), "meets_sla_any": any(r["meets_sla"] for r in rows),
           "fewest_gpus": None, "closest": None}
    if work.loaded and work.rate is None:  # the closed loop's schedule (``workload.closed_loop``)
        out["schedule"] = setup.scheduler
    if rows and not out["fits_any"]:
        out["fewest_gpus"] = fewest_gpus(comp, model, lat, setup, work, chunk=chunk)
    if out["fits_any"] and not out["meets_sla_any"] and (work.max_ttft or work.max_tpot):
        out["closest"] = _closest(rows, work)
    if disagg:
        from ..hardware.links import Links
        out["disagg"] = disaggregate(model, rows, work, kv_dtype=setup.kv_dtype, links=Links.of(setup.gpu))
    return out


# -- disaggregated serving (xPyD) ---------------------------------------------------------------
@dataclass(frozen=True)
class DisaggPlan:
    """x prefill instances of one layout, y decode instances of another, and what they serve.

    rate_p = x · dp_p / TTFT_p(one prompt)        prompts per second the prefill pool finishes
    rate_d = y · b · dp_d / (OSL · TPOT_d(b))      requests per second the decode pool finishes
    served = min(rate_p, rate_d)                   every request prefilled once, decoded once (conserved)
    TTFT   = TTFT_p + KV(ISL) / (β · min(g_p, g_d)) the prompt's KV moved once, each GPU over its own link
    """

    prefill: dict
    decode: dict
    x: int
    y: int
    kv_bytes_per_request: int
    kv_transfer_s: float
    rate_prefill: float  # requests/s
    rate_decode: float
    served: float
    ttft_s: float
    tpot_s: float
    gpus: int
    tokens_per_s_per_gpu: float
    link: str


def kv_bytes(model, kv_dtype: str, T: int) -> int:
    """KV (and state) bytes of one request of T tokens, every layer (what a prefill pool hands over)."""
    import sympy

    from .memory import cache_bytes
    return int(sympy.ceiling(cache_bytes(model, kv_dtype).xreplace({**model.values, sym.T: sympy.Integer(T),
                                                                   sym.B: sympy.Integer(1)})))


def disaggregate(model, rows: list[dict], work: Workload, *, kv_dtype: str, links, max_pool: int = 8,
                 candidates: int = 12) -> DisaggPlan | None:
    """The best xPyD plan from evaluated aggregated ``rows`` (their TTFT is a prefill pool's, their TPOT at
    the solved batch a decode pool's): pools up to ``max_pool`` instances each, ranked by output tokens/s
    per GPU; only layouts that fit (and, in decode, meet the TPOT limit) and a TTFT within the limit."""
    if work.osl <= 0:
        raise SymcostError("--disagg needs --osl (the decode pool's work per request)")
    nbytes = kv_bytes(model, kv_dtype, work.isl)
    fit = [r for r in rows if r["fits"]]
    pre = sorted(fit, key=lambda r: r["ttft_s"] * r["gpus"] / r["dp"])[:candidates]
    dec = [r for r in fit if r["batch_per_replica"] >= 1 and (work.max_tpot is None or r["tpot_s"] <= work.max_tpot)]
    dec = sorted(dec, key=lambda r: -r["batch_per_replica"] * r["dp"] / r["tpot_s"] / r["gpus"])[:candidates]
    best = None
    for p in pre:
        rp = p["dp"] / p["ttft_s"]
        for d in dec:
            rd = d["batch_per_replica"] * d["dp"] / (work.osl * d["tpot_s"])
            for x in range(1, max_pool + 1):
                for y in range(1, max_pool + 1):
                    g = x * p["gpus"] + y * d["gpus"]
                    inside = g <= links.gpus_per_node
                    beta = links.nvlink_bytes_s if inside else links.ib_bytes_s
                    move = nbytes / (beta * min(p["gpus"], d["gpus"]))
                    ttft = p["ttft_s"] + move
                    if work.max_ttft is not None and ttft > work.max_ttft:
                        continue
                    served = min(x * rp, y * rd)
                    tps = served * work.osl / g
                    if best is None or tps > best.tokens_per_s_per_gpu:
                        best = DisaggPlan(p, d, x, y, nbytes, move, x * rp, y * rd, served, ttft, d["tpot_s"], g, tps,
                                          "NVLink" if inside else "scale-out")
    return best
