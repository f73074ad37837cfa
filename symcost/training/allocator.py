"""PyTorch's CUDA caching allocator: bytes it keeps reserved beyond the tensors alive at the peak.

What torchtitan logs as a run's memory is ``torch.cuda.memory_stats()["reserved_bytes.all.peak"]``
(``torchtitan/components/metrics.py`` ``DeviceMemoryMonitor.get_peak_stats``, printed as
``memory: … GiB`` by the trainer; at the benchmarks' commit 9dec370 the same in
``torchtitan/metrics.py`` and ``train.py``), not the allocated bytes: the segments the allocator
obtained with ``cudaMalloc`` and caches, never returned without ``empty_cache()``. The rest of
``training`` counts the tensors alive at the peak; this module adds the free blocks the allocator
cannot use at that moment, from the allocator's rules (``c10/cuda/CUDACachingAllocator.cpp``):

- ``get_free_block``: a request is served by the smallest cached free block of the same stream that
  is at least as large (``pool.blocks.lower_bound``, best fit); a larger block is split.
- ``free_block`` / ``try_merge_blocks``: a freed block merges only with its free neighbours in the
  same segment; blocks of different segments never merge.
- ``alloc_block``: with no fitting free block a new segment of ``get_allocation_size(size)`` is
  obtained (sizes ≥ ``kMinLargeAlloc`` = 10 MiB rounded up to ``kRoundLarge`` = 2 MiB); cached
  blocks are released only when ``cudaMalloc`` fails (``release_available_cached_blocks``).

Two mechanisms are modelled. ``all_gather_pool``: the caching allocator keeps one pool per stream —
``get_free_block`` returns a block only to a request of the stream it was allocated on — and FSDP2
allocates each all-gather's output on its all-gather copy-in stream
(``torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py`` ``foreach_all_gather``:
``all_gather_output`` under ``device_handle.stream(all_gather_copy_in_stream)``), then copies it
out into the unsharded parameters on the compute stream (``foreach_all_gather_copy_out``). In
forward the previous group's output is freed only in the next group's ``wait_for_unshard``
(``_fsdp_param_group.py``: "save a reference to the current all-gather result to free after the
next copy-out"), after that group's output is allocated: two consecutive groups' outputs coexist.
That pool serves nothing else, so at the compute stream's peak it is reserved on top:

    all_gather_pool = b_p · (U_max + U_layer)       (b_p = 2: bf16 param_dtype)

U_max the largest wrapping unit on the GPU, U_layer the largest decoder layer (the neighbour of
every unit in forward order: the embedding and the head sit next to a layer, a layer next to a
layer). Exact for uniform stacks; an upper bound where the largest unit's neighbours are smaller
layers, or a rank holds a single unit (then b_p·U_max). Only where FSDP2 all-gathers: ZeRO-3 under ``--framework fsdp2`` or
``torchtitan`` with a shard group of more than one rank (``wait_for_unshard``'s world size 1 copies
the shard directly).

The other (``cached_logits``): torchtitan's training step computes the logits in the
compute dtype, upcasts them (``loss_fn``: ``cross_entropy(pred.flatten(0, 1).float(), labels)``)
and deletes ``pred`` before ``loss.backward()`` (``train.py``: "need to free to before bwd to avoid
peaking memory"). Each of the three [rows, V] tensors is larger than any other block of the step,
so each is its own segment. After the forward the bf16 logits' segment (b_a·V per row) and the fp32
upcast's (4·V) are free, the fp32 log-softmax (4·V) is saved. In the backward ``nll_loss_backward``'s
fp32 gradient (4·V) takes the upcast's block (best fit), and ``_log_softmax_backward_data``'s fp32
gradient (4·V) finds no free block that large: the bf16 block is too small, so a new segment is
reserved while the bf16 one stays cached — reserved = allocated + b_a·V per row at the loss peak:

    allocator_cached = b_a · rows · V / N_tp        (rows = B·T/N_cp, one micro-batch)

Under torchtitan's loss parallel (``activations.loss_peak`` kind "parallel") the same holds: the
forward allocates three fp32 blocks of one size (the upcast, x − max, its exp, whose block the
saved result then takes) and frees two; the backward's zeros_like and exp take those, their sum a
new segment, and the bf16 block stays cached. A compiled loss
(kind "compiled") saves the bf16 logits, so their block is never freed before backward: nothing cached.
Only where the logits are freed before backward (``Framework.logits_held`` False: torchtitan) and
the loss is not chunked: when the model's output keeps the logits (transformers) their block is
allocated, not cached, at the peak; a chunked loss allocates per chunk. Not modelled: the 2 MiB
rounding of each segment (at most 2 MiB per large tensor), fragmentation from the order of other
allocations across steps (the optimizer's lazily created moments placed in freed activation blocks),
and the reduce-scatter stream's pool (its outputs are the sharded gradients, counted, reused each
step at their own sizes).
"""
from __future__ import annotations

import sympy

from ..core.notation import sym

#: ``CUDACachingAllocator.cpp``: kRoundLarge (2 MiB), the segment granularity of large allocations
ROUND_LARGE = 2 * 2**20


def cached_logits(rows, V, tp=sym.N_tp) -> sympy.Expr:
    """The bf16 logits' segment the allocator keeps cached at the loss peak (module docstring): the
    logits [rows, V/N_tp] in the compute dtype (b_a), freed by ``del pred`` and too small for the
    backward's fp32 [rows, V/N_tp] gradient."""
    return rows * V * sym.b_a / tp


#: FSDP2 engines whose all-gathers run on their own copy-in stream (``all_gather_pool``)
FSDP2 = ("fsdp2", "torchtitan")


def all_gather_pool(units, layer_units, framework_name, zero: int, group: int) -> sympy.Expr:
    """FSDP2's all-gather output pool on one GPU (module docstring), in N_tp and N_ep: ``units`` the
    (split, whole, experts) parameters of the rank's wrapping units, ``layer_units`` its decoder
    layers', ``group`` the shard group's size (N_sh·N_cp)."""
    from .states import unit_params
    if zero < 3 or framework_name not in FSDP2 or group <= 1 or not units:
        return sympy.Integer(0)
    U = sympy.Max(*[unit_params(*u) for u in units])
    Ul = sympy.Max(*[unit_params(*u) for u in layer_units]) if layer_units else sympy.Integer(0)
    return 2 * (U + Ul)
