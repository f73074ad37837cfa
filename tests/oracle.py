"""The oracle: the real transformers classes, measured.

* parameters: the model built on the ``meta`` device, ``sum(p.numel())`` (tied weights once);
* FLOPs: a tiny config on CPU under ``torch.utils.flop_counter.FlopCounterMode`` with eager
  attention and eager experts (the SDPA kernel and grouped-mm experts are invisible to it);
* cache: the bytes of every tensor in the cache object a forward returns.
"""
from __future__ import annotations

import warnings

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()

TRANSFORMERS_VERSION = transformers.__version__

#: configs whose model_type transformers does not register, and the class that builds them
ORACLE_TYPE = {"kimi_k2": "deepseek_v3", "minimax_m3": "minimax_m3_vl_text",
               # remote code (modeling_mimo.py) whose main model is Qwen2ForCausalLM exactly: tests/test_mimo.py
               "mimo": "qwen2"}


#: model types whose forward cannot run under FlopCounterMode with grad disabled: DBRX's experts
#: index views of their weight parameters, and the counter's module tracker then finds a tensor that
#: requires grad without a grad_fn ("Expected gradient function to be set"). Counted with grad on
#: (the FLOPs of a forward do not depend on it).
COUNT_WITH_GRAD = {"dbrx"}


#: stateful models whose forward keeps its recurrent state on its own modules and returns no cache
#: object (RecurrentGemma: ``conv1d_state`` and ``rg_lru.recurrent_states`` on each recurrent block;
#: its ``DynamicCache``, holding the attention KV, is built inside the forward and not returned): the
#: oracle passes a cache it builds itself (and the positions, which the model would read from that
#: cache's attention layers; an all-recurrent stack has none) and reads these module attributes as well
MODULE_STATE = {"recurrent_gemma": ("conv1d_state", "recurrent_states")}


def _own_cache(model, T: int) -> dict:
    if model.config.model_type in MODULE_STATE:
        from transformers import DynamicCache
        return {"cache": DynamicCache(config=model.config), **_stateful_kwargs(model, torch.arange(T)[None])}
    return {}


def _next_position(model, T: int) -> dict:
    return _stateful_kwargs(model, torch.tensor([[T]])) if model.config.model_type in MODULE_STATE else {}


def _stateful_kwargs(model, positions) -> dict:
    """The positions; and, for a stack without attention layers, the (unused) mask given as
    prepared, since transformers would size it against an attention layer of the cache."""
    kw = {"position_ids": positions}
    if "sliding_attention" not in model.config.layers_block_type:
        kw["attention_mask"] = {"sliding_attention": None}
    return kw


def _module_states(model) -> list:
    names = MODULE_STATE.get(model.config.model_type, ())
    return [t for m in model.modules() for n in names
            if isinstance(t := getattr(m, n, None), torch.Tensor)]


def _no_grad(model):
    return torch.enable_grad() if model.config.model_type in COUNT_WITH_GRAD else torch.no_grad()


def hf_config(raw: dict):
    raw = dict(raw)
    mt = ORACLE_TYPE.get(raw["model_type"], raw.pop("model_type"))
    raw.pop("model_type", None)
    raw.pop("auto_map", None)
    return AutoConfig.for_model(mt, **raw)


def auto_class(cfg):
    """The causal-LM auto class, or the image-text-to-text one for a VLM: a config without a causal-LM
    class (kimi_k25), or one with a vision tower whose causal-LM entry is the text model alone
    (qwen3_5 -> Qwen3_5ForCausalLM, llama4 -> Llama4ForCausalLM; the engine counts the whole wrapper)."""
    vlm = getattr(cfg, "vision_config", None) is not None and type(cfg) in AutoModelForImageTextToText._model_mapping
    if type(cfg) in AutoModelForCausalLM._model_mapping and not vlm:
        return AutoModelForCausalLM
    return AutoModelForImageTextToText


#: model types transformers has no class for, and the module of tests/ whose ``build(raw, device, seed)``
#: stands in for the checkpoint's remote code (tests/test_registry.py's REMOTE_CODE lists their suites)
REMOTE_BUILD = {"nemotron-nas": "tests.decilm_reference"}


def build(raw: dict, device: str = "cpu", seed: int = 0):
    if raw.get("model_type") in REMOTE_BUILD:
        import importlib
        return importlib.import_module(REMOTE_BUILD[raw["model_type"]]).build(raw, device, seed)
    cfg = hf_config(raw)
    auto = auto_class(cfg)
    torch.manual_seed(seed)
    kwargs = {"attn_implementation": "eager"}
    if device == "meta":
        with torch.device("meta"):
            return auto.from_config(cfg, **kwargs)
    try:
        model = auto.from_config(cfg, experts_implementation="eager", **kwargs)
    except (TypeError, ValueError):
        model = auto.from_config(cfg, **kwargs)
    return model.float().eval()


#: wrappers whose own forward fails on text in transformers 5.24, and the submodule that forward runs:
#: Llama4ForConditionalGeneration.forward reads ``image_outputs`` from its language model's output, which
#: has none (AttributeError on every call); on text it only embeds the ids (0 FLOPs) and calls language_model
TEXT_FORWARD = {"Llama4ForConditionalGeneration": lambda model: model.language_model}


