"""The GPU catalogue, as data (``gpus.json``, package data with a source per entry).

``memory_gib``: the vendor's nominal capacity read as GiB (80 GB → 80 GiB, the convention the
engine always used; ``memory_bytes``). ``usable_bytes``: total memory as the driver reports it to
CUDA (an H100 80GB shows 85,029,158,912 bytes = 79.19 GiB), what vLLM multiplies by
``gpu_memory_utilization``; where no driver report was found it falls back to the nominal
memory and ``usable_measured`` is False. Peaks are dense tensor-core throughputs per dtype
(``peak_flops``: bf16, fp8, fp4 where the part has them); bandwidths are decimal (10^12 B/s).
``nvlink_domain``: GPUs in one scale-up domain (8 on HGX, 72 on NVL72, 1 for a PCIe card);
``scaleout_gbs``: the per-GPU scale-out link (InfiniBand/RoCE NIC), 10^9 B/s one direction
(400 Gb/s NDR = 50). ``hardware.links.Links.of`` takes both as its defaults.

A card outside the catalogue (``--gpu-memory 23.58GiB``): ``custom(usable_bytes, base)`` keeps the
base card's peaks and links with the stated memory, or, without a base, a memory-only card whose
peaks are unknown (``peak`` refuses).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from importlib import resources

from ..core.errors import SymcostError


@dataclass(frozen=True)
class GPU:
    name: str
    memory_gib: int
    bandwidth_tbs: float  # HBM, 10^12 bytes/s
    bf16_tflops: float  # dense
    fp8_tflops: float | None  # dense; None where the part has no FP8 tensor cores
    link_gbs: float  # per-GPU scale-up bandwidth, one direction, 10^9 bytes/s
    link: str
    driver_bytes: int | None = None
    peak_tflops: dict = field(default_factory=dict)
    source: str = ""
    nvlink_domain: int = 1  # GPUs in one scale-up (NVLink / Infinity Fabric) domain
    scaleout_gbs: float = 50.0  # per-GPU scale-out bandwidth, 10^9 B/s one direction

    @property
    def memory_bytes(self) -> int:
        return self.memory_gib * 2**30

    @property
    def usable_bytes(self) -> int:
        return self.driver_bytes if self.driver_bytes is not None else self.memory_bytes

    @property
    def usable_measured(self) -> bool:
        return self.driver_bytes is not None

    @property
    def bandwidth_bytes_per_s(self) -> int:
        return round(self.bandwidth_tbs * 10**12)

    def peak(self, dtype: str) -> tuple[int, str]:
        """(dense FLOP/s, the dtype whose peak it is): fp4 falls back to fp8, fp8 to bf16 where
        the part lacks them, and the label says which was used."""
        if self.bf16_tflops is None:
            raise SymcostError(f"--gpu-memory: {self.name} has no peak FLOP/s (memory only); name a base "
                               "card with --gpu for its peaks")
        order = {"fp4": ["fp4", "fp8", "bf16"], "fp8": ["fp8", "bf16"]}.get(dtype, ["bf16"])
        for d in order:
            if d in self.peak_tflops:
                return round(self.peak_tflops[d] * 10**12), d
        return round(self.bf16_tflops * 10**12), "bf16"


def _load() -> tuple[dict[str, GPU], dict[str, str]]:
    data = json.loads((resources.files("symcost.hardware") / "gpus.json").read_text(encoding="utf-8"))
    cat = {}
    for g in data["gpus"]:
        p = g["peak_tflops"]
        cat[g["name"]] = GPU(g["name"], g["memory_gib"], g["bandwidth_tbs"], p["bf16"], p.get("fp8"),
                             g["link_gbs"], g["link"], g.get("usable_bytes"), dict(p), g.get("source", ""),
                             int(g["nvlink_domain"]), float(g["scaleout_gbs"]))
    aliases = {n.lower(): n for n in cat} | {k.lower(): v for k, v in data.get("aliases", {}).items()}
    return cat, aliases


CATALOGUE, _ALIASES = _load()


def gpu(name: str) -> GPU:
    key = _ALIASES.get(name.lower())
    if key is None:
        raise SymcostError(f"--gpu: unknown GPU {name!r} (known: {', '.join(CATALOGUE)})")
    return CATALOGUE[key]


def custom(usable_bytes: int, base: GPU | None = None) -> GPU:
    """A card known only by the memory its driver reports (``--gpu-memory``): the base card's peaks,
    bandwidth and links when one is named, else a memory-only card (no peaks, one GPU per domain)."""
    if usable_bytes <= 0:
        raise SymcostError(f"--gpu-memory: must be positive, got {usable_bytes} bytes")
    gib = -(-usable_bytes // 2**30)
    if base is not None:
        return replace(base, name=f"{base.name} ({usable_bytes / 2**30:.2f} GiB)", memory_gib=gib,
                       driver_bytes=usable_bytes, source=f"--gpu-memory with {base.name}'s peaks and links")
    return GPU(f"custom ({usable_bytes / 2**30:.2f} GiB)", gib, 0.0, None, None, 0.0, "unknown", usable_bytes, {},
               "--gpu-memory: memory only, peaks unknown", 1, 0.0)
