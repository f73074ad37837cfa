"""A training run on real hardware, from the results of the calculators: the cluster's links, the step
time of one layout (``steptime.step_time`` fed by ``train_memory`` and ``comm``), the token budget.

Moved down from the command line (``symcost train``, ``comm``, ``budget``); the calculators themselves
(``memory``, ``comm``, ``search``) are called by their callers.
"""
from __future__ import annotations

import math
from fractions import Fraction

from ..hardware.links import Links
from .flops import train_flops
from .steptime import budget as budget_at
from .steptime import step_time


def links(gpu, *, ib_gbs: float, gpus_per_node: int, alpha_us: float, pcie_gbs: float) -> Links:
    """``Links.of(gpu)`` from the options' units: ``ib_gbs`` GB/s per GPU across nodes, ``alpha_us`` µs per
    collective, ``pcie_gbs`` GB/s to the host per direction."""
    return Links.of(gpu, ib_bytes_s=ib_gbs * 1e9, gpus_per_node=gpus_per_node, alpha_s=alpha_us * 1e-6,
                    pcie_bytes_s=pcie_gbs * 1e9)


def comm_recompute(recompute: str, cp: int) -> str:
    """The recomputation that changes communication: selective recompute re-runs the attention core,
    which sends nothing unless context parallelism (ring attention) splits it."""
    return "none" if recompute == "selective" and cp == 1 else recompute


def step(tm, cm: dict, setup, *, gpu, links: Links, mfu: float, overlap: float = 0.0) -> dict:
    """The step time of ``setup`` (``setup.TrainSetup``; ``steptime.step_time``): ``tm``
    (``train_memory``) gives the FLOPs per step, ``cm`` (``comm``) the bytes and collectives;
    compute at ``mfu`` of the GPU's dense BF16 peak."""
    p = setup.plan
    world = p.dp * p.tp * p.pp * p.cp
    return step_time(tm.flops_per_step // world, cm, setup, peak_flops=gpu.bf16_tflops * 1e12, mfu=mfu,
                     links=links, overlap=overlap)


def budget(model, *, gpu, tokens: int, gpus: int, seq: int = 4096, mfu: float | None = None,
           gpu_hours: float | None = None, flops: int | None = None, global_batch: int | None = None) -> dict:
    """Wall time, tokens/s and GPU-hours to train ``tokens`` tokens on ``gpus`` × ``gpu``
    (``steptime.budget``): the FLOPs are ``flops`` if given, else the exact training FLOPs per token at
    ``seq`` × tokens; with ``global_batch``, the step time and the number of steps too."""
    per_seq = train_flops(model).total_at(model.values_with(T=seq, B=1))
    # a count, kept exact: tokens/seq sequences (to the nearest FLOP when tokens is no multiple of seq)
    total = flops if flops is not None else round(Fraction(per_seq, seq) * tokens)
    r = budget_at(total, gpus=gpus, peak_flops=gpu.bf16_tflops * 1e12, mfu=mfu, gpu_hours=gpu_hours, tokens=tokens)
    out = {"step_time_s": None, **r}
    if global_batch:
        steps = Fraction(tokens, global_batch * seq)
        out["step_time_s"] = r["wall_time_s"] / float(steps)
        out["steps"] = math.ceil(steps)  # a count: the optimizer steps that cover the tokens
    return out
