"""Serving as formulas: per-GPU bytes, KV capacity, concurrency and roofline times as SymPy
expressions in the layout (N_tp, N_ep, N_pp, N_dp; ``symcost.model.parallel``), the context T, the
batch B, the chunk M and the GPU (M_gpu, F_gpu, BW_hbm, BW_link), with the config's values and the checkpoint's bytes substituted.

Layout symbols (below t = N_tp, p = N_pp, e = N_tp·N_ep): N_tp tensor-parallel ranks; N_tp·N_ep
the ranks each routed-expert layer is split over (N_ep = 1 without expert parallelism, every
expert sliced over the N_tp ranks; with vLLM's expert parallelism and attention data parallel
N_ep = N_dp, whole experts over the N_tp·N_dp ranks of a stage); N_pp pipeline stages; N_dp
data-parallel replicas. Shares, as in ``plan``: matrices 1/t, KV heads ⌈H_kv/t⌉/H_kv, routed
experts 1/e, replicated weights 1; a stage holds ⌈n/p⌉ of a group's n layers and, with p > 1,
the larger of embedding and head (``Min(1, p − 1)`` switches that on). KV pages follow ``vllm`` (block, page,
groups) with ⌈·⌉ and ⌊·⌋ kept symbolic. Everything is exact at substitution; ``compile`` turns a
formula into one NumPy function for many layouts at once (``deploy``).

Roofline per rank (the conventions stated in every output): FLOPs of a step split evenly over the
t·p ranks (matmul FLOPs, causal attention, MLA auto); bytes read per step = the rank's weights —
routed experts only as far as the batch touches them, E·(1 − (1 − k/E)^n) distinct experts of E
for n routed tokens, uniform routing, n the rows of the rank's expert group (the N_ep replicas' rows:
under EP, and for experts sliced over the attention-DP ranks); of an untied input embedding only the
rows it gathers (``embedding_unread``) — plus the KV read and written; time of a step =
max(FLOPs / F_gpu, bytes / BW_hbm) + communication (no overlap): TP all-reduces 2 per layer of
rows·d activations, 2·(t − 1)/t of them per rank; EP all-to-all dispatch + combine of rows·k·d,
(e − 1)/e off-rank, per MoE layer; at BW_link. Activations are bf16 (2 bytes).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import reduce
from math import gcd

import sympy

from ..core.conventions import Phase
from ..core.notation import sym
from ..core.numeric import compile_exprs  # noqa: F401 (the serving layer's compiler)
from ..core.powers import RatioPow
from ..core.primitives import Linear, Param
from ..core.terms import Terms, exact, relax_steps
from ..core.units import dtype_bytes
from ..model.parallel import text_tp_blocks
from .memory import cache_bytes
from .quant import Checkpoint
from .vllm import DEFAULT_BLOCK, MLA_BLOCK, _is_mla

t, p, M, B, T = sym.N_tp, sym.N_pp, sym.M, sym.B, sym.T
e = sym.N_tp * sym.N_ep  # ranks one routed-expert layer is split over
ceil, floor = sympy.ceiling, sympy.floor
ACT_BYTES = 2
MAX_NUM_SEQS = 256


def _R(x) -> sympy.Rational:
    x = Fraction(x)
    return sympy.Rational(x.numerator, x.denominator)


def _kv_share(c, vals) -> sympy.Expr:
    """A component's cache share on one rank, as a function of t."""
    s2 = c.cache_tp_share(2, vals)
    if s2 == 1:
        return sympy.Integer(1)
    if c.mechanism().__name__ == "Attention":
        h = exact(c.H_kv, vals)
        return ceil(sympy.Integer(h) / t) / h
    return 1 / t


def weight_share(model, c, prim) -> sympy.Expr:
    vals = model.values
    if isinstance(prim, Param):
        if prim.name == "embed_tokens":
            return 1 / t
        if prim.norm is not None:
            return sympy.Integer(1)
        return 1 / t if c.cache().flatten() else sympy.Integer(1)
    if prim.active is not None:
        return 1 / e
    if prim.name.startswith("shared_") and prim.name != "shared_expert_gate":
        return 1 / t
    if prim.name in ("k_proj", "v_proj") and sym.H_kv in vals:
        h = int(vals[sym.H_kv])
        return ceil(sympy.Integer(h) / t) / h
    return 1 / t if prim.tp is not None else sympy.Integer(1)


