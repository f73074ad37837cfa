"""The CPU-offloaded optimizer step (``--offload optimizer|params``): the host runs Adam, PCIe carries
the gradients down and the weights back up.

ZeRO-Offload (Ren et al., USENIX ATC 2021, §4; DeepSpeed ``zero_optimization.offload_optimizer``,
``deepspeed/ops/adam/cpu_adam.py`` → ``csrc/adam/cpu_adam_impl.cpp``, ``Adam_Optimizer::Step``) keeps
each rank's fp32 master weights, both moments and the fp32 gradient shard on the host; after the
backward the host steps the shard and the updated 16-bit weights go back to the GPU. Per GPU and step,
with Ψ_h the rank's offloaded parameters (``states.zero_terms``' host bytes / (K + b_g), or / (K + b_g + b_w)
with parameter offload, K and b_g the framework's: ``States.bytes``):

    t_cpu   = 30·Ψ_h·G_h / (BW_host·η_host)   CPU-Adam streams 30 bytes a parameter: reads the fp32
                                              weight, both moments and the fp32 gradient (16), writes
                                              the three states (12) and the 16-bit weight copy (2);
                                              G_h GPUs' processes share the node's memory bandwidth
                                              (``symcost/data/host_memory.json``, by GPU system)
    t_d2h   = b_g·Ψ_h / β_pcie                gradients to the host: DeepSpeed copies each reduced
                                              bucket as backward produces it (``overlap_comm``, the
                                              default under ZeRO-3, off below it); FSDP2 and Megatron's
                                              optimizer offload copy asynchronously in the backward —
                                              so it hides behind the last micro-batch's backward,
                                              except DeepSpeed ZeRO-1/2 (exposed)
    t_h2d   = b_w·Ψ_h / β_pcie                the updated weights back before the next forward:
                                              exposed (ZeRO-Offload's delayed parameter update is an
                                              opt-in, not modelled)

t_cpu follows the backward (the global gradient norm needs every gradient) and precedes the next
forward, so it is serial in the step: it replaces the GPU optimizer step t_opt. β_pcie is the host
link per GPU and direction (``--pcie-gbs``). The PCIe bytes themselves are ``comm``'s ``host``
dimension (b_g + b_w)·Ψ_h; ``host_split`` divides them into the two copies.
"""
from __future__ import annotations

import json
from functools import cache
from importlib import resources

CPU_ADAM_BYTES = 30  # bytes through host memory per parameter and step (module docstring)


@cache
def _rows() -> tuple[dict, ...]:
    path = resources.files("symcost") / "data" / "host_memory.json"
    return tuple(json.loads(path.read_text(encoding="utf-8"))["rows"])


def host_system(gpu_name: str) -> dict:
    """The host-memory row of ``gpu_name``'s system (the ``*`` row when it has none)."""
    rows = _rows()
    return next((r for r in rows if r["gpu"] == gpu_name), next(r for r in rows if r["gpu"] == "*"))


def offloaded_params(host_bytes: float, K: int, bg: int, bw: int, offload: str) -> float:
    """Ψ_h: the parameters whose states one GPU keeps on the host."""
    per = K + bg + (bw if offload == "params" else 0)
    return float(host_bytes) / per if offload in ("optimizer", "params") else 0.0


def cpu_adam_seconds(params: float, gpu_name: str, world: int) -> float:
    """t_cpu = 30·Ψ_h·G_h/(BW_host·η_host), G_h = min(the system's GPUs per host, the run's GPUs)."""
    if not params:
        return 0.0
    row = host_system(gpu_name)
    sharing = max(1, min(int(row["gpus_sharing"]), int(world)))
    return CPU_ADAM_BYTES * params * sharing / (row["bandwidth_gbs"] * 1e9 * row["eta_memory"])


def host_split(bg: int, bw: int, offload: str) -> float:
    """The gradient (device-to-host) share of the ``host`` dimension's bytes per step: b_g/(b_g + b_w)
    with optimizer offload (one of each per step); with parameter offload the per-micro-batch weight
    fetches dominate and are counted as host-to-device (0 returned: nothing hides)."""
    return bg / (bg + bw) if offload == "optimizer" else 0.0


def d2h_hides(framework: str | None, zero: int) -> bool:
    """Whether the gradient copies overlap the backward: DeepSpeed's ``overlap_comm`` (default on
    for ZeRO-3 only, ``deepspeed/runtime/zero/config.py``); FSDP2's / Megatron's asynchronous copies."""
    return zero >= 3 if framework == "deepspeed" else True
