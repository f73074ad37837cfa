"""Training FLOPs per step, the published closed forms they are compared with, training memory.

Exact count (this engine): a training step runs the forward over ``B·T`` tokens, then the
backward, which for every matmul computes the input gradient and the weight gradient (or the
other operand's gradient for QKᵀ and PV), each as many FLOPs as the forward one:

    train = 3·F          F = forward FLOPs (prefill of T tokens, batch B, logits on all tokens)
    + F_layers           with full activation recomputation (the decoder layers' forward runs
                         again; the embedding, final norm, head and loss are not checkpointed —
                         Megatron recomputes inside its TransformerBlock, transformers its decoder
                         layers). Megatron's ``block`` method recomputes only some layers
                         (``recompute.Recompute``): Σ_groups r_g/n_g · F_group, r_g of its n_g layers
    + F_attn             with selective recomputation (only QKᵀ and PV are recomputed)

Attention pairs are ``causal`` (exact, only unmasked pairs) unless ``full`` is asked for — what
FlopCounterMode measures on an eager model.

Presets reproduce the closed forms practitioners compare against, from their published sources:
``6ND`` (Kaplan et al.; N = active parameters), ``torchtitan`` (6·N_non-embedding +
12·L·H_q·D_h·T per token, MLA 6·L·H_q·(D_nope+D_rope+D_v)·T, a tied head's GEMM added back), ``megatron`` (Megatron-LM ``num_floating_point_operations``: ×3,
causal halved, router and norms not counted, MLA/MoE/latent-MoE/MTP/GDN/hybrid terms) and
``maxtext`` (MaxText ``calculate_tflops_training_per_device`` with the causal halving it applies
since mid-2025; router counted). Each is written here in the notation, from the model's values.
"""
from __future__ import annotations

import sympy

from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead, PositionEmbedding
from ..components.ffn import FFN
from ..components.moe import MoE
from ..core.conventions import Phase
from ..core.errors import SymcostError
from ..core.notation import sym
from ..core.terms import Terms, exact
from .activations import routed_rows
from .mtp import MTP_GROUP

B, T = sym.B, sym.T


def train_flops(model, *, attention: str = "causal", recompute: str = "none",
                recomputed: dict[str, int] | None = None) -> Terms:
    """Training FLOPs of one step over B sequences of T tokens (symbolic, per term).
    ``recomputed``: under full recompute, how many layers of each group run their forward again
    (``recompute.recomputed_layers``; default all of them)."""
    fwd = model.flops(Phase(kind="prefill", attention=attention, logits="all"))
    out = Terms()
    out.add("forward", fwd, "F")
    out.add("backward", fwd.scale(2), "2·F: input and weight gradients")
    if recompute == "full":
        again = Terms()
        for g in model.groups:
            if g.name not in fwd or g.tower:
                continue
            n = exact(g.count, model.values)
            r = n if recomputed is None else recomputed.get(g.name, 0)
            if r:
                part, share = fwd[g.name], sympy.Rational(r, n)
                again.add(g.name, part.scale(share) if isinstance(part, Terms) else share * part,
                          f"{r} of {n} layers")
        out.add("recompute", again, "the decoder layers' forward again (full recomputation)")
    elif recompute == "selective":
        core = Terms()
        for path, expr in fwd.flatten().items():
            if path.endswith("/scores") or path.endswith("/values"):
                core.add(path.replace("/", "."), expr)
        out.add("recompute", core, "QKᵀ and PV recomputed (selective)")
    elif recompute != "none":
        raise SymcostError(f"--recompute: unknown mode {recompute!r}")
    return out


