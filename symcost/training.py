"""Training FLOPs per step, the published closed forms they are compared with, training memory.

Exact count (this engine): a training step runs the forward over ``B·T`` tokens, then the
backward, which for every matmul computes the input gradient and the weight gradient (or the
other operand's gradient for QKᵀ and PV), each as many FLOPs as the forward one:

    train = 3·F          F = forward FLOPs (prefill of T tokens, batch B, logits on all tokens)
    + F                  with full activation recomputation (the forward runs again)
    + F_attn             with selective recomputation (only QKᵀ and PV are recomputed)

Attention pairs are ``causal`` (exact, only unmasked pairs) unless ``full`` is asked for — what
FlopCounterMode measures on an eager model.

Presets reproduce the closed forms practitioners compare against, from their published sources:
``6ND`` (Kaplan et al.; N = active parameters), ``torchtitan`` (6·N_non-embedding +
12·L·H_q·D_h·T per token), ``megatron`` (Megatron-LM ``num_floating_point_operations``: ×3,
causal halved, router and norms not counted, MLA/MoE/latent-MoE/MTP/GDN/hybrid terms) and
``maxtext`` (MaxText ``calculate_tflops_training_per_device`` with the causal halving it applies
since mid-2025; router counted). Each is written here in the notation, from the model's values.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import ceil

import sympy

from .conventions import Phase
from .errors import SymcostError
from .notation import sym
from .terms import Terms, exact

B, T = sym.B, sym.T


def train_flops(model, *, attention: str = "causal", recompute: str = "none") -> Terms:
    """Training FLOPs of one step over B sequences of T tokens (symbolic, per term)."""
    fwd = model.flops(Phase(kind="prefill", attention=attention, logits="all"))
    out = Terms()
    out.add("forward", fwd, "F")
    out.add("backward", fwd.scale(2), "2·F: input and weight gradients")
    if recompute == "full":
        out.add("recompute", fwd.copy(), "F: full activation recomputation")
    elif recompute == "selective":
        core = Terms()
        for path, expr in fwd.flatten().items():
            if path.endswith("/scores") or path.endswith("/values"):
                core.add(path.replace("/", "."), expr)
        out.add("recompute", core, "QKᵀ and PV recomputed (selective)")
    elif recompute != "none":
        raise SymcostError(f"--recompute: unknown mode {recompute!r}")
    return out


# -- presets -------------------------------------------------------------------------------------
def _v(model, s, default=None):
    return sympy.Integer(model.values[s]) if s in model.values else default


def _count(model, *syms):
    return sum((sympy.Integer(model.values[s]) for s in syms if s in model.values), sympy.Integer(0))


def _non_embedding_active(model) -> sympy.Expr:
    t = model.active_params()
    emb = sum((v for k, v in t.flatten().items() if k.split("/")[0] in ("embed_tokens", "wpe")),
              sympy.Integer(0))
    return t.total - emb


def preset_6nd(model) -> sympy.Expr:
    """6·N·D: N = active parameters (all of them for a dense model), D = B·T tokens."""
    return 6 * model.active_params().total * B * T


def preset_torchtitan(model) -> sympy.Expr:
    """torchtitan: per token 6·N_non-embedding + 12·L_attn·H_q·D_h·T; × B·T tokens."""
    attn_layers = _attention_layers(model)
    H_q, D_h = sym.H_q, sym.D_h
    if sym.D_nope in model.values:  # MLA: torchtitan uses qk head dim
        D_h = sym.D_nope + sym.D_rope
    return (6 * _non_embedding_active(model) + 12 * attn_layers * H_q * D_h * T) * B * T


def _attention_layers(model) -> sympy.Expr:
    total = sympy.Integer(0)
    for g in model.groups:
        if any(c.key == "self_attn" for c in g.components):
            total += g.count
    return total


def _layers_with(model, key_pred) -> sympy.Expr:
    total = sympy.Integer(0)
    for g in model.groups:
        if any(key_pred(c) for c in g.components):
            total += g.count
    return total


def preset_megatron(model) -> sympy.Expr:
    """Megatron-LM ``num_floating_point_operations`` (standard-transformer path), in notation.

    3 (fwd+wgrad+dgrad) · 2 (FMA) · B·T · [ d·(f·d_ff·L_dense + f·(k·d_moe + d_sh)·L_moe)
      + L_attn·(d·(H_q+2·H_kv)·D_h + H_q·D_h·T/2·2 + H_q·D_h·d) + d·V·(1 + MTP) ]
    with f = 3 (SwiGLU) or 2; MLA replaces the attention term by its projections and
    T·H_q·(D_nope+D_rope)/2 + T·H_q·D_v/2. The router and norms are not counted.
    """
    from .components.attention import Attention
    from .components.ffn import FFN
    from .components.moe import MoE
    total = sympy.Integer(0)
    for g in model.groups:
        per = sympy.Integer(0)
        for c in g.components:
            if isinstance(c, Attention):
                q = c.H_q * c.D_h
                kv = c.H_kv * c.D_h
                gate = q if c.output_gate else 0
                per += c.d * (q + 2 * kv + gate) + q * T / 2 * 2 + q * c.d
            elif isinstance(c, FFN):
                per += c.d * c.d_ff * (3 if c.gated else 2)
            elif isinstance(c, MoE):
                f = 3 if c.gated else 2
                if c.d_lat is None:
                    per += c.d * c.d_moe * c.k * f
                else:
                    per += c.d_lat * c.d_moe * c.k * f + 2 * c.d * c.d_lat
                if c.d_sh is not None:
                    per += c.d * c.d_sh * (3 if c.shared_gated else 2)
            elif c.key in ("norms",):
                continue
            else:
                mech = getattr(c, "megatron_flops", None)
                if mech is None:
                    raise SymcostError(f"the megatron preset has no term for {c.label()}")
                per += mech()
        total += g.count * per
    return 3 * 2 * B * T * (total + sym.d * sym.V)


def preset_maxtext(model) -> sympy.Expr:
    """MaxText ``calculate_tflops_training_per_device`` × devices (the whole step), in notation.

    3·[L·(ffn + qkv + proj) + 2·B·T·d·V] + 3·L·(4·B·T²·H_q·D_h)/2, with
    ffn = 2·B·T·d·d_ff·(3|2), MoE ffn = 2·B·T·d·(E + (k·d_moe + d_sh)·(3|2)) (router counted),
    qkv = 2·B·T·d·(H_q + 2·H_kv)·D_h, proj = 2·B·T·d·H_q·D_h; causal attention halved.
    """
    from .components.attention import Attention
    from .components.ffn import FFN
    from .components.moe import MoE
    weights = sympy.Integer(0)
    attention = sympy.Integer(0)
    for g in model.groups:
        for c in g.components:
            if isinstance(c, Attention):
                weights += g.count * 2 * B * T * c.d * (c.H_q + 2 * c.H_kv) * c.D_h
                weights += g.count * 2 * B * T * c.d * c.H_q * c.D_h
                attention += g.count * 4 * B * T * T * c.H_q * c.D_h / 2
            elif isinstance(c, FFN):
                weights += g.count * 2 * B * T * c.d * c.d_ff * (3 if c.gated else 2)
            elif isinstance(c, MoE):
                f = 3 if c.gated else 2
                sh = c.d_sh * (3 if c.shared_gated else 2) if c.d_sh is not None else 0
                weights += g.count * 2 * B * T * c.d * (c.E + c.k * c.d_moe * f + sh)
            elif c.key == "norms":
                continue
            else:
                raise SymcostError(f"the maxtext preset has no term for {c.label()}")
    return 3 * (weights + 2 * B * T * sym.d * sym.V) + 3 * attention


PRESETS = {
    "6ND": preset_6nd,
    "torchtitan": preset_torchtitan,
    "megatron": preset_megatron,
    "maxtext": preset_maxtext,
}


def compare_presets(model, seq: int, batch: int) -> list[dict]:
    """Every convention's training FLOPs for one step, side by side with the exact counts."""
    vals = model.values_with(T=seq, B=batch)
    rows = []
    exact_causal = train_flops(model, attention="causal").total
    exact_full = train_flops(model, attention="full").total
    rows.append({"preset": "exact (causal)", "flops": exact(exact_causal, vals),
                 "formula": str(sympy.expand(exact_causal.xreplace(model.values))),
                 "note": "3 × forward, only unmasked (query, key) pairs, router and all matmuls"})
    rows.append({"preset": "flopcounter (full)", "flops": exact(exact_full, vals),
                 "formula": str(sympy.expand(exact_full.xreplace(model.values))),
                 "note": "what torch FlopCounterMode measures on the eager model: full T² rectangle"})
    base = rows[0]["flops"]
    for name, fn in PRESETS.items():
        try:
            expr = fn(model)
        except SymcostError as e:
            rows.append({"preset": name, "flops": None, "formula": None, "note": str(e)})
            continue
        value = sympy.sympify(expr).xreplace(vals)
        rows.append({"preset": name, "flops": int(sympy.floor(value)) if value.is_finite else None,
                     "formula": str(sympy.expand(sympy.sympify(expr).xreplace(model.values))),
                     "note": (fn.__doc__ or "").strip().splitlines()[0]})
    for r in rows:
        r["ratio_to_exact"] = (r["flops"] / base) if r["flops"] and base else None
    return rows


