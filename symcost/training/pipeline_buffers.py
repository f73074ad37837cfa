"""``torch.distributed.pipelining``'s per-micro-batch communication buffers on each pipeline rank.

torchtitan runs pipeline parallelism with ``torch.distributed.pipelining`` (``PipelineStage`` and its
schedules); the stage keeps, beyond the activations its layers save (``activations``), tensors of
the stage boundary, X = one micro-batch's activation crossing it on one GPU:

    X = B · T/N_cp · d · b_a / (N_tp under sequence parallelism, else 1)

(the block output [B, T/N_cp, d] in the compute dtype; torchtitan's TP plan leaves it
sequence-sharded, ``Shard(1)``, as a local tensor under SP). From the stage's code
(``torch/distributed/pipelining/stage.py``, torch 2.13 as installed):

- ``_setup_forward_recv_info``: every non-first stage allocates one receive buffer per micro-batch
  (``args_recv_info[chunk_id]``, ``_make_tensor_from_meta``), kept across steps. The buffer is the
  stage's input, so for the micro-batches in flight it is the first layer's saved input, already
  counted; the other m − c are extra (c = the chunk's micro-batches in flight at the peak).
- ``_setup_backward_recv_info`` / ``_create_grad_recv_info``: every non-last stage allocates one
  gradient receive buffer per micro-batch (``grad_recv_info[mb_index]``): m.
- ``forward_one_chunk``: ``fwd_cache[fwd_chunk_id] = (output_tuple, inputs)`` keeps the stage's
  output until that micro-batch's backward pops it: c on a non-last stage (the last block's output
  is saved by no layer of this stage).

So a chunk holds (m − c) + m + c = 2m·X in the middle of the pipeline, m + c on the first chunk (no
receive buffers) and m − c on the last (no gradient buffers; its output is the logits, held through
the loss backward: ``activations.loss_peak`` with the logits held). Per rank: the sum over its
chunks (interleaving: rank r holds chunks r, r + N_pp, …, each a ``PipelineStage``). Applies to
``--framework torchtitan`` with N_pp > 1 (Megatron's p2p allocates its receive tensors per
communication; DualPipe is not run through these stages here).

Versions: torch before PR #164329 (Oct 2025) also kept each micro-batch's stage-input gradient
(``.grad`` of the receive buffer) until the next step's ``clear_runtime_states`` (m − c more on a
non-first stage, at most X·m), and torchtitan before ``return_outputs=False`` kept the last stage's
logits of every micro-batch in ``output_chunks``; neither is counted (the current code is).
"""
from __future__ import annotations

import sympy

from ..core.notation import sym


def boundary(sp: bool, tp=sym.N_tp, cp=sym.N_cp) -> sympy.Expr:
    """X: bytes of one micro-batch's stage-boundary activation on one GPU (module docstring)."""
    return sym.B * sym.T / cp * sym.d * sym.b_a / (tp if sp else 1)


def applies(framework_name, pp: int, schedule) -> bool:
    """Whether the rank holds ``torch.distributed.pipelining``'s buffers: torchtitan under PP."""
    return framework_name == "torchtitan" and pp > 1 and schedule != "dualpipe"


def count(pp: int, r: int, m: int, counts) -> sympy.Expr:
    """Boundary tensors X rank ``r`` of ``pp`` holds with m micro-batches, ``counts`` its chunks'
    micro-batches in flight at its peak (chunk j of rank r is the pipeline's chunk r + j·pp)."""
    v = len(counts)
    n = sympy.Integer(0)
    for j, c in enumerate(counts):
        gid = r + j * pp
        c = sympy.Rational(c)
        n += m + c if gid == 0 else m - c if gid == pp * v - 1 else 2 * m
    return n
