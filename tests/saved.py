"""The activation oracle: bytes of the tensors autograd saves for backward, measured.

One training forward (``model.train()``, labels given, no cache) under
``torch.autograd.graph.saved_tensors_hooks``: every tensor packed for backward is recorded by its
storage, each storage counted once (views of one buffer are one buffer), parameters' storages
excluded (they are model state, not activations). That is what the backward keeps alive.
A vision-language config builds the whole model (``AutoModelForImageTextToText``: the towers
are there) and is fed text ids only, the text-only training the engine's convention names.
``kernel``: ``"eager"`` (transformers' eager attention: scores and probabilities materialised) or
``"sdpa"`` (``scaled_dot_product_attention``; on CPU the flash kernel, which saves q, k, v, the
output and the fp32 log-sum-exp, as FlashAttention does). ``recompute``: ``"none"``, ``"full"``
(transformers' gradient checkpointing of every decoder layer) or ``"selective"`` (the attention
core — QKᵀ, softmax, PV — checkpointed, Megatron's selective recomputation).
"""
from __future__ import annotations

import torch
import torch.utils.checkpoint
from transformers import AttentionInterface, AutoModelForCausalLM

from tests import oracle

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def _selective(module, query, key, value, attention_mask, **kwargs):
    import sys
    eager_attention_forward = sys.modules[type(module).__module__].eager_attention_forward  # the family's own

    def core(q, k, v):
        return eager_attention_forward(module, q, k, v, attention_mask, **kwargs)
    return torch.utils.checkpoint.checkpoint(core, query, key, value, use_reentrant=False)


AttentionInterface.register("eager_selective", _selective)


def build(raw: dict, kernel: str = "eager", recompute: str = "none", dtype: str = "fp32", seed: int = 0):
    cfg = oracle.hf_config(raw)
    impl = {"eager": "eager", "sdpa": "sdpa"}[kernel]
    if recompute == "selective":
        impl = "eager_selective"
    torch.manual_seed(seed)
    auto = AutoModelForCausalLM
    if type(cfg) not in AutoModelForCausalLM._model_mapping:  # a VLM: the whole model, towers included
        from transformers import AutoModelForImageTextToText as auto
    try:
        model = auto.from_config(cfg, attn_implementation=impl, experts_implementation="eager")
    except (TypeError, ValueError):
        model = auto.from_config(cfg, attn_implementation=impl)
    model = model.to(DTYPES[dtype])
    if recompute == "full":  # transformers' non-reentrant checkpoint of every decoder layer
        enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
        enable()
    return model.train()


def saved(model, B: int, T: int, unreached: list | None = None) -> list[tuple[int, tuple, torch.dtype]]:
    """(storage bytes, first shape seen, dtype) of every distinct non-parameter storage that the
    loss's backward graph still holds once the forward has returned.

    Tensors are recorded by weak reference and looked at only after every output but the loss is
    dropped: what a graph branch off the loss saved (router logits returned for an auxiliary loss
    that is not computed, say) is freed with that branch, and its memory can be reused by a later
    tensor, so counting at pack time would be wrong twice.

    ``unreached``: when a list is given, the loss's backward is run and the list receives the
    (bytes, shape, dtype) of the counted storages it never unpacks: held by a graph branch the
    loss does not reach that stays alive all the same (MiniMax-M3's MSA indexer: its block scores
    are saved by ``amax`` and then written in place by ``scatter_``, a reference cycle in autograd).
    """
    import gc
    import weakref
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    packed: list = []

    used: set[int] = set()

    def pack(t):
        packed.append(weakref.ref(t))
        return (len(packed) - 1, t) if unreached is not None else t

    def unpack(x):
        if unreached is None:
            return x
        used.add(x[0])
        return x[1]

    ids = oracle._ids(model, B, T)
    gc.freeze()  # what exists now is not this forward's garbage: the collection below skips it (speed)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = model(ids, labels=ids, use_cache=False)
    loss = out.loss
    del out
    gc.collect()
    seen: dict[int, tuple] = {}
    ptrs: dict[int, int] = {}  # packed index -> storage
    for i, ref in enumerate(packed):
        t = ref()
        if t is None:
            continue
        st = t.untyped_storage()
        ptr = st.data_ptr()
        ptrs[i] = ptr
        if ptr not in params and ptr not in seen:
            seen[ptr] = (st.nbytes(), tuple(t.shape), t.dtype)
    t = None
    if unreached is not None:
        loss.backward()
        reached = {ptrs[i] for i in used if i in ptrs}
        unreached += [v for p, v in seen.items() if p not in reached]
        model.zero_grad(set_to_none=True)
    del loss
    return list(seen.values())


def saved_bytes(model, B: int, T: int) -> int:
    return sum(n for n, _, _ in saved(model, B, T))
