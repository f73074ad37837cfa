"""What each framework hides of a step's communication, and what stays exposed.

A collective hides behind compute that runs while it is in flight, and never behind more than that
compute: for a dimension with time t_c hidden behind a window of compute t_w,

    hidden = min(t_c, t_w),    exposed = t_c − hidden.

Per dimension, the window each framework gives it (keyed on the ``--framework`` name):

  dp, ZeRO-0/1/2  Megatron ``--overlap-grad-reduce`` (DDP buckets reduce-scattered, or all-reduced,
                  while the last micro-batch's backward runs) and ``--overlap-param-gather``
                  (the distributed optimizer's all-gather of updated parameters behind the next
                  step's first forward): the reduce share hides behind t_B of one micro-batch, the
                  gather share behind t_F of one (``distributed/param_and_grad_buffer.py``).
                  DeepSpeed ZeRO-1/2 ``overlap_comm``: the same reduce rule, the gather exposed.
  dp, ZeRO-3      FSDP2 / torchtitan / Megatron-FSDP / DeepSpeed ZeRO-3 prefetch the next unit's
                  all-gather during the current unit's compute and reduce-scatter each unit's
                  gradients behind the next unit's backward: per micro-batch the forward gathers
                  hide behind t_F, the backward gathers and reduce-scatters behind t_B, except
                  the first unit's gather of each pass (one layer's share, 1/ℓ, exposed).
  tp              Megatron with Transformer Engine's ``--tp-comm-overlap`` (userbuffers: the
                  all-gather / reduce-scatter of sequence parallelism pipelined with the GEMMs
                  they feed) — hides behind the GEMMs' time; torchtitan's async TP (opt-in) the
                  same; otherwise exposed.
  ep              Megatron ``--overlap-moe-expert-parallel-comm`` / DeepEP, DualPipe: the
                  all-to-alls of one micro-batch hide behind another's compute (t_F + t_B);
                  off by default except under DualPipe.
  cp              ring attention (Megatron's p2p CP, torchtitan's CP): each K/V chunk's send runs
                  behind the attention on the previous chunk — hides behind attention time.
  pp              the p2p sends of 1F1B run beside compute in the steady state (Megatron
                  ``overlap_p2p_comm`` with interleaving; batched isend/irecv otherwise): hidden
                  behind t_F + t_B when interleaved or zero-bubble/DualPipe, else exposed.
  host            CPU offload (``offload``): the gradient copies to the host behind the last
                  backward where the framework overlaps them (DeepSpeed ``overlap_comm``: ZeRO-3;
                  FSDP2, Megatron), the updated weights' copy back exposed.
  dp_replicate    HSDP's replica all-reduce hides like the reduce share of dp.

``hide`` overrides a dimension: True hides it behind its window, False exposes it whole.
"""
from __future__ import annotations

from ..core.errors import SymcostError
from .framework import FRAMEWORKS

#: dimensions each framework overlaps by default (beyond dp/cp/pp, which follow their rules)
DEFAULT_HIDE = {
    "megatron": {"tp": True, "ep": False},
    "deepspeed": {"tp": False, "ep": False},
    "fsdp2": {"tp": False, "ep": False},
    "torchtitan": {"tp": False, "ep": False},
    "hf": {"tp": False, "ep": False},
}
DEFAULT_HIDE[None] = DEFAULT_HIDE["megatron"]  # no --framework: symcost's own convention overlaps as Megatron does
DIMS = ("dp", "dp_replicate", "tp", "pp", "ep", "cp", "host")


def parse_hide(items) -> dict:
    """``--hide dp=on --hide ep=off ...`` (or ``dim`` alone = on) -> {dim: bool}; exit-2 message on
    a bad item."""
    out = {}
    for item in items or ():
        dim, _, val = item.partition("=")
        dim = dim.strip()
        if dim not in DIMS:
            raise SymcostError(f"--hide {item!r}: unknown dimension {dim!r} (one of {', '.join(DIMS)})")
        if val not in ("", "on", "off"):
            raise SymcostError(f"--hide {item!r}: the value must be on or off")
        out[dim] = val != "off"
    return out


