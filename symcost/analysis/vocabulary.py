"""The metric names every symbolic and plotting command takes (``check``, ``scale``, ``export``,
``crossover``, ``plot``): one table, one meaning per name, one ``--help`` text (issue 27).

A name is a quantity; ``--phase`` says which step of FLOPs (``--metric flops --phase decode`` is the
FLOPs of one decode step everywhere, ``--phase prefill`` those of a prompt of T tokens). Older
spellings stay as aliases of a (name, phase): ``decode_flops`` is ``flops --phase decode``.
``plot`` draws the names that are functions of T alone once the config is substituted; the serving
and training metrics depend on the layout and the card as well, and it says so.
"""
from __future__ import annotations

from ..core.errors import SymcostError
from .metrics import METRICS as LAYOUT_METRICS

#: name -> what it counts (the unit), in the order ``--help`` lists them
METRICS = {"params": "parameters", "active": "active parameters per token",
           "flops": "forward matmul FLOPs (--phase prefill: a prompt of T; decode: one step at T)",
           "flops_per_token": "prefill FLOPs / (B·T), per prompt token",
           "cache": "cache elements", "cache_bytes": "cache bytes (b_kv per KV element, b_state per fp32 state element)",
           "weights_bytes": "weight bytes (b_w per parameter)", **LAYOUT_METRICS}
#: older names, each a (metric, phase) of the table
ALIASES = {"decode_flops": ("flops", "decode")}
#: every name ``--metric`` accepts
CHOICES = (*METRICS, *ALIASES)
HELP = ("; ".join(f"{k}: {v}" for k, v in METRICS.items())
        + "; " + "; ".join(f"{k}: --metric {m} --phase {p}" for k, (m, p) in ALIASES.items()))
#: the names ``plot`` draws against T, by (name, phase) -> its curve (``documents.plot.metric_expr``)
PLOTTED = {("flops", "decode"): "decode_flops", ("flops", "prefill"): "prefill_flops",
           ("flops_per_token", None): "flops_per_token", ("cache_bytes", None): "cache_bytes",
           ("cache", None): "cache"}
#: the names with a phase
PHASED = ("flops",)


def resolve(name: str, phase: str | None, command: str) -> tuple[str, str | None]:
    """(metric, phase) that ``--metric name [--phase phase]`` means for ``command``; aliases unfolded,
    a phase the name has no use for, or a name the command cannot take, refused naming the option."""
    if name in ALIASES:
        metric, own = ALIASES[name]
        if phase is not None and phase != own:
            raise SymcostError(f"--phase {phase}: --metric {name} is --metric {metric} --phase {own}")
        name, phase = metric, own
    if name not in METRICS:
        raise SymcostError(f"--metric {name}: not a metric (choose from {', '.join(CHOICES)})")
    if command == "plot":
        if name in PHASED and phase is None:
            raise SymcostError(f"--metric {name}: give --phase decode (one step at context T) or prefill "
                               f"(a prompt of T tokens)")
        if name not in PHASED and phase is not None:
            raise SymcostError(f"--phase {phase}: --metric {name} has no phase to choose")
        if (name, phase if name in PHASED else None) not in PLOTTED:
            drawn = sorted({m for m, _ in PLOTTED})
            raise SymcostError(f"--metric {name}: plot draws the metrics that are functions of T alone "
                               f"({', '.join(drawn)}); {name} is not one (check, scale, export and "
                               f"crossover take it)")
    return name, phase


def curve(name: str, phase: str | None) -> str:
    """The ``plot`` curve of a resolved (metric, phase)."""
    return PLOTTED[(name, phase if name in PHASED else None)]
