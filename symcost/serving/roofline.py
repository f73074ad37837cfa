"""One step of a layout on its roofline (``symcost roofline``), and the latencies a server sees.

TTFT and TPOT, written once here and used by ``roofline``, ``deploy`` and the ``ttft``/``tpot``
metrics (``symcost.analysis.metrics``)::

    TTFT = N_pp · step(prefill of one prompt of T tokens, B = 1)
    TPOT = N_pp · step(decode of B sequences at context T)

a step (``formulas.roofline_formulas``: max(FLOPs/F_gpu, bytes/BW_hbm) + communication on one rank)
crossing the N_pp pipeline stages in turn, nothing overlapped.

``roofline`` evaluates one step exactly for a ``plan.ServeSetup``: the GPU's peak and bandwidth scaled
by the efficiencies given, the step of the phase asked, TTFT and TPOT, and the decode batch from which
the step turns compute-bound (a bisection).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, partial

import sympy

from ..core.conventions import Phase
from ..core.errors import SymcostError
from ..core.notation import sym
from ..core.powers import RatioPow
from ..core.primitives import Linear
from ..core.terms import Terms, exact
from ..hardware.calibration import efficiency
from ..hardware.links import Links, ep_link_formula
from ..model.parallel import text_tp_blocks
from .formulas import (
    ACT_BYTES,
    Roofline,
    _moe_info,
    _paths,
    compile_exprs,
    embedding_unread,
    gpu_values,
    roofline_formulas,
    split_routed,
    step_max,
    weights_per_gpu,
)
from .formulas import compute_dtype as pick_compute_dtype
from .plan import Plan, ServeSetup, plan

#: the accounting ``roofline`` states with every answer
NOTE = ("per rank of the layout: FLOPs of the step split over t*p ranks (matmuls, causal attention, "
        "logits of the last token); bytes = the rank's checkpoint weights (routed experts as far as the "
        "batch touches them, uniform routing; of an untied input embedding only its rows; once per chunk of "
        "--max-batched-tokens in prefill) + KV "
        "read/written; time = sum over kernel classes (dense GEMM, grouped MoE GEMM, attention, elementwise) "
        "of max(FLOPs/(peak*eta_c), bytes/(HBM*eta_m)) + kernels*floor, + TP all-reduce, EP all-to-all "
        "(only with EP, each rank its own rows) and PP sends at alpha + volume/(link*eta), the link NVLink "
        "inside the NVLink domain, scale-out across it (the EP all-to-all's off-domain share over scale-out, "
        "the rest over NVLink at once); eta, floors, alpha measured per GPU and kernel class "
        "(symcost.hardware.kernels; --ideal: 1 and 0); no overlap; a step crosses the p stages in turn")

#: the largest decode batch the compute-bound bisection tries
MAX_BATCH = 1 << 16


class Latency:
    """TTFT and TPOT of a model's checkpoint on any layout (see the module docstring): the prefill and
    decode rooflines, each built when first asked for."""

    #: each latency: the phase whose step it times, and the batch it is taken at (None: B as given)
    STEPS = {"ttft": ("prefill", 1), "tpot": ("decode", None)}

    def __init__(self, model, ck, *, kv_dtype: str = "bf16", mla: str = "auto", weights=None):
        self._args = (model, ck)
        self._kw = {"kv_dtype": kv_dtype, "mla": mla, "weights": weights}

    @cached_property
    def prefill(self) -> Roofline:
        return roofline_formulas(*self._args, "prefill", **self._kw)

    @cached_property
    def decode(self) -> Roofline:
        return roofline_formulas(*self._args, "decode", **self._kw)

    def step(self, name: str) -> Roofline:
        """The step ``ttft`` or ``tpot`` times."""
        return self.prefill if self.STEPS[name][0] == "prefill" else self.decode

    @classmethod
    def at(cls, name: str, values: dict) -> dict:
        """``values`` with B as the latency takes it (one prompt for TTFT)."""
        batch = cls.STEPS[name][1]
        return values if batch is None else {**values, sym.B: sympy.Integer(batch)}

    @staticmethod
    def pipelined(step, stages):
        """A step crossing ``stages`` pipeline stages in turn: floats, NumPy arrays or expressions."""
        return step * stages

    def parts(self, name: str) -> dict:
        """``name`` as two formulas in the notation (N_pp a symbol): compute or memory, communication."""
        rf = self.step(name)
        one = self.at(name, {})
        return {"compute_or_memory": self.pipelined(step_max(rf.compute_time, rf.memory_time), sym.N_pp).xreplace(one),
                "communication": self.pipelined(rf.comm_time, sym.N_pp).xreplace(one)}

    def seconds(self, name: str, values: dict) -> float:
        """``name`` in seconds at ``values`` (T, B, the layout's N_*, the GPU's peak and bandwidths)."""
        step = float(self.step(name).step_time.xreplace(self.at(name, values)))
        return self.pipelined(step, int(values[sym.N_pp]))


@dataclass(frozen=True)
class Step:
    """``roofline``'s answer: one ``phase`` step of ``batch`` sequences at ``T`` on one rank."""

    plan: Plan
    phase: str
    T: int
    batch: int
    roofline: Roofline  # the phase's formulas
    values: dict  # every symbol's value but T and B: the layout, M, the GPU scaled by the efficiencies
    flops: int
    bytes: int
    compute_time: float
    memory_time: float
    comm_time: float
    ttft: float
    tpot: float
    compute_bound_batch: int | None
    compute_dtype: str
    peak_dtype_used: str
    weight_bytes: int
    calibrated: "Evaluated | None" = None  # the latency model's step (calibrated, or ideal)
    ideal: bool = False
    load: dict | None = None  # TTFT / TPOT under a closed- or open-loop workload (``under_load``), if asked

    @property
    def bound(self) -> str:
        return "compute" if self.compute_time >= self.memory_time else "memory"

    @property
    def time(self) -> float:
        """The step crossing the pipeline: the latency model's step · N_pp (calibrated unless ideal)."""
        if self.calibrated is not None:
            return Latency.pipelined(self.calibrated.seconds, self.plan.layout.pp)
        return Latency.pipelined(max(self.compute_time, self.memory_time) + self.comm_time,
                                 self.plan.layout.pp)

    @property
    def peak_flops(self):
        return self.values[sym.F_gpu]

    @property
    def bandwidth(self):
        return self.values[sym.BW_hbm]

    def formula(self) -> dict[str, str]:
        """The formulas as text, B and the experts' placement substituted (x_ep and the expert group's
        N_ep): the touched-expert fraction 1 − (1 − k/E)^(rows of the group) then has a numeric exponent.
        When that power written out exactly would pass Python's 4,300-digit limit (a batch of millions),
        B and the placement stay symbols instead."""
        rf = self.roofline
        parts = (("flops", rf.flops), ("bytes", rf.bytes), ("time_s", rf.step_time * sym.N_pp),
                 ("total", rf.step_time * sym.N_pp))
        lay = self.plan.layout
        sub = {sym.B: sympy.Integer(self.batch), sym.x_ep: sympy.Integer(lay.x_ep),
               sym.N_ep: sympy.Integer(lay.ep)}
        try:
            return {k: str(sympy.sympify(v).xreplace(sub)) for k, v in parts}
        except ValueError:  # int-to-text conversion limit
            return {k: str(v) for k, v in parts}


