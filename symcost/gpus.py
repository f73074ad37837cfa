"""A small GPU catalogue, as data: memory, bandwidth, dense throughput, interconnect.

Throughputs are dense (no 2:4 sparsity) tensor-core peaks from the vendors' datasheets.
Memory: the vendors' "80 GB" / "141 GB" are in practice GiB-sized (nvidia-smi reports
81,559 MiB on an H100 80GB), so ``memory_gib`` is multiplied by 2^30; bandwidths are decimal
(TB/s = 10^12 B/s). Numbers are the SXM/OAM parts unless the name says PCIe.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import SymcostError


@dataclass(frozen=True)
class GPU:
    name: str
    memory_gib: int
    bandwidth_tbs: float  # HBM, 10^12 bytes/s
    bf16_tflops: float  # dense
    fp8_tflops: float | None  # dense; None where the part has no FP8 tensor cores
    link_gbs: float  # per-GPU scale-up bandwidth, one direction, 10^9 bytes/s
    link: str

    @property
    def memory_bytes(self) -> int:
        return self.memory_gib * 2**30


CATALOGUE: dict[str, GPU] = {g.name: g for g in (
    GPU("A100-40GB", 40, 1.555, 312, None, 300, "NVLink 3"),
    GPU("A100-80GB", 80, 2.039, 312, None, 300, "NVLink 3"),
    GPU("H100", 80, 3.35, 989, 1979, 450, "NVLink 4"),
    GPU("H100-PCIe", 80, 2.0, 756, 1513, 64, "PCIe 5"),
    # H800 SXM: the H100 die with NVLink cut to 400 GB/s bidirectional (200 one way); NVIDIA H800
    # datasheet; DeepSeek-V3 technical report §3.1 (2,048 H800s, NVLink 160 GB/s achieved)
    GPU("H800", 80, 3.35, 989, 1979, 200, "NVLink 4 (400 GB/s bidirectional)"),
    GPU("H20", 96, 4.0, 148, 296, 450, "NVLink 4"),
    GPU("H200", 141, 4.8, 989, 1979, 450, "NVLink 4"),
    GPU("B200", 180, 8.0, 2250, 4500, 900, "NVLink 5"),
    GPU("GB200", 186, 8.0, 2500, 5000, 900, "NVLink 5"),
    GPU("L40S", 48, 0.864, 362, 733, 32, "PCIe 4"),
    GPU("MI300X", 192, 5.3, 1307, 2615, 448, "Infinity Fabric"),
    GPU("MI325X", 256, 6.0, 1307, 2615, 448, "Infinity Fabric"),
)}
_ALIASES = {n.lower(): n for n in CATALOGUE} | {"a100": "A100-80GB", "h100-sxm": "H100"}


def gpu(name: str) -> GPU:
    key = _ALIASES.get(name.lower())
    if key is None:
        raise SymcostError(f"--gpu: unknown GPU {name!r} (known: {', '.join(CATALOGUE)})")
    return CATALOGUE[key]