def padded_expert_flops(model, tree: Terms, capacity, *, seq: int, micro_batch: int, cp: int, routings: int):
    """Exact FLOPs of ``tree`` (a ``train_flops`` tree) when the routed experts run padded to
    capacity: each routed-expert leaf (``experts_*``, k·B·T rows) is charged per row, times the
    step's rows — ``routings`` = m·N_dp micro-batches, each routed by N_cp ranks of B·T/N_cp
    tokens, each rank's experts padded to E·⌈c_f·k·(B·T/N_cp)/E⌉ rows (``activations.routed_rows``;
    Megatron runs its grouped GEMMs on the padding). Other leaves at B = routings·micro_batch."""
    v1 = model.values_with(T=seq, B=1)
    k, E = v1[sym.k], v1[sym.E]
    rows = routings * cp * int(routed_rows(sympy.Integer(k), sympy.Integer(E),
                                           sympy.Integer(micro_batch * seq // cp), capacity))
    rest, per_row = padded_parts(model, tree, seq=seq, batch=micro_batch * routings)
    return int(rest + per_row * rows)


def padded_parts(model, tree: Terms, *, seq: int, batch: int) -> tuple[sympy.Rational, sympy.Rational]:
    """(FLOPs of the leaves other than the routed experts' at B = ``batch``, the routed experts'
    FLOPs per token row): ``padded_expert_flops`` is rest + per_row · the step's padded rows."""
    v1 = model.values_with(T=seq, B=1)
    vall = model.values_with(T=seq, B=batch)
    k = v1[sym.k]
    rest = per_row = sympy.Integer(0)
    for path, expr in tree.flatten().items():
        if path.rsplit("/", 1)[-1].startswith("experts_"):
            per_row += sympy.Rational(exact(expr, v1)) / (k * seq)
        else:
            rest += exact(expr, vall)
    return rest, per_row


# -- presets -------------------------------------------------------------------------------------
def _v(model, s, default=None):
    return sympy.Integer(model.values[s]) if s in model.values else default


def _count(model, *syms):
    return sum((sympy.Integer(model.values[s]) for s in syms if s in model.values), sympy.Integer(0))


def _non_embedding_active(model) -> sympy.Expr:
    """Active parameters minus the lookup tables (token and learned position embeddings)."""
    emb = sum((c.params().total for c in model.pre if isinstance(c, (Embedding, PositionEmbedding))),
              sympy.Integer(0))
    return model.active_params().total - emb


def preset_6nd(model) -> sympy.Expr:
    """6·N·D: N = active parameters (all of them for a dense model), D = B·T tokens."""
    return 6 * model.active_params().total * B * T


def preset_torchtitan(model) -> sympy.Expr:
    """torchtitan: per token 6·N_non-embedding + 12·L_attn·H_q·D_h·T (MLA: 6·L·H_q·(D_nope+D_rope+D_v)·T,
    torchtitan's DeepSeek-V3 term); a tied head's 6·d·V GEMM, which torchtitan loses by excluding
    the shared table as "embedding", is added back; × B·T tokens."""
    from ..components.mla import MLA  # lazy: presets only; train loads just its family
    attn = sympy.Integer(0)
    for g in model.groups:
        for c in g.components:
            if isinstance(c, Attention):
                attn += g.count * 12 * c.H_q * c.D_h * T
            elif isinstance(c, MLA):
                attn += g.count * 6 * c.H_q * (c.D_nope + c.D_rope + c.D_v) * T
    tied = sum((6 * c.d * c.V for c in model.post if isinstance(c, LMHead) and c.tied), sympy.Integer(0))
    # trained MTP modules (``mtp.with_mtp``): their parameters and attention are in the sums above; the
    # shared head's GEMM per module, which has no parameter of its own there, is added like a tied head's
    tied += sum((g.count * 6 * sym.d * sym.V for g in model.groups if g.name == MTP_GROUP), sympy.Integer(0))
    return (6 * _non_embedding_active(model) + tied + attn) * B * T


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


def _megatron_mtp(model) -> sympy.Expr:
    return sym.L_mtp if sym.L_mtp in model.values else sympy.Integer(0)


def preset_megatron(model, *, swiglu_only: bool = False) -> sympy.Expr:
    """Megatron-LM ``num_floating_point_operations``, its standard or hybrid path, in notation.

    ``swiglu_only``: the gate multiplier as the count behind Megatron-Bridge's published 25.11
    throughput tables takes it — from ``--swiglu``, so a GLU with another activation (GPT-OSS's
    clamped SwiGLU, ``MoESaves.glu == "clamped"``) counts as a two-matrix MLP (f = 2). That, with
    no sliding-window term (every layer full causal, as here), is the whole GPT-OSS difference:
    the published TFLOPS / tokens-per-second of the three GPT-OSS-120B rows in
    tests/data/training_throughput_measured.json are reproduced to < 0.5 %, and the exact count is
    1.12× (T = 8192) – 1.20× (T = 4096) of it — one third of the routed experts' GEMMs (the
    gate) not counted there, against the 64 query heads' causal pairs on the 18 windowed layers
    counted there and not here. Current Megatron-Bridge (``training/utils/flop_utils.py``) keys
    the multiplier on ``gated_linear_unit`` and has a window term: its count would move to this
    engine's. A convention, stated; not a bug on either side.

    Standard path (GQA or MLA, dense / MoE / latent MoE, Gated DeltaNet, MTP), per token:
      3·2·[ Σ_layers (attention + FFN terms) + L_mtp·(3d + 2d²) + d·V·(1 + L_mtp) ], with
      GQA  d·(H_q + 2·H_kv)·D_h (+ H_q·D_h output gate) + H_q·D_h·T + H_q·D_h·d  (causal: T/2 · 2)
      MLA  q term + d_kv·(d + H_q·(D_nope + D_v) + 1) + d·D_rope + H_q·D_v·d
           + T·H_q·(D_nope + D_rope)/2 + T·H_q·D_v/2
      GDN  d·(2·H_lk·D_lk + 2·H_lv·D_lv + 2·H_lv) + K_c·(2·H_lk·D_lk + H_lv·D_lv)
           + 4·H_lv·D_lv² + d·H_lv·D_lv
      FFN  f·d·d_ff, MoE f·d·(k·d_moe + d_sh) (latent: f·k·d_moe·d_lat + 2·d·d_lat), f = 3 | 2;
      the MTP layers count as extra layers of the last layer's kind.
    Hybrid path (any Mamba-2 layer; Nemotron-H), 3 × forward with
      attention 4·T·D_h·(H_q·d + H_kv·d + H_q·T/2), MLP 4·d·d_ff·(3/2 | 1),
      Mamba 2·d·(2·d_in + 2·G·N + H_m) + 7·d_in·N + 2·d_in·d with Megatron's d_in = 2·d,
      MoE as above at 4·(3/2 | 1), logits 2·d·V·(1 + L_mtp); all × B·T.
    The router, norms, indexers and convolutions outside GDN are not counted.
    """
    from ..components.mamba2 import Mamba2  # lazy: presets only; train loads just its family
    if any(isinstance(c, Mamba2) for c in model.components()):
        return _megatron_hybrid(model)
    mtp = _megatron_mtp(model)
    total = sympy.Integer(0)
    last = None
    for g in model.groups:
        if g.name == MTP_GROUP:  # Megatron's own MTP term below (L_mtp extra layers of the last kind)
            continue
        per = sympy.Integer(0)
        for c in g.components:
            per += _megatron_standard_term(c, swiglu_only)
        total += g.count * per
        last = per
    d = sym.d
    total += mtp * (last if last is not None else 0) + mtp * (3 * d + 2 * d * d)
    return 3 * 2 * B * T * (total + d * sym.V * (1 + mtp))


def _glu_factor(c, swiglu_only: bool) -> int:
    if not c.gated:
        return 2
    clamped = getattr(getattr(c, "saves", None), "glu", None) == "clamped"
    return 2 if swiglu_only and clamped else 3


def _megatron_standard_term(c, swiglu_only: bool = False) -> sympy.Expr:
    """One layer's component, per token, before the 3·2 factor (Megatron's standard path)."""
    from ..components.gated_deltanet import GatedDeltaNet  # lazy: presets only; train loads just its family
    from ..components.mla import MLA  # lazy: presets only; train loads just its family
    from ..components.sparse_index import Indexer  # lazy: presets only; train loads just its family
    if isinstance(c, Attention):
        q, kv = c.H_q * c.D_h, c.H_kv * c.D_h
        gate = q if c.output_gate else 0
        return c.d * (q + 2 * kv + gate) + q * T / 2 * 2 + q * c.d
    if isinstance(c, MLA):
        H, Dn, Dr, Dv = c.H_q, c.D_nope, c.D_rope, c.D_v
        q_term = c.d * H * (Dn + Dr) if c.d_q is None else c.d_q * (c.d + H * (Dn + Dr) + 1)
        return (q_term + c.d_kv * (c.d + H * (Dn + Dv) + 1) + c.d * Dr + H * Dv * c.d
                + T * H * (Dn + Dr) / 2 + T * H * Dv / 2)
    from ..components.kda import KDA  # lazy: presets only; train loads just its family
    if isinstance(c, GatedDeltaNet) and not isinstance(c, KDA):  # Megatron's GDN term is not KDA's
        qk, v = c.H_lk * c.D_lk, c.H_lv * c.D_lv
        return (c.d * (2 * qk + 2 * v + 2 * c.H_lv) + c.K_c * (2 * qk + v)
                + 4 * c.H_lv * c.D_lv ** 2 + c.d * v)
    if isinstance(c, FFN):
        return c.d * c.d_ff * _glu_factor(c, swiglu_only)
    if isinstance(c, MoE):
        f = _glu_factor(c, swiglu_only)
        routed = (c.d * c.d_moe * c.k * f if c.d_lat is None
                  else c.d_moe * c.k * f * c.d_lat + 2 * c.d * c.d_lat)
        shared = c.d * c.d_sh * f if c.d_sh is not None else 0
        return routed + shared
    if c.key in ("norms", "multipliers") or isinstance(c, Indexer):  # elementwise only
        return sympy.Integer(0)
    raise SymcostError(f"the megatron preset has no term for {c.label()}")


def _megatron_hybrid(model) -> sympy.Expr:
    from ..components.gated_deltanet import GatedDeltaNet  # lazy: presets only; train loads just its family
    from ..components.mamba2 import Mamba2  # lazy: presets only; train loads just its family
    d = sym.d
    fwd = sympy.Integer(0)
    for g in model.groups:
        if g.name == MTP_GROUP:  # Megatron's hybrid count: the MTP logits below, no MTP layer term
            continue
        for c in g.components:
            if isinstance(c, Attention):
                term = 4 * c.D_h * (c.H_q * c.d + c.H_kv * c.d + c.H_q * T / 2)
            elif isinstance(c, FFN):
                term = 4 * c.d * c.d_ff * (sympy.Rational(3, 2) if c.gated else 1)
            elif isinstance(c, Mamba2):
                d_in = 2 * c.d  # Megatron's mamba_layer_flops takes d_in = 2·hidden_size
                term = 2 * c.d * (2 * d_in + 2 * c.G * c.N + c.H_m) + 7 * d_in * c.N + 2 * d_in * c.d
            elif isinstance(c, MoE):
                f = sympy.Rational(3, 2) if c.gated else 1
                routed = (4 * c.d * c.d_moe * c.k * f if c.d_lat is None
                          else 4 * c.d_lat * c.d_moe * c.k * f + 4 * c.d * c.d_lat)
                term = routed + (4 * c.d * c.d_sh * f if c.d_sh is not None else 0)
            elif isinstance(c, GatedDeltaNet):
                term = 2 * _megatron_standard_term(c)
            elif c.key in ("norms", "multipliers"):  # elementwise only
                continue
            else:
                raise SymcostError(f"the megatron preset has no term for {c.label()}")
            fwd += g.count * term
    fwd += 2 * d * sym.V * (1 + _megatron_mtp(model))
    return 3 * B * T * fwd


def preset_maxtext(model) -> sympy.Expr:
    """MaxText ``calculate_tflops_training_per_device`` × devices (the whole step), in notation.

    3·[L·(ffn + qkv + proj) + 2·B·T·d·V] + 3·L·(4·B·T²·H_q·D_h)/2, with
    ffn = 2·B·T·d·d_ff·(3|2), MoE ffn = 2·B·T·d·(E + (k·d_moe + d_sh)·(3|2)) (router counted),
    qkv = 2·B·T·d·(H_q + 2·H_kv)·D_h, proj = 2·B·T·d·H_q·D_h; causal attention halved; a
    sliding-window layer's attention is 4·B·T·min(T, W)·H_q·D_h (MaxText's local-attention term).
    """
    weights = sympy.Integer(0)
    attention = sympy.Integer(0)
    for g in model.groups:
        if g.name == MTP_GROUP:  # MaxText's count has no MTP term: the main model's
            continue
        for c in g.components:
            if isinstance(c, Attention):
                weights += g.count * 2 * B * T * c.d * (c.H_q + 2 * c.H_kv) * c.D_h
                weights += g.count * 2 * B * T * c.d * c.H_q * c.D_h
                if c.W is None:
                    attention += g.count * 4 * B * T * T * c.H_q * c.D_h / 2
                else:  # MaxText's local-attention term (Gemma-2 path): a T × min(T, W) band, not halved
                    attention += g.count * 4 * B * T * sympy.Min(T, c.W) * c.H_q * c.D_h
            elif isinstance(c, FFN):
                weights += g.count * 2 * B * T * c.d * c.d_ff * (3 if c.gated else 2)
            elif isinstance(c, MoE):
                f = 3 if c.gated else 2
                sh = c.d_sh * (3 if c.shared_gated else 2) if c.d_sh is not None else 0
                weights += g.count * 2 * B * T * c.d * (c.E + c.k * c.d_moe * f + sh)
            elif c.key in ("norms", "multipliers"):  # elementwise only
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
        in_T = sympy.expand(sympy.sympify(expr).xreplace(model.values))
        rows.append({"preset": name, "flops": int(sympy.floor(value)) if value.is_finite else None,
                     "formula": str(in_T),
                     "minus_exact": str(sympy.expand(in_T - exact_causal.xreplace(model.values))),
                     "note": (fn.__doc__ or "").strip().splitlines()[0]})
    for r in rows:
        r["ratio_to_exact"] = (r["flops"] / base) if r["flops"] and base else None
    return rows