def _paths(model):
    out = {}
    for c in model.pre:
        for q in c.primitives(None):
            out[q.name] = (c, q, None)
    for g in model.groups:
        for c in g.components:
            for q in c.primitives(None):
                out[f"{g.name}/{c.key}/{q.name}"] = (c, q, g)
    for c in model.post:
        for q in c.primitives(None):
            out[q.name] = (c, q, None)
    return out


def pp_partition(layers: int, pp: int, partition: tuple[int, ...] | None = None) -> list[int]:
    """Layers per pipeline stage as vLLM splits them (``vllm/distributed/utils.py`` ``get_pp_indices``):
    ⌊L/pp⌋ each, the remainder one by one onto the stages before the last, from the second-to-last
    back (the first and the last stage, which hold the embedding and the head, get the fewest);
    ``partition`` stands for ``VLLM_PP_LAYER_PARTITION`` (one count per stage, summing to L, as
    get_pp_indices checks)."""
    if partition is not None:
        if len(partition) != pp or sum(partition) != layers or min(partition) < 0:
            raise ValueError(f"pipeline partition {list(partition)}: needs {pp} counts summing to {layers} layers")
        return list(partition)
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    return parts


@dataclass(frozen=True)
class Stage:
    """One pipeline stage of vLLM's split: its index, its decoder layers of each group (by group
    name; towers are not decoder layers), and whether it is the first (embedding, towers' inputs)
    or the last (final norm, LM head, the sampler)."""

    index: int
    layers: int
    counts: dict
    first: bool
    last: bool


def symbolic_stage(stage: Stage) -> tuple[Stage, tuple[str, ...], tuple[sympy.Symbol, ...]]:
    """``stage``'s kind — the same groups, first and last — with each group's layer count a positive
    integer symbol n_i: one formula for every stage of that kind, whatever the split (``deploy``
    compiles a kind once and evaluates each stage at its own counts). Returns (the stage, the group
    names in order, their count symbols)."""
    names = tuple(sorted(stage.counts))
    syms = tuple(sympy.Dummy(f"n_{i}", integer=True, positive=True) for i in range(len(names)))
    return Stage(-1, sum(syms, sympy.Integer(0)), dict(zip(names, syms)), stage.first, stage.last), names, syms


def pipeline_stages(model, pp: int, partition: tuple[int, ...] | None = None) -> list[Stage]:
    """vLLM's stages (``pp_partition`` over ``model.layers()``, the layers in the model's own order).
    ValueError where the stage costing cannot follow the model: a layer order the adapter cannot
    state, or weights decoder layers share across stages (Zamba's shared blocks)."""
    if model.shared_copies:
        raise ValueError(f"{model.name}: shared blocks run by layers on several stages")
    layers = model.layers()
    parts = pp_partition(len(layers), pp, partition)
    out, i = [], 0
    for s, n in enumerate(parts):
        counts: dict = {}
        for layer in layers[i:i + n]:
            for g in layer:
                counts[g.name] = counts.get(g.name, 0) + 1
        i += n
        out.append(Stage(s, n, counts, s == 0, s == pp - 1))
    return out


def _tied_head(model) -> bool:
    return any(q.name == "lm_head" and q.tied for c in model.post for q in c.primitives(None))


