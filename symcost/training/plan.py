"""A training layout (DP × TP × PP × CP, EP folded into DP × CP) and each pipeline stage's parameters.

Layout (Megatron-LM's, with MoE parallel folding): world = N_dp·N_tp·N_pp·N_cp GPUs. Dense
parameters are split by TP (the primitives' ``tp`` tags) and PP (whole layers per stage) and
replicated over the N_dp·N_cp data-parallel ranks; routed experts are split by EP (whole experts)
and, like Megatron's default expert-tensor-parallel size, by TP, and replicated over the
expert-data-parallel size N_dp·N_cp / N_ep. Each group is sharded over its own data-parallel
size, N_g = N_dp·N_cp for dense parameters and N_dp·N_cp/N_ep for experts, by the ZeRO rule of
``states`` (``states.zero_terms``, with hybrid sharding and CPU offload).
Pipeline: L/N_pp layers per stage, taken in the model's own layer order (``Model.layers()``:
Jamba's attention every 8th layer, Gemma's local/global pattern, Nemotron-H's pattern string; when
N_pp does not divide L, the extra layers go to interior stages, one each), vision/audio tower
blocks with the embedding on the first stage, weights several layers run (Zamba's shared blocks)
on each stage that runs them, the final norm and the head
on the last (a tied head keeps its own copy there when N_pp > 1, as Megatron does); the per-GPU
figure is the heaviest stage's.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..components.attention import Attention
from ..components.embedding import Embedding
from ..components.moe import MoE
from ..core.errors import SymcostError
from ..core.memo import PerModel
from ..core.notation import sym
from ..core.primitives import Linear
from ..core.terms import exact
from ..model.parallel import Layout, tp_blocks


@dataclass(frozen=True)
class Plan(Layout):
    """A training layout (``parallel.Layout``: N_dp, N_tp, N_pp, N_ep, N_cp) with its ZeRO stage
    and sequence parallelism."""

    zero: int = 0
    sp: bool = False
    first: int | None = None  # Megatron --decoder-first-pipeline-num-layers
    last: int | None = None  # Megatron --decoder-last-pipeline-num-layers
    embed_slot: bool = False  # --account-for-embedding-in-pipeline-split
    loss_slot: bool = False  # --account-for-loss-in-pipeline-split
    etp: int | None = None  # --expert-tensor-parallel-size (None: = N_tp); ``ep`` is then the folded N_ep
    layout: tuple | None = None  # decoder layers per model chunk (Megatron --pipeline-model-parallel-layout)

    @property
    def uneven(self) -> bool:
        return (self.first is not None or self.last is not None or self.embed_slot or self.loss_slot
                or self.layout is not None)

    def chunk_sizes(self, L: int, virtual: int = 1) -> list[int] | None:
        """Decoder layers of each of the pp·v model chunks in model order (chunk j·pp + r is rank r's
        j-th), or None for the even split (``stage_sizes``). Megatron's two uneven forms, each with
        its own rule (``megatron/core/transformer/transformer_layer.py``,
        ``get_transformer_layer_offset``; ``TransformerConfig`` checks):

          first/last stage layer counts: the other (middle) stages split L − first − last evenly;
            with v > 1 each of first, last and the middle stages' share splits evenly into v chunks;
          embedding/loss accounted: L + 1 (+ 1) slots split evenly into pp·v chunks, the first chunk
            giving one slot to the embedding, the last one to the loss.
        The two cannot be combined. An explicit ``layout`` (Megatron's
        ``--pipeline-model-parallel-layout``, read here as the decoder layers of each chunk) must
        have pp·v entries summing to L. Each failure names its rule."""
        if not self.uneven:
            return None
        pp, v = self.pp, virtual
        if self.layout is not None:
            sizes = list(self.layout)
            if len(sizes) != pp * v:
                raise SymcostError(f"--pipeline-layout has {len(sizes)} model chunks; pp × v = {pp} × {v} = "
                                   f"{pp * v} needed (chunk j·pp + r is rank r's j-th)")
            if sum(sizes) != L or min(sizes) < 0:
                raise SymcostError(f"--pipeline-layout's chunks hold {sum(sizes)} decoder layers; the model has "
                                   f"L={L} (each chunk ≥ 0)")
            if self.first is not None or self.last is not None or self.embed_slot or self.loss_slot:
                raise SymcostError("--pipeline-layout cannot be combined with the other uneven-stage options")
            return sizes
        if pp == 1:
            raise SymcostError("uneven pipeline stages (--first-stage-layers / --last-stage-layers / "
                               "--account-embedding / --account-loss) need --pp > 1")
        if (self.first is not None or self.last is not None) and (self.embed_slot or self.loss_slot):
            raise SymcostError("--first-stage-layers / --last-stage-layers cannot be combined with "
                               "--account-embedding / --account-loss (Megatron refuses both at once)")
        if self.embed_slot or self.loss_slot:
            n = L + self.embed_slot + self.loss_slot
            if n % (pp * v):
                raise SymcostError(f"layers L={L} + {int(self.embed_slot)} (embedding) + {int(self.loss_slot)} "
                                   f"(loss) = {n} must split evenly into pp × v = {pp * v} model chunks")
            sizes = [n // (pp * v)] * (pp * v)
            sizes[0] -= self.embed_slot
            sizes[-1] -= self.loss_slot
            if min(sizes) < 0:
                raise SymcostError(f"the embedding/loss slots leave a model chunk with fewer than 0 layers "
                                   f"(L={L}, pp × v = {pp * v})")
            return sizes
        first, last = self.first or 0, self.last or 0
        for name, x in (("--first-stage-layers", self.first), ("--last-stage-layers", self.last)):
            if x is not None and (x < 0 or x % v):
                raise SymcostError(f"{name} {x} must be a non-negative multiple of the virtual stages v={v} "
                                   f"(each of the stage's v model chunks takes the same number)")
        mid_stages = pp - (self.first is not None) - (self.last is not None)
        middle = L - first - last
        if middle < 0:
            raise SymcostError(f"--first-stage-layers {first} + --last-stage-layers {last} exceed the layers L={L}")
        if mid_stages == 0:
            if middle:
                raise SymcostError(f"pp={pp} leaves no middle stage for the other {middle} layers")
        elif middle % (mid_stages * v):
            raise SymcostError(f"the middle {mid_stages} stage(s) must split the other L − first − last = {middle} "
                               f"layers evenly into {mid_stages} × v = {mid_stages * v} model chunks")
        per_mid = middle // (mid_stages * v) if mid_stages else 0
        sizes = []
        for j in range(v):
            for r in range(pp):
                if r == 0 and self.first is not None:
                    sizes.append(first // v)
                elif r == pp - 1 and self.last is not None:
                    sizes.append(last // v)
                else:
                    sizes.append(per_mid)
        return sizes

    def check(self, model, seq: int | None = None, *, gpus: int | None = None) -> None:
        """Reject layouts that do not factor, naming the constraint (``Layout.check`` + training's own)."""
        if self.zero not in (0, 1, 2, 3):
            raise SymcostError(f"--zero: must be 0, 1, 2 or 3, got {self.zero}")
        super().check(model, gpus=gpus)
        V = model.values.get(sym.V)
        if self.tp > 1 and V is not None and int(V) % self.tp:
            raise SymcostError(f"--tp {self.tp} does not divide the vocabulary V={int(V)}: the vocab-parallel "
                               f"embedding and head would hold fractional rows (Megatron pads V to a multiple "
                               f"of 128·tp, --make-vocab-size-divisible-by; pad vocab_size in the config to "
                               f"train at this tp)")
        if seq is not None and seq % self.cp:
            raise SymcostError(f"--cp {self.cp} does not divide --seq {seq}")
        if self.sp and self.tp == 1:
            raise SymcostError("--sp (sequence parallelism) needs --tp > 1")


def param_kind(c, p) -> str:
    """Where one primitive's parameters go under TP: ``routed`` (experts), ``split`` (a ``Linear`` with a
    ``tp`` tag, the vocab-parallel embedding) or ``whole`` (norms, routers, untagged projections)."""
    if getattr(p, "active", None) is not None:
        return "routed"
    if (isinstance(p, Linear) and p.tp is not None) or isinstance(c, Embedding):
        return "split"
    return "whole"


def _split(components, v, size=None) -> tuple[int, int, int]:
    """(TP-split dense, TP-replicated dense, routed experts) parameters of some components.

    A ``Linear`` with a ``tp`` tag is split (column / row parallel, the vocab-parallel head); the
    embedding table is vocab-parallel (split); norms, routers and untagged projections (MLA's
    down-projections) are replicated on every TP rank. ``size(p)``: what of primitive ``p`` is counted
    (default its parameters; ``fp8.gemm_parts`` counts GEMM weight elements only)."""
    split = whole = routed = 0
    for c in components:
        for p in c.primitives(None):
            n = size(p) if size is not None else p.params()
            if n == 0:
                continue
            n = exact(n, v)
            kind = param_kind(c, p)
            if kind == "routed":
                routed += n
            elif kind == "split":
                split += n
            else:
                whole += n
    return split, whole, routed


@dataclass(frozen=True)
class LayerKind:
    """What one layer of a group sends on the activation dimensions of a training step."""

    attention: bool  # it attends: a context-parallel K/V ring
    cp_width: int  # K/V elements per token the ring passes: 2·H_kv·D_h; MLA's H_q·(D_nope+D_rope+D_v)
    moe: bool  # it routes tokens to experts: the EP all-to-alls
    tp_blocks: int  # ``tp_blocks``: TP collective pairs (0 for a tower block: a text step never runs it)


def layer_kinds(model) -> dict[str, LayerKind]:
    """Each layer group's ``LayerKind``, by group name (what ``comm`` and ``train --search`` count)."""
    from ..components.mla import MLA  # lazy: comm, --search; train (non-MLA) loads no mla
    v = model.values
    out = {}
    for g in model.groups:
        width, attn = 0, False
        for c in g.components:
            if isinstance(c, MLA):
                width, attn = exact(c.H_q * (c.D_nope + c.D_rope + c.D_v), v), True
            elif isinstance(c, Attention):
                width, attn = exact(2 * c.H_kv * c.D_h, v), True
        out[g.name] = LayerKind(attn, width, any(isinstance(c, MoE) for c in g.components),
                                0 if g.tower else tp_blocks(g.components))
    return out


def stages(model, pp: int, sizes: list[int] | None = None) -> list[dict]:
    """Each stage's parameters: {"split", "whole", "experts", "layers": {group: count}}.

    The decoder layers are taken in the model's own order (``Model.layers()``: Jamba's attention
    every 8th layer, Gemma's local/global pattern, ...), L/pp per stage, the L mod pp extra layers
    on the interior stages; a layer built from several groups (LongCat's two sublayers and shortcut
    MoE) stays whole. Weights the layers share (``Model.shared_copies``: Zamba's shared transformer
    blocks) sit on every stage whose layers run them, each copy those layers run once. Tower groups
    (vision/audio encoder blocks) sit on the first stage with the embedding, beside its L/pp layers,
    as Megatron-LM places an encoder with ``--encoder-pipeline-model-parallel-size 0`` (its default:
    the encoder shares the first decoder pipeline rank)."""
    v = model.values
    order = model.layers()
    # the MTP modules (``mtp.MTPModel.tail_layers``) follow the last stage's decoder layers
    tail = getattr(model, "tail_layers", 0)
    L = len(order) - tail
    # L/pp layers per stage; when pp does not divide L the L mod pp extra layers go to the
    # interior stages (1, 2, ...), away from the embedding stage and the head stage
    if sizes is None:
        sizes = stage_sizes(L, pp)
    elif len(sizes) != pp or sum(sizes) != L:
        raise SymcostError(f"pipeline split {sizes} does not cover the L={L} layers in {pp} chunks")
    bounds = [sum(sizes[:i]) for i in range(pp + 1)]
    bounds[-1] += tail
    groups, emb, head, tied = param_parts(model)
    shared = [(c, model.shared_copies[c.key]) for c in model.pre if c.key in model.shared_copies]
    tied_copy = tied if pp > 1 else 0  # the last stage keeps its own copy of the tied weight
    out = []
    for s in range(pp):
        split = whole = experts = 0
        counts: dict[str, int] = {}
        units = [g for layer in order[bounds[s]:bounds[s + 1]] for g in layer]
        if s == 0:
            units = [g for g in model.groups if g.tower for _ in range(exact(g.count, v))] + units
        for g in units:
            if g.name not in groups:  # the table is filled as the splits meet the groups
                groups[g.name] = _split(g.components, v)
            a, b, r = groups[g.name]
            split, whole, experts = split + a, whole + b, experts + r
            counts[g.name] = counts.get(g.name, 0) + 1
        for c, per_layer in shared:  # each copy of shared weights the stage's layers run, once
            copies = dict(per_layer[i] for i in range(bounds[s], bounds[s + 1]) if per_layer[i] is not None)
            for own in copies.values():
                a, b, r = _split((c,), {**v, **own})
                split, whole, experts = split + a, whole + b, experts + r
        if s == 0:
            split, whole = split + emb[0], whole + emb[1]
        if s == pp - 1:
            split, whole = split + head[0] + tied_copy, whole + head[1]
        out.append({"split": split, "whole": whole, "experts": experts, "layers": counts,
                    "layer_ids": list(range(bounds[s], bounds[s + 1]))})
    return out


def param_parts(model) -> tuple[dict, tuple, tuple, int]:
    """({group name: (split, whole, routed) parameters of one layer (``_split``)}, filled by ``stages``
    as it meets the groups), the same of the embedding (shared copies apart) and of the final norm +
    head, and a tied head's weight count: what ``stages`` adds up for any split. Derived once per
    model (``core.memo``): a search splits the model for every (N_pp, v) of every world size it
    tries, and ``train_memory``, ``comm`` and the sheet's derivations split it again."""
    def build():
        v = model.values
        tied = 0
        for c in model.post:
            if getattr(c, "tied", False):
                tied = exact(c.d * c.V, v)
        return ({}, _split([c for c in model.pre if c.key not in model.shared_copies], v), _split(model.post, v), tied)
    return _PARTS.get(model, None, build)


_PARTS = PerModel()


def stage_sizes(L: int, pp: int) -> list[int]:
    """Decoder layers per stage: L/pp each, the L mod pp extra ones on stages 1, 2, ... (interior
    stages first; the last only when pp − 1 ≤ L mod pp)."""
    per, extra = divmod(L, pp)
    sizes = [per] * pp
    for i in range(extra):
        sizes[(i + 1) % pp] += 1
    return sizes


def rank_stages(model, pp: int, virtual: int = 1, plan: Plan | None = None) -> list[dict]:
    """Each pipeline rank's parameters; with ``virtual`` > 1 the sum of its model chunks
    r, r + pp, ..., r + (v−1)·pp of ``stages(model, pp·v)`` (Megatron's interleaved placement),
    each chunk kept under ``"chunks"``. ``plan``: its uneven split (``Plan.chunk_sizes``), if any."""
    sizes = plan.chunk_sizes(model.n_layers(), virtual) if plan is not None else None
    if virtual == 1:
        return stages(model, pp, sizes)
    chunks = stages(model, pp * virtual, sizes)
    out = []
    for r in range(pp):
        mine = [chunks[r + j * pp] for j in range(virtual)]
        layers: dict[str, int] = {}
        for c in mine:
            for k, n in c["layers"].items():
                layers[k] = layers.get(k, 0) + n
        out.append({"split": sum(c["split"] for c in mine), "whole": sum(c["whole"] for c in mine),
                    "experts": sum(c["experts"] for c in mine), "layers": layers, "chunks": mine})
    return out
