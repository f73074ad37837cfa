"""FP8 training's weight copies in memory (``--precision fp8|mxfp8``): what the framework keeps
beside the bf16 weights, per GPU, as its own breakdown line ``fp8_weights``.

    fp8_weights = 2·W_gemm (+ ⌈2·W_gemm/32⌉ e8m0 scales under mxfp8)      (Transformer Engine)
    fp8_weights = 0                                                     (torchao float8)

W_gemm: the GEMM weights on one GPU (each decoder layer's ``Linear`` primitives but the MoE router,
dense ones ÷ N_tp where the TP rule splits them, routed experts ÷ N_ep·N_tp; no biases, no
embedding, no LM head: those run in bf16, as ``--precision`` says of the step time).

  Transformer Engine (``megatron``, ``deepspeed`` and symcost's convention): every ``te.Linear``
  caches its FP8 weight and, for the backward's dgrad GEMM, its transpose across the
  micro-batches of a step (``transformer_engine/pytorch/module/base.py`` ``get_weight_workspace``
  with ``cache_name="weight"`` and ``update_workspace`` only on the first micro-batch; Megatron's
  ``keep_fp8_transpose_cache``), 1 B each per element: 2 B per parameter; MXFP8 adds one e8m0
  scale byte per 32 elements of each copy (``compute.fp8_weight_copy_bytes``). The weights are
  whole on the GPU at ZeRO ≤ 2; at ZeRO-3 the copies are of the gathered unit and live with it
  (counted 0 here: the cast is inside the unit's working set).
  torchao float8 (``fsdp2``, ``torchtitan``, ``hf``): ``Float8Linear`` casts the bf16/fp32 weight
  in every forward and again in backward (``float8_linear.matmul_with_hp_or_float8_args`` saves
  the high-precision weight, already a parameter), so no copy persists: 0. With
  ``--fp8-all-gather`` FSDP gathers fp8 weights (the step time's ``compute.fp8_all_gather_share``).
"""
from __future__ import annotations

from ..core.primitives import Linear
from .compute import fp8_weight_copy_bytes
from .plan import _split

#: conventions that keep persistent FP8 weight copies (Transformer Engine); the rest cast per GEMM
TE_FRAMEWORKS = (None, "megatron", "deepspeed")


def keeps_copies(setup) -> bool:
    return setup.precision != "bf16" and setup.states.framework in TE_FRAMEWORKS and setup.plan.zero < 3


def _gemm_weight(prim):
    """The weight elements of a GEMM FP8 training casts: a ``Linear``'s, not a tied head's nor the router's."""
    if not isinstance(prim, Linear) or prim.tied or prim.name == "router":
        return 0
    return prim.copies * prim.in_ * prim.out


def gemm_parts(model, layers: dict) -> list[tuple[int, int, int, int]]:
    """(count, TP-split, whole, routed) GEMM weight elements of each layer group of a rank holding
    ``layers`` ({group name: count}), towers left out (module docstring)."""
    v = model.values
    groups = {g.name: g for g in model.groups}
    out = []
    for name, count in layers.items():
        g = groups[name]
        if g.tower:
            continue
        split, whole, routed = _split(g.components, v, size=_gemm_weight)
        out.append((count, split, whole, routed))
    return out


def gemm_weights(model, setup, layers: dict, tp=None, ep=None):
    """W_gemm of one rank holding ``layers`` ({group name: count}): its GEMM weight elements on one
    GPU (module docstring), rounded up per group. ``tp``, ``ep``: the plan's, or arrays of them
    (``train --search``)."""
    tp = setup.plan.tp if tp is None else tp
    ep = setup.plan.ep if ep is None else ep
    return sum(count * (-(-split // tp) + whole + -(-routed // (ep * tp)))
               for count, split, whole, routed in gemm_parts(model, layers))


def weight_copies(model, setup, layers: dict) -> int:
    """Bytes of the FP8 weight copies one GPU of a rank holding ``layers`` keeps (module docstring)."""
    if not keeps_copies(setup):
        return 0
    return fp8_weight_copy_bytes(gemm_weights(model, setup, layers), setup.precision)


def describe(setup) -> str | None:
    if setup.precision == "bf16":
        return None
    if keeps_copies(setup):
        return (f"fp8_weights: Transformer Engine's cached {setup.precision} weight and transpose of every GEMM "
                f"weight (2 B/param{' + e8m0 scales 1/32 per copy' if setup.precision == 'mxfp8' else ''}; "
                f"router, embedding and LM head in bf16)")
    if setup.plan.zero == 3:
        return "fp8_weights: 0 at ZeRO-3 (the fp8 casts are of the gathered unit, inside its working set)"
    return "fp8_weights: 0 (torchao float8 casts the weight per GEMM, no copy persists)"