def _forward(model):
    """The module a text-only pass runs (the model itself, but for the wrappers above)."""
    return TEXT_FORWARD.get(type(model).__name__, lambda m: m)(model)


def params(raw: dict) -> int:
    model = build(raw, "meta")
    return sum(p.numel() for p in model.parameters())


def buffers(model) -> dict[str, int]:
    return {n: b.numel() for n, b in model.named_buffers()}


def _ids(model, B: int, T: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, model.config.get_text_config().vocab_size, (B, T), generator=g)


def prefill_flops(model, B: int, T: int, logits_to_keep: int = 0) -> int:
    """``logits_to_keep=1``: the head runs on the last position only, as ``generate()`` does."""
    ids = _ids(model, B, T)
    with _no_grad(model), FlopCounterMode(display=False) as counter:
        _forward(model)(ids, use_cache=False, logits_to_keep=logits_to_keep)
    return counter.get_total_flops()


#: model types whose forward takes and returns its recurrent state under another name than ``cache``
#: (RWKV: ``state=``, a list of five tensors, returned as ``RwkvCausalLMOutput.state``)
STATE_ARG = {"rwkv": "state"}


def _cache_of(out):
    return getattr(out, "cache", None) or getattr(out, "past_key_values", None) or getattr(out, "state", None)


def _cache_kw(model, cache) -> dict:
    return {STATE_ARG.get(model.config.model_type, "cache"): cache}


def decode_flops(model, B: int, T: int) -> int:
    """FLOPs of one new token after a prefill of ``T`` tokens (the cache holds ``T``)."""
    ids = _ids(model, B, T + 1)
    own = _own_cache(model, T)
    with torch.no_grad():
        out = _forward(model)(ids[:, :T], use_cache=True, **own)
        cache = _cache_of(out) or own.get("cache")
        with _no_grad(model), FlopCounterMode(display=False) as counter:
            _forward(model)(ids[:, T:], **_cache_kw(model, cache), use_cache=True, **_next_position(model, T))
    return counter.get_total_flops()


def cache_tensors(model, B: int, T: int) -> list[torch.Tensor]:
    ids = _ids(model, B, T)
    own = _own_cache(model, T)
    with torch.no_grad():
        out = _forward(model)(ids, use_cache=True, **own)
    cache = _cache_of(out) or own.get("cache")
    seen, found = set(), list(_module_states(model))

    def walk(obj, depth=0):
        if depth > 6 or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            if obj.is_floating_point():  # not bookkeeping such as a window-size scalar
                found.append(obj)
        elif isinstance(obj, (list, tuple)):
            for x in obj:
                walk(x, depth + 1)
        elif isinstance(obj, dict):
            for x in obj.values():
                walk(x, depth + 1)
        elif hasattr(obj, "__dict__"):
            for x in vars(obj).values():
                walk(x, depth + 1)

    walk(cache)
    return found


def cache_elements(model, B: int, T: int) -> int:
    return sum(t.numel() for t in cache_tensors(model, B, T))


def train_step_flops(model, B: int, T: int) -> int:
    """FLOPs of forward + backward of the LM loss over B sequences of T tokens."""
    ids = _ids(model, B, T)
    model.train()
    try:
        with FlopCounterMode(display=False) as counter:
            out = _forward(model)(ids, labels=ids, use_cache=False)
            out.loss.backward()
    finally:
        model.eval()
        model.zero_grad(set_to_none=True)
    return counter.get_total_flops()


def serialised(raw: dict, directory) -> tuple[dict, dict]:
    """The config as transformers writes it back: ``to_dict()`` of its config class, and the
    ``config.json`` that ``save_pretrained(directory)`` writes (read back as a dict)."""
    import json
    from pathlib import Path
    cfg = hf_config(raw)
    cfg.save_pretrained(directory)
    saved = json.loads((Path(directory) / "config.json").read_text())
    return cfg.to_dict(), saved


def assert_serialised_forms_agree(raw: dict, directory) -> int:
    """The engine reads both forms transformers writes back (``serialised``) as it reads ``raw``:
    the same parameters, prefill FLOPs (reference and served), decode FLOPs and cache at T = 13,
    B = 2. Returns the parameter count (for the caller to hold against the class's own)."""
    import symcost
    from symcost.core.conventions import Phase
    m0 = symcost.build(dict(raw))
    want = m0.params().total_at(m0.values)
    vals0 = m0.values_with(T=13, B=2)
    for form in serialised(raw, directory):
        m = symcost.build(dict(form))
        assert m.params().total_at(m.values) == want
        vals = m.values_with(T=13, B=2)
        for ph in (Phase(kind="prefill", impl="reference"), Phase(kind="decode"), Phase(kind="prefill")):
            assert m.flops(ph).total_at(vals) == m0.flops(ph).total_at(vals0)
        assert m.cache().total_at(vals) == m0.cache().total_at(vals0)
    return want