def weights_per_gpu(model, ck: Checkpoint, stage: Stage | None = None) -> Terms:
    """Bytes of weights on the most-loaded rank, per weight, in t, e, p: a stage holds ⌈n/p⌉ of
    each group's n layers and, with p > 1, the larger of embedding and head (a bound).

    ``stage``: the bytes of that pipeline stage, as vLLM's model classes build it (``LlamaModel``
    / ``DeepseekV2Model``: ``make_layers`` creates only the stage's own layers, ``PPMissingLayer``
    elsewhere; ``embed_tokens`` on the first stage — and on the last with a tied head, which
    ``tie_weights`` makes its LM head; ``norm`` and ``lm_head`` on the last): its own layers of each
    group, the embedding on the first, the final norm and the head on the last; tower weights (vision
    encoder, projector: ``LlavaForConditionalGeneration.__init__`` builds them unconditionally) on
    every stage. In t and e only (p is fixed by the stage)."""
    vals = model.values
    paths = _paths(model)
    out = Terms()
    edge = {}
    # checkpoint tensors without a primitive (DeepSeek's e_score_correction_bias buffers, 4·E·L_moe):
    # a stage holds those of its own layers (the group's layer count replaced by the stage's)
    own = {g.count: sympy.sympify(stage.counts.get(g.name, 0)) for g in model.groups
            if stage is not None and isinstance(g.count, sympy.Symbol) and not g.tower}
    for path, expr in ck.served_terms().flatten().items():
        v = sympy.nsimplify(expr.xreplace(vals))
        hit = paths.get(path)
        if hit is None:
            out.add(path.replace("/", "_"), sympy.nsimplify(expr.xreplace(own).xreplace(vals)) if own else v)
            continue
        c, q, g = hit
        share = weight_share(model, c, q)
        if g is not None:
            n = exact(g.count, vals)
            if n == 0:
                continue
            if stage is not None and not g.tower:
                mine = stage.counts.get(g.name, 0)
                if mine == 0:
                    continue
                share = share * sympy.sympify(mine) / n
            elif stage is None:
                share = share * ceil(sympy.Integer(n) / p) / n
            out.add(g.name, Terms({c.key: Terms({q.name: v * share})}))
        elif path in ("embed_tokens", "lm_head"):
            edge[path] = v * share
        elif stage is not None and c.modality == "text" and not (
                stage.first if any(c is x for x in model.pre) else stage.last):
            continue  # the text model's own pre/post weights (final norm) live on their edge stage
        else:
            out.add(path, v * share)
    if stage is not None:
        a, b = edge.get("embed_tokens", 0), edge.get("lm_head", 0)
        if stage.first and a != 0:
            out.add("embed_tokens", a, "vocab-parallel embedding (first stage)")
        if stage.last:
            if b != 0:
                out.add("lm_head", b, "LM head (last stage)")
            elif a != 0 and _tied_head(model) and not stage.first:
                out.add("embed_tokens", a, "tied LM head: the last stage builds the embedding it ties to")
        return out
    if edge:
        a, b = edge.get("embed_tokens", 0), edge.get("lm_head", 0)
        # p = 1: both on the one stage; p > 1: the larger of the two (first or last stage)
        out.add("embed_and_head", a + b - sympy.Min(a, b) * sympy.Min(1, p - 1),
                "embedding and head: both with one stage, the larger with p > 1")
    return out


def embedding_unread(model, ck: Checkpoint, rows) -> sympy.Expr:
    """Bytes of the rank's input embedding table (``weights_per_gpu``) a step of ``rows`` token rows per
    chunk does not read: the lookup gathers its rows' vectors, min(rows, V)/V of the table, not the table.
    Only where the table is its own tensor on the rank whose bytes bound the step -- untied, one stage
    (N_pp = 1); tied, it is the LM head, read whole; with N_pp > 1 the heaviest rank's bound is the head's
    (the larger of the two). 0 for a model without a text embedding."""
    term = ck.served_terms().flatten().get("embed_tokens")
    hit = [(c, q) for c in model.pre for q in c.primitives(None) if q.name == "embed_tokens"]
    if term is None or not hit or _tied_head(model) or sym.V not in model.values:
        return sympy.Integer(0)
    V = model.values[sym.V]
    table = sympy.nsimplify(term.xreplace(model.values)) * weight_share(model, *hit[0])
    return table * (1 - sympy.Min(rows, V) / V) * (1 - sympy.Min(1, p - 1))


def working_set(model, c) -> sympy.Expr:
    """Elements per token a component holds at once on one rank: its GEMM outputs (+ the gated
    activation output)."""
    vals = model.values
    w, gated = sympy.Integer(0), sympy.Integer(0)
    names = {q.name for q in c.primitives(None)}
    for q in c.primitives(None):
        if not isinstance(q, Linear) or q.name == "lm_head" or q.tied:
            continue
        out = sympy.Integer(exact(q.out, vals))
        if q.active is not None:
            k = sympy.Integer(exact(q.active, vals))
            if q.name.endswith("down"):
                w += k * out
            else:
                w += k * out / e
                if q.name.endswith("gate_up"):
                    gated = k * out / 2 / e
            continue
        share = weight_share(model, c, q) if (q.tp == "col" or q.name.startswith("shared_")) else 1
        w += out * share
        if q.name == "up_proj" and "gate_proj" in names:
            gated = sympy.Max(gated, out * share)
    return w + gated


