"""Measured kernel efficiencies by operation class: how far from the roofline real kernels run.

A kernel of an operation class costs, on a GPU,

    t = max(F / (P_dtype · η_c), Q / (BW · η_m)) + t_0

F its FLOPs, Q its bytes moved, P_dtype the card's dense peak for the compute dtype, BW its HBM
bandwidth; η_c, η_m ∈ (0, 1] and the floor t_0 (launch and tail latency) are **data**, measured per
GPU and operation class and stored in ``kernels/<op_class>.json`` with their sources (published
kernel measurements, vendor benchmarks, papers, aiconfigurator's measured databases — each row says
which). Serving's latency model and training's step time read the same rows.

Each file holds ``{"op_class", "about", "rows": [...]}``; a row has ``gpu`` (a catalogue name, or
``"*"`` for the class's default), ``dtype`` (or ``"*"``), an optional regime (``m_min``/``m_max``:
the GEMM's token rows M; ``bytes_min``/``bytes_max``: a collective's message size), an optional
``variant`` (a kernel family inside the class: ``mla`` attention, a collective's ``all_reduce`` /
``all_to_all`` / ...), an optional ``engine`` (the serving engine whose own kernels the row measured:
``vllm``, ``sglang``; engines run different kernels for the same operation -- fused MoE above all -- and
the engine-less rows are TensorRT-LLM's database first), ``eta_compute``, ``eta_memory``, ``floor_us``
and ``source``. A lookup takes the most specific row that matches: the GPU before ``"*"``, the engine
asked before none, the variant asked before none, the dtype before ``"*"``, a row with a regime before
one without. A row with a variant (an engine) answers only that variant (that engine).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

from ..core.errors import SymcostError

OP_CLASSES = (
    "gemm",            # dense GEMM (projections, dense FFN, LM head), by M regime and dtype
    "grouped_gemm",    # MoE expert GEMMs (fused-MoE / grouped GEMM), by rows per expert
    "quant_gemm",      # weight-only or block-scaled quantised GEMMs (W4A16, FP8 block, FP4)
    "attn_prefill",    # prefill / training-forward attention (FlashAttention-class kernels)
    "attn_decode",     # decode attention incl. MLA decode kernels (FlashMLA, FlashInfer)
    "attn_backward",   # attention backward (training)
    "elementwise",     # norms, activations, rotary, residual adds: bandwidth-bound passes
    "optimizer",       # the optimizer step (fused Adam): bandwidth-bound over the states
    "collective",      # NCCL all-reduce / all-gather / reduce-scatter / all-to-all, by message size
)


@dataclass(frozen=True)
class Efficiency:
    """η_c (share of the dtype's dense peak), η_m (share of HBM bandwidth), t_0 seconds, and the
    row's source."""
    eta_compute: float
    eta_memory: float
    floor_s: float
    source: str


def _matches(row: dict, m, nbytes) -> bool:
    for key, value in (("m", m), ("bytes", nbytes)):
        lo, hi = row.get(f"{key}_min"), row.get(f"{key}_max")
        if (lo is not None or hi is not None) and value is None:
            return False
        if lo is not None and value < lo or hi is not None and value > hi:
            return False
    return True


@cache
def rows(op_class: str) -> tuple[dict, ...]:
    """The stored rows of one operation class (package data ``kernels/<op_class>.json``)."""
    if op_class not in OP_CLASSES:
        raise SymcostError(f"unknown operation class {op_class!r} (known: {', '.join(OP_CLASSES)})")
    path = resources.files("symcost.hardware") / "kernels" / f"{op_class}.json"
    if not path.is_file():
        return ()
    return tuple(json.loads(path.read_text(encoding="utf-8"))["rows"])


@cache
def calibration_name(gpu: str) -> str:
    """The catalogue card whose measured rows a card uses: its ``calibration_base`` in ``gpus.json``
    (a power-limited variant of the same silicon runs at the base's share of its own, lower, peak), else
    itself."""
    data = json.loads((resources.files("symcost.hardware") / "gpus.json").read_text(encoding="utf-8"))
    for g in data["gpus"]:
        if g["name"] == gpu:
            return g.get("calibration_base") or gpu
    return gpu


def efficiency(gpu: str, op_class: str, *, dtype: str = "bf16", m=None, nbytes=None,
               variant: str | None = None, engine: str | None = None) -> Efficiency:
    """The most specific measured row for ``gpu`` × ``op_class`` × ``dtype`` (× ``variant``, ×
    ``engine``) at GEMM rows ``m`` or message size ``nbytes``; SymcostError naming the class when no row
    (not even a default) applies."""
    gpu = calibration_name(gpu)
    best, rank = None, None
    for row in rows(op_class):
        if row["gpu"] not in (gpu, "*") or row.get("dtype", "*") not in (dtype, "*") or not _matches(row, m, nbytes):
            continue
        if row.get("variant") not in (None, variant) or row.get("engine") not in (None, engine):
            continue
        r = (row["gpu"] == gpu, row.get("engine") is not None, row.get("variant") is not None, row.get("dtype", "*") == dtype,
             any(k in row for k in ("m_min", "m_max", "bytes_min", "bytes_max")))
        if rank is None or r > rank:
            best, rank = row, r
    if best is None:
        raise SymcostError(f"no calibration for {op_class} on {gpu} ({dtype}); pass --ideal for the roofline bound")
    return Efficiency(best["eta_compute"], best["eta_memory"], best["floor_us"] * 1e-6, best["source"])


def has_variant(gpu: str, op_class: str, variant: str) -> bool:
    """Whether ``gpu`` (or the class's default) has rows of ``variant`` (else a lookup of it takes the
    class's rows)."""
    gpu = calibration_name(gpu)
    return any(r.get("variant") == variant and r["gpu"] in (gpu, "*") for r in rows(op_class))


@cache
def steps(gpu: str, op_class: str, dtype: str = "bf16", key: str = "m", variant: str | None = None,
          engine: str | None = None):
    """The lookup as a step function of the regime value (``key``: ``m`` or ``bytes``), for arrays:
    (sorted breakpoints, Efficiency per interval [b_i, b_{i+1})) — the same rows ``efficiency`` picks,
    evaluated once at every boundary a row of the class states."""
    cuts = {0}
    for row in rows(op_class):
        lo, hi = row.get(f"{key}_min"), row.get(f"{key}_max")
        if lo is not None:
            cuts.add(int(lo))
        if hi is not None:
            cuts.add(int(hi) + 1)
    cuts = sorted(cuts)
    kw = {"m": None, "nbytes": None}
    out = []
    for c in cuts:
        kw["m" if key == "m" else "nbytes"] = c
        try:
            out.append(efficiency(gpu, op_class, dtype=dtype, variant=variant, engine=engine, **kw))
        except SymcostError:  # below every stated regime (m = 0): the first regime's row, filled below
            out.append(None)
    for i in range(len(out) - 2, -1, -1):
        out[i] = out[i] or out[i + 1]
    if out[-1] is None:
        efficiency(gpu, op_class, dtype=dtype, variant=variant, engine=engine)  # raises the readable error
    return tuple(cuts), tuple(out)


def efficiency_array(gpu: str, op_class: str, values, *, dtype: str = "bf16", key: str = "m",
                     variant: str | None = None, engine: str | None = None):
    """``efficiency`` over an array of regime values: (η_c, η_m, t_0) arrays (NumPy)."""
    import numpy  # lazy: only the vectorised layout search passes arrays (numpy is optional)
    cuts, effs = steps(gpu, op_class, dtype, key, variant, engine)
    idx = numpy.searchsorted(numpy.asarray(cuts, dtype=float), numpy.asarray(values, dtype=float), side="right") - 1
    idx = numpy.clip(idx, 0, len(cuts) - 1)
    pick = numpy.asarray([[e.eta_compute, e.eta_memory, e.floor_s] for e in effs])[idx]
    return pick[..., 0], pick[..., 1], pick[..., 2]
