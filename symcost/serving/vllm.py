"""vLLM's paged KV allocation: the cache layout (``symcost cache --layout vllm``) and the start-up
accounting its KV-cache manager prints ("GPU KV cache size: N tokens", "Maximum concurrency for X
tokens per request: Yx"), read from vllm/v1/core/kv_cache_utils.py and the hybrid page alignment
of ``HybridAttentionMambaModelConfig`` (vLLM 0.10-0.11).

vLLM stores every layer's cache in fixed blocks of ``block_size`` tokens (default 16):
    full attention / MLA latent: ⌈T / block⌉ blocks per request
    sliding window (SlidingWindowSpec): ⌈min(T, W − 1 + M) / block⌉ + 1 blocks, M = the
        scheduler's batched tokens per step (max_num_batched_tokens), the extra block because the
        window rarely starts on a block boundary
    Mamba / Gated DeltaNet state: fixed per request, independent of T.
MLA's cache is one latent "head" of d_kv + D_rope per token (not K and V), as transformers
holds it; vLLM's FP8 FlashMLA layout (656 bytes per token: 512 fp8 + 4 fp32 scales + 64 bf16
rope) is used by ``kv_capacity`` with an fp8 KV cache. The transformation is generic: in every
cache term the kept-token count is replaced by its paged value.

KV capacity (``kv_capacity``), per tensor-parallel rank, with A bytes available for the cache:
    every cached layer has a spec: full attention (MLA too), sliding window W, or a fixed state
    (Mamba-2 / Gated DeltaNet: conv state of K_c − 1 columns, as vLLM keeps it, + recurrent state)
    one spec for all layers:   blocks = ⌊A / (page · L)⌋,  tokens = blocks · block
    hybrids: an attention+state hybrid first raises the attention block to
        block = 16 · ⌈state page / (16 · attention bytes per token)⌉ and pads the state page to the
        attention page; layers are split into groups of g layers (g = the fewest layers of one kind,
        or the most when max < 1.5 · min), blocks = ⌊A / page / g⌋, tokens = ⌊blocks / groups⌋ · block
    max concurrency = blocks / Σ_groups blocks one request of max_model_len needs (full: ⌈T/block⌉;
        sliding: ⌈min(W − 1 + M, T)/block⌉ + 1; state: 1)
"""
from __future__ import annotations

import sympy

from ..core.notation import sym
from ..core.terms import Terms

T = sym.T


def paged(expr: sympy.Expr, block: int, batched: int) -> sympy.Expr:
    """One cache term with its token count rounded up to whole vLLM blocks."""
    t = sympy.Dummy("t", integer=True, positive=True)  # stands for T inside windows
    windows = {}
    for m in expr.atoms(sympy.Min):
        if T in m.args and len(m.args) == 2:
            W_minus_1 = m.args[0] if m.args[1] == T else m.args[1]
            windows[m] = (sympy.ceiling(sympy.Min(t, W_minus_1 + batched) / block) + 1) * block
    padded = expr.xreplace(windows).xreplace({T: sympy.ceiling(T / block) * block})
    return padded.xreplace({t: T})


def paged_cache(model, block_size: int = 16, max_batched_tokens: int = 8192) -> Terms:
    """``model.cache()`` under vLLM's paged layout."""
    return model.cache().map(lambda e: paged(e, block_size, max_batched_tokens))


# -- KV capacity as vLLM's KV-cache manager computes it ------------------------------------------
from dataclasses import dataclass  # noqa: E402
from dataclasses import field as _field
from fractions import Fraction  # noqa: E402
from math import ceil as _ceil  # noqa: E402

from ..core.errors import SymcostError  # noqa: E402
from ..core.terms import exact  # noqa: E402
from ..core.units import dtype_bytes  # noqa: E402

#: vLLM's default KV block; MLA backends (FlashMLA) use 64-token blocks
DEFAULT_BLOCK = 16
MLA_BLOCK = 64


@dataclass
class LayerSpec:
    kind: str  # "full", "sliding", "state"
    layers: int
    per_token: Fraction = Fraction(0)  # bytes per token per layer on one rank (attention kinds)
    state: Fraction = Fraction(0)  # bytes per request per layer on one rank (state kind)
    window: int | None = None
    label: str = ""


@dataclass
class KVConfig:
    block_size: int
    page_bytes: int  # bytes of one block of one layer (uniform across groups for hybrids)
    groups: list[tuple[str, int]]  # (kind, layers in the group)
    num_blocks: int
    tokens: int  # "GPU KV cache size: N tokens"
    max_concurrency: float  # "Maximum concurrency for max_model_len tokens per request"
    blocks_per_request: int
    block_bytes: int = 0  # bytes one block index takes across all layers of the rank
    specs: list[LayerSpec] = _field(default_factory=list)
    notes: list[str] = _field(default_factory=list)


def _is_mla(c) -> bool:
    return type(c).__name__ == "MLA"