def activation_per_gpu(model, *, lazy: bool = False) -> sympy.Expr:
    """``lazy``: the Max left unevaluated (same values, no SymPy ordering proofs; for compiled
    numeric use only, where the printed form does not matter)."""
    vals = model.values
    d, V = exact(sym.d, vals), exact(sym.V, vals)
    sets = list(dict.fromkeys(working_set(model, c) for g in model.groups for c in g.components))
    widest = sympy.Max(*sets, evaluate=not lazy) if sets else sympy.Integer(0)
    return sympy.Max(M * ACT_BYTES * (widest + 2 * d), sympy.Min(M, MAX_NUM_SEQS) * V * 4, evaluate=not lazy)


@dataclass
class KVFormula:
    block: sympy.Expr  # tokens per block, in t
    block_bytes: sympy.Expr  # bytes of one block index across the stage's layers, in t, p
    groups: sympy.Expr  # KV cache groups (1 for a uniform model)
    need: sympy.Expr  # blocks one request of T tokens needs, in T, t, M
    kinds: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    page: sympy.Expr | None = None  # bytes of one block of one layer (all groups alike); None: uniform
    group_list: list = field(default_factory=list)  # (kind, layers per group) for each KV cache group
    state_page: sympy.Expr | None = None  # the largest state page before padding (hybrids)
    #: for each spec of ``kinds``: the layer groups whose layers have it (a pipeline stage's share)
    spec_groups: list = field(default_factory=list)
    #: for each spec: the KV cache groups its layers are dealt over (hybrid: ⌈n/g⌉; None: one pool)
    spec_split: list = field(default_factory=list)

    def stage_block_bytes(self, stage) -> sympy.Expr:
        """Bytes of one block index across one pipeline stage's own layers, as vLLM sizes a worker
        (``kv_cache_utils.get_kv_cache_configs``: the KV cache groups are made once for the whole
        model, ``_project_kv_cache_groups_to_worker`` keeps each group's layers the worker holds, and
        ``get_kv_cache_config_from_groups`` divides the worker's memory by page · the largest
        projected group). One pool (uniform spec, or one type of several sizes): Σ block · bytes per
        token · the stage's layers of each spec. Hybrid: a spec's n layers are dealt round-robin over
        its k = ⌈n/g⌉ groups (``_get_kv_cache_groups_uniform_page_size``: layers[i::k]), so the
        stage's c consecutive layers of it put at most ⌈c/k⌉ into one group: page · max ⌈c/k⌉.
        With the stage holding ⌈n/p⌉ of every group this is ``block_bytes``."""
        mine = [sum(stage.counts.get(g, 0) for g in gs) for gs in self.spec_groups]
        if self.page is None or not self.spec_split:
            return sum((self.block * s[1] * sympy.sympify(c) for s, c in zip(self.kinds, mine)), sympy.Integer(0))
        per_group = [-(-sympy.sympify(c) // k) for c, k in zip(mine, self.spec_split)]
        return self.page * (sympy.Max(*per_group) if per_group else sympy.Integer(0))


#: a context length past every window and compressed-cache buffer of a real model
_FAR = sympy.Integer(2) ** 62


def _bounded(x, vals) -> sympy.Expr:
    """The largest value of a cache term that does not grow with ``T``: a fixed state, or a
    ring buffer ``Mod(T, m)`` / ``Min(1, floor(T/m))`` of a compressed cache (DeepSeek V4),
    taken at a ``T`` where every such buffer is full (``T ≡ −1`` modulo every ``m``, past them)."""
    if sym.T not in x.free_symbols:
        return exact(x, vals)
    mods = [exact(a.args[1], vals) for a in x.atoms(sympy.Mod) if a.has(sym.T)]
    mods += [exact(1 / a.args[0].coeff(sym.T), vals) for a in x.atoms(sympy.floor) if a.has(sym.T)]
    full = 2 * reduce(lambda a, b: a * b // gcd(a, b), [int(m) for m in mods], 1) - 1
    return exact(x.xreplace({sym.T: full}), vals)


def kv_formula(model, kv_dtype: str = "bf16", block_size: int | None = None,
               state_dtype: str | None = None) -> KVFormula:
    """vLLM's page layout as formulas (see ``vllm`` for the rules)."""
    vals = model.values
    bkv = dtype_bytes(kv_dtype, "--kv-dtype")
    bst = dtype_bytes(state_dtype or ("bf16" if kv_dtype != "fp32" else kv_dtype), "--mamba-ssm-dtype")
    kinds: dict[tuple, list] = {}
    owners: dict[tuple, list] = {}
    for g in model.groups:
        n = exact(g.count, vals)
        if n == 0:
            continue
        for c in g.components:
            leaves = c.cache().flatten()
            if not leaves:
                continue
            share = _kv_share(c, vals)
            # bytes per token by window (None: the whole context), and the fixed state; a
            # component may hold both windowed and whole-context leaves (DeepSeek V4)
            paged: dict = {}
            state = sympy.Integer(0)
            for name, expr in leaves.items():
                if "conv" in name:
                    expr = expr.xreplace({sym.K_c: sym.K_c - 1})
                x = expr.xreplace({sym.B: 1})
                window = None
                mins = [m for m in x.atoms(sympy.Min) if sym.T in m.args]
                if mins:
                    window = exact([a for a in mins[0].args if a != sym.T][0], vals) + 1
                    x = x.xreplace({mins[0]: sym.T})
                # tokens' growth rate far past every window and ring buffer (Min(1, T/m) → 1)
                rate = exact(sympy.diff(relax_steps(x, sym.T), sym.T).xreplace({sym.T: _FAR}), vals)
                if rate != 0:
                    if _is_mla(c) and kv_dtype == "fp8":
                        d_kv, D_r = exact(c.d_kv, vals), exact(c.D_rope, vals)
                        paged = {None: sympy.Integer(d_kv + 4 * -(-d_kv // 128) + 2 * D_r)}
                        break
                    paged[window] = paged.get(window, 0) + rate * _R(bkv) * share
                else:
                    state += _bounded(x, vals) * _R(bst) * share
            for window, per_tok in paged.items():
                key = ("sliding" if window else "full", per_tok, window)
                kinds.setdefault(key, []).append(n)
                owners.setdefault(key, []).append(g.name)
            if state != 0:
                kinds.setdefault(("state", state, None), []).append(n)
                owners.setdefault(("state", state, None), []).append(g.name)
    specs = [(k[0], k[1], k[2], sum(v)) for k, v in kinds.items()]
    spec_groups = [tuple(dict.fromkeys(owners[k])) for k in kinds]
    if not specs:
        return KVFormula(sympy.Integer(1), sympy.Integer(0), sympy.Integer(1), sympy.Integer(0), [],
                         ["no cache"])
    has_mla = any(_is_mla(c) for c in model.components())
    base = block_size or (MLA_BLOCK if has_mla else DEFAULT_BLOCK)
    attn = [s for s in specs if s[0] != "state"]
    states = [s for s in specs if s[0] == "state"]
    notes = []
    block = sympy.Integer(base)
    if states and attn:
        per_tok = sympy.Max(*[s[1] for s in attn])
        biggest = sympy.Max(*[s[1] for s in states])
        if block_size is None:
            block = sympy.Max(base, 16 * ceil(biggest / (16 * per_tok)))
        notes.append("hybrid: attention block raised so an attention page holds a state page")
        page = block * per_tok
    elif states:
        page = sympy.Max(*[s[1] for s in states])
    else:
        page = None
    if len(specs) == 1 or (not states and all(s[0] == "full" for s in specs)):
        # one group; a stage holds ⌈n/p⌉ layers of every kind
        block_bytes = sum(block * s[1] * ceil(sympy.Integer(s[3]) / p) for s in specs)
        need = ceil(T / block)
        return KVFormula(block, block_bytes, sympy.Integer(1), need, specs, notes, spec_groups=spec_groups)
    blocks = {i: block for i in range(len(specs))}
    if page is None:
        # attention-only hybrid whose pages differ (Gemma 4: sliding and full layers of other head
        # counts and dims): vLLM's ``unify_kv_cache_spec_page_size`` raises each smaller page's block
        # by max page / its page so every page is the largest one (the ratio must be whole)
        pts = [s[1] for s in specs]
        if len(set(pts)) > 1:
            top = sympy.Max(*pts)
            for i, sp in enumerate(specs):
                blocks[i] = block * top / sp[1]
            notes.append("hybrid page sizes unified as vLLM's unify_kv_cache_spec_page_size does: a smaller "
                         "page's block raised by largest page / its page")
            page = block * top
        else:
            page = block * pts[0]
    counts = [s[3] for s in specs]
    group = min(counts)
    if max(counts) < 1.5 * group:
        group = max(counts)
    n_groups, need, group_list, split = 0, sympy.Integer(0), [], []
    for i, (kind, per, window, n) in enumerate(specs):
        k = -(-n // group)
        n_groups += k
        split.append(k)
        group_list += [(kind, group)] * k
        b = blocks[i]
        if kind == "full":
            need += k * ceil(T / b)
        elif kind == "sliding":
            need += k * (ceil(sympy.Min(window - 1 + M, T) / b) + 1)
        else:
            need += k
    block_bytes = page * ceil(sympy.Integer(group) / p)
    biggest = sympy.Max(*[s[1] for s in states]) if states else None
    return KVFormula(block, block_bytes, sympy.Integer(n_groups), need, specs, notes, page, group_list, biggest,
                     spec_groups, split)


class _Budget:
    """What a worker holds before its KV cache (weights + profiled peak + overhead) and what that
    leaves of the budget M_gpu: the one rule ``StageFormula`` and ``ServeFormulas`` share."""

    @property
    def fixed(self) -> sympy.Expr:
        return self.weights.total + self.activation + self.overhead

    @property
    def kv_available(self) -> sympy.Expr:
        return sym.M_gpu - self.fixed


@dataclass
class StageFormula(_Budget):
    """One pipeline stage as vLLM's worker on it sizes its KV cache: its own weights (as loaded), its
    own profiled peak (the sampler only on the last stage), the non-torch memory and CUDA graphs, and
    its own layers' pages (``KVFormula.stage_block_bytes``); in N_tp, N_ep, M and M_gpu."""

    stage: Stage
    weights: Terms
    activation: sympy.Expr
    overhead: sympy.Expr
    block_bytes: sympy.Expr
    file_weights: Terms | None = None  # the checkpoint's bytes of the stage (no kernel padding)
    profile: object = None  # the stage's profiled terms (``profile.Profile.at_stage``)
    _blocks: object = field(default=None, repr=False)  # num_blocks, built once (alike stages share it)
    lazy: bool = False  # floor left unevaluated (compiled numeric use: no SymPy simplification attempts)

    @property
    def num_blocks(self) -> sympy.Expr:
        """⌊max(M_gpu − fixed, 0) / block bytes⌋ (``get_num_blocks`` on this worker); a stage without
        cached layers does not bound the count (None)."""
        if self.block_bytes == 0:
            return None
        if self._blocks is None:
            self._blocks = floor(sympy.Max(self.kv_available, 0, evaluate=False) / self.block_bytes,
                                 evaluate=not self.lazy)
        return self._blocks


@dataclass
class ServeFormulas(_Budget):
    weights: Terms
    activation: sympy.Expr
    overhead: sympy.Expr
    kv: KVFormula
    #: vLLM's pipeline stages, each costed by its own layers (``StageFormula``); empty: one stage, or
    #: the ⌈count/p⌉ bound of ``weights_per_gpu`` / ``kv_formula`` where the stages cannot be costed
    stages: list = field(default_factory=list)
    #: the stage that decides (fewest blocks), once the values are known (``plan``); None: unknown
    deciding: int | None = None

    @property
    def num_blocks(self) -> sympy.Expr:
        """vLLM's block count: one stage's ⌊max(M_gpu − fixed, 0) / block bytes⌋, or with pipeline
        stages the fewest over them (``get_kv_cache_configs``: "Change the num_blocks of each rank to
        the smallest among all ranks")."""
        if self.stages:
            each = list(dict.fromkeys(s.num_blocks for s in self.stages if s.num_blocks is not None))
            if each:
                return sympy.Min(*each, evaluate=False) if len(each) > 1 else each[0]
        # M_gpu is free and independent of the fixed bytes, so M_gpu - fixed has no provable sign:
        # SymPy's evaluated Max would keep both arguments after seconds of failed proofs
        return floor(sympy.Max(self.kv_available, 0, evaluate=False) / self.kv.block_bytes)

    @property
    def kv_tokens(self) -> sympy.Expr:
        return floor(self.num_blocks / self.kv.groups) * self.kv.block

    @property
    def max_concurrency(self) -> sympy.Expr:
        return self.num_blocks / self.kv.need

    def per_gpu(self) -> sympy.Expr:
        return self.fixed + B * self.kv.need * self.kv.block_bytes

    def terms(self) -> Terms:
        out = Terms()
        out.add("weights", self.weights.copy(), "checkpoint bytes on the most-loaded rank")
        out.add("activations", self.activation, "peak of one chunked-prefill step of M tokens (estimate)")
        out.add("overhead", self.overhead, "stated allowance: non-torch memory + CUDA graphs")
        out.add("kv_cache", B * self.kv.need * self.kv.block_bytes, "B requests of T tokens in vLLM pages")
        return out

    def formula(self) -> dict[str, sympy.Expr]:
        out = {"weights_per_gpu": self.weights.total, "activation_per_gpu": self.activation,
               "overhead_per_gpu": self.overhead, "kv_per_request": self.kv.need * self.kv.block_bytes,
               "kv_block_tokens": self.kv.block, "kv_available_per_gpu": self.kv_available,
               "kv_capacity_tokens": self.kv_tokens, "max_concurrency": self.max_concurrency,
               "total": self.per_gpu()}
        for st in self.stages:
            i = st.stage.index
            out[f"stage{i}_weights"] = st.weights.total
            out[f"stage{i}_activation"] = st.activation
            out[f"stage{i}_kv_block_bytes"] = st.block_bytes
            out[f"stage{i}_kv_available"] = st.kv_available
            if st.num_blocks is not None:
                out[f"stage{i}_num_blocks"] = st.num_blocks
        if self.stages:
            out["num_blocks"] = self.num_blocks
        return out

    def at_stage(self, i: int) -> "ServeFormulas":
        """These formulas with stage ``i``'s weights, peak, overhead and pages in place of the bound (the
        block count stays the fewest over the stages)."""
        st = self.stages[i]
        kv = replace(self.kv, block_bytes=st.block_bytes)
        return ServeFormulas(st.weights, st.activation, st.overhead, kv, self.stages, i)


def serve_formulas(model, ck: Checkpoint, *, kv_dtype="bf16", overhead_bytes: int = 2**30,
                   block_size=None, state_dtype=None, lazy: bool = False) -> ServeFormulas:
    return ServeFormulas(weights_per_gpu(model, ck), activation_per_gpu(model, lazy=lazy),
                         sympy.Integer(overhead_bytes), kv_formula(model, kv_dtype, block_size, state_dtype))


def layout_values(lay) -> dict:
    """The layout symbols' values (N_dp, N_tp, N_pp, N_ep) of a serving ``parallel.Layout``."""
    v = lay.values()
    del v[sym.N_cp]
    return v


# -- roofline -----------------------------------------------------------------------------------
@dataclass
class Roofline:
    flops: sympy.Expr  # per rank per step
    bytes: sympy.Expr  # per rank per step
    comm_time: sympy.Expr  # seconds of communication per step (per stage)
    compute_time: sympy.Expr
    memory_time: sympy.Expr
    step_time: sympy.Expr  # one stage: max(compute, memory) + comm
    parts: dict = field(default_factory=dict)


def split_routed(w: Terms, paths: dict) -> tuple:
    """(routed-expert, other) bytes of the per-GPU weights ``w``: a leaf is routed when its primitive is a
    ``Linear`` with an activation count (the routed experts; ``paths``: ``_paths(model)``)."""
    routed = sympy.Integer(0)
    for path, expr in w.flatten().items():
        hit = paths.get(path)
        if hit is not None and isinstance(hit[1], Linear) and hit[1].active is not None:
            routed += expr
    return routed, w.total - routed


def _moe_info(model):
    vals = model.values
    moe_layers, k, E, d = 0, 0, 0, exact(sym.d, vals)
    for g in model.groups:
        for c in g.components:
            if any(isinstance(q, Linear) and q.active is not None for q in c.primitives(None)):
                moe_layers += exact(g.count, vals)
                k = exact(sym.k, vals)
                E = exact(sym.E, vals)
    return moe_layers, k, E, d


def roofline_formulas(model, ck: Checkpoint, phase: str, *, kv_dtype="bf16", mla="auto",
                      weights: Terms | None = None) -> Roofline:
    """One step on one rank: decode (B sequences at context T) or prefill (B prompts of T tokens).
    ``weights``: ``weights_per_gpu(model, ck)`` when the caller has it already."""
    vals = model.values
    ph = Phase(kind=phase, attention="causal", logits="last", mla=mla)
    F = sympy.expand(model.flops(ph).total.xreplace(vals))
    w = weights if weights is not None else weights_per_gpu(model, ck)
    routed, nonrouted = split_routed(w, _paths(model))
    moe_layers, k, E, d = _moe_info(model)
    rows = B if phase == "decode" else B * T
    # a rank's experts see the tokens of every replica of its expert group: the N_ep data-parallel replicas'
    # rows (dispatched whole experts' rows under EP; all-gathered for experts sliced over the DP ranks)
    touched = 1 - RatioPow(1 - sympy.Rational(k, E), rows * sym.N_ep) if E else sympy.Integer(1)  # exact while cheap
    kvb = sympy.expand(cache_bytes(model, kv_dtype).xreplace(vals))  # B·T-dependent, whole model
    share = sympy.Integer(1)
    for c in model.components():  # rank share of the KV (the first cached component decides)
        if c.cache().flatten():
            share = _kv_share(c, vals)
            break
    if phase == "decode":
        kv_read = kvb * share / p
        kv_write = (kvb.xreplace({T: T + 1}) - kvb) * share / p
    else:
        kv_read = sympy.Integer(0)
        kv_write = kvb * share / p
    # a step reads every weight it holds once per chunk, but of the input embedding only its rows' vectors
    weights_read = nonrouted - embedding_unread(model, ck, rows if phase == "decode" else sympy.Min(rows, M)) \
        + routed * touched
    if phase == "prefill":  # chunked prefill reads the weights once per step of M tokens
        weights_read = weights_read * ceil(rows / M)
    nbytes = weights_read + kv_read + kv_write
    flops = F / (t * p)
    # one all-reduce per TP block (parallel.tp_blocks: two per Llama layer, one per Nemotron-H layer)
    tp_bytes = ceil(sympy.Integer(text_tp_blocks(model)) / p) * 2 * (t - 1) / t * rows * d * ACT_BYTES
    ep_bytes = 2 * ceil(sympy.Integer(moe_layers) / p) * rows * k * d * ACT_BYTES * (e - 1) / e if moe_layers else 0
    comm = (tp_bytes + ep_bytes) / sym.BW_link
    ct, mt = flops / sym.F_gpu, nbytes / sym.BW_hbm
    return Roofline(flops, nbytes, comm, ct, mt, step_max(ct, mt) + comm,
                    {"weights_read": weights_read, "kv_read": kv_read, "kv_write": kv_write,
                     "tp_allreduce_bytes": tp_bytes, "ep_alltoall_bytes": ep_bytes})


def step_max(compute_time, memory_time) -> sympy.Expr:
    """max(FLOPs/F_gpu, bytes/BW_hbm), unevaluated: the two sides depend on different free
    positive symbols (F_gpu, BW_hbm) and each wins for some of their values, so no proof that
    one dominates exists and the evaluated Max is this same expression — reached after ~0.2 s of
    failed ordering proofs per call."""
    return sympy.Max(compute_time, memory_time, evaluate=False)


def compute_dtype(ck: Checkpoint, override: str | None = None) -> str:
    """The dtype whose tensor-core peak a step runs at: fp8 for fp8 checkpoints, fp4 for NVFP4/MXFP4
    (the GPU's peak falls back to fp8/bf16 where it has no fp4), bf16 otherwise (INT4 weight-only
    checkpoints dequantize to bf16)."""
    if override:
        return override
    lay = ck.scheme.layout
    if lay.kind in ("fp8_block", "fp8_tensor"):
        return "fp8"
    if lay.kind in ("nvfp4", "mxfp4"):
        return "fp4"
    if lay.kind == "dense" and lay.b == 1:
        return "fp8"
    return "bf16"


def gpu_values(gpu, dtype: str, mem_util: float) -> dict:
    peak, used = gpu.peak(dtype)
    return {sym.F_gpu: sympy.Integer(peak), sym.BW_hbm: sympy.Integer(gpu.bandwidth_bytes_per_s),
            sym.BW_link: sympy.Integer(round(gpu.link_gbs * 10**9)),
            sym.M_gpu: sympy.Integer(int(gpu.usable_bytes * Fraction(str(mem_util))))}, used
