"""Megatron-LM's full-recomputation methods: which decoder layers a model chunk recomputes; and
torchtitan's op-level selective checkpointing (``op``: ``activations.op_saved`` per layer, one
layer's recomputed saved set alive at a time in backward, like full's working set).

``--recompute-granularity full`` checkpoints whole layers; ``--recompute-method`` and
``--recompute-num-layers N`` say which (Megatron-core ``TransformerBlock._checkpointed_forward``,
applied to each model chunk: a pipeline stage, or one virtual stage under interleaving):

* ``uniform`` (Megatron's default method): the chunk's layers in consecutive groups of N, each
  group one checkpoint — its input is kept, and in backward the whole group is recomputed, so its
  N layers' saved sets are alive together. N = 1 is the usual per-layer full recomputation (what
  transformers' gradient checkpointing does).
* ``block``: only the chunk's first N layers are checkpointed (each its own checkpoint); the
  others keep their whole saved set and are not recomputed — a middle ground between none and full.
* ``every``: torchtitan's selective layer checkpointing (``selective_ac_option = N``,
  ``_apply_ac_to_transformer_block``): every N-th block (the N-th, 2N-th, ... of the chunk) is
  checkpointed whole, the others keep their saved set; the formulas are block's, with that set.

Per chunk, with in_i the bytes a checkpoint of layer i keeps (its input), s_i its saved set without
recomputation and w_i its working buffers outside the saved set (EP dispatch):

    uniform N:  held = Σ_groups in_first(group),   working = max_group (Σ_{i∈group} s_i + max_{i∈group} w_i)
    block N:    held = Σ_{i<N} in_i + Σ_{i≥N} s_i, working = max(max_{i<N} (s_i + w_i), max_{i≥N} w_i)

Recomputed layers run their forward twice: their FLOPs (``flops.train_flops``) and their forward
collectives (``comm``) are counted again, the others' once.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.errors import SymcostError
from ..core.terms import largest

METHODS = ("uniform", "block", "every")


@dataclass(frozen=True)
class Recompute:
    """What a training step recomputes: ``mode`` none | selective | full, and under full Megatron's
    ``method`` and ``layers`` (N)."""

    mode: str = "none"
    method: str = "uniform"
    layers: int = 1
    modules: tuple | None = None  # Megatron's --recompute-modules under selective (None: core_attn)

    def check(self) -> None:
        if self.mode not in ("none", "selective", "full", "op"):
            raise SymcostError(f"--recompute: unknown mode {self.mode!r}")
        if self.method not in METHODS:
            raise SymcostError(f"--recompute-method: must be one of {', '.join(METHODS)}, got {self.method!r}")
        if isinstance(self.layers, bool) or not isinstance(self.layers, int) or self.layers < 1:
            raise SymcostError(f"--recompute-layers: must be a positive integer, got {self.layers!r}")
        if self.modules is not None:
            from .activations import RECOMPUTE_MODULES
            if self.mode != "selective":
                raise SymcostError("--recompute-modules applies to --recompute selective (Megatron's "
                                   "--recompute-granularity selective)")
            bad = [x for x in self.modules if x not in RECOMPUTE_MODULES]
            if bad or not self.modules:
                raise SymcostError(f"--recompute-modules: {', '.join(bad) or 'none given'} not modelled (symcost "
                                   f"models {', '.join(RECOMPUTE_MODULES)}; Megatron's shared_experts, "
                                   f"gdn/gdp and mhc modules are not)")
        if self.mode != "full" and (self.method, self.layers) != ("uniform", 1):
            raise SymcostError("--recompute-method / --recompute-layers apply to --recompute full only "
                               "(Megatron's --recompute-granularity full)")

    @property
    def per_layer(self) -> bool:
        """Plain full recomputation: every layer its own checkpoint (uniform, N = 1)."""
        return self.mode == "full" and self.method == "uniform" and self.layers == 1

    def describe(self) -> str:
        if self.modules is not None:
            return f"recompute=selective, modules {','.join(self.modules)} (Megatron's --recompute-modules)"
        if self.mode != "full" or self.per_layer:
            return f"recompute={self.mode}"
        if self.method == "uniform":
            return f"recompute=full, uniform: groups of {self.layers} layers per checkpoint"
        if self.method == "every":
            return f"recompute=full, every {self.layers}-th layer of each model chunk (torchtitan's selective layer AC)"
        return f"recompute=full, block: the first {self.layers} layers of each model chunk"

    def recomputed(self, n: int) -> list[bool]:
        """Which of a chunk's ``n`` layers (in order) run their forward again in backward."""
        if self.mode != "full":
            return [False] * n
        if self.method == "uniform":
            return [True] * n
        if self.method == "every":
            return [(i + 1) % self.layers == 0 for i in range(n)]
        return [i < self.layers for i in range(n)]

    def chunk(self, kept_in: list, saved: list, extra: list) -> tuple:
        """(bytes held for backward, working bytes at the backward's peak) of one model chunk whose
        layers, in order, keep ``kept_in`` as a checkpoint, ``saved`` without recomputation and
        ``extra`` in transient buffers (the formulas of the module docstring; under none or
        selective every layer keeps ``saved``). Numbers, or NumPy arrays (``train --search``)."""
        n = len(saved)
        if self.mode == "op":  # each layer keeps its op-level set; in backward one layer's recomputed ops are alive
            return sum(kept_in), _largest(saved[i] + extra[i] for i in range(n))
        if self.mode != "full":
            return sum(saved), _largest(extra)
        if self.method in ("block", "every"):
            r = self.recomputed(n)
            held = sum(kept_in[i] if r[i] else saved[i] for i in range(n))
            work = _largest((saved[i] if r[i] else 0) + extra[i] for i in range(n))
            return held, work
        groups = [range(i, min(i + self.layers, n)) for i in range(0, n, self.layers)]
        held = sum(kept_in[g[0]] for g in groups)
        work = _largest(sum(saved[i] for i in g) + _largest(extra[i] for i in g) for g in groups)
        return held, work


def _largest(xs):
    """The largest of non-negative numbers (0 for none), elementwise for NumPy arrays."""
    out = 0
    xs = list(xs)
    if any(isinstance(x, sympy.Basic) and not x.is_Number for x in xs):  # expressions (``memory.formula``)
        return largest(*xs)
    for x in xs:
        if hasattr(x, "shape") or hasattr(out, "shape"):
            import numpy  # lazy: only train --search passes arrays (numpy is optional)
            out = numpy.maximum(out, x)
        else:
            out = max(out, x)
    return out


def recomputed_units(model, rc: Recompute, chunks: list[dict]) -> list[dict[str, int]]:
    """For each model chunk (``plan.stages`` entries, with their ``layer_ids``), how many units of
    each layer group it recomputes (a unit: one entry of ``Model.layers()``' layer tuples)."""
    order = model.layers()
    out = []
    for ch in chunks:
        ids = ch["layer_ids"]
        counts: dict[str, int] = {}
        for i, again in zip(ids, rc.recomputed(len(ids))):
            if again:
                for g in order[i]:
                    counts[g.name] = counts.get(g.name, 0) + 1
        out.append(counts)
    return out


def add_up(per_chunk: list[dict[str, int]]) -> dict[str, int]:
    """The units of each group over several chunks."""
    out: dict[str, int] = {}
    for c in per_chunk:
        for k, n in c.items():
            out[k] = out.get(k, 0) + n
    return out
