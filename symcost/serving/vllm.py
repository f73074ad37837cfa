"""vLLM's paged KV allocation, as a cache layout (``symcost cache --layout vllm``).

vLLM stores every layer's cache in fixed blocks of ``block_size`` tokens (default 16):
    full attention / MLA latent: ⌈T / block⌉ blocks per request
    sliding window (SlidingWindowSpec): ⌈min(T, W − 1 + M) / block⌉ + 1 blocks, M = the
        scheduler's batched tokens per step (max_num_batched_tokens), the extra block because the
        window rarely starts on a block boundary
    Mamba / Gated DeltaNet state: fixed per request, independent of T.
MLA's cache is one latent "head" of d_kv + D_rope per token (not K and V), as transformers
holds it; vLLM's FP8 FlashMLA layout (656 bytes per token: 512 fp8 + 4 fp32 scales + 64 bf16
rope) is not modelled here. The transformation is generic: in every cache term the kept-token
count is replaced by its paged value.
"""
from __future__ import annotations

import sympy

from ..notation import sym
from ..terms import Terms

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
