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

from dataclasses import dataclass
from functools import cached_property

import sympy

from ..core.notation import sym
from .formulas import Roofline, gpu_values, roofline_formulas, step_max
from .formulas import compute_dtype as pick_compute_dtype
from .plan import Plan, ServeSetup, plan

#: the accounting ``roofline`` states with every answer
NOTE = ("per rank of the layout: FLOPs of the step split over t*p ranks (matmuls, causal attention, "
        "logits of the last token); bytes = the rank's checkpoint weights (routed experts as far as the "
        "batch touches them, uniform routing; once per chunk of --max-batched-tokens in prefill) + KV "
        "read/written; step = max(FLOPs/peak, bytes/bandwidth) + TP all-reduce + EP all-to-all at "
        "the link bandwidth, no overlap; a step crosses the p stages in turn; efficiencies as given")

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

    @property
    def bound(self) -> str:
        return "compute" if self.compute_time >= self.memory_time else "memory"

    @property
    def time(self) -> float:
        """The step crossing the pipeline: (max(compute, memory) + communication) · N_pp."""
        return Latency.pipelined(max(self.compute_time, self.memory_time) + self.comm_time,
                                 self.plan.layout.pp)

    @property
    def peak_flops(self):
        return self.values[sym.F_gpu]

    @property
    def bandwidth(self):
        return self.values[sym.BW_hbm]

    def formula(self) -> dict[str, str]:
        """The formulas as text, B substituted: the touched-expert fraction 1 − (1 − k/E)^(rows)
        then has a numeric exponent. When that power written out exactly would pass Python's
        4,300-digit limit (a batch of millions), B stays a symbol instead."""
        rf = self.roofline
        parts = (("flops", rf.flops), ("bytes", rf.bytes), ("time_s", rf.step_time * sym.N_pp),
                 ("total", rf.step_time * sym.N_pp))
        try:
            return {k: str(sympy.sympify(v).xreplace({sym.B: sympy.Integer(self.batch)})) for k, v in parts}
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


def roofline(model, raw: dict, setup: ServeSetup, *, phase: str, T: int, batch: int, compute_dtype: str | None = None,
             compute_eff: float = 1.0, bw_eff: float = 1.0) -> Step:
    """One ``phase`` step of ``batch`` sequences at ``T`` on ``setup`` (a GPU is needed), at the
    fractions of the dense peak (``compute_eff``) and of the HBM bandwidth (``bw_eff``) given;
    ``compute_dtype`` names the tensor-core peak (default: the checkpoint's)."""
    p = plan(model, raw, setup, T=T)
    ck = setup.checkpoint(model, raw)
    cdt = pick_compute_dtype(ck, compute_dtype)
    gvals, used = scaled_gpu_values(setup.gpu, cdt, setup.mem_util, compute_eff, bw_eff)
    base = {**p.values, **gvals}
    lat = Latency(model, ck, kv_dtype=setup.kv_dtype, mla=setup.mla)
    rf = lat.prefill if phase == "prefill" else lat.decode
    at = {**base, sym.T: sympy.Integer(T), sym.B: sympy.Integer(batch)}
    r = _evaluate(rf, at)
    weight_bytes = int(sympy.ceiling(rf.parts["weights_read"].xreplace({**base, sym.T: T, sym.B: batch})))
    return Step(p, phase, T, batch, rf, base, int(sympy.ceiling(r["flops"])), int(sympy.ceiling(r["bytes"])),
                float(r["compute_time"]), float(r["memory_time"]), float(r["comm_time"]),
                lat.seconds("ttft", at), lat.seconds("tpot", at), compute_bound_batch(lat.decode, base, T), cdt,
                used, weight_bytes)