def scaled_gpu_values(gpu, dtype: str, mem_util: float, compute_eff: float, bw_eff: float) -> tuple[dict, str]:
    """The GPU's symbols (``formulas.gpu_values``), the dense peak and the HBM bandwidth scaled by the
    fractions reached (exact: the decimal text of each efficiency); (values, peak dtype used)."""
    gvals, used = gpu_values(gpu, dtype, mem_util)
    gvals[sym.F_gpu] = gvals[sym.F_gpu] * sympy.Rational(str(compute_eff))
    gvals[sym.BW_hbm] = gvals[sym.BW_hbm] * sympy.Rational(str(bw_eff))
    return gvals, used


def compute_bound_batch(rf: Roofline, values: dict, T: int, hi: int = MAX_BATCH) -> int | None:
    """The smallest decode batch whose step is compute-bound (compute time >= memory time), by
    bisection up to ``hi``; None when even ``hi`` is memory-bound."""
    def compute_bound(b):
        v = {**values, sym.T: sympy.Integer(T), sym.B: sympy.Integer(b)}
        return float(rf.compute_time.xreplace(v)) >= float(rf.memory_time.xreplace(v))
    if not compute_bound(hi):
        return None
    lo = 1
    while lo < hi:
        mid = (lo + hi) // 2
        if compute_bound(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _evaluate(rf: Roofline, values: dict) -> dict:
    return {key: sympy.sympify(getattr(rf, key)).xreplace(values)
            for key in ("flops", "bytes", "compute_time", "memory_time", "comm_time")}


def roofline(model, raw: dict, setup: ServeSetup, *, phase: str, T: int, batch: int,
             compute_dtype: str | None = None, compute_eff: float = 1.0, bw_eff: float = 1.0, ideal: bool = False,
             osl: int | None = None, concurrency: int | None = None, rate: float | None = None) -> Step:
    """One ``phase`` step of ``batch`` sequences at ``T`` on ``setup`` (a GPU is needed).

    Under a workload (``osl`` with ``concurrency`` requests in flight in all, or Poisson arrivals at ``rate``
    requests/s in all, prompts of T tokens): ``load`` also holds ``CalibratedLatency.under_load``'s TTFT and
    TPOT (``symcost.serving.workload``'s closed loop under ``setup.scheduler``'s schedule, or its open loop,
    over the layout's N_dp replicas, the engine's M)
    and the batch per replica it keeps in flight; the step itself stays the one of ``batch``.

    The FLOPs, bytes and the ideal split (``compute_time``, ``memory_time``, ``comm_time``) are the pure
    roofline of ``formulas.roofline_formulas`` at the fractions of the peak (``compute_eff``) and of the
    HBM bandwidth (``bw_eff``) given; ``time``, TTFT and TPOT come from the calibrated kernel model
    (``step_formula`` at ``calibration_values``), or with ``ideal`` from the same model at η = 1 and no
    floors (the pure bound, comm terms corrected: no all-to-all without EP, own rows under TP·EP)."""
    p = plan(model, raw, setup, T=T)
    ck = setup.checkpoint(model, raw)
    lay = setup.layout
    M = int(p.values[sym.M])  # the engine's step size (setup.max_batched_tokens, or its default for the GPU)
    cal = CalibratedLatency(model, ck, setup, kv_dtype=setup.kv_dtype, mla=setup.mla, compute_dtype=compute_dtype)
    load = None
    if concurrency is not None or rate is not None:
        got = cal.under_load(lay, isl=T, osl=osl, max_batched_tokens=M, concurrency=concurrency, rate=rate, ideal=ideal,
                             engine=setup.scheduler)
        stable = bool(got.get("stable", True))
        load = {"mode": "open loop" if rate is not None else "closed loop", "isl": T, "osl": osl,
                "schedule": setup.scheduler if rate is None else None,
                "concurrency": concurrency, "request_rate": rate, "max_batched_tokens": M,
                "batch_per_replica": got["batch"], "stable": stable,
                "ttft_s": float(got["ttft"]) if stable else None, "tpot_s": float(got["tpot"]) if stable else None}
        if rate is not None:
            load["utilisation"] = float(got["utilisation"])
    cdt = pick_compute_dtype(ck, compute_dtype)
    gvals, used = scaled_gpu_values(setup.gpu, cdt, setup.mem_util, compute_eff, bw_eff)
    base = {**p.values, **gvals, sym.x_ep: sympy.Integer(lay.x_ep)}
    lat = Latency(model, ck, kv_dtype=setup.kv_dtype, mla=setup.mla)
    rf = lat.prefill if phase == "prefill" else lat.decode
    at = {**base, sym.T: sympy.Integer(T), sym.B: sympy.Integer(batch)}
    r = _evaluate(rf, at)
    weight_bytes = int(sympy.ceiling(rf.parts["weights_read"].xreplace({**base, sym.T: T, sym.B: batch})))
    ttft = cal.seconds("ttft", lay, T=T, batch=batch, max_batched_tokens=M, ideal=ideal)
    tpot = cal.seconds("tpot", lay, T=T, batch=batch, max_batched_tokens=M, ideal=ideal)
    step = cal.evaluate(phase, lay, T=T, batch=batch, max_batched_tokens=M, ideal=ideal)
    return Step(p, phase, T, batch, rf, base, int(sympy.ceiling(r["flops"])), int(sympy.ceiling(r["bytes"])),
                float(r["compute_time"]), float(r["memory_time"]), float(r["comm_time"]),
                ttft, tpot, compute_bound_batch(lat.decode, base, T), cdt,
                used, weight_bytes, step, ideal, load)


# -- the calibrated latency model --------------------------------------------------------------
CALIBRATED_DOC = """A step on one rank of one stage, kernel class by kernel class (``step_formula``)::

    step = Σ_c [max(F_c / (P_c · η_c,c), Q_c / (BW_hbm · η_m,c)) + n_c · t_0,c]
         + n_ar · (α_ar·[t>1] + 2(t−1)/t · S / (β_tp · η_ar))                      TP all-reduce
         + n_aa · x_ep · (α_aa + (R/t) · k · d · 2 · (e−1)/e / (β_ep · η_aa))     EP dispatch + combine
         + n_aa · (1 − x_ep)·[N_ep>1] · (α_ar + (N_ep−1)·S / (β_ep · η_ar))     DP gather + scatter
         + [p>1] · (α_ar + S / (β_pp · η_ar))                                        PP send

classes c: ``gemm`` (every non-routed linear and the LM head, at the checkpoint's dense dtype),
``gemm_base`` (the layers' dense linears a quantised checkpoint keeps at its base dtype beside quantised
ones -- its ignore list: routers, attention or shared experts of an NVFP4 export -- at that dtype's rows;
``base_dtype_linears``),
``grouped_gemm`` (the routed experts, at the experts' dtype: the touched experts' bytes, a rank's experts
touched by the rows of its expert group, 1 − (1 − k/E)^(N_ep·R)), ``attention``
(score/value FLOPs and the KV read and written; scans and convolutions of recurrent mixers too),
``elementwise`` (norms, activation, rotary: 2 bytes read + written per element of R·d, bandwidth-
bound). F_c, Q_c: the class's FLOPs and bytes on the rank (FLOPs split over t·p as in
``formulas.roofline_formulas``; bytes = the rank's own weights); n_c the kernels it launches (q/k/v
and gate/up fused, as vLLM does; one fused-MoE kernel per MoE layer; one attention kernel per cached
mixer; norms + 2 elementwise kernels per layer). All GEMMs of one step have the same token rows R, so
their intensity is the same and summing F and Q inside a class before the max is the per-kernel max
summed (up to the few kernels whose shape differs). S = R·d·2 bytes per all-reduce; R = B in decode,
min(B·T, M) per chunk in prefill (kernels and collectives once per chunk). β: the NVLink bandwidth
BW_link when the group fits in one NVLink domain of D_nv GPUs, else the scale-out BW_net; the expert
all-to-all across domains sends its off-domain share f = (e − D_nv)/(e − 1) over BW_net and the rest over
BW_link at once, β = 1/max(f/BW_net, (1 − f)/BW_link) (``hardware.links.ep_link_formula``). x_ep = 1
only with expert parallelism: without it the experts are sliced over TP and their output is part of
the TP all-reduce, no all-to-all; with attention data parallel but no EP they are sliced over the
N_tp·N_ep ranks of the N_ep = N_dp replicas (vLLM's MoE TP flattened over DP, ``parallel.Layout``), each
MoE layer all-gathering the replicas' hidden states and reduce-scattering its output. Under TP·EP each
rank dispatches only its own R/t rows.

η, t_0 and α are symbols; ``calibration_values`` takes them from the measured rows of
``symcost.hardware.calibration`` for the GPU, the class, the compute dtype and the regime (M, rows per
expert, message bytes); ``ideal_values`` puts η = 1 and every floor and α = 0: the pure bound.
"""


CLASS_SYMBOLS = {  # class: (peak, η_c, η_m, floor)
    "gemm": (sym.F_gpu, sym.eta_cg, sym.eta_mg, sym.t_g),
    "gemm_base": (sym.F_gb, sym.eta_cgb, sym.eta_mgb, sym.t_gb),
    "grouped_gemm": (sym.F_moe, sym.eta_cx, sym.eta_mx, sym.t_x),
    "attention": (sym.F_attn, sym.eta_ca, sym.eta_ma, sym.t_a),
    "elementwise": (None, None, sym.eta_me, sym.t_e),
}
#: linears one fused kernel computes (vLLM's QKVParallelLinear, MergedColumnParallelLinear)
FUSED = ({"q_proj", "k_proj", "v_proj"}, {"gate_proj", "up_proj"}, {"q_a_proj", "kv_a_proj_with_mqa"},
         {"shared_gate", "shared_up"}, {"shared_expert_gate_proj", "shared_expert_up_proj"})


def _fused_count(names: list) -> int:
    """Kernels of these dense linears, the ``FUSED`` sets one kernel each."""
    n = len(names)
    for group in FUSED:
        n -= max(len(group & set(names)) - 1, 0)
    return n


def _gemm_kernels(c, base: frozenset = frozenset()) -> tuple[int, int, int, int]:
    """(dense GEMM kernels, of them those of linears named in ``base`` — kept at the checkpoint's base
    dtype beside quantised ones, ``base_dtype_linears`` —, fused-MoE kernels, elementwise kernels) of one
    layer's component."""
    names = [q.name for q in c.primitives(None) if isinstance(q, Linear) and q.active is None]
    routed = any(isinstance(q, Linear) and q.active is not None for q in c.primitives(None))
    kept = [n for n in names if n in base]
    n_kept = _fused_count(kept)
    n = n_kept + _fused_count([n for n in names if n not in base])
    norms = sum(1 for q in c.primitives(None) if getattr(q, "norm", None) is not None)
    ew = norms + (1 if (names or routed) else 0)
    return n, n_kept, 1 if routed else 0, ew


def base_dtype_linears(model, ck) -> frozenset:
    """The paths (``_paths``) of the dense (non-routed) decoder-layer linears a checkpoint keeps at its
    base dtype while it quantises other dense linears of the layers -- attention and shared experts on
    ModelOpt's NVFP4 exports of DeepSeek-style MoE models, an FP8 checkpoint's ignore list: they run as
    base-dtype GEMMs (class ``gemm_base``), the rest of the dense linears at the quantised layout
    (``gemm``). The LM head stays in ``gemm``, whose bytes hold it with the embedding (one weights term).
    Empty when the layers' dense linears share one layout."""
    sch = ck.scheme
    if sch.layout is sch.base:
        return frozenset()
    paths = _paths(model)
    dense = {p: ck.dtypes.get(p) for p, hit in paths.items()
             if hit[2] is not None and not hit[2].tower and isinstance(hit[1], Linear) and hit[1].active is None
             and p in ck.dtypes}
    kept = frozenset(p for p, label in dense.items() if label == sch.base.label)
    return kept if kept and any(label == sch.layout.label for label in dense.values()) else frozenset()


def _beta(span) -> sympy.Expr:
    """The link a group of ``span`` ranks talks over: NVLink inside one domain, else scale-out."""
    return sympy.Piecewise((sym.BW_link, sympy.Le(span, sym.D_nv)), (sym.BW_net, True))


def _beta_ep(span) -> sympy.Expr:
    """The expert all-to-all's link: across NVLink domains the off-domain share of each rank's exchange
    goes over scale-out while the rest crosses NVLink at the same time (``hardware.links.ep_link_formula``,
    the training model's ``link_bytes_s("ep")``)."""
    return ep_link_formula(span, sym.D_nv, sym.BW_link, sym.BW_net)


@dataclass
class StepFormula:
    """One step on one rank of one stage as named terms (seconds), plus what the regimes need."""

    phase: str
    terms: Terms  # kernels/<class>, collectives/<name>: seconds
    flops: sympy.Expr
    bytes: sympy.Expr
    rows: sympy.Expr  # R: token rows of one GEMM call
    expert_rows: sympy.Expr  # rows per routed expert on one call
    message: sympy.Expr  # S: bytes of one all-reduce
    aa_message: sympy.Expr  # bytes one rank sends in one all-to-all
    parts: dict = field(default_factory=dict)  # class -> (flops, bytes, count)

    @property
    def step_time(self) -> sympy.Expr:
        return self.terms.total


def _kernel_time(cls, F, Q, n) -> sympy.Expr:
    P, ec, em, t0 = CLASS_SYMBOLS[cls]
    mem = Q / (sym.BW_hbm * em)
    body = mem if P is None else sympy.Max(F / (P * ec), mem, evaluate=False)
    return body + n * t0


def step_formula(model, ck, phase: str, *, kv_dtype="bf16", mla="auto", weights: Terms | None = None) -> StepFormula:
    """The calibrated step (``CALIBRATED_DOC``: the formula, the classes, the links) of ``phase`` for B
    sequences at context T."""
    vals = model.values
    ph = Phase(kind=phase, attention="causal", logits="last", mla=mla)
    paths = _paths(model)
    kept = base_dtype_linears(model, ck)

    def linear_class(path):
        hit = paths.get(path)
        if hit is None or not isinstance(hit[1], Linear):
            return None
        return "grouped_gemm" if hit[1].active is not None else ("gemm_base" if path in kept else "gemm")
    F = {"gemm": sympy.Integer(0), "gemm_base": sympy.Integer(0), "grouped_gemm": sympy.Integer(0),
         "attention": sympy.Integer(0)}
    for path, expr in model.flops(ph).flatten().items():
        F[linear_class(path) or "attention"] += expr.xreplace(vals)
    w = weights if weights is not None else weights_per_gpu(model, ck)
    routed, nonrouted = split_routed(w, paths)
    kept_bytes = sum((e for p, e in w.flatten().items() if p in kept), sympy.Integer(0))
    moe_layers, k, E, d = _moe_info(model)
    ideal = roofline_formulas(model, ck, phase, kv_dtype=kv_dtype, mla=mla, weights=w)
    t, p, B, T, M = sym.N_tp, sym.N_pp, sym.B, sym.T, sym.M
    e = sym.N_tp * sym.N_ep
    if phase == "decode":
        R, chunks = B, sympy.Integer(1)
    else:
        R, chunks = sympy.Min(B * T, M), sympy.ceiling(B * T / M)
    # rows reaching one expert per call: the expert group's rows · k / E -- the N_ep replicas' (EP, whole
    # experts; or attention DP without EP, every expert sliced over the N_tp·N_ep ranks: vLLM's MoE TP over DP)
    xrows = R * sym.N_ep * k / E if E else sympy.Integer(0)
    # exact while cheap, unevaluated past that (core.powers.RatioPow), as formulas.roofline_formulas keeps it
    # the experts a rank holds are touched by the tokens of its whole expert group (the N_ep replicas' rows,
    # as ``xrows``), the uniform-routing expectation as ``formulas.roofline_formulas``
    touched = 1 - RatioPow(1 - sympy.Rational(k, E), (B if phase == "decode" else B * T) * sym.N_ep) if E else sympy.Integer(1)
    counts = {"gemm": 1, "gemm_base": 0, "grouped_gemm": 0, "elementwise": 0, "attention": 0}  # 1: the LM head
    for g in model.groups:
        n = exact(g.count, vals)
        if n == 0 or g.tower:
            continue
        per = sympy.ceiling(sympy.Integer(n) / p)
        for c in g.components:
            gk, bk, mk, ek = _gemm_kernels(c, frozenset(p_.rsplit("/", 1)[1] for p_ in kept
                                                          if p_.startswith(f"{g.name}/{c.key}/")))
            counts["gemm"] += per * (gk - bk)
            counts["gemm_base"] += per * bk
            counts["grouped_gemm"] += per * mk
            counts["elementwise"] += per * ek
            if c.cache().flatten():
                counts["attention"] += per
    Q = {"gemm": (nonrouted - kept_bytes - embedding_unread(model, ck, R)) * chunks, "gemm_base": kept_bytes * chunks,
         "grouped_gemm": routed * touched * chunks,
         "attention": ideal.parts["kv_read"] + ideal.parts["kv_write"],
         "elementwise": counts["elementwise"] * R * d * ACT_BYTES * 2 * chunks}
    terms = Terms()
    parts = {}
    kern = Terms()
    for cls in ("gemm", "gemm_base", "grouped_gemm", "attention", "elementwise"):
        f = F.get(cls, sympy.Integer(0)) / (t * p)
        n = counts[cls] * chunks
        if cls != "elementwise" and f == 0 and Q[cls] == 0:
            continue
        if cls == "elementwise" and counts[cls] == 0:
            continue
        parts[cls] = (f, Q[cls], n)
        kern.add(cls, _kernel_time(cls, f, Q[cls], n))
    terms.add("kernels", kern, "Σ over kernel classes of max(F/(P·η_c), Q/(BW_hbm·η_m)) + n·t_0")
    S = R * d * ACT_BYTES
    coll = Terms()
    blocks = sympy.ceiling(sympy.Integer(text_tp_blocks(model)) / p)
    ar = blocks * chunks * (sympy.Min(1, t - 1) * sym.alpha_ar + 2 * (t - 1) / t * S / (_beta(t) * sym.eta_ar))
    coll.add("tp_all_reduce", ar, "per TP block: α + 2(t−1)/t·S / (β_tp·η_ar), β by NVLink domain")
    aa_msg = R / t * k * d * ACT_BYTES
    if moe_layers:
        n_aa = 2 * sympy.ceiling(sympy.Integer(moe_layers) / p) * chunks
        aa = n_aa * sym.x_ep * (sym.alpha_aa + aa_msg * (e - 1) / e / (_beta_ep(e) * sym.eta_aa))
        coll.add("ep_all_to_all", aa, "dispatch + combine per MoE layer, only with EP (x_ep), own R/t rows")
        # attention DP without EP (experts sliced over the N_tp·N_ep ranks): each MoE layer all-gathers the
        # N_ep replicas' hidden states and reduce-scatters the output (vLLM's naive dispatch / combine)
        gather = S * (sym.N_ep - 1)
        ag = n_aa * (1 - sym.x_ep) * sympy.Min(1, sym.N_ep - 1) * (sym.alpha_ar + gather / (_beta(e) * sym.eta_ar))
        coll.add("dp_moe_gather", ag, "experts sliced over DP (no EP): all-gather + reduce-scatter per MoE layer")
    pp = sympy.Min(1, p - 1) * chunks * (sym.alpha_ar + S / (_beta(t * p) * sym.eta_ar))
    coll.add("pp_send", pp, "activations to the next stage")
    terms.add("collectives", coll)
    flops = sum(v[0] for v in parts.values())
    nbytes = sum(v[1] for v in parts.values())
    return StepFormula(phase, terms, flops, nbytes, R, xrows, S, aa_msg, parts)


def kernel_dtype(lay, gpu, grouped: bool) -> tuple[str, str, str]:
    """(calibration dtype, tensor-core dtype, what runs) of a weight layout on ``gpu``: FP8 block
    GEMMs where the card has FP8; NVFP4 on FP4 tensor cores (Blackwell); MXFP4 experts as 4-bit
    weights × FP8 activations on Blackwell (vLLM's FlashInfer TRT-LLM MXFP4×MXFP8 path) and W4A16 —
    4-bit weights dequantised into bf16 tensor cores (Marlin / Triton) — on Hopper and older; INT4/AWQ/GPTQ
    W4A16 everywhere; FP8 without FP8 tensor cores: weight-only into bf16."""
    peaks = gpu.peak_tflops
    kind = lay.kind
    if kind == "dense":
        if lay.b == 1:
            return ("fp8", "fp8", "FP8 weights × FP8 tensor cores") if "fp8" in peaks else \
                ("w4a16", "bf16", "FP8 weight-only into bf16 tensor cores")
        return "bf16", "bf16", "bf16 tensor cores"
    if kind in ("fp8_tensor", "fp8_block"):
        if "fp8" not in peaks:
            return "w4a16", "bf16", "FP8 weight-only into bf16 tensor cores (no FP8 on this card)"
        return (("fp8_block", "fp8", "FP8 block-scaled GEMM (DeepGEMM/CUTLASS)") if kind == "fp8_block"
                else ("fp8", "fp8", "FP8 per-tensor GEMM"))
    if kind == "nvfp4":
        return (("nvfp4", "fp4", "NVFP4 on FP4 tensor cores") if "fp4" in peaks
                else ("w4a16", "bf16", "W4A16: 4-bit weights into bf16 tensor cores (no FP4 on this card)"))
    if kind == "mxfp4":
        if "fp4" in peaks:
            return "w4a8", "fp8", "MXFP4 weights × MXFP8 activations (FP8 tensor-core rate)"
        return "w4a16", "bf16", "W4A16 MXFP4: 4-bit weights, bf16 compute"
    return ("w4a16_int4" if grouped else "w4a16"), "bf16", "W4A16 INT4: 4-bit weights, bf16 compute"


def class_dtypes(model, ck, gpu) -> dict:
    """Per kernel class: (calibration class, calibration dtype, peak dtype, what runs)."""
    sch = ck.scheme
    labels = set()
    experts_labels = set()
    paths = _paths(model)
    for path, label in ck.dtypes.items():
        hit = paths.get(path)
        if hit is not None and isinstance(hit[1], Linear):
            (experts_labels if hit[1].active is not None else labels).add(label)
    dense = sch.layout if sch.layout.label in labels else sch.base
    experts = sch.experts or (sch.layout if (sch.layout.label in experts_labels or not experts_labels) else sch.base)
    classes = [("gemm", dense), ("grouped_gemm", experts)]
    if base_dtype_linears(model, ck):  # the dense linears the checkpoint keeps unquantised, apart
        classes.insert(1, ("gemm_base", sch.base))
    out = {}
    for cls, lay in classes:
        cd, peak, text = kernel_dtype(lay, gpu, cls == "grouped_gemm")
        op = cls if cls == "grouped_gemm" else ("gemm" if cd in ("bf16", "fp8") else "quant_gemm")
        out[cls] = (op, cd, peak, f"{lay.label}: {text}")
    return out


def _dense_gemm_classes(dtypes: dict):
    """(kernel class, (op, calibration dtype), its η_c, η_m and floor symbols) of the dense GEMM classes in
    ``dtypes`` (``gemm``, and ``gemm_base`` beside it on a mixed checkpoint)."""
    for cls in ("gemm", "gemm_base"):
        if cls in dtypes:
            op, cd, _, _ = dtypes[cls]
            yield cls, (op, cd), CLASS_SYMBOLS[cls][1:]


def _is_mla_model(model) -> bool:
    from .vllm import _is_mla
    return any(_is_mla(c) for c in model.components())


def ideal_values() -> dict:
    """Every η 1, every floor and α 0: the pure bound."""
    v = {s: sympy.Integer(1) for s in (sym.eta_cg, sym.eta_mg, sym.eta_cgb, sym.eta_mgb, sym.eta_cx, sym.eta_mx,
                                       sym.eta_ca, sym.eta_ma, sym.eta_me, sym.eta_ar, sym.eta_aa)}
    v.update({s: sympy.Integer(0) for s in (sym.t_g, sym.t_gb, sym.t_x, sym.t_a, sym.t_e, sym.alpha_ar,
                                            sym.alpha_aa)})
    return v


def calibration_values(model, gpu, dtypes: dict, regime: dict, *, kv_dtype="bf16", phase="decode",
                       engine: str | None = None) -> tuple[dict, dict]:
    """The calibration symbols' values for ``gpu`` in the ``regime`` a step is in (``_rows`` per GEMM
    call, ``_expert_rows`` per routed expert, ``_message`` bytes per all-reduce, ``_aa_message`` bytes per
    rank per all-to-all, ``_tokens`` = B·T); (values, the source of the row used per class). ``engine``: the
    serving engine whose own kernel rows are preferred where the data has them (``calibration.efficiency``)."""
    eff = partial(efficiency, engine=engine)
    R, xr, S, aa = regime["_rows"], regime["_expert_rows"], regime["_message"], regime["_aa_message"]
    v, used = {}, {}
    for cls, op_cd, (s_c, s_m, s_t) in _dense_gemm_classes(dtypes):
        for op_try in (op_cd, ("gemm", "bf16")):
            try:
                g = eff(gpu.name, op_try[0], dtype=op_try[1], m=max(1, int(R)))
                break
            except SymcostError:  # a quantised class with no rows falls back to bf16 GEMMs, stated
                g = None
        v.update({s_c: g.eta_compute, s_m: g.eta_memory, s_t: g.floor_s})
        used[cls] = f"{op_try[0]}/{op_try[1]} M={int(R)}: {g.source}"
    op, cd, _, _ = dtypes["grouped_gemm"]
    try:
        x = eff(gpu.name, "grouped_gemm", dtype=cd, m=max(0, int(-(-xr // 1))))
    except SymcostError:  # no measured rows for this dtype: the bf16 fused-MoE rows, stated
        cd = "bf16 (no rows for " + cd + ")"
        x = eff(gpu.name, "grouped_gemm", dtype="bf16", m=max(0, int(-(-xr // 1))))
    v.update({sym.eta_cx: x.eta_compute, sym.eta_mx: x.eta_memory, sym.t_x: x.floor_s})
    used["grouped_gemm"] = f"{cd} rows/expert={int(-(-xr // 1))}: {x.source}"
    variant = "mla" if _is_mla_model(model) else None
    if phase == "decode":
        a = eff(gpu.name, "attn_decode", dtype="fp8" if kv_dtype == "fp8" else "bf16", variant=variant)
    else:
        a = eff(gpu.name, "attn_prefill", dtype="bf16", m=max(1, int(regime["_tokens"])), variant=variant)
    v.update({sym.eta_ca: a.eta_compute, sym.eta_ma: a.eta_memory, sym.t_a: a.floor_s})
    used["attention"] = f"{'attn_decode' if phase == 'decode' else 'attn_prefill'}{'/mla' if variant else ''}: {a.source}"
    ew = eff(gpu.name, "elementwise", dtype="*")
    v.update({sym.eta_me: ew.eta_memory, sym.t_e: ew.floor_s})
    used["elementwise"] = ew.source
    r = eff(gpu.name, "collective", nbytes=max(1, int(S)), variant="all_reduce")
    v.update({sym.eta_ar: r.eta_memory, sym.alpha_ar: r.floor_s})
    used["all_reduce"] = f"S={int(S)} B: {r.source}"
    q = eff(gpu.name, "collective", nbytes=max(1, int(aa)), variant="all_to_all")
    v.update({sym.eta_aa: q.eta_memory, sym.alpha_aa: q.floor_s})
    used["all_to_all"] = f"{int(aa)} B per rank: {q.source}"
    return {k: sympy.Float(val) for k, val in v.items()}, used


def calibration_arrays(model, gpu, dtypes: dict, regime: dict, *, kv_dtype="bf16", phase="decode",
                       engine: str | None = None) -> dict:
    """``calibration_values`` over arrays of regimes (one per layout or batch): the same rows, looked up as
    step functions (``calibration.efficiency_array``)."""
    import numpy as np  # lazy: only the vectorised layout search passes arrays (numpy is optional)

    from ..core.errors import SymcostError
    from ..hardware.calibration import efficiency_array
    eff, eff_array = partial(efficiency, engine=engine), partial(efficiency_array, engine=engine)
    v = {}
    for _, (op, cd), (s_c, s_m, s_t) in _dense_gemm_classes(dtypes):
        try:
            g = eff_array(gpu.name, op, np.maximum(regime["_rows"], 1), dtype=cd)
        except SymcostError:  # a quantised class with no rows falls back to bf16 GEMMs, as the scalar path
            g = eff_array(gpu.name, "gemm", np.maximum(regime["_rows"], 1), dtype="bf16")
        v.update({s_c: g[0], s_m: g[1], s_t: g[2]})
    try:
        x = eff_array(gpu.name, "grouped_gemm", np.ceil(regime["_expert_rows"]), dtype=dtypes["grouped_gemm"][1])
    except SymcostError:  # as the scalar path: the bf16 fused-MoE rows
        x = eff_array(gpu.name, "grouped_gemm", np.ceil(regime["_expert_rows"]), dtype="bf16")
    v.update({sym.eta_cx: x[0], sym.eta_mx: x[1], sym.t_x: x[2]})
    variant = "mla" if _is_mla_model(model) else None
    if phase == "decode":
        a = eff_array(gpu.name, "attn_decode", np.ones_like(regime["_rows"]),
                      dtype="fp8" if kv_dtype == "fp8" else "bf16", variant=variant)
    else:
        a = eff_array(gpu.name, "attn_prefill", np.maximum(regime["_tokens"], 1), dtype="bf16", variant=variant)
    v.update({sym.eta_ca: a[0], sym.eta_ma: a[1], sym.t_a: a[2]})
    ew = eff(gpu.name, "elementwise", dtype="*")
    v.update({sym.eta_me: ew.eta_memory, sym.t_e: ew.floor_s})
    r = eff_array(gpu.name, "collective", np.maximum(regime["_message"], 1), key="bytes", dtype="*",
                  variant="all_reduce")
    v.update({sym.eta_ar: r[1], sym.alpha_ar: r[2]})
    q = eff_array(gpu.name, "collective", np.maximum(regime["_aa_message"], 1), key="bytes", dtype="*",
                  variant="all_to_all")
    v.update({sym.eta_aa: q[1], sym.alpha_aa: q[2]})
    return v


def _piecewise(x, gpu: str, op: str, dtype: str, key: str, variant, pick, engine=None):
    """One calibration symbol as a Piecewise in its regime quantity ``x`` (rows M or message bytes): the
    step function ``calibration.steps`` evaluates, one piece per interval [b_i, b_{i+1}) of the rows'
    stated regimes, equal neighbours merged; ``pick`` reads the value (η_c, η_m or the floor) of a row."""
    from ..hardware.calibration import steps
    cuts, effs = steps(gpu, op, dtype, key, variant, engine)
    vals = [sympy.Float(pick(e)) for e in effs]
    pieces = []
    for i in range(len(cuts) - 1):
        if i + 1 < len(vals) and vals[i] == vals[i + 1]:
            continue
        pieces.append((vals[i], sympy.Lt(x, cuts[i + 1])))
    pieces.append((vals[-1], True))
    return pieces[0][0] if len(pieces) == 1 else sympy.Piecewise(*pieces)


def calibration_piecewise(model, gpu, dtypes: dict, sf: StepFormula, *, kv_dtype="bf16", phase="decode",
                          engine: str | None = None) -> dict:
    """``calibration_values`` kept symbolic: every η, floor and α a Piecewise in the step's own regime
    quantities (rows per GEMM call R, rows per routed expert, tokens B·T of prefill attention, bytes per
    all-reduce and per all-to-all), which are formulas of B, T, M and the layout symbols; the same rows,
    the same fallbacks. Substituted into the step, TTFT and TPOT stay formulas of B and T."""
    eta_c, eta_m, floor = (lambda e: e.eta_compute), (lambda e: e.eta_memory), (lambda e: e.floor_s)
    eff, piece = partial(efficiency, engine=engine), partial(_piecewise, engine=engine)
    R = sympy.Max(1, sympy.floor(sf.rows))
    xr = sympy.Max(0, sympy.ceiling(sympy.sympify(sf.expert_rows)))
    v = {}
    for _, (op, cd), (s_c, s_m, s_t) in _dense_gemm_classes(dtypes):
        for op_try, cd_try in ((op, cd), ("gemm", "bf16")):
            try:
                v.update({s_c: piece(R, gpu.name, op_try, cd_try, "m", None, eta_c),
                          s_m: piece(R, gpu.name, op_try, cd_try, "m", None, eta_m),
                          s_t: piece(R, gpu.name, op_try, cd_try, "m", None, floor)})
                break
            except SymcostError:  # as calibration_values: a quantised class with no rows runs as bf16 GEMMs
                continue
    cd = dtypes["grouped_gemm"][1]
    for cd_try in (cd, "bf16"):
        try:
            v.update({sym.eta_cx: piece(xr, gpu.name, "grouped_gemm", cd_try, "m", None, eta_c),
                      sym.eta_mx: piece(xr, gpu.name, "grouped_gemm", cd_try, "m", None, eta_m),
                      sym.t_x: piece(xr, gpu.name, "grouped_gemm", cd_try, "m", None, floor)})
            break
        except SymcostError:  # as calibration_values: the bf16 fused-MoE rows
            continue
    variant = "mla" if _is_mla_model(model) else None
    if phase == "decode":
        a = eff(gpu.name, "attn_decode", dtype="fp8" if kv_dtype == "fp8" else "bf16", variant=variant)
        v.update({sym.eta_ca: sympy.Float(a.eta_compute), sym.eta_ma: sympy.Float(a.eta_memory),
                  sym.t_a: sympy.Float(a.floor_s)})
    else:
        tok = sympy.Max(1, sym.B * sym.T)
        v.update({s_: piece(tok, gpu.name, "attn_prefill", "bf16", "m", variant, f)
                  for s_, f in ((sym.eta_ca, eta_c), (sym.eta_ma, eta_m), (sym.t_a, floor))})
    ew = eff(gpu.name, "elementwise", dtype="*")
    v.update({sym.eta_me: sympy.Float(ew.eta_memory), sym.t_e: sympy.Float(ew.floor_s)})
    S = sympy.Max(1, sympy.floor(sf.message))
    aa = sympy.Max(1, sympy.floor(sympy.sympify(sf.aa_message)))
    v.update({sym.eta_ar: piece(S, gpu.name, "collective", "*", "bytes", "all_reduce", eta_m),
              sym.alpha_ar: piece(S, gpu.name, "collective", "*", "bytes", "all_reduce", floor),
              sym.eta_aa: piece(aa, gpu.name, "collective", "*", "bytes", "all_to_all", eta_m),
              sym.alpha_aa: piece(aa, gpu.name, "collective", "*", "bytes", "all_to_all", floor)})
    return v


def _decimal(e):
    """``e`` with each Float of the calibration data as the exact decimal it was stored as (0.58 → 29/50),
    so a formula holding measured efficiencies prints as text that ``symcost.parse`` reads back to itself
    (decimals parse as exact rationals)."""
    e = sympy.sympify(e)
    return e.xreplace({f: sympy.Rational(repr(float(f))) for f in e.atoms(sympy.Float)})


def hardware_values(gpu, dtypes: dict, mem_util: float, links: Links | None = None) -> dict:
    """Peaks per class, HBM and link bandwidths, NVLink domain: the GPU's symbols for the latency model."""
    gv, _ = gpu_values(gpu, dtypes["gemm"][2], mem_util)
    links = links or Links.of(gpu)
    gv[sym.F_moe] = sympy.Integer(gpu.peak(dtypes["grouped_gemm"][2])[0])
    if "gemm_base" in dtypes:
        gv[sym.F_gb] = sympy.Integer(gpu.peak(dtypes["gemm_base"][2])[0])
    gv[sym.F_attn] = sympy.Integer(gpu.peak("bf16")[0])
    gv[sym.BW_net] = sympy.Integer(round(links.ib_bytes_s))
    gv[sym.D_nv] = sympy.Integer(links.gpus_per_node)
    return gv


@dataclass
class Evaluated:
    """One step of the latency model at numbers: seconds per named term, the values used, the sources."""

    seconds: float
    terms: dict  # term path -> seconds (one stage)
    values: dict  # symbol -> value (calibration and hardware)
    sources: dict  # class -> the calibration row used
    dtypes: dict  # class -> (op class, calibration dtype, peak dtype, what runs)
    formula: dict  # term path -> formula text (the model's values substituted, T and B free)
    engine: str | None = None  # whose measured kernels were preferred (``CalibratedLatency.engine``)


class CalibratedLatency:
    """TTFT and TPOT of a checkpoint on any layout from the calibrated step (``step_formula``)."""

    def __init__(self, model, ck, setup: ServeSetup, *, kv_dtype="bf16", mla="auto", compute_dtype=None,
                 weights: Terms | None = None, links: Links | None = None, engine: str | None = None):
        self.model, self.ck, self.setup = model, ck, setup
        # whose measured kernels cost the step: calibration rows tagged with that engine where the data has
        # them (the fused-MoE kernels differ by engine), the engine-less rows elsewhere; default the engine
        # whose schedule times the load
        self.engine = engine or setup.scheduler
        self.kv_dtype, self.mla, self.weights = kv_dtype, mla, weights
        self.dtypes = class_dtypes(model, ck, setup.gpu)
        if compute_dtype:  # --compute-dtype pins the dense GEMMs' peak
            op, cd, _, text = self.dtypes["gemm"]
            self.dtypes["gemm"] = (op, cd, compute_dtype, text + f" (peak pinned to {compute_dtype})")
        self.hw = hardware_values(setup.gpu, self.dtypes, setup.mem_util, links)
        self._steps: dict = {}

    def step(self, phase: str) -> StepFormula:
        if phase not in self._steps:
            self._steps[phase] = step_formula(self.model, self.ck, phase, kv_dtype=self.kv_dtype, mla=self.mla,
                                              weights=self.weights)
        return self._steps[phase]

    def at(self, lay, *, T: int, batch: int, max_batched_tokens: int) -> dict:
        v = dict(lay.values())
        v.pop(sym.N_cp, None)
        v.update({sym.T: sympy.Integer(T), sym.B: sympy.Integer(batch), sym.M: sympy.Integer(max_batched_tokens),
                  sym.x_ep: sympy.Integer(lay.x_ep)})
        return v

    #: the regime quantities the calibration lookup reads, compiled beside the terms
    REGIME = ("_rows", "_expert_rows", "_message", "_aa_message", "_tokens")

    def compiled(self, phase: str):
        """(NumPy function, its symbols): every term of the phase's step and the regime quantities,
        compiled once (``symcost.core.numeric``)."""
        key = ("fn", phase)
        if key not in self._steps:
            sf = self.step(phase)
            exprs = {k: sympy.sympify(e) for k, e in sf.terms.flatten().items()}
            exprs.update({"_rows": sf.rows, "_expert_rows": sympy.sympify(sf.expert_rows), "_message": sf.message,
                          "_aa_message": sympy.sympify(sf.aa_message), "_tokens": sym.B * sym.T})
            syms = sorted(set().union(*(sympy.sympify(e).free_symbols for e in exprs.values())), key=str)
            self._steps[key] = (compile_exprs(exprs, syms), syms)
        return self._steps[key]

    def regime(self, phase: str, values: dict) -> dict:
        """The regime quantities (rows per GEMM call, rows per expert, message bytes) at ``values``."""
        fn, syms = self.compiled(phase)
        filler = {**ideal_values(), **values}
        out = fn(*[float(filler.get(s, 1)) for s in syms])
        return {k: float(out[k]) for k in self.REGIME}

    def evaluate(self, phase: str, lay, *, T: int, batch: int, max_batched_tokens: int, ideal: bool = False,
                 text: bool = True) -> Evaluated:
        """The step at numbers; ``text`` False skips the substituted formula texts (numbers only)."""
        sf = self.step(phase)
        at = self.at(lay, T=T, batch=batch, max_batched_tokens=max_batched_tokens)
        base = {**at, **self.hw}
        if ideal:
            cv, src = ideal_values(), {"all": "ideal: eta = 1, floors and alpha 0"}
        else:
            cv, src = calibration_values(self.model, self.setup.gpu, self.dtypes, self.regime(phase, base),
                                         kv_dtype=self.kv_dtype, phase=phase, engine=self.engine)
        vals = {**base, **cv}
        fn, syms = self.compiled(phase)
        out = fn(*[float(vals[s]) for s in syms])
        terms = {k: float(out[k]) for k in sf.terms.flatten()}
        # the calibration kept symbolic (``symbolic``: η, floors, α Piecewise in the step's regime) with the
        # layout, B and the NVLink domain substituted: the link is then chosen, the touched-expert power has a
        # numeric exponent (RatioPow: unevaluated past a few thousand bits), and each term is a formula of T
        # and M, its regimes in T inside, that parses back with symcost.parse (``metrics`` keeps B free too)
        formula = {}
        if text:
            key = ("symbolic", phase, ideal)
            if key not in self._steps:
                self._steps[key] = self.symbolic(phase, ideal=ideal).flatten()
            fixed = {k: v for k, v in at.items() if k not in (sym.T, sym.M)}
            fixed[sym.D_nv] = self.hw[sym.D_nv]
            formula = {k: str(sympy.sympify(e).xreplace(fixed)) for k, e in self._steps[key].items()}
        return Evaluated(sum(terms.values()), terms, {str(k): float(v) for k, v in {**self.hw, **cv}.items()},
                         src, self.dtypes, formula, None if ideal else self.engine)

    def evaluate_arrays(self, phase: str, values: dict, *, ideal: bool = False) -> dict:
        """The phase's step terms (one stage, seconds) over arrays of the layout symbols, T, B, M and x_ep
        (``values``: symbol -> array): {term: array} and ``"total"``."""
        import numpy as np  # lazy: only the vectorised layout search passes arrays (numpy is optional)
        fn, syms = self.compiled(phase)
        base = {**{k: float(v) for k, v in self.hw.items()}, **values}
        shape = np.broadcast(*[np.asarray(v) for v in values.values()]).shape
        if ideal:
            cal = {k: float(v) for k, v in ideal_values().items()}
        else:
            filler = {**{k: float(v) for k, v in ideal_values().items()}, **base}
            reg = fn(*[filler.get(s, 1.0) for s in syms])
            reg = {k: np.broadcast_to(np.asarray(reg[k], dtype=float), shape) for k in self.REGIME}
            cal = calibration_arrays(self.model, self.setup.gpu, self.dtypes, reg, kv_dtype=self.kv_dtype, phase=phase,
                                     engine=self.engine)
        vals = {**base, **cal}
        out = fn(*[vals[s] for s in syms])
        terms = {k: np.broadcast_to(np.asarray(out[k], dtype=float), shape) for k in self.step(phase).terms.flatten()}
        terms["total"] = sum(terms.values())
        return terms

    def symbolic(self, phase: str, *, ideal: bool = False) -> Terms:
        """The phase's step (one stage) as Terms whose calibration is kept symbolic
        (``calibration_piecewise``: η, floors and α Piecewise in the step's regime quantities) and the
        GPU's peaks, bandwidths and NVLink domain substituted: formulas of B, T, M, the layout symbols
        and x_ep, differentiable and exportable; ``ideal``: η = 1, floors and α 0."""
        sf = self.step(phase)
        cal = ideal_values() if ideal else calibration_piecewise(self.model, self.setup.gpu, self.dtypes, sf,
                                                                 kv_dtype=self.kv_dtype, phase=phase,
                                                                 engine=self.engine)
        sub = {**{k: v for k, v in self.hw.items()}, **{k: _decimal(v) for k, v in cal.items()}}
        return sf.terms.map(lambda e: sympy.sympify(e).xreplace(sub))

    def load_step(self, lay, *, max_batched_tokens: int, ideal: bool = False):
        """``step(phase, T, B) -> (seconds, attention seconds)`` of one step across the N_pp stages, as
        ``workload.closed_loop`` / ``open_loop`` take it (B a number)."""
        def step(phase, T, B):
            import numpy
            ev = self.evaluate(phase, lay, T=int(T), batch=max(1, int(numpy.asarray(B).round())),
                               max_batched_tokens=max_batched_tokens, ideal=ideal, text=False)
            return (Latency.pipelined(ev.seconds, lay.pp),
                    Latency.pipelined(ev.terms.get("kernels/attention", 0.0), lay.pp))
        return step

    def under_load(self, lay, *, isl: int, osl: int, max_batched_tokens: int, concurrency: int | None = None,
                   rate: float | None = None, ideal: bool = False, engine: str = "vllm") -> dict:
        """TTFT and TPOT (seconds) of ``concurrency`` requests in flight (closed loop, under ``engine``'s
        schedule: ``workload.closed_loop``) or Poisson arrivals at ``rate`` requests/s (open loop), spread
        over the layout's N_dp replicas (``workload``)."""
        from . import workload
        workload.check_engine(engine)
        step = self.load_step(lay, max_batched_tokens=max_batched_tokens, ideal=ideal)
        if rate is not None:
            out = workload.open_loop(step, rate=rate / lay.dp, isl=isl, osl=osl, M=max_batched_tokens)
        else:
            per = -(-int(concurrency) // lay.dp)  # requests in flight on the fullest replica
            out = workload.closed_loop(step, B=per, isl=isl, osl=osl, M=max_batched_tokens, engine=engine)
        out = {k: (float(v) if getattr(v, "ndim", 1) == 0 or isinstance(v, float) else v) for k, v in out.items()}
        if rate is None:
            out["batch"] = per  # a count: an exact integer at any size (the closed loop's arrays are float64)
        return out

    def seconds(self, name: str, lay, *, T: int, batch: int, max_batched_tokens: int, ideal: bool = False,
                accept: float | None = None) -> float:
        """TTFT (prefill of one prompt of T) or TPOT (decode of ``batch`` at T), N_pp stages in turn;
        ``accept``: TPOT with the model's MTP draft at that acceptance rate (``spec_tpot``)."""
        phase, b = Latency.STEPS[name]
        ev = self.evaluate(phase, lay, T=T, batch=b or batch, max_batched_tokens=max_batched_tokens, ideal=ideal,
                           text=False)
        if name == "tpot" and accept is not None:
            n = draft_modules(self.model)
            verify = self.evaluate("decode", lay, T=max(1, T // (1 + n)), batch=batch * (1 + n),
                                   max_batched_tokens=max_batched_tokens, ideal=ideal, text=False).seconds
            return Latency.pipelined(spec_tpot(verify, ev.seconds, _layers(self.model), n, accept), lay.pp)
        return Latency.pipelined(ev.seconds, lay.pp)


# -- speculative decoding with the model's own draft (MTP) ----------------------------------------------
def tokens_per_step() -> sympy.Expr:
    """Expected tokens a verify step emits with n_d draft tokens each accepted with probability a_acc
    (accepted in order, the first rejection ends the run; the verify step's own token always counts):
    Σ_{i=0..n_d} a^i = (1 − a^(n_d+1)) / (1 − a)."""
    i = sympy.Dummy("i", integer=True, nonnegative=True)
    return sympy.Sum(sym.a_acc ** i, (i, 0, sym.n_d))


def spec_tpot(verify, step_b, layers, n_draft: int, accept: float) -> float:
    """TPOT with speculation (numbers or arrays)::

        TPOT = (verify + n_d · step(B) · 2 / (L + 1)) / Σ_{i=0..n_d} a^i

    verify: one decode step of B·(1 + n_d) rows at context T/(1 + n_d) (the same KV bytes and attention
    pairs as B sequences at T, the GEMMs on (1 + n_d)·B rows); each draft token runs one MTP module — one
    decoder layer plus the shared LM head, costed as 2 of the L + 1 layer-equivalents of a decode step
    (an approximation: the MTP layer is a typical layer, the head one more)."""
    e = float(tokens_per_step().xreplace({sym.a_acc: sympy.Float(accept), sym.n_d: sympy.Integer(n_draft)}).doit())
    return (verify + n_draft * step_b * 2 / (layers + 1)) / e


def _layers(model) -> int:
    return sum(exact(g.count, model.values) for g in model.groups if not g.tower)


def draft_modules(model) -> int:
    """MTP modules the checkpoint ships (0: no draft of its own)."""
    return int(model.values.get(sym.L_mtp, 0)) if "mtp" in model.extras else 0
