"""Activation offload to the host (``--offload-activations N``): the saved activations of N decoder
layers of each pipeline stage leave the GPU after their forward and come back for their backward.

Megatron-LM's ``--cpu-offloading`` with ``--cpu-offloading-num-layers N`` (``TransformerConfig.
cpu_offloading_num_layers``: "the number of transformer layers for which activations has to be
offloaded", 0 ≤ N < the layers; Transformer Engine's ``get_cpu_offload_context``, its layers
offloaded in forward order, the first N of the model chunk), as Megatron-Bridge runs it
(``cpu_offloading_weights=False``: only activations). Per GPU, with A_l the bytes layer l keeps
for its backward (under the recompute mode), per micro-batch in flight:

    on GPU   Σ_{l kept} A_l  +  max_{l offloaded} A_l          (the layers kept on GPU, plus one
                                                               offloaded layer in transit: its copy
                                                               to the host overlaps the next layer's
                                                               forward, its reload the previous
                                                               layer's backward — counted once per
                                                               stage, not per micro-batch)
    on host  Σ_{l offloaded} A_l per micro-batch in flight     (pinned host memory, ``host_activations``)

The embedding's, the final norm's, the head's and the loss's tensors stay on the GPU, as does a
layer's backward working set (gradient buffers, a recomputed layer's saved set). ``-1`` (the
option's ``all``) offloads all but the last layer of each stage, Megatron's largest N.
"""
from __future__ import annotations

import sympy

from ..core.errors import SymcostError
from ..core.terms import largest


def layers_offloaded(setup, n_layers: int) -> int:
    """N of a stage holding ``n_layers`` decoder layers (``setup.act_offload``; -1: all but one)."""
    n = setup.act_offload
    if n is None:
        return 0
    return max(n_layers - 1, 0) if n == -1 else n


def check(model, setup) -> None:
    """Megatron's constraint: N below the layers of every pipeline stage; not with full recompute
    (nothing but each layer's input is saved: Megatron asserts ``cpu_offloading`` and
    ``recompute_granularity`` apart)."""
    from .plan import stages
    n = setup.act_offload
    if n is not None and n != -1 and n < 1:
        raise SymcostError(f"--offload-activations: a number of layers >= 1, or all, got {n}")
    if n is not None and setup.recompute.mode == "full":
        raise SymcostError("--offload-activations with --recompute full: Megatron refuses CPU offloading "
                           "with full recomputation (only the layer inputs are saved)")
    if n is None or n == -1:
        return
    pp, v = setup.plan.pp, setup.virtual
    sizes = [len(st["layer_ids"]) for st in stages(model, pp * v, setup.plan.chunk_sizes(model.n_layers(), v))]
    if n >= min(sizes):
        raise SymcostError(f"--offload-activations {n} must be below the decoder layers of every model chunk "
                           f"(the smallest holds {min(sizes)}; Megatron's cpu_offloading_num_layers < num_layers)")


def split(kept: list, setup) -> tuple[list, object, object]:
    """(the per-layer kept bytes with the offloaded layers' set to 0, the bytes in transit (the largest
    offloaded layer's), the offloaded bytes per micro-batch) of one model chunk's layers: numbers, or
    formulas in the layout and T, B (then the largest is ``Max``: the layers of a hybrid stack --
    Mamba, attention, MoE -- keep sets no order of the symbols ranks)."""
    n = layers_offloaded(setup, len(kept))
    if n == 0:
        return list(kept), 0, 0
    off = kept[:n]
    symbolic = any(isinstance(x, sympy.Basic) and x.free_symbols for x in off)
    return [0] * n + list(kept[n:]), largest(*off) if symbolic else max(off), sum(off)
