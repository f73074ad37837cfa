"""The bandwidth-bound passes of PyTorch's ring attention (torchtitan's and FSDP2's context
parallelism), which the attention kernel's FLOPs do not carry.

``torch.distributed.tensor.experimental._context_parallel._attention`` (torch 2.13,
``_templated_ring_attention`` and its backward, ``_SDPAMerger``) runs, on each of the N_cp ring steps,
SDPA on the local queries against the K/V chunk received, and between the kernels eager passes over
the local tensors (``_ContextParallelOptions.convert_to_f32`` = True, the default):

  forward, each step i ≥ 1 (N_cp − 1 of them): the block output cast to fp32 (read 2 B, write 4 B per
      element), then ``out − sigmoid(lse_b − lse)·(out − out_b)`` in three fp32 passes (12 + 8 + 12 B),
      38 B per output element; with causal load balancing (round robin, torchtitan's default) the steps
      i > rank merge only the second half of the rows: on average (N_cp − 1)/2 of the steps, so the
      merged bytes are 3/4 of the full count. Each step but the last sends ``cat(k, v)``: a copy of the
      local K and V (4 B per element). The result is cast back to bf16 once (6 B per element).
  backward, each step i ≥ 1: the block's dQ added into the fp32 accumulator (read 2, read 4, write 4:
      10 B per element) and dK, dV likewise (10 B per element each), the K/V copy for the next send
      (4 B) and the fp32 dK/dV copy the gradient ring sends (8 B); the three accumulators cast back to
      bf16 at the end (6 B per element).

Per GQA/MHA attention layer and micro-batch on one GPU, with E = B·(T/N_cp)·H_q·D_h/N_tp output and
E_kv = B·(T/N_cp)·H_kv·D_h/N_tp key (and value) elements:

    Q_F = (N_cp − 1)·(3/4·38·E + 8·E_kv) + 6·E
    Q_B = (N_cp − 1)·(10·E + 20·E_kv + 8·E_kv + 16·E_kv) + 6·E + 12·E_kv

time Q/(BW·η_ew) at the ``elementwise`` row, as every bandwidth-bound pass (``compute``). Megatron's
context parallelism merges inside Transformer Engine's fused attention path and is not counted here.
Other mixers (MLA, sliding-window, linear attention) are left out: torch's ring attention is an SDPA
dispatch for full causal attention.
"""
from __future__ import annotations

from ..core.terms import exact

#: the frameworks whose context parallelism is torch's ring attention
RING_FRAMEWORKS = ("torchtitan", "fsdp2")


def _attention_layers(model) -> dict:
    """{group name: (E, E_kv) per token on one GPU at N_tp = 1}: H_q·D_h and H_kv·D_h of each
    group's full GQA/MHA attention (0 for groups without)."""
    out = {}
    for g in model.groups:
        e = ekv = 0
        for c in g.components:
            if type(c).__name__ == "Attention" and getattr(c, "W", None) is None:
                e += exact(c.H_q * c.D_h, model.values)
                ekv += exact(c.H_kv * c.D_h, model.values)
        out[g.name] = (e, ekv)
    return out


def per_layer_bytes(e_tok: int, ekv_tok: int, tokens, cp, tp) -> tuple:
    """(Q_F, Q_B) of one attention layer per micro-batch on one GPU (module docstring); ``tokens`` =
    B·T, numbers or NumPy arrays with ``cp`` and ``tp``."""
    E = tokens / cp * e_tok / tp
    Ekv = tokens / cp * ekv_tok / tp
    s = cp - 1
    fwd = s * (0.75 * 38 * E + 8 * Ekv) + 6 * E
    bwd = s * (10 * E + 44 * Ekv) + 6 * E + 12 * Ekv
    return fwd * (cp > 1), bwd * (cp > 1)


def rank_bytes(model, setup, layers: dict) -> tuple[float, float]:
    """(forward, backward) bytes of the ring's passes on one pipeline rank (``layers``: group ->
    its layers on the rank) per micro-batch; 0 outside torch's ring attention."""
    p = setup.plan
    if p.cp == 1 or setup.states.framework not in RING_FRAMEWORKS:
        return 0.0, 0.0
    att = _attention_layers(model)
    f = b = 0.0
    for g, n in layers.items():
        e, ekv = att.get(g, (0, 0))
        if n and e:
            qf, qb = per_layer_bytes(e, ekv, setup.micro_batch * setup.seq, p.cp, p.tp)
            f, b = f + n * qf, b + n * qb
    return float(f), float(b)


def attention_shapes(model) -> dict:
    """``_attention_layers``, for ``search``'s arrays."""
    return _attention_layers(model)