# -- training memory -----------------------------------------------------------------------------
OPTIMIZER_BYTES = {"adamw": 12, "sgd": 8}  # fp32 master + moments (m, v) | master + momentum


@dataclass
class TrainMemory:
    weights: int
    gradients: int
    optimizer: int
    activations: int
    per_gpu: int
    flops_per_step: int
    notes: list


def train_memory(model, *, seq: int, micro_batch: int, global_batch: int | None = None,
                 dp=1, tp=1, pp=1, ep=1, cp=1, zero=0, recompute="none",
                 optimizer="adamw") -> TrainMemory:
    """Per-GPU training memory (mixed precision, Rajbhandari et al. 2020 accounting).

    bf16 weights 2Ψ + bf16 gradients 2Ψ + optimizer KΨ (AdamW K=12: fp32 master, m, v), where Ψ
    is this GPU's share: non-expert params / (tp·pp), routed experts / (ep·tp·pp). ZeRO-1 shards
    the optimizer over dp, ZeRO-2 also gradients, ZeRO-3 also weights.
    Activations: an ESTIMATE per layer from Korthikanti et al. 2022 (GPT layer, 2-byte
    activations, sequence parallel): s·b·d·(34 + 5·H_q·s/d)/tp without recomputation,
    34·s·b·d/tp selective, 2·s·b·d full, × L layers held in flight on the first pipeline stage
    (1F1B), /cp for context parallelism.
    """
    from .memory import check_parallel
    if optimizer not in OPTIMIZER_BYTES:
        raise SymcostError(f"--optimizer: unknown optimizer {optimizer!r} (adamw, sgd)")
    if zero not in (0, 1, 2, 3):
        raise SymcostError(f"--zero: must be 0, 1, 2 or 3, got {zero}")
    if seq % cp:
        raise SymcostError(f"--cp {cp} does not divide --seq {seq}")
    check_parallel(model, tp, pp, ep)
    vals = model.values
    total = model.params().total_at(vals)
    routed = model.routed_params().total_at(vals)
    psi = ceil((total - routed) / (tp * pp) + routed / (ep * tp * pp))
    w, g, o = 2 * psi, 2 * psi, OPTIMIZER_BYTES[optimizer] * psi
    if zero >= 1:
        o = ceil(o / dp)
    if zero >= 2:
        g = ceil(g / dp)
    if zero >= 3:
        w = ceil(w / dp)
    d, H_q = exact(sym.d, vals), exact(sym.H_q, vals) if sym.H_q in vals else 1
    L = exact(sum((gr.count for gr in model.groups), sympy.Integer(0)), vals)
    s, b = seq // cp, micro_batch
    if recompute == "none":
        per_layer = s * b * d * (34 + 5 * H_q * s // d) // tp
    elif recompute == "selective":
        per_layer = 34 * s * b * d // tp
    elif recompute == "full":
        per_layer = 2 * s * b * d
    else:
        raise SymcostError(f"--recompute: unknown mode {recompute!r}")
    acts = per_layer * L
    gb = global_batch or micro_batch * dp
    flops = exact(train_flops(model, recompute=recompute).total, model.values_with(T=seq, B=gb))
    notes = ["activations: estimate (Korthikanti et al. 2022), not measured"]
    return TrainMemory(w, g, o, acts, w + g + o + acts, flops, notes)