def _split(t, window):
    hidden = min(t, max(window, 0.0))
    return t - hidden, hidden


def exposed(framework: str, comm_s: dict, *, t_F: float, t_B: float, t_gemm: float, t_attn: float, m: int,
            zero: int, layers: int, virtual: int = 1, schedule: str = "1f1b", grad_share: float = 0.5,
            hide: dict | None = None, host_hidden_share: float = 0.0) -> dict:
    """{dim: {"time_s", "exposed_s", "hidden_s", "rule"}} for one step: ``comm_s`` the seconds per
    dimension (``steptime``'s α–β per collective), t_F/t_B one micro-batch's forward/backward
    compute on the rank, t_gemm and t_attn the step's GEMM and attention compute, m micro-batches,
    ``layers`` the rank's layers (FSDP units), ``grad_share`` the reduce share of the ZeRO-1/2
    data-parallel bytes (b_g/(b_g + b_w)), ``host_hidden_share`` the share of the offload PCIe bytes
    that may run behind the last backward (``offload``: the gradient copies under ``overlap_comm``)."""
    if framework is not None and framework not in FRAMEWORKS:
        raise SymcostError(f"--framework: unknown {framework!r} ({', '.join(FRAMEWORKS)})")
    hide = dict(hide or {})
    default = dict(DEFAULT_HIDE[framework])
    if schedule == "dualpipe":
        default["ep"] = True
    out = {}
    for dim, t in comm_s.items():
        on = hide.get(dim, default.get(dim, True))
        if not on or t == 0:
            out[dim] = {"time_s": t, "exposed_s": t, "hidden_s": 0.0, "rule": "exposed" if t else "none"}
            continue
        if dim in ("dp", "dp_replicate"):
            if zero >= 3 and dim == "dp":
                first = t / max(2 * layers, 1)  # the first unit's gather of each pass
                e, h = _split(t - first, m * (t_F + t_B))
                e += first
                rule = "FSDP prefetch: gathers behind each unit's compute, reduce-scatter behind backward"
            else:
                share = 1.0 if zero == 0 else grad_share  # DDP: one gradient all-reduce, nothing gathered
                red, gat = t * share, t * (1 - share)
                e1, h1 = _split(red, t_B)
                if framework == "deepspeed":
                    e2, h2 = gat, 0.0
                else:
                    e2, h2 = _split(gat, t_F)
                e, h = e1 + e2, h1 + h2
                rule = ("gradient all-reduce behind the last backward" if zero == 0 else
                        "gradient reduce behind the last backward, parameter gather behind the first forward")
        elif dim == "tp":
            e, h = _split(t, t_gemm)
            rule = "TP comm overlap with the GEMMs"
        elif dim == "ep":
            e, h = _split(t, m * (t_F + t_B))
            rule = "all-to-all behind another micro-batch's compute"
        elif dim == "cp":
            e, h = _split(t, t_attn)
            rule = "ring attention: K/V sends behind attention"
        elif dim == "pp":
            if virtual > 1 or schedule in ("zb-h1", "dualpipe"):
                e, h = _split(t, m * (t_F + t_B))
                rule = "p2p beside steady-state compute"
            else:
                e, h = t, 0.0
                rule = "exposed (non-interleaved 1F1B)"
        elif dim == "host" and host_hidden_share:
            e, h = _split(t * host_hidden_share, t_B)
            e += t * (1 - host_hidden_share)
            rule = "offload: gradient copies behind the last backward (overlap_comm), weights back exposed"
        else:
            e, h = t, 0.0
            rule = "exposed"
        out[dim] = {"time_s": t, "exposed_s": e, "hidden_s": h, "rule": rule}
    return out
