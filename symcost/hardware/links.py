"""A cluster's links, the α–β cost of one collective on them (serving and training share these).

    t = n·α + bytes/β        β = the GPU's scale-up (NVLink) bandwidth when the group's span fits in
                             one NVLink domain (``gpus_per_node``), else the per-GPU scale-out link
                             (InfiniBand/RoCE, ``ib_bytes_s``), for the expert all-to-all both at once
                             by its off-domain share (``link_bytes_s``); CPU offload's host traffic over PCIe

Functions take numbers or NumPy arrays (``train --search`` evaluates thousands of layouts at once).
"""
from __future__ import annotations

from dataclasses import dataclass


def _select(cond, a, b):
    if isinstance(cond, bool):
        return a if cond else b
    import numpy  # lazy: only train --search passes arrays (numpy is optional)
    return numpy.where(cond, a, b)


def link_bytes_s(dim: str, span, links: "Links"):
    """β of a dimension's group: NVLink when its ``span`` fits in a node, else the scale-out
    link; CPU offload's host traffic over PCIe. The expert all-to-all (``ep``) across NVLink domains
    of D GPUs: each rank exchanges equal shares with every other rank of its group (its span of
    whole domains, Megatron's rank order), a share f = (span − D)/(span − 1) of them off its domain
    over the scale-out link and the rest over NVLink at the same time, so
    β = 1 / max(f/β_net, (1 − f)/β_nvl) — not the whole volume at the scale-out rate."""
    if dim == "host":
        return links.pcie_bytes_s
    inside = span <= links.gpus_per_node
    if dim != "ep":
        return _select(inside, links.nvlink_bytes_s, links.ib_bytes_s)
    f = _select(inside, 0.0, (span - links.gpus_per_node) / _select(inside, 1, span - 1))
    t_net, t_nvl = f / links.ib_bytes_s, (1 - f) / links.nvlink_bytes_s
    return 1 / _select(t_net > t_nvl, t_net, t_nvl)


def ep_link_formula(span, domain, nvlink, net):
    """``link_bytes_s("ep", ...)`` as a formula (SymPy): ``nvlink`` while the group's ``span`` fits in one
    NVLink domain of ``domain`` GPUs, else 1 / max(f/``net``, (1 − f)/``nvlink``) with the off-domain share
    f = (span − D)/(span − 1) (the same mechanism; tests/test_links.py holds the two equal)."""
    import sympy
    f = (span - domain) / sympy.Max(span - 1, 1)
    split = 1 / sympy.Max(f / net, (1 - f) / nvlink)
    return sympy.Piecewise((nvlink, sympy.Le(span, domain)), (split, True))


def collective_seconds(nbytes, count, beta, alpha):
    """t_dim = n_dim·α + bytes_dim/β, 0 when the dimension sends nothing (numbers or arrays)."""
    return _select(nbytes > 0, count * alpha + nbytes / beta, 0.0)


@dataclass(frozen=True)
class Links:
    nvlink_bytes_s: float
    ib_bytes_s: float = 50e9  # 400 Gb/s per GPU (one NDR ConnectX-7 NIC per GPU)
    gpus_per_node: int = 8
    alpha_s: float = 10e-6  # per collective launch and hop latency
    pcie_bytes_s: float = 63e9  # host link per GPU and direction (PCIe 5.0 x16), for CPU offload

    @classmethod
    def of(cls, gpu, **rates) -> "Links":
        """The links of a cluster of ``gpu``: its catalogue NVLink inside its NVLink domain
        (``gpus_per_node`` = ``gpu.nvlink_domain``: 8 on HGX, 72 on NVL72, 1 for a PCIe card) and its
        catalogue scale-out NIC (``ib_bytes_s`` = ``gpu.scaleout_gbs``·10^9); explicit rates
        (``ib_bytes_s``, ``gpus_per_node``, ``alpha_s``, ``pcie_bytes_s``) override them."""
        rates.setdefault("gpus_per_node", gpu.nvlink_domain)
        rates.setdefault("ib_bytes_s", gpu.scaleout_gbs * 1e9)
        return cls(nvlink_bytes_s=gpu.link_gbs * 1e9, **rates)