def layer_specs(model, kv_dtype: str = "bf16", tp: int = 1, state_dtype: str | None = None) -> list[LayerSpec]:
    """One spec per kind of cached layer, bytes on one tensor-parallel rank (vLLM's shapes)."""
    vals = model.values
    bkv = dtype_bytes(kv_dtype, "--kv-dtype")
    bst = dtype_bytes(state_dtype or ("bf16" if kv_dtype not in ("fp32",) else kv_dtype), "--mamba-ssm-dtype")
    specs: list[LayerSpec] = []
    for g in model.groups:
        count = exact(g.count, vals)
        if count == 0:
            continue
        for c in g.components:
            leaves = c.cache().flatten()
            if not leaves:
                continue
            share = c.cache_tp_share(tp, vals)
            per_token, state, window = Fraction(0), Fraction(0), None
            for name, expr in leaves.items():
                if "conv" in name:  # vLLM keeps K_c − 1 conv columns (transformers keeps K_c)
                    expr = expr.xreplace({sym.K_c: sym.K_c - 1})
                e = expr.xreplace({sym.B: 1})
                mins = [m for m in e.atoms(sympy.Min) if sym.T in m.free_symbols]
                if mins:
                    W1 = [a for a in mins[0].args if a != sym.T][0]
                    window = exact(W1, vals) + 1
                    e = e.xreplace({mins[0]: sym.T})
                if sym.T in e.free_symbols:
                    slope = sympy.diff(e, sym.T)
                    if slope.free_symbols & {sym.T}:
                        raise SymcostError(f"{g.name}/{c.key}: cache of {name} is not linear in T; "
                                           "the vLLM layout needs a per-token size")
                    if _is_mla(c) and kv_dtype == "fp8":
                        # FlashMLA fp8 layout: d_kv fp8 + one fp32 scale per 128 + D_rope in bf16
                        d_kv, D_r = exact(c.d_kv, vals), exact(c.D_rope, vals)
                        per_token = Fraction(d_kv + 4 * _ceil(d_kv / 128) + 2 * D_r)
                        break
                    per_token += Fraction(exact(slope, vals)) * bkv * share
                else:
                    state += Fraction(exact(e, vals)) * bst * share
            if per_token:
                specs.append(LayerSpec("sliding" if window else "full", count, per_token=per_token,
                                       window=window, label=f"{g.name}/{c.key}"))
            if state:
                specs.append(LayerSpec("state", count, state=state, label=f"{g.name}/{c.key}"))
    merged: dict[tuple, LayerSpec] = {}
    for s in specs:  # layers with the same spec form one type, whatever group they came from
        key = (s.kind, s.per_token, s.state, s.window)
        if key in merged:
            merged[key].layers += s.layers
            merged[key].label += f" + {s.label}"
        else:
            merged[key] = LayerSpec(s.kind, s.layers, s.per_token, s.state, s.window, s.label)
    return list(merged.values())


def kv_capacity(model, available_bytes: int, *, max_model_len: int, kv_dtype: str = "bf16", tp: int = 1,
                pp: int = 1, block_size: int | None = None, max_batched_tokens: int = 8192,
                state_dtype: str | None = None) -> KVConfig:
    """vLLM's KV block count, token capacity and maximum concurrency on one rank: the page layout of
    ``formulas.kv_formula`` (the one implementation ``memory`` and ``deploy`` evaluate too) at these
    sizes."""
    from .formulas import kv_formula  # formulas builds on this module's block constants
    f = kv_formula(model, kv_dtype, block_size, state_dtype)
    specs = layer_specs(model, kv_dtype, tp, state_dtype)
    notes = list(f.notes)
    stages = None
    if pp > 1:
        from .formulas import pipeline_stages
        try:
            stages = pipeline_stages(model, pp)
            notes.append(f"pipeline stages of vLLM's split {[s.layers for s in stages]}, each given the same "
                         f"{available_bytes:,} bytes: the stage with the widest pages decides (the fewest blocks)")
        except ValueError as exc:
            notes.append(f"pipeline stage holds ⌈layers/{pp}⌉ of each kind (the most-loaded stage; {exc})")
    if not f.kinds:
        return KVConfig(0, 0, [], 0, 0, float("inf"), 0, 0, specs, ["no cache: attention-free model"])
    vals = {sym.N_tp: tp, sym.N_pp: pp, sym.N_ep: 1, sym.T: max_model_len, sym.M: max_batched_tokens}
    vals = {k: sympy.Integer(v) for k, v in vals.items()}

    def num(e):
        return exact(sympy.sympify(e).xreplace(vals), {})

    block = int(num(f.block))
    per_block = int(num(f.block_bytes)) if stages is None else max(int(num(f.stage_block_bytes(s))) for s in stages)
    groups = int(num(f.groups))
    need = int(sympy.ceiling(num(f.need)))
    if per_block <= 0:
        return KVConfig(block, 0, [], 0, 0, float("inf"), need, 0, specs, notes)
    num_blocks = available_bytes // per_block
    tokens = num_blocks // groups * block
    if f.page is None:
        page = int(num(block * f.kinds[0][1]))
        group_list = [("full", sum(k[3] for k in f.kinds))]
    else:
        page = int(num(f.page))
        group_list = list(f.group_list)
    if f.state_page is not None:
        state = Fraction(num(f.state_page))
        if block > (block_size or (MLA_BLOCK if any(_is_mla(c) for c in model.components()) else DEFAULT_BLOCK)):
            notes.append(f"attention block raised to {block} tokens so an attention page holds a state page")
        if page < state:
            raise SymcostError(f"--block-size {block}: an attention page ({page} B) is smaller than "
                               f"a state page ({int(state)} B)")
        pad = page / state - 1
        if pad:
            notes.append(f"state page padded by {float(pad):.2%} to the attention page")
    return KVConfig(block, page, group_list, num_blocks, tokens, num_blocks / need if need else float("inf"),
                    need, per_block, specs, notes)
