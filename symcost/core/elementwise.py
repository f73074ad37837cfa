"""Elementwise work: norms, activations, softmax, RoPE, residual adds — a separate, optional group.

The matmul total (``conventions``; what ``torch.utils.flop_counter.FlopCounterMode`` measures)
counts these as 0. ``Model.elementwise(ph)`` reports them beside it, never inside it, under the
convention below. It is a convention, not a measurement: kernels fuse, recompute and vectorise
this work differently, and no counter in the oracle tests checks it.

Counting rule: one FLOP per arithmetic operation on one element; a transcendental (exp, log,
tanh, erf, rsqrt) or a comparison counts as one; a reduction over n elements counts n. Not
counted: work done once per row (a norm's rsqrt, a softmax's reciprocal), once per position for
all layers (the RoPE cos/sin table), bias adds, the score scaling 1/√D_h and masking, casts,
copies, index ops, top-k selection, sign flips, dropout.

``COST`` (FLOPs per element), operation by operation:

=============  =====  ==============================================================================
name           FLOPs  operations
=============  =====  ==============================================================================
rmsnorm        4      square, sum, scale by rsqrt(mean), scale by weight
layernorm      7      sum (mean), subtract, square, sum (variance), scale by rsqrt, weight, bias
l2norm         3      square, sum, scale by rsqrt (Gated DeltaNet q and k)
silu           4      negate, exp, add 1, divide: x / (1 + e^-x)
sigmoid        4      negate, exp, add 1, reciprocal
gelu_tanh      8      x², ·c₂, +c₁, ·x (Horner form of √(2/π)(x + 0.044715x³)), tanh, +1, ·x, ·½
gelu           5      ·1/√2, erf, +1, ·x, ·½ (exact GELU)
relu           1      max(x, 0)
relu2          2      max(x, 0), square (Nemotron-H)
situ           8      Kimi K3's SiTU gate half: ·1/β, tanh, ·β, sigmoid (4), product: β·tanh(x/β)·σ(x)
situ_lin       11     SiTU with activation_situ_linear_beta: + the up half's β_l·tanh(up/β_l) (3)
xielu          12     both branches of torch.where (Apertus): x > 0; α_p·x·x + β·x (4);
                      (expm1(min(x, ε)) − x)·α_n + β·x (6); the select
softplus       3      exp, add 1, log
gate_mul       1      the product of a GLU's two halves, or of any gate with its input
softmax        5      per score: max, subtract, exp, sum, divide
router         5      per expert logit: softmax (5), or sigmoid (4) + correction-bias add (1)
rope           3      per rotated element of q and k: x·cos + rotate_half(x)·sin (2 multiplies, 1 add)
residual       1      per element of d, once per sublayer (mixer or FFN) the residual stream adds
moe_combine    2      per element of each routed expert output: scale by its weight, add into the sum
=============  =====  ==============================================================================

Where the numbers come from: the per-operation tally is the style of the hand estimates that
leave these terms out of the matmul count as sub-leading (Kaplan et al. 2020, "Scaling Laws for
Neural Language Models", §2.1 and Table 1; the PaLM paper's appendix on model FLOPs utilization;
kipply's "Transformer inference arithmetic"), written out per element so that the size of what
they drop can be seen. Profilers that count functional ops use cheaper per-element constants:
DeepSpeed's flops profiler (``deepspeed/profiling/flops_profiler/profiler.py``, reused by
calflops) counts ``layer_norm`` 5 per element with an affine weight (4 without) and ``softmax``,
``relu``, ``gelu``, ``silu`` 1 per element. Either convention is a choice; this one is stated
here, in one table, so that every component reads its constants from it.

Coverage (each component's module says what it adds; see ``Component.elementwise``): the
generic default counts the norms a component declares (``Norm`` primitives), each over the
phase's token rows. Attention adds softmax over the same (query, key) pairs its QKᵀ matmul uses,
RoPE on q and k, per-head q/k norms, the output gate, one residual; MLA the same with RoPE on
D_rope; FFN and MoE their activations, gate products, router scores and combine; Mamba-2 and
Gated DeltaNet their conv activation, gates, gated norm, skip and scan decays. DeepSeek-V4
compressed attention and indexers, the MSA indexer, hyper-connections and hash routing get the
generic norms only; vision towers do no work on a text pass (0).

>>> COST["rmsnorm"], COST["softmax"], act_cost("gelu_pytorch_tanh")
(4, 5, 8)
"""
from __future__ import annotations

import sympy

from .primitives import Linear, Param
from .terms import Terms

#: FLOPs per element of each elementwise operation (the table above).
COST: dict[str, int] = {
    "rmsnorm": 4, "layernorm": 7, "l2norm": 3,
    "silu": 4, "sigmoid": 4, "gelu_tanh": 8, "gelu": 5, "relu": 1, "relu2": 2, "xielu": 12,
    "situ": 8, "situ_lin": 11, "softplus": 3,
    "gate_mul": 1, "softmax": 5, "router": 5, "rope": 3, "residual": 1, "moe_combine": 2,
}

#: transformers' ``hidden_act`` names → the table's activation.
ACT_ALIASES: dict[str, str] = {
    "silu": "silu", "swish": "silu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh",
    "gelu_fast": "gelu_tanh", "gelu_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu",
    "relu2": "relu2", "sigmoid": "sigmoid", "xielu": "xielu", "situ": "situ",
    "situ_lin": "situ_lin",
}

CONVENTION = ("elementwise FLOPs, a convention (symcost.core.elementwise.COST), not a measurement: "
              "1 FLOP per arithmetic op per element; RMSNorm 4, LayerNorm 7, SiLU 4, GELU-tanh 8, "
              "ReLU² 2, GLU gate product 1, softmax 5 per score over the matmul's (query, key) "
              "pairs, RoPE 3 per rotated q/k element, residual add 1 per element of d, router 5 "
              "per expert, MoE combine 2 per routed output element; never part of the matmul total")


def act_cost(act: str) -> int:
    """FLOPs per element of an activation, by table name or transformers ``hidden_act`` name."""
    try:
        return COST[ACT_ALIASES[act]]
    except KeyError:
        raise ValueError(f"no elementwise cost for activation {act!r}") from None


def norm_terms(prims, rows: sympy.Expr) -> Terms:
    """Each ``Norm`` primitive applied once per row over its width (LayerNorm stores 2·width).

    A component whose weight GEMMs all run over 0 rows in the pass (a vision tower on a text
    pass) does no elementwise work either.
    """
    linears = [p for p in prims if isinstance(p, Linear)]
    if linears and all(p.flops(rows) == 0 for p in linears):
        return Terms()
    t = Terms()
    for p in prims:
        if isinstance(p, Param) and p.norm is not None:
            width = p.numel / 2 if p.norm == "layer" else p.numel
            cost = COST["layernorm" if p.norm == "layer" else "rmsnorm"]
            t.add(p.name, cost * rows * width, f"{'LayerNorm' if p.norm == 'layer' else 'RMSNorm'}: "
                  f"{cost} per element")
    return t
