"""The seeds audit: every numeric claim of the seed documents next to symcost's exact value.

Each ``Claim`` quotes a seed (file, section, the words as written), names the model (a bundled
config, or a config dict built below from the seeds' own field tables and the published
config.json where no config is bundled), says what is measured and with which inputs, and holds
the seed's number exactly as written with its unit as written (``"B"``, ``"GiB"``, ``"GB"``,
``"G"``). ``value()`` computes symcost's exact value through the public API (``symcost.build``,
``Model.params/active_params/flops/cache``, ``symcost.memory``, ``symcost.training``).

Agreement is judged in the seed's own unit at the seed's own rounding: the exact value must round
to the digits written (``rule="round"``; a tie at the half counts as agreeing), or truncate to
them (``"truncate"``), or lie where the words put it (``"gt"``: "more than"; ``"nearly"``:
"近": within 10% below). For every disagreement the claim states the cause in one sentence and,
where the seed's number can be re-derived, an ``alt()`` — the seed's own (wrong) formula
evaluated exactly — that reproduces it (``tests/test_audit.py`` checks it does). Where no
formula reproduces it, the cause says "not reproduced" and what was tried.

Units: GiB = 2^30 bytes, GB = 10^9 bytes; "1M" context is 10^6 in the seeds' FLOPs sections
(their arithmetic uses 10^6) and 2^20 = 1,048,576 where they say so (001 CH 4 and §6.3).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Callable


from . import loader
from .conventions import Phase
from .errors import SymcostError
from .serving.gpus import gpu
from .serving.memory import cache_bytes_total, inference_memory, leaf_bytes, weight_bytes
from .notation import sym
from .terms import exact
from .training import train_memory

GiB, GB, MiB, TiB = 2**30, 10**9, 2**20, 2**40
M1 = 10**6  # "1M" in the seeds' FLOPs arithmetic
T20 = 2**20  # "1M" where the seeds say T = 2^20

# -- configs the bundle lacks: raw config.json dicts (fields as transformers reads them) ----------
#: name -> (config dict, where its values come from)
CONFIGS: dict[str, tuple[dict, str]] = {
    "llama-3.1-405b": ({
        "model_type": "llama", "hidden_size": 16384, "intermediate_size": 53248,
        "num_hidden_layers": 126, "num_attention_heads": 128, "num_key_value_heads": 8,
        "vocab_size": 128256, "tie_word_embeddings": False, "max_position_embeddings": 131072},
        "seed 003 §6.4 field list = meta-llama/Llama-3.1-405B config.json"),
    "mistral-7b-v0.2": ({
        "model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "vocab_size": 32000, "tie_word_embeddings": False, "sliding_window": None,
        "max_position_embeddings": 32768},
        "seed 003 §10 (d=4096, L=32, n_kv=8, d_ff=14336, V=32000) = mistralai/Mistral-7B-v0.2 "
        "config.json (no sliding window)"),
    "qwen2.5-0.5b": ({
        "model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
        "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
        "vocab_size": 151936, "tie_word_embeddings": True, "max_position_embeddings": 32768,
        "use_sliding_window": False},
        "seed 003 §5.3/§12 (d=896, V=151936, tied) + Qwen/Qwen2.5-0.5B config.json"),
    "moe-toy": ({
        "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
        "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000,
        "tie_word_embeddings": False},
        "seed 004 §4 (d=4096, L=32, MHA, SwiGLU d_ff=11008, 8 experts, top-2) on the Llama-2-7B "
        "base its numbers use (V=32000, untied head); Mixtral layout"),
    "full-attn-60": ({
        "model_type": "llama", "hidden_size": 8192, "intermediate_size": 32768,
        "num_hidden_layers": 60, "num_attention_heads": 64, "num_key_value_heads": 64,
        "vocab_size": 131072, "tie_word_embeddings": False},
        "seed 001 §3.10 hypothetical 'pure Full Attn' model (60 MHA layers, d=8192, H=64, D_h=128, "
        "SwiGLU d_ff=32768); V not given, Nemotron's 131072 assumed (only the LM head uses it)"),
}
#: variants of a bundled config with a few fields changed (the seeds' "what if" comparisons)
VARIANTS: dict[str, tuple[str, dict, str]] = {
    "llama-3.1-8b+mha": ("llama-3.1-8b", {"num_key_value_heads": 32}, "Llama-3-8B as MHA (seed 003 §3.3)"),
    "llama-3.1-8b+ff4d": ("llama-3.1-8b", {"intermediate_size": 16384}, "Llama-3-8B with d_ff = 4d (003 §6.6)"),
    "nemotron+mha": ("nemotron-3-ultra-550b-a55b", {"num_key_value_heads": 64},
                     "Nemotron 3 Ultra attention as MHA (000 §2.3.2)"),
}
NAMES = {
    "llama-3.1-8b": "Llama-3-8B (bundled llama-3.1-8b: same shapes)",
    "llama-3.1-70b": "Llama-3-70B (bundled llama-3.1-70b: same shapes)",
    "nemotron-3-ultra-550b-a55b": "Nemotron 3 Ultra", "minimax-m3": "MiniMax M3 (+ the seeds' vision table)",
    "kimi-k2.5": "Kimi K2.5", "deepseek-v3": "DeepSeek-V3", "deepseek-v4-flash": "DeepSeek V4 Flash",
    "llama-2-7b": "Llama-2-7B", "qwen2.5-7b": "Qwen2.5-7B",
    "qwen3.5-35b-a3b": "Qwen3.5-35B-A3B (the seeds' Qwen3.5-MoE)",
}


@lru_cache(maxsize=None)
def model(key: str):
    """The symcost ``Model`` for a bundled name, a ``CONFIGS`` entry or a ``VARIANTS`` entry."""
    if key in CONFIGS:
        return loader.build(loader.load_config(dict(CONFIGS[key][0]), name=key))
    if key in VARIANTS:
        base, change, _ = VARIANTS[key]
        raw = dict(loader.read_json(base)[1])
        raw.update(change)
        return loader.build(loader.load_config(raw, name=key))
    return loader.build(key)


def source(key: str) -> str:
    if key in CONFIGS:
        return f"config dict: {CONFIGS[key][1]}"
    if key in VARIANTS:
        return f"bundled {VARIANTS[key][0]} with {VARIANTS[key][1]}: {VARIANTS[key][2]}"
    return f"bundled {key}"


# -- the questions, through the public API ---------------------------------------------------------
def _node(terms, path):
    return terms.total if path is None else terms.node_total(terms[path])


def params(key: str, *paths: str | None) -> int:
    """Parameters of ``paths`` (subtrees, summed; none = the total)."""
    m = model(key)
    t = m.params()
    return sum(exact(_node(t, p), m.values) for p in (paths or (None,)))


def active(key: str, *paths: str | None) -> int:
    m = model(key)
    t = m.active_params()
    return sum(exact(_node(t, p), m.values) for p in (paths or (None,)))


def routed(key: str) -> int:
    m = model(key)
    return m.routed_params().total_at(m.values)


def extras(key: str, prefix: str = "") -> int:
    m = model(key)
    return sum(exact(e, m.values) for p, e in m.extras.flatten().items() if p.startswith(prefix))


def count(key: str, s) -> int:
    return int(model(key).values[s])


def per_layer(key: str, group: str, *parts: str) -> Fraction:
    """One layer of ``group`` (its components ``parts``; none = all of them)."""
    m = model(key)
    g = next(g for g in m.groups if g.name == group)
    paths = [f"{group}/{p}" for p in parts] or [group]
    return Fraction(params(key, *paths), exact(g.count, m.values))


def flops(key: str, *, kind: str = "decode", T: int, B: int = 1, attention: str = "full",
          mla: str = "expand", logits: str = "last", impl: str = "minimal",
          keep: Callable[[str], bool] = lambda p: True) -> int:
    """Forward FLOPs (the leaves whose path ``keep`` accepts) at context T, batch B."""
    m = model(key)
    t = m.flops(Phase(kind=kind, attention=attention, mla=mla, logits=logits, impl=impl))
    vals = m.values_with(T=T, B=B)
    return sum(exact(e, vals) for p, e in t.flatten().items() if keep(p))


CORE = ("scores", "values", "index_scores")  # attention's matmuls with the context (not weight GEMMs)


def weight_flops_per_token(key: str, **kw) -> int:
    """Weight-GEMM FLOPs of one token (prefill of T=1 without QKᵀ/PV): 2 per touched weight."""
    return flops(key, kind="prefill", T=1, logits="all",
                 keep=lambda p: p.rsplit("/", 1)[-1] not in CORE, **kw)


def leaf(*names: str) -> Callable[[str], bool]:
    return lambda p: p.rsplit("/", 1)[-1] in names


def under(*prefixes: str) -> Callable[[str], bool]:
    return lambda p: p.startswith(prefixes)


def both(a: Callable[[str], bool], b: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda p: a(p) and b(p)


def cache(key: str, T: int, B: int = 1, kv: str = "bf16", comps: tuple[str, ...] = ()) -> int:
    """Cache bytes at T (KV in ``kv``, state leaves in their own dtype); ``comps`` filters components."""
    m = model(key)
    total, by = cache_bytes_total(m, kv, m.values_with(T=T, B=B))
    return total if not comps else sum(v for k, v in by.items() if k.startswith(comps))


def _leaf_bytes(key: str, leaf_name: str, T: int = 1, B: int = 1, kv: str = "bf16") -> int:
    """Bytes of every cache leaf called ``leaf_name`` (e.g. ``recurrent_state``), in its own dtype."""
    m = model(key)
    vals = m.values_with(T=T, B=B)
    return int(sum(exact(e, vals) * leaf_bytes(m, p, kv) for p, e in m.cache().flatten().items()
                   if p.rsplit("/", 1)[-1] == leaf_name))


def max_batch(key: str, *, T: int, weights: str = "bf16", gpus: int = 8, card: str = "H200") -> int:
    """Largest decode batch at context T on ``gpus`` cards using all of their memory (mem_util 1)."""
    fit = inference_memory(model(key), T=T, B=1, weights_dtype=weights, phase="decode", tp=gpus,
                           gpu=gpu(card), mem_util=1.0)
    return fit.max_batch


# -- claims -----------------------------------------------------------------------------------------
SCALE = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12, "GFLOPs": 10**9,
         "MFLOPs": 10**6, "TFLOPs": 10**12, "G FLOPs": 10**9, "M FLOPs": 10**6, "bytes": 1,
         "KB": 10**3, "MB": 10**6, "GB": GB, "KiB": 2**10, "MiB": MiB, "GiB": GiB, "TiB": TiB,
         "%": 1, "x": 1, "GPUs": 1, "s": 1, "ms": Fraction(1, 1000), "bytes/param": 1, "batch": 1}


@dataclass(frozen=True)
class Claim:
    seed: str  # "003 §6.2": file prefix and section
    quote: str  # the seed's words, short, as written
    what: str  # the metric and inputs, in English
    model: str  # a key of ``model()``
    said: str  # the seed's number exactly as written
    unit: str  # the seed's unit as written
    value: Callable[[], int | Fraction]  # symcost's exact value, in base units of ``unit``
    expect: str  # "agrees" | "disagrees": the table's verdict (the test pins it)
    rule: str = "round"  # round | truncate | gt | nearly
    cause: str = ""  # one sentence, for a disagreement (or a note for an agreement)
    alt: Callable[[], int | Fraction] | None = None  # the seed's formula, evaluated exactly
    alt_unit: str | None = None  # the unit the alternative is read in (default ``unit``)
    alt_rule: str | None = None

    def number(self) -> Fraction:
        return Fraction(self.said.replace(",", ""))

    def decimals(self) -> int:
        s = self.said.replace(",", "")
        return len(s.split(".")[1]) if "." in s else 0

    def judge(self, v, unit: str | None = None, rule: str | None = None) -> bool:
        """Does exact value ``v`` (base units) read as the seed's number under its rounding?"""
        x = Fraction(v) / SCALE[unit if unit is not None else self.unit]
        s, d = self.number(), self.decimals()
        rule = rule or self.rule
        if rule == "round":
            return abs(x - s) <= Fraction(1, 2 * 10**d)
        if rule == "truncate":
            return math.floor(x * 10**d) == s * 10**d
        if rule == "gt":
            return x > s
        if rule == "nearly":
            return s * Fraction(9, 10) <= x <= s
        raise ValueError(rule)

    def verdict(self) -> str:
        return "agrees" if self.judge(self.value()) else "disagrees"

    def alt_reproduces(self) -> bool:
        return self.alt is not None and self.judge(self.alt(), self.alt_unit, self.alt_rule)


CLAIMS: list[Claim] = []


def claim(seed, quote, what, key, said, unit, value, expect, cause="", **kw) -> None:
    CLAIMS.append(Claim(seed, quote, what, key, said, unit, value, expect, cause=cause, **kw))


def pct(a, b) -> Fraction:
    return Fraction(a) * 100 / b


L8, L70, L405, L2 = "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-2-7b"
MIS, Q7, Q05, TOY = "mistral-7b-v0.2", "qwen2.5-7b", "qwen2.5-0.5b", "moe-toy"
DS3, NEM, M3, K25, V4, F60 = ("deepseek-v3", "nemotron-3-ultra-550b-a55b", "minimax-m3",
                             "kimi-k2.5", "deepseek-v4-flash", "full-attn-60")
Q35 = "qwen3.5-35b-a3b"
EMB = ("embed_tokens", "lm_head")


def _layer(key, group="layers"):  # one decoder layer of a uniform stack
    return per_layer(key, group)


# ---- seed 003: dense decoder shapes -------------------------------------------------------------
claim("003 §3.3", "attention 每层 41,943,040", "Llama-3-8B attention params per layer", L8,
      "41,943,040", "", lambda: per_layer(L8, "layers", "self_attn"), "agrees")
claim("003 §3.3", "GQA 省了 25.2M/层、32 层 805M", "params saved by GQA vs MHA (n_kv 32 -> 8)", L8,
      "805", "M", lambda: params("llama-3.1-8b+mha") - params(L8), "agrees")
claim("003 §3.3", "约占总参数的 10%", "GQA saving as a share of the total", L8, "10", "%",
      lambda: pct(params("llama-3.1-8b+mha") - params(L8), params(L8)), "agrees")
claim("003 §3.3", "K/V 投影在 attention 里的占比从 20% 降到 11%", "Llama-3-70B k+v share of attention params",
      L70, "11", "%", lambda: pct(params(L70, "layers/self_attn/k_proj", "layers/self_attn/v_proj"),
                                  params(L70, "layers/self_attn")), "agrees")
claim("003 §4.4", "176,160,768 = 176.16M    80.8%", "Llama-3-8B FFN share of a layer", L8, "80.8", "%",
      lambda: pct(per_layer(L8, "layers", "mlp"), _layer(L8)), "agrees")
claim("003 §4.4", "704,643,072 = 704.64M    82.3%", "Llama-3-70B FFN share of a layer", L70, "82.3", "%",
      lambda: pct(per_layer(L70, "layers", "mlp"), _layer(L70)), "disagrees", alt_rule="truncate",
      cause="the exact share is 82.35%, which rounds to 82.4%; the seed truncated it",
      alt=lambda: pct(per_layer(L70, "layers", "mlp"), _layer(L70)))
claim("003 §5.1", "全模型 32 × 8192 + 4096 = 266,240 个", "Llama-3-8B RMSNorm params", L8, "266,240", "",
      lambda: params(L8, "layers/norms", "norm"), "agrees")
claim("003 §5.3", "两份合计 1.05B，占 8.03B 的 13.1%", "Llama-3-8B embedding + LM head share", L8, "13.1", "%",
      lambda: pct(params(L8, *EMB), params(L8)), "agrees")
claim("003 §5.3", "两份 2.10B，占 70.55B 的 3.0%", "Llama-3-70B embedding + LM head share", L70, "3.0", "%",
      lambda: pct(params(L70, *EMB), params(L70)), "agrees")
claim("003 §5.3", "词表 +789M", "Llama-2-7B -> Llama-3-8B: embedding + head growth", L8, "789", "M",
      lambda: params(L8, *EMB) - params(L2, *EMB), "agrees")
claim("003 §5.3", "FFN 从 11008 加宽到 14336 再 +1.31B", "Llama-2-7B -> Llama-3-8B: FFN growth", L8, "1.31", "B",
      lambda: params(L8, "layers/mlp") - params(L2, "layers/mlp"), "agrees")
claim("003 §5.3", "净增 ... ≈ 1.29B", "Llama-3-8B minus Llama-2-7B total params", L8, "1.29", "B",
      lambda: params(L8) - params(L2), "agrees")
claim("003 §5.3", "多出的 789M 参数在 BF16 下是 1.58 GB", "vocabulary growth in BF16 bytes", L8, "1.58", "GB",
      lambda: 2 * (params(L8, *EMB) - params(L2, *EMB)), "agrees")
claim("003 §5.3", "每 token 2dV ... ≈ 1.05 GFLOPs", "Llama-3-8B lm_head FLOPs per token", L8, "1.05", "GFLOPs",
      lambda: flops(L8, T=1, keep=leaf("lm_head")), "agrees")
claim("003 §5.3", "2 × (8.03 − 0.53)B ≈ 15.0 GFLOPs", "Llama-3-8B weight-GEMM FLOPs per token", L8, "15.0",
      "GFLOPs", lambda: weight_flops_per_token(L8), "agrees")
claim("003 §5.3", "lm_head ... 占 ... 每 token 总 FLOPs 的 7%", "lm_head share of weight FLOPs per token", L8,
      "7", "%", lambda: pct(flops(L8, T=1, keep=leaf("lm_head")), weight_flops_per_token(L8)), "agrees")
claim("003 §5.3", "FP32 张量，V = 128256 时每个 token 512 KB", "fp32 logits bytes per token (4 x V)", L8,
      "512", "KB", lambda: 4 * count(L8, sym.V), "disagrees", alt_unit="KiB",
      cause="4 x 128,256 = 513,024 bytes (513.0 KB, 501 KiB); 512 is 4 x 128K with V rounded to 2^17, in KiB",
      alt=lambda: 4 * 2**17)
claim("003 §6.2", "每层合计 218,112,000", "Llama-3-8B params per layer", L8, "218,112,000", "",
      lambda: _layer(L8), "agrees")
claim("003 §6.2", "总计 8,030,261,248", "Llama-3-8B total params", L8, "8,030,261,248", "", lambda: params(L8), "agrees")
claim("003 §6.3", "attention 每层 ... 150,994,944", "Llama-3-70B attention params per layer", L70,
      "150,994,944", "", lambda: per_layer(L70, "layers", "self_attn"), "agrees")
claim("003 §6.3", "每层合计 855,654,400", "Llama-3-70B params per layer", L70, "855,654,400", "",
      lambda: _layer(L70), "agrees")
claim("003 §6.3", "总计 70,553,706,496", "Llama-3-70B total params", L70, "70,553,706,496", "",
      lambda: params(L70), "agrees")
claim("003 §6.4", "attention 每层 ... 570,425,344", "Llama-3.1-405B attention params per layer", L405,
      "570,425,344", "", lambda: per_layer(L405, "layers", "self_attn"), "agrees")
claim("003 §6.4", "每层合计 3,187,703,808", "Llama-3.1-405B params per layer", L405, "3,187,703,808", "",
      lambda: _layer(L405), "agrees")
claim("003 §6.4", "总计 405,853,388,800", "Llama-3.1-405B total params", L405, "405,853,388,800", "",
      lambda: params(L405), "agrees")
claim("003 §6.5", "attention（全部层） 1.342B 16.7%", "Llama-3-8B attention share of total", L8, "16.7", "%",
      lambda: pct(params(L8, "layers/self_attn"), params(L8)), "agrees")
claim("003 §6.5", "FFN（全部层） 5.637B 70.2%", "Llama-3-8B FFN share of total", L8, "70.2", "%",
      lambda: pct(params(L8, "layers/mlp"), params(L8)), "agrees")
claim("003 §6.5", "attention（全部层） 12.08B 17.1%", "Llama-3-70B attention share of total", L70, "17.1", "%",
      lambda: pct(params(L70, "layers/self_attn"), params(L70)), "agrees")
claim("003 §6.5", "FFN（全部层） 56.37B 79.9%", "Llama-3-70B FFN share of total", L70, "79.9", "%",
      lambda: pct(params(L70, "layers/mlp"), params(L70)), "agrees")
claim("003 §6.5", "Qwen2.5-0.5B 的 embedding（151936 × 896 = 136M，tie）", "Qwen2.5-0.5B embedding params",
      Q05, "136", "M", lambda: params(Q05, "embed_tokens"), "agrees")
claim("003 §6.5", "占了总参数的 27%", "Qwen2.5-0.5B embedding share of total", Q05, "27", "%",
      lambda: pct(params(Q05, "embed_tokens"), params(Q05)), "disagrees", alt_rule="truncate",
      cause="the exact share is 27.56% (28% rounded, as the seed's own sec. 12 answer says); 27 is truncated",
      alt=lambda: pct(params(Q05, "embed_tokens"), params(Q05)))
claim("003 §6.5", "”0.5B”里只有 0.36B 是层参数", "Qwen2.5-0.5B decoder-layer params", Q05, "0.36", "B",
      lambda: params(Q05, "layers"), "agrees")
claim("003 §12 Q4", "不 tied 就是 272M、占一半以上", "untied embedding+head share of an untied Qwen2.5-0.5B",
      Q05, "50", "%", lambda: pct(2 * params(Q05, "embed_tokens"), params(Q05) + params(Q05, "embed_tokens")),
      "disagrees", rule="gt",
      cause="untying adds a second 136M matrix to the total too: 272M of 630M is 43%, not more than half; "
            "the seed divided by the tied total (272M / 494M = 55%)",
      alt=lambda: pct(2 * params(Q05, "embed_tokens"), params(Q05)))
claim("003 §6.5", "BF16 下 Llama-3-8B 的 16.06 GB 权重", "Llama-3-8B BF16 weight bytes", L8, "16.06", "GB",
      lambda: weight_bytes(model(L8), "bf16"), "agrees")
claim("003 §6.5", "FFN 11.3 GB", "Llama-3-8B FFN BF16 bytes", L8, "11.3", "GB",
      lambda: 2 * params(L8, "layers/mlp"), "agrees")
claim("003 §6.5", "o_proj 占 8B 参数的 6.7%", "Llama-3-8B o_proj share of total", L8, "6.7", "%",
      lambda: pct(params(L8, "layers/self_attn/o_proj"), params(L8)), "agrees")
claim("003 §6.5", "down_proj ... 一项占 23%", "Llama-3-8B down_proj share of total", L8, "23", "%",
      lambda: pct(params(L8, "layers/mlp/down_proj"), params(L8)), "agrees")
claim("003 §6.5", "6.98B × 0.5 + 1.05B × 2 ≈ 5.6 GB", "Llama-3-8B INT4 layers + BF16 embedding/head bytes", L8,
      "5.6", "GB", lambda: Fraction(params(L8) - params(L8, *EMB), 2) + 2 * params(L8, *EMB), "agrees")
claim("003 §6.6", "3 × 4096 × 16384 = 201M 而不是 176M", "Llama-3-8B FFN per layer with d_ff = 4d", L8,
      "201", "M", lambda: per_layer("llama-3.1-8b+ff4d", "layers", "mlp"), "agrees")
claim("003 §6.6", "按两矩阵算 FFN，每层少 58.7M（33%），总数少 1.9B", "one SwiGLU matrix over 32 layers",
      L8, "1.9", "B", lambda: params(L8, "layers/mlp/gate_proj"), "agrees")
claim("003 §7", "每层 attention 的参数约 187M ... 61 层约 11.4B", "DeepSeek-V3 MLA params, all 61 layers", DS3,
      "11.4", "B", lambda: params(DS3, "dense_layers/self_attn", "moe_layers/self_attn"), "agrees")
claim("003 §7", "每层 257 个专家共 11.32B", "DeepSeek-V3 routed + shared experts per MoE layer", DS3, "11.32", "B",
      lambda: per_layer(DS3, "moe_layers", "mlp") - per_layer(DS3, "moe_layers", "mlp/router"), "agrees")
claim("003 §7", "58 层共 656.5B", "DeepSeek-V3 MoE layers' MLP params", DS3, "656.5", "B",
      lambda: params(DS3, "moe_layers/mlp"), "disagrees",
      cause="the 58 routers (7168 x 256 each, 106.4M in all) are left out",
      alt=lambda: params(DS3, "moe_layers/mlp") - params(DS3, "moe_layers/mlp/router"))
claim("003 §7", "所以总参数 671B", "DeepSeek-V3 total params", DS3, "671", "B", lambda: params(DS3), "agrees")
claim("003 §7", "每 token 激活约 37B", "DeepSeek-V3 active params", DS3, "37", "B", lambda: active(DS3),
      "disagrees", cause="symcost's active count includes the input embedding (0.93B, a lookup); DeepSeek's "
      "quoted 37B leaves it out (37.55B with it)", alt=lambda: active(DS3) - params(DS3, "embed_tokens"))
claim("003 §7", "两份 1.85B，占 671B 的 0.3%", "DeepSeek-V3 embedding + head share", DS3, "0.3", "%",
      lambda: pct(params(DS3, *EMB), params(DS3)), "agrees")
claim("003 §7", "FP8 下 671 GB，至少 9 张 H100 只放权重", "H100s (80 GiB) holding DeepSeek-V3 FP8 weights", DS3,
      "9", "GPUs", lambda: -(-weight_bytes(model(DS3), "fp8") // gpu("H100").memory_bytes), "disagrees",
      cause="an H100's 80 GB is 80 GiB (81,559 MiB): 671.0e9 bytes need 8 cards; 9 divides by 80e9 bytes",
      alt=lambda: -(-weight_bytes(model(DS3), "fp8") // (80 * GB)))
claim("003 §11", "所有层 ... 约 668B", "DeepSeek-V3 params of all 61 layers", DS3, "668", "B",
      lambda: params(DS3, "dense_layers", "moe_layers"), "disagrees",
      cause="the 3 dense layers' FFNs (1.19B), the routers and the norms are left out: 11.4B attention + "
            "656.5B experts",
      alt=lambda: params(DS3, "dense_layers/self_attn", "moe_layers/self_attn", "moe_layers/mlp")
      - params(DS3, "moe_layers/mlp/router"))
claim("003 §11", "BF16 权重字节数 141.1 GB", "Llama-3-70B BF16 weight bytes", L70, "141.1", "GB",
      lambda: weight_bytes(model(L70), "bf16"), "agrees")
claim("003 §11", "1342 GB（FP8 671 GB）", "DeepSeek-V3 BF16 weight bytes", DS3, "1342", "GB",
      lambda: weight_bytes(model(DS3), "bf16"), "agrees")
claim("003 §11", "每 token 权重 GEMM FLOPs 约 141 G", "Llama-3-70B weight-GEMM FLOPs per token", L70, "141",
      "G", lambda: weight_flops_per_token(L70), "disagrees",
      cause="the embedding lookup is counted as a GEMM (2 x all 70.55B params), against the seed's own rule",
      alt=lambda: 2 * params(L70))
claim("003 §11", "约 74 G（第二篇推导）", "DeepSeek-V3 weight-GEMM FLOPs per token (k=8 experts)", DS3, "74",
      "G", lambda: weight_flops_per_token(DS3), "disagrees",
      cause="2 x the rounded 37B active count; the exact touched non-embedding weights give 73.2 G",
      alt=lambda: 2 * 37 * 10**9)
claim("003 §10", "Mistral-7B ... 会得到 7.24B", "Mistral-7B total params", MIS, "7.24", "B",
      lambda: params(MIS), "agrees")
claim("003 §10", "与 Llama-3-8B 的差恰好是 ... 789M", "Llama-3-8B minus Mistral-7B params", MIS, "789", "M",
      lambda: params(L8) - params(MIS), "agrees")
claim("003 §10", "与公布的 7.61B 一致", "Qwen2.5-7B total params (with q/k/v bias)", Q7, "7.61", "B",
      lambda: params(Q7), "disagrees", alt_rule="truncate",
      cause="7,615,616,512 rounds to 7.62B; the published 7.61B is truncated",
      alt=lambda: params(Q7))
claim("003 §12 Q1", "一层约 233M，28 层 6.53B", "Qwen2.5-7B decoder-layer params", Q7, "6.53", "B",
      lambda: params(Q7, "layers"), "agrees")
claim("003 §12 Q1", "词表 2 × 152064 × 3584 = 1.09B", "Qwen2.5-7B embedding + head", Q7, "1.09", "B",
      lambda: params(Q7, *EMB), "agrees")

# ---- seed 004: interview derivations --------------------------------------------------------------
claim("004 §3", "Embedding: 32000 × 4096 = 131,072,000", "Llama-2-7B embedding params", L2, "131,072,000", "",
      lambda: params(L2, "embed_tokens"), "agrees")
claim("004 §3", "Attention/层 = 67,108,864", "Llama-2-7B attention params per layer", L2, "67,108,864", "",
      lambda: per_layer(L2, "layers", "self_attn"), "agrees")
claim("004 §3", "W_gate: 4096 × 11008 = 45,056,128", "Llama-2-7B gate_proj params per layer", L2, "45,056,128",
      "", lambda: per_layer(L2, "layers", "mlp/gate_proj"), "disagrees",
      cause="not reproduced: a multiplication slip, 4096 x 11008 = 45,088,768 (32,640 more)")
claim("004 §3", "FFN/层 = 135,168,384", "Llama-2-7B FFN params per layer", L2, "135,168,384", "",
      lambda: per_layer(L2, "layers", "mlp"), "disagrees",
      cause="3 x the slipped 45,056,128; the three matrices hold 135,266,304",
      alt=lambda: 3 * 45_056_128)
claim("004 §3", "32 层 = 32 × 202.3M = 6,473.6M ≈ 6.47B", "Llama-2-7B attention + FFN of 32 layers", L2, "6.47",
      "B", lambda: params(L2, "layers/self_attn", "layers/mlp"), "disagrees",
      cause="carries the gate_proj slip: 32 x (67,108,864 + 135,266,304) = 6.476B",
      alt=lambda: 32 * (67_108_864 + 3 * 45_056_128))
claim("004 §3", "总参数量 = 131M + 6,474M = 6,605M ≈ 6.6B", "Llama-2-7B total params", L2, "6.6", "B",
      lambda: params(L2), "disagrees",
      cause="the untied LM head (131M; the seed says LLaMA ties it) and the norms are left out",
      alt=lambda: params(L2) - params(L2, "lm_head", "layers/norms", "norm"))
claim("004 §3", "加上 Norm 层和少量其他参数 ≈ 6.7B ~ 6.74B", "Llama-2-7B total params", L2, "6.74", "B",
      lambda: params(L2), "agrees",
      cause="agrees, but the missing 0.13B is the untied LM head; the norms hold only 266,240")
claim("004 §4", "Dense 部分: 131M + 32 × 67.1M ... ≈ 2.3B", "MoE toy: non-expert params", TOY, "2.3", "B",
      lambda: params(TOY) - routed(TOY), "disagrees",
      cause="the LM head (131M), the routers and the norms are left out",
      alt=lambda: params(TOY) - routed(TOY) - params(TOY, "lm_head", "layers/mlp/router", "layers/norms", "norm"))
claim("004 §4", "MoE 部分: 32 × 8 × 135.2M ... ≈ 34.6B", "MoE toy: routed-expert params", TOY, "34.6", "B",
      lambda: routed(TOY), "agrees")
claim("004 §4", "总参数量 ≈ 2.3B + 34.6B = 36.9B", "MoE toy: total params", TOY, "36.9", "B",
      lambda: params(TOY), "disagrees", cause="the LM head (131M), the routers and the norms are left out",
      alt=lambda: params(TOY) - params(TOY, "lm_head", "layers/mlp/router", "layers/norms", "norm"))
claim("004 §4", "激活参数量/模型 = 131M + 32 × 337.5M = 10.9B", "MoE toy: active params (top-2)", TOY, "10.9",
      "B", lambda: active(TOY), "disagrees", cause="the LM head (131M), the routers and the norms are left out",
      alt=lambda: active(TOY) - active(TOY, "lm_head", "layers/mlp/router", "layers/norms", "norm"))
claim("004 §4", "总参数约 37B，但每次前向只激活约 11B", "MoE toy: active params (top-2)", TOY, "11", "B",
      lambda: active(TOY), "agrees")
claim("004 §5", "B=4, T=4096 ... = 2,147,483,648 bytes ≈ 2 GB", "KV cache, L=32 H_kv=8 D_h=128, B=4 T=4096 BF16",
      MIS, "2,147,483,648", "bytes", lambda: cache(MIS, 4096, B=4), "agrees")
claim("004 §5", "T=32768 ... = 17,179,869,184 bytes ≈ 16 GB", "the same KV cache at T=32768", MIS, "16", "GB",
      lambda: cache(MIS, 32768, B=4), "disagrees", alt_unit="GiB",
      cause="17,179,869,184 bytes is 16 GiB = 17.18 GB: GiB written as GB",
      alt=lambda: cache(MIS, 32768, B=4))
claim("004 §5", "7B 模型权重本身（14 GB）", "Mistral-7B BF16 weight bytes", MIS, "14", "GB",
      lambda: weight_bytes(model(MIS), "bf16"), "agrees")
claim("004 §6", "训练显存（AdamW + BF16）≈ 参数 × (2+2+8) ≈ 12 × 参数量", "training bytes per parameter, AdamW "
      "mixed precision", MIS, "12", "bytes/param",
      lambda: Fraction(sum(getattr(train_memory(model(MIS), seq=4096, micro_batch=1), f)
                           for f in ("weights", "gradients", "optimizer")), params(MIS)), "disagrees",
      cause="the fp32 master copy (4 bytes/param) is missing: bf16 weights 2 + grads 2 + fp32 master, m, v 12 = 16",
      alt=lambda: 2 + 2 + 8)

# ---- seed 000: parameter decomposition of the four flagships -------------------------------------
claim("000 §1.5", "550 × 10^9 × 2 bytes ... ≈ 1024 GiB", "Nemotron 3 Ultra BF16 weight bytes", NEM, "1024",
      "GiB", lambda: weight_bytes(model(NEM), "bf16"), "disagrees",
      cause="the nominal 550B is used; the model holds 549.31B params (1023.2 GiB)", alt=lambda: 550 * GB * 2)
claim("000 §1.5", "550 × 10^9 × 0.5 bytes = 275 GiB", "Nemotron 3 Ultra NVFP4 weight bytes", NEM, "275", "GiB",
      lambda: weight_bytes(model(NEM), "fp4"), "disagrees", alt_unit="GB",
      cause="275e9 bytes is 275 GB = 256 GiB (and the model is 549.31B): GB written as GiB",
      alt=lambda: 550 * GB // 2)
claim("000 §2.2", "131,072 × 8192 = 1,073,741,824", "Nemotron 3 Ultra embedding params", NEM, "1,073,741,824", "",
      lambda: params(NEM, "embeddings"), "agrees")
claim("000 §2.2", "Params_embed_total ≈ 2.15B", "Nemotron 3 Ultra embedding + head", NEM, "2.15", "B",
      lambda: params(NEM, "embeddings", "lm_head"), "agrees")
claim("000 §2.2", "200,064 × 6144 = 1,229,193,216", "MiniMax M3 embedding params", M3, "1,229,193,216", "",
      lambda: params(M3, "embed_tokens"), "agrees")
claim("000 §2.3.2", "Params_GQA, per layer ≈ 138.4M", "Nemotron 3 Ultra attention params per layer", NEM, "138.4",
      "M", lambda: per_layer(NEM, "attention_layers", "self_attn"), "agrees")
claim("000 §2.3.2", "全 MHA（H_kv=64）的 4 × 8192² = 268.4M", "the same layer as MHA", NEM, "268.4", "M",
      lambda: per_layer("nemotron+mha", "attention_layers", "self_attn"), "agrees")
claim("000 §2.3.2", "GQA 32:1 将 Attention 参数量压到了 48%", "GQA layer as a share of the MHA layer", NEM,
      "48", "%", lambda: pct(per_layer(NEM, "attention_layers", "self_attn"),
                             per_layer("nemotron+mha", "attention_layers", "self_attn")), "disagrees",
      cause="138.4M is 51.6% of 268.4M; 48% is the saving (1 - 51.6%), not the remaining share",
      alt=lambda: 100 - pct(per_layer(NEM, "attention_layers", "self_attn"),
                            per_layer("nemotron+mha", "attention_layers", "self_attn")))
claim("000 §2.3.2", "MiniMax M3 ... Params_GQA, per layer ≈ 107.0M", "M3 attention params per layer (q/k norm incl.)",
      M3, "107.0", "M", lambda: per_layer(M3, "full_dense_layers", "self_attn"), "agrees")


def _k25_mla():
    return per_layer(K25, "moe_layers", "self_attn")


def _k25_seed_mla():  # the seed's six matrices: q_b to D_nope only, plus a W_q_rope from the hidden state
    v = model(K25).values
    d, dq, H, Dn, Dr = (int(v[s]) for s in (sym.d, sym.d_q, sym.H_q, sym.D_nope, sym.D_rope))
    return (_k25_mla() - params(K25, "moe_layers/self_attn/q_b_proj") / count(K25, sym.L_moe)
            - params(K25, "moe_layers/self_attn/q_a_layernorm", "moe_layers/self_attn/kv_a_layernorm")
            / count(K25, sym.L_moe) + dq * H * Dn + d * H * Dr)


def _k25_mha():  # the seed's MHA reference: Q, K at D_nope + D_rope, V and O at D_v
    v = model(K25).values
    d, H, Dn, Dr, Dv = (int(v[s]) for s in (sym.d, sym.H_q, sym.D_nope, sym.D_rope, sym.D_v))
    return 2 * d * H * (Dn + Dr) + 2 * d * H * Dv


claim("000 §2.3.3", "Params_MLA, per layer ≈ ... = 124.19M", "Kimi K2.5 MLA params per layer", K25, "124.19", "M",
      _k25_mla, "disagrees",
      cause="an MLA query projection that does not exist: q_b_proj already outputs H x (D_nope + D_rope) "
            "from the 1536-dim latent; the seed adds W_q_rope [d, H x D_rope] (29.36M) from the hidden state",
      alt=_k25_seed_mla)
claim("000 §2.3.3", "MLA 将 Attention 参数压缩到了全 MHA 的 42%", "K2.5 MLA layer as a share of the MHA layer",
      K25, "42", "%", lambda: pct(_k25_mla(), _k25_mha()), "disagrees",
      cause="with the real MLA (101.1M) the share is 34%; 42% uses the seed's 124.19M",
      alt=lambda: pct(_k25_seed_mla(), _k25_mha()))
claim("000 §2.4.1", "2 × 8192 × 10240 = 167,772,160", "Nemotron shared expert params", NEM, "167,772,160", "",
      lambda: per_layer(NEM, "moe_layers", "mlp/shared_up_proj", "mlp/shared_down_proj"), "agrees")
claim("000 §2.4.2", "3 × 7168 × 2048 = 44,040,192", "K2.5 routed expert params", K25, "44,040,192", "",
      lambda: per_layer(K25, "moe_layers", "mlp/experts_gate_up", "mlp/experts_down") / count(K25, sym.E), "agrees")
claim("000 §2.5.1", "6144 × 128 = 786,432", "M3 router params per layer", M3, "786,432", "",
      lambda: per_layer(M3, "msa_moe_layers", "mlp/router"), "agrees")
claim("000 §2.5.1", "8192 × 512 = 4,194,304", "Nemotron router params per layer", NEM, "4,194,304", "",
      lambda: per_layer(NEM, "moe_layers", "mlp/router"), "agrees")
claim("000 §2.5.3", "128 × 56.62M = 7,247,757,312", "M3 routed experts per layer", M3, "7,247,757,312", "",
      lambda: per_layer(M3, "msa_moe_layers", "mlp/experts_gate_up", "mlp/experts_down"), "agrees")
claim("000 §2.5.3", "Params_MoE, per layer = ... = 7.31B", "M3 MoE params per layer", M3, "7.31", "B",
      lambda: per_layer(M3, "msa_moe_layers", "mlp"), "agrees")
claim("000 §2.5.3", "57 × 7.31B ≈ 416.4B", "M3 MoE params, 57 layers", M3, "416.4", "B",
      lambda: params(M3, "msa_moe_layers/mlp"), "agrees")
claim("001 §6.2", "57 层 MoE 汇总：57 × 7.31B = 416.6B", "M3 MoE params, 57 layers", M3, "416.6", "B",
      lambda: params(M3, "msa_moe_layers/mlp"), "disagrees", alt_rule="truncate",
      cause="57 x the rounded 7.31B (= 416.67B, truncated); the exact 57 layers hold 416.39B",
      alt=lambda: 57 * Fraction(731, 100) * GB)
claim("000 §2.5.4", "2 × 2048 × 5120 = 20.97M/专家", "Nemotron latent expert params", NEM, "20.97", "M",
      lambda: per_layer(NEM, "moe_layers", "mlp/experts_up", "mlp/experts_down") / count(NEM, sym.E), "agrees")
claim("000 §2.5.4", "每层 MoE 总计：≈ 10.94B", "Nemotron LatentMoE params per layer", NEM, "10.94", "B",
      lambda: per_layer(NEM, "moe_layers", "mlp"), "agrees")
claim("000 §2.5.4", "48 层合计：≈ 525.4B", "Nemotron LatentMoE params, 48 layers", NEM, "525.4", "B",
      lambda: params(NEM, "moe_layers/mlp"), "disagrees",
      cause="not reproduced: 48 x the seed's own 10,943M per layer is 525.26B (525.3), and 48 x 10.94B is 525.1B")
claim("000 §2.5.4", "节省了 75% 的参数量", "latent expert saving vs a full-width expert (1 - d_lat/d)", NEM, "75", "%",
      lambda: 100 - pct(count(NEM, sym.d_lat), count(NEM, sym.d)), "agrees")
claim("000 §2.6.2", "8192 × 35072 = 287,309,824", "Nemotron Mamba in_proj params", NEM, "287,309,824", "",
      lambda: per_layer(NEM, "mamba_layers", "mixer/in_proj"), "agrees")
claim("000 §2.6.2", "18432 × 4 + 18432 = 92,160", "Nemotron Mamba conv1d params", NEM, "92,160", "",
      lambda: per_layer(NEM, "mamba_layers", "mixer/conv1d", "mixer/conv1d_bias"), "agrees")
claim("000 §2.6.3", "单层合计 ~421.6M", "Nemotron Mamba mixer params per layer", NEM, "421.6", "M",
      lambda: per_layer(NEM, "mamba_layers", "mixer"), "agrees")
claim("000 §2.10", "48 × 421.6M = 20.24B", "Nemotron Mamba params, 48 layers", NEM, "20.24", "B",
      lambda: params(NEM, "mamba_layers"), "agrees")
claim("000 §2.10", "12 × 138.4M = 1.66B", "Nemotron attention params, 12 layers", NEM, "1.66", "B",
      lambda: params(NEM, "attention_layers"), "agrees")
claim("000 §2.7.1", "4 × (1280 × 16 × 80) = 6,553,600", "M3 ViT attention params per layer", M3, "6,553,600", "",
      lambda: Fraction(extras(M3, "vision/attn_qkvo"), count(M3, sym.L_vis)), "disagrees",
      cause="bias omitted: q, k, v, o each carry a 1280 bias (+5,120)",
      alt=lambda: Fraction(extras(M3, "vision/attn_qkvo"), count(M3, sym.L_vis)) - 4 * count(M3, sym.d_vis))
claim("000 §2.7.1", "32 层：≈ 629M", "M3 ViT layers' params", M3, "629", "M",
      lambda: extras(M3, "vision/attn_qkvo") + extras(M3, "vision/fc") + extras(M3, "vision/layer_norms"),
      "disagrees", cause="biases and LayerNorms omitted (629.8M with them); weights alone are 629.1M",
      alt=lambda: 32 * (4 * 1280 * 1280 + 2 * 1280 * 5120))
claim("000 §2.7.1", "加上 patch embedding（Conv3d）+ Pre-LN + 3D RoPE：≈ 0.65B", "M3 ViT tower params", M3, "0.65",
      "B", lambda: extras(M3, "vision/patch_embedding") + extras(M3, "vision/pre_layrnorm")
      + extras(M3, "vision/attn_qkvo") + extras(M3, "vision/fc") + extras(M3, "vision/layer_norms"), "disagrees",
      cause="not reproduced: patch embedding and pre-LN hold 1.5M and RoPE none, so the tower is 0.63B, not +0.02B")
claim("000 §2.7.1", "Params_projector ≈ 0.23B", "M3 projector params", M3, "0.23", "B",
      lambda: extras(M3, "vision/proj_") + extras(M3, "vision/merge_"), "agrees")
claim("000 §2.7.1", "视觉总计：≈ 0.88B", "M3 vision tower + projector params", M3, "0.88", "B",
      lambda: extras(M3, "vision/"), "disagrees",
      cause="carries the +0.02B tower overcount: the seed's 0.65B tower plus the exact projector",
      alt=lambda: Fraction(65, 100) * GB + extras(M3, "vision/proj_") + extras(M3, "vision/merge_"))
claim("000 §2.7.2", "27 层：≈ 0.41B", "K2.5 MoonViT blocks' params", K25, "0.41", "B",
      lambda: params(K25, "vision_layers"), "agrees")
claim("000 §2.7.2", "加 PatchMerger 和投影器共约 2B", "K2.5 vision tower + projector params", K25, "2", "B",
      lambda: params(K25, *[k for k in model(K25).params() if k.startswith(("vision", "mm_projector"))]),
      "disagrees", cause="not reproduced: patch embedding, position embedding and the patch-merger projector "
                         "add 60M to the 0.41B blocks (0.47B in all)")
claim("000 §2.8", "Params_MTP ≈ 138.4M + 10.94B ≈ 11.1B", "Nemotron MTP block params (reported apart)", NEM,
      "11.1", "B", lambda: extras(NEM, "mtp"), "disagrees",
      cause="the MTP block's eh_proj [2d, d] (134.2M) and its norms are left out (11.22B with them)",
      alt=lambda: extras(NEM, "mtp") - extras(NEM, "mtp/eh_proj") - extras(NEM, "mtp/enorm")
      - extras(NEM, "mtp/hnorm") - extras(NEM, "mtp/final_layernorm"))
claim("000 §2.8", "7 个模块：≈ 52B", "M3 MTP params, 7 modules (reported apart)", M3, "52", "B",
      lambda: extras(M3, "mtp"), "agrees")
claim("000 §2.9", "48 MoE 层 ... 激活参 32.04", "Nemotron active MoE params (22 of 512)", NEM, "32.04", "B",
      lambda: active(NEM, "moe_layers/mlp"), "disagrees",
      cause="22 x 21M with the expert rounded up from 20.97M (32.02B exact)",
      alt=lambda: 48 * (4_194_304 + 33_554_432 + 22 * 21 * 10**6 + 167_772_160))
claim("000 §2.9", "总计 ~560B ... 官方标称 550B", "Nemotron total params", NEM, "560", "B", lambda: params(NEM),
      "disagrees", cause="the ~10B gap is the MTP block (11.22B), which transformers does not build and the "
                         "official 550B excludes; without it the model is 549.31B",
      alt=lambda: params(NEM) + extras(NEM, "mtp"), alt_rule="truncate")
claim("000 §2.10", "直接求和 ~560.5", "Nemotron params + MTP", NEM, "560.5", "B",
      lambda: params(NEM) + extras(NEM, "mtp"), "agrees",
      cause="agrees by luck: the seed's +0.14B MoE overcount offsets its missing MTP eh_proj (0.13B)")
claim("000 §2.10", "Active = ... = 56.1B", "Nemotron active params", NEM, "56.1", "B", lambda: active(NEM), "agrees")
claim("000 §2.9", "≈ 25.9B（Embedding + Attention + Dense FFN + 4/128 专家激活 + 共享专家 + LM Head）",
      "M3 active params (text)", M3, "25.9", "B", lambda: active(M3), "disagrees",
      cause="the 57 routers (44.8M) are left out", alt=lambda: active(M3) - params(M3, "msa_moe_layers/mlp/router"))
claim("000 §2.9", "加上 Vision 编码器 ... 约为 26.8B", "M3 active params + vision", M3, "26.8", "B",
      lambda: active(M3) + extras(M3, "vision/"), "agrees")
claim("001 §6.2", "加上 Vision 编码器（图像输入时激活 ≈ 0.88B）：≈ 26.9B", "M3 active params + vision", M3, "26.9",
      "B", lambda: active(M3) + extras(M3, "vision/"), "disagrees",
      cause="not reproduced: 25.96B + 0.87B = 26.83B, and the seed's own 25.9B + 0.88B = 26.8B")
claim("000 §2.9", "Kimi K2.5 ~1T", "K2.5 total params", K25, "1", "T", lambda: params(K25), "agrees")
claim("000 §2.9", "Kimi K2.5 ... ~32B", "K2.5 active params", K25, "32", "B", lambda: active(K25), "disagrees",
      cause="symcost counts the input embedding (1.17B lookup) and the 0.47B vision tower as active; the quoted "
            "32B leaves the embedding out", alt=lambda: active(K25) - params(K25, "embed_tokens"))

# ---- seed 001: FLOPs (decode at "1M" = 10^6 in CH 3), KV cache (T = 2^20), memory -----------------
ATT = "attention_layers/self_attn/"
claim("001 §3.2.1", "QKV 投影在 decode 时总共 ≈ 142.6M FLOPs", "Nemotron q+k+v decode FLOPs per layer", NEM,
      "142.6", "M", lambda: Fraction(flops(NEM, T=M1, keep=both(leaf("q_proj", "k_proj", "v_proj"),
                                                           under(ATT))), 12), "agrees")
claim("001 §3.2.1", "Q 投影（550 GFLOPs）", "Nemotron q_proj prefill FLOPs per layer, T=4096", NEM, "550", "GFLOPs",
      lambda: Fraction(flops(NEM, kind="prefill", T=4096, keep=under(ATT + "q_proj")), 12), "agrees")
claim("001 §3.2.1", "K 投影（17 GFLOPs）", "Nemotron k_proj prefill FLOPs per layer, T=4096", NEM, "17", "GFLOPs",
      lambda: Fraction(flops(NEM, kind="prefill", T=4096, keep=under(ATT + "k_proj")), 12), "agrees")
claim("001 §3.2.2", "精确无 causal 时为 275 GFLOPs", "Nemotron QK^T prefill FLOPs per layer, T=4096 (full)", NEM,
      "275", "GFLOPs", lambda: Fraction(flops(NEM, kind="prefill", T=4096, keep=under(ATT + "scores")), 12), "agrees")
claim("001 §3.2.2", "仅一个 Attention 层的 QK 点积就需要 164 亿次", "Nemotron QK^T decode FLOPs per layer, T=1M",
      NEM, "16.4", "G", lambda: Fraction(flops(NEM, T=M1, keep=under(ATT + "scores")), 12), "agrees")
claim("001 §3.2.2", "12 × 16.4 ≈ 197 GFLOPs", "Nemotron QK^T decode FLOPs, 12 layers, T=1M", NEM, "197", "GFLOPs",
      lambda: flops(NEM, T=M1, keep=under(ATT + "scores")), "agrees")
claim("001 §3.5.7", "Attention 层在 T=1M 时需要 ≈ 33.1G FLOPs/token", "Nemotron attention layer decode FLOPs, T=1M",
      NEM, "33.1", "G", lambda: Fraction(flops(NEM, T=M1, keep=under(ATT)), 12), "disagrees",
      cause="the sum of parts each rounded (2 x 16.4G + 0.28G); exactly 33.04G",
      alt=lambda: 2 * Fraction(164, 10) * GB + Fraction(flops(NEM, T=M1, keep=under(ATT)) - flops(
          NEM, T=M1, keep=under(ATT + "scores", ATT + "values")), 12))
MSA = "msa_moe_layers/"
claim("001 §3.3.2", "Index Branch 的 QK 评分仅需要 1.02 GFLOPs", "M3 index scores decode FLOPs per MSA layer, T=1M",
      M3, "1.02", "G", lambda: Fraction(flops(M3, T=M1, keep=leaf("index_scores")), 57), "agrees")
claim("001 §3.3.3", "MSA Main QK = 33.6M FLOPs", "M3 main QK^T decode FLOPs per MSA layer, T=1M (block-sparse)",
      M3, "33.6", "M", lambda: Fraction(flops(M3, T=M1, attention="causal", keep=under(MSA + "self_attn/scores")), 57),
      "disagrees", cause="the query's own block is only partly filled: keys = (k_blk-1)*S_I + (T mod S_I) + 1 "
                         "= 1,985 at T=10^6, not k_blk*S_I = 2,048 (and eager transformers scores all keys)",
      alt=lambda: 2 * 64 * 16 * 128 * 128)
claim("001 §3.3.4", "MSA 单层仅需 ≈ 1.31G FLOPs", "M3 MSA layer attention + indexer decode FLOPs, T=1M", M3, "1.31",
      "G", lambda: Fraction(flops(M3, T=M1, attention="causal", keep=under(MSA + "self_attn", MSA + "indexer")), 57),
      "agrees")
claim("001 §3.3.5", "3 层 Full Attention：3 × 33.1G ≈ 99.3G", "M3 full-attention layers decode FLOPs, T=1M", M3,
      "99.3", "G", lambda: flops(M3, T=M1, keep=under("full_dense_layers/self_attn")), "disagrees",
      cause="reuses a rounded 33.1G per layer; an M3 full layer costs 32.98G (98.9G for 3)",
      alt=lambda: 3 * Fraction(331, 10) * GB)
claim("001 §3.3.5", "57 层 MSA：57 × 1.31G ≈ 74.7G", "M3 MSA layers decode FLOPs, T=1M", M3, "74.7", "G",
      lambda: flops(M3, T=M1, attention="causal", keep=under(MSA + "self_attn", MSA + "indexer")), "agrees")
claim("001 §3.3.5", "60 × 33.1G ≈ 1986G FLOPs", "M3 with all 60 layers full attention, T=1M", M3, "1986", "G",
      lambda: 20 * flops(M3, T=M1, keep=under("full_dense_layers/self_attn")), "disagrees",
      cause="60 x the rounded 33.1G; exactly 60 x 32.98G = 1978.9G", alt=lambda: 60 * Fraction(331, 10) * GB)
claim("001 §3.4.2", "Decode：= 2 × 512 × 64 × 256 × 1 = 16,777,216", "K2.5 kv_b_proj decode FLOPs per layer, T=1M",
      K25, "16,777,216", "", lambda: Fraction(flops(K25, T=M1, keep=under("moe_layers/self_attn/kv_b_proj")), 60),
      "disagrees", cause="transformers re-expands all T+1 cached latents through kv_b_proj every step "
                         "(16.8 TFLOPs); the seed applies it to the new token only, which holds only with absorption",
      alt=lambda: Fraction(flops(K25, T=0, keep=under("moe_layers/self_attn/kv_b_proj")), 60))
claim("001 §3.4.3", "W_q_b ... = 25,165,824", "K2.5 q_b_proj decode FLOPs per layer", K25, "25,165,824", "",
      lambda: Fraction(flops(K25, T=M1, keep=under("moe_layers/self_attn/q_b_proj")), 60), "disagrees",
      cause="q_b_proj outputs H x (D_nope + D_rope) = 12,288, not H x D_nope",
      alt=lambda: 2 * 1536 * 64 * 128)
claim("001 §3.4.3", "W_q_rope ... = 58,720,256", "K2.5 q_rope FLOPs per layer", K25, "58,720,256", "",
      lambda: Fraction(flops(K25, T=M1, keep=lambda p: "q_rope" in p), 60), "disagrees",
      cause="an MLA query projection that does not exist (the rope part of q comes out of q_b_proj)",
      alt=lambda: 2 * 7168 * 64 * 64)
claim("001 §3.4.4", "合计 QK 点积 ... 24.6G", "K2.5 QK^T decode FLOPs per layer, T=1M (transformers: expanded)",
      K25, "24.6", "G", lambda: Fraction(flops(K25, T=M1, keep=under("moe_layers/self_attn/scores")), 60), "agrees",
      cause="agrees for the expanded form; absorbed (serving engines) it is 2 x H x (d_kv + D_rope) per key = 73.7G")
claim("001 §3.4.7", "KV cache ... 压到 d_kv + D_rope = 512 + 64 = 576 个元素", "K2.5 cache elements per token per layer",
      K25, "576", "", lambda: Fraction(cache(K25, 1) // 2, 61), "agrees")
claim("001 §3.4.7", "2 × 64 × 192 = 24,576 个元素 ... 压缩 43×", "K2.5 MHA-equivalent / MLA cache per token", K25,
      "43", "x", lambda: Fraction(64 * (192 + 128), 576), "disagrees",
      cause="V heads are D_v = 128, not 192: MHA would cache 64 x (192 + 128) = 20,480 elements, 35.6x "
            "(the seed's own sec. 4.3.4 figure)", alt=lambda: Fraction(2 * 64 * 192, 576))
MAMBA = "mamba_layers/"
claim("001 §3.5.2", "2 × 8192 × 35072 × 1 = 574,619,648", "Nemotron in_proj decode FLOPs per layer", NEM,
      "574,619,648", "", lambda: Fraction(flops(NEM, T=M1, keep=under(MAMBA + "mixer/in_proj")), 48), "agrees")
claim("001 §3.5.7", "48 层 Mamba-2 合计：≈ 40.7G FLOPs/token", "Nemotron Mamba decode FLOPs, 48 layers", NEM, "40.7",
      "G", lambda: flops(NEM, T=M1, keep=under(MAMBA)), "disagrees",
      cause="the recurrent step has two state products, the update x B^T and the read-out h C, "
            "2 x H_m x D_m x N = 4.2M each per layer; the seed counts only the read-out (40.88G with both). "
            "transformers' torch step does the update by broadcast multiplies, which FlopCounterMode "
            "counts 0 (impl=reference: 40.68G)",
      alt=lambda: flops(NEM, T=M1, impl="reference", keep=under(MAMBA)))
MIMO, SWA_QK = "mimo-v2-flash", "swa_moe_layers/self_attn/scores"
claim("001 §3.6", "以 MiMo-V2-Flash 为例：W = 131072", "MiMo-V2-Flash sliding window W (keys a query sees)", MIMO,
      "131072", "", lambda: count(MIMO, sym.W), "disagrees",
      cause="not reproduced: the config's window is sliding_window_size = 128 previous keys plus the query "
            "(transformers' sliding_window = 129); 131,072 is no field of the config (max_position_embeddings "
            "is 262,144)")
claim("001 §3.6", "D_h = 128", "MiMo-V2-Flash attention head dim (q and k)", MIMO, "128", "",
      lambda: count(MIMO, sym.D_h), "disagrees",
      cause="queries and keys have head_dim = 192; 128 is v_head_dim, the value head dim",
      alt=lambda: count(MIMO, sym.D_v))
claim("001 §3.6", "decode 时：2 × 64 × 1 × 131072 × 128 = 2.15 × 10^9 FLOPs", "MiMo SWA layer QK^T decode FLOPs, "
      "T=131072", MIMO, "2.15", "G", lambda: Fraction(flops(MIMO, T=131072, keep=under(SWA_QK)), 39), "disagrees",
      cause="with the real window a sliding layer's decode attends to 129 keys at any T (3.17M FLOPs at "
            "D_h = 192), a thousandth of a full layer's 3.22G at T = 131,072: SWA saves decode too; the seed's "
            "2.15G is its formula at its W = 131,072 and D_h = 128",
      alt=lambda: 2 * count(MIMO, sym.H_q) * 131072 * count(MIMO, sym.D_v))
claim("001 §3.8", "激活 22 个专家：≈ 462M FLOPs", "Nemotron 22 latent experts decode FLOPs per layer", NEM, "462", "M",
      lambda: Fraction(flops(NEM, T=M1, keep=leaf("experts_up", "experts_down")), 48), "disagrees",
      cause="one FLOP per weight: 2 x 2048 x 5120 is the expert's parameter count; a token costs 2 FLOPs per "
            "weight (922.7M)", alt=lambda: 22 * 21 * 10**6)
claim("001 §3.7", "6 × 64 × 128^2 ... ≈ 6.3 × 10^6 FLOPs/token/layer", "Qwen3.5-MoE DeltaNet state reads + update, "
      "decode FLOPs per DeltaNet layer", Q35, "6.3", "M",
      lambda: Fraction(flops(Q35, T=M1, keep=both(under("lin_layers"), leaf("state_reads", "state_update"))),
                       count(Q35, sym.L_lin)), "disagrees",
      cause="the real Qwen3.5-35B-A3B has H_lv = 32 value heads (linear_num_value_heads) of 128 x 128 state: "
            "6 x 32 x 128^2 = 3.1M; 6.3M is the seed's H = 64", alt=lambda: 6 * 64 * 128**2)
claim("001 §4.6", "L × 64 × 128^2 × 2 = L × 2.1MB", "Qwen3.5-MoE DeltaNet recurrent state bytes per layer", Q35,
      "2.1", "MB", lambda: Fraction(_leaf_bytes(Q35, "recurrent_state"), count(Q35, sym.L_lin)), "agrees",
      cause="agrees by two errors cancelling: the real model has 32 value heads (not 64) but the torch scan "
            "keeps the state in fp32 (4 bytes, not 2); the conv state adds 64 KiB per layer")
claim("001 §4.6", "48 × 2.1MB ≈ 100MB", "Qwen3.5-MoE DeltaNet state (conv + recurrent), all layers", Q35, "100",
      "MB", lambda: cache(Q35, 1, comps=("lin_layers",)), "disagrees",
      cause="L = 48 layers of 64 heads assumed; Qwen3.5-35B-A3B has 30 DeltaNet layers of 40 (every 4th is "
            "full attention) with 32 heads: 64.9 MB", alt=lambda: 48 * 64 * 128**2 * 2, alt_rule="truncate")
claim("001 §3.10", "每产生一个 token 需要 2.1T FLOPs", "pure full-attention 60-layer model decode FLOPs, T=1M", F60,
      "2.1", "T", lambda: flops(F60, T=M1), "agrees")
claim("001 §3.10", "1.97T 占 94%", "its QK^T + PV share", F60, "94", "%",
      lambda: pct(flops(F60, T=M1, keep=leaf("scores", "values")), flops(F60, T=M1)), "agrees")
claim("001 §3.10", "2.1T / 989 TFLOPS（H100 FP16）≈ 2.1 秒/ token", "its decode time at H100 peak", F60, "2.1", "s",
      lambda: Fraction(flops(F60, T=M1)) / Fraction(gpu("H100").bf16_tflops * 10**12), "disagrees",
      alt_unit="ms", cause="2.1e12 / 989e12 per second is 2.1 milliseconds, not seconds",
      alt=lambda: Fraction(flops(F60, T=M1)) / Fraction(gpu("H100").bf16_tflops * 10**12))
claim("001 §3.10", "将 QK+V 开销砍到原来的 1/5（394G vs 1970G）", "Nemotron QK^T + PV decode FLOPs, T=1M", NEM, "394",
      "G", lambda: flops(NEM, T=M1, keep=leaf("scores", "values")), "disagrees",
      cause="12 x 2 x the rounded 16.4G; exactly 393.2G", alt=lambda: 12 * 2 * Fraction(164, 10) * GB)
claim("001 §3.10", "57 个 MSA 层才占 62G", "M3 MSA layers' index + main QK^T/PV decode FLOPs, T=1M", M3, "62", "G",
      lambda: flops(M3, T=M1, attention="causal", keep=both(under(MSA), leaf("scores", "values", "index_scores"))),
      "agrees")
claim("001 §3.10", "128K ... 258G vs 52G vs 24G", "M3 QK^T + PV + index scores decode FLOPs, T=131072", M3, "24",
      "G", lambda: flops(M3, T=131072, attention="causal", keep=leaf("scores", "values", "index_scores")), "agrees")
claim("001 §3.10", "Index Branch O(T) 项（7.7G）", "M3 index scores decode FLOPs, T=131072", M3, "7.7", "G",
      lambda: flops(M3, T=131072, keep=leaf("index_scores")), "agrees")

claim("001 §4.2.4", "近 500 GiB", "K2.5 cache without MLA (MHA K at 192, V at 128), T=256K", K25, "500", "GiB",
      lambda: 61 * 262144 * 64 * (192 + 128) * 2, "disagrees", rule="nearly",
      cause="with K = D_nope + D_rope = 192 and V = 128 the MHA cache is 610 GiB; ~488 GiB comes from 128-dim K and V",
      alt=lambda: 61 * 262144 * 2 * 64 * 128 * 2)
claim("001 §4.3.2", "不压缩时 K2.5 的 KV cache 高达 ~732 GiB", "the same MHA-equivalent cache", K25, "732", "GiB",
      lambda: 61 * 262144 * 64 * (192 + 128) * 2, "disagrees",
      cause="V heads taken as 192 wide like K; with D_v = 128 it is 610 GiB",
      alt=lambda: 61 * 262144 * 2 * 64 * 192 * 2)
claim("001 §4.2.5", "与 Nemotron 3 Ultra 技术报告声明的 ~12.0 GiB 完全一致", "Nemotron attention KV cache, T=2^20 BF16",
      NEM, "12.0", "GiB", lambda: cache(NEM, T20, comps=("attention_layers",)), "agrees")
claim("001 §4.2.6", "与 M3 报告声明的 ~120 GiB 完全一致", "M3 main KV cache, 60 layers, T=2^20 BF16", M3, "120",
      "GiB", lambda: cache(M3, T20, comps=("full_dense_layers/self_attn", "msa_moe_layers/self_attn")), "agrees")
claim("001 §4.3.5", "公式推导结果（17.2 GiB", "K2.5 MLA cache, T=256K BF16", K25, "17.2", "GiB",
      lambda: cache(K25, 262144), "agrees")
claim("001 §4.3.5", "≈ 18.4 GiB）", "the same cache", K25, "18.4", "GiB", lambda: cache(K25, 262144), "disagrees",
      alt_unit="GB", cause="18,421,383,168 bytes is 17.16 GiB = 18.4 GB: GB written as GiB",
      alt=lambda: cache(K25, 262144))
claim("001 §4.4.4", "与 M3 报告声明的 ~14.2 GiB 完全一致", "M3 index-key cache, 57 layers, T=2^20", M3, "14.2", "GiB",
      lambda: cache(M3, T20, comps=("msa_moe_layers/indexer",)), "agrees",
      cause="agrees at a tie: exactly 14.25 GiB")
claim("001 §4.4.5", "主 KV cache 占 89.4%", "M3 main KV share of the cache, T=2^20", M3, "89.4", "%",
      lambda: pct(cache(M3, T20) - cache(M3, T20, comps=("msa_moe_layers/indexer",)), cache(M3, T20)), "agrees")
claim("001 §4.4.6", "14.25 × 4 = 57 GiB", "M3 index cache if each of the 4 index heads had its own key", M3,
      "57", "GiB", lambda: count(M3, sym.H_I) * cache(M3, T20, comps=("msa_moe_layers/indexer",)), "agrees")
claim("001 §4.7", "48 层 Mamba-2 仅需 6 MiB 状态存储", "Nemotron Mamba conv + SSM state (SSM in fp32)", NEM, "6",
      "MiB", lambda: cache(NEM, T20, comps=("mamba_layers",)), "disagrees",
      cause="the state is H_m x D_m x N per layer (the head dim 64 is dropped) and the conv state is left out: "
            "390.8 MiB; 6 MiB is 256 x 128 x 48 in fp32",
      alt=lambda: 256 * 128 * 48 * 4)
claim("001 §5.3", "48 层合计约 0.2 GiB", "Nemotron Mamba state", NEM, "0.2", "GiB",
      lambda: cache(NEM, T20, comps=("mamba_layers",)), "disagrees",
      cause="mamba_ssm_cache_dtype=float32 is ignored (state taken in BF16) and the conv state left out: 0.38 GiB",
      alt=lambda: 48 * 256 * 64 * 128 * 2)
claim("001 §5.3", "总计约 13.1 GiB", "Nemotron cache (KV + Mamba state), T=2^20", NEM, "13.1", "GiB",
      lambda: cache(NEM, T20), "disagrees",
      cause="GiB and GB mixed: the 12 GiB of KV is added as 12.9 (GB) to 0.2 GiB of state; exactly 12.38 GiB",
      alt=lambda: Fraction(cache(NEM, T20, comps=("attention_layers",)), GB) * GiB + Fraction(2, 10) * GiB)
claim("001 §4.8", "10 张图：≈ 659 MiB", "M3 cache of 10 images x 576 tokens", M3, "659", "MiB",
      lambda: cache(M3, 5760), "disagrees",
      cause="the index keys (80 MiB) are left out and MB is turned into MiB with the GiB factor 1.074 "
            "(707.8 MB / 1.074); the exact cache is 755.2 MiB",
      alt=lambda: Fraction(cache(M3, 5760, comps=("full_dense_layers", "msa_moe_layers/self_attn")), 10**6)
      / Fraction(GiB, GB) * MiB)
claim("001 §4.8", "100 张图：≈ 6.6 GiB", "M3 cache of 100 images x 576 tokens", M3, "6.6", "GiB",
      lambda: cache(M3, 57600), "disagrees", cause="the index keys (0.78 GiB) are left out",
      alt=lambda: cache(M3, 57600, comps=("full_dense_layers", "msa_moe_layers/self_attn")))
claim("001 §4.8", "每视觉 token 的 cache 增量为 1,152 bytes", "K2.5 cache bytes per token per layer", K25, "1,152",
      "bytes", lambda: Fraction(cache(K25, 1), 61), "agrees")
claim("001 §4.9", "纯 Full Attention 60 层模型在 1M 上下文需要 1.76 TiB", "pure full-attention 60-layer KV, T=2^20",
      F60, "1.76", "TiB", lambda: cache(F60, T20), "disagrees",
      cause="not reproduced: 60 x 2 x 64 x 128 x 2^20 x 2 bytes = 1.875 TiB (1.79 TiB at T = 10^6)")
claim("001 §4.9", "M3 需 134 GiB", "M3 cache (KV + index keys), T=2^20", M3, "134", "GiB", lambda: cache(M3, T20), "agrees")
claim("001 §5.3", "60 × 2 × 4 × 128 × 10^6 × 2 ≈ 123 GiB", "M3 main KV at T=10^6", M3, "123", "GiB",
      lambda: cache(M3, M1, comps=("full_dense_layers", "msa_moe_layers/self_attn")), "disagrees", alt_unit="GB",
      cause="122.9e9 bytes is 122.9 GB = 114.4 GiB: GB written as GiB",
      alt=lambda: cache(M3, M1, comps=("full_dense_layers", "msa_moe_layers/self_attn")))
claim("001 §5.3", "≈ 128.8 + 15.3 = 144.1 GiB", "M3 cache (KV + index keys), T=2^20", M3, "144.1", "GiB",
      lambda: cache(M3, T20), "disagrees", alt_unit="GB",
      cause="GB written as GiB: 144.1e9 bytes is 134.25 GiB (the seed's own sec. 4.9 says 134 GiB)",
      alt=lambda: cache(M3, T20))
claim("001 §5.3", "MLA ... 60 层：≈ 72.4 GiB", "DeepSeek V4 Flash cache, T=2^20 BF16", V4, "72.4", "GiB",
      lambda: cache(V4, T20), "disagrees", alt_unit="GB", alt_rule="truncate",
      cause="V4 Flash is not MLA: 43 layers with one 512-wide KV head, compressed (ratio 4 / 128) plus a "
            "128-token window, 6.72 GiB; the seed takes K2.5's 576-wide latent on 60 layers, in GB",
      alt=lambda: 60 * 576 * T20 * 2)
claim("001 §5.1", "Weights: ∼1,100 GiB", "Nemotron BF16 weights", NEM, "1,100", "GiB",
      lambda: weight_bytes(model(NEM), "bf16"), "disagrees", alt_unit="GB",
      cause="the nominal 550B x 2 bytes in GB, written as GiB: the weights are 1023.2 GiB",
      alt=lambda: 550 * GB * 2)
claim("001 §5.2", "428B = 856 GiB", "M3 BF16 weights", M3, "856", "GiB", lambda: weight_bytes(model(M3), "bf16"),
      "disagrees", alt_unit="GB",
      cause="428e9 x 2 bytes is 856 GB = 797 GiB (the text model is 426.17B, 793.8 GiB): GB written as GiB",
      alt=lambda: 428 * GB * 2)
claim("001 §5.2", "⌈2000 / 141⌉ = 15 张 H200 才能装下 BF16 权重", "H200s (141 GiB) for K2.5 BF16 weights", K25, "15",
      "GPUs", lambda: -(-weight_bytes(model(K25), "bf16") // gpu("H200").memory_bytes), "disagrees",
      cause="nominal 1T x 2 bytes = 2000 (GB) divided by 141 GiB; 1.027e12 params are 1912.7 GiB: 14 cards",
      alt=lambda: -(-2000 * GB // (141 * GB)))
claim("001 §5.2", "FP8 量化（1,000 GiB ≈ 8 卡）", "H200s for K2.5 FP8 weights", K25, "8", "GPUs",
      lambda: -(-weight_bytes(model(K25), "fp8") // gpu("H200").memory_bytes), "disagrees",
      cause="1.027e12 bytes is 956.3 GiB: 7 cards; 8 comes from 1000 (GB) / 141",
      alt=lambda: -(-1000 * GB // (141 * GB)))
claim("001 §5.6", "每卡专家权重 = 64 × 48 × 21M × 2 bytes ≈ 129 GiB", "Nemotron routed experts per GPU, EP=8, BF16",
      NEM, "129", "GiB", lambda: Fraction(2 * routed(NEM), 8), "disagrees", alt_unit="GB",
      cause="128.8e9 bytes is 128.8 GB = 120.0 GiB: GB written as GiB", alt=lambda: Fraction(2 * routed(NEM), 8))
claim("001 §5.7", "batch=2 ... > 1,128 GiB ✗", "Nemotron max decode batch, T=2^20, BF16, 8xH200 (all memory)", NEM,
      "1", "batch", lambda: max_batch(NEM, T=T20), "disagrees",
      cause="the weights are 1023.2 GiB, not 1,100 (GB as GiB), leaving room for 8 sequences of 12.4 GiB; "
            "with vLLM's 0.9 memory limit the BF16 weights alone do not fit",
      alt=lambda: (1128 - 1100) * GiB // ((Fraction(129, 10) + 2) * GiB))
claim("001 §5.7", "从 batch=1 到 batch=38", "the same with FP8 weights", NEM, "38", "batch",
      lambda: max_batch(NEM, T=T20, weights="fp8"), "disagrees",
      cause="FP8 weights are 511.6 GiB, not 550: 49 sequences fit",
      alt=lambda: (1128 - 550) * GiB // ((Fraction(129, 10) + 2) * GiB))
claim("001 §6.5", "batch=2 理论上可能（272 / 149.1 ≈ 1.8）", "M3 max decode batch, T=2^20, BF16, 8xH200 (all memory)",
      M3, "1", "batch", lambda: max_batch(M3, T=T20), "disagrees",
      cause="weights 793.8 GiB (text) and cache 134.25 GiB, not 856 and 144.1 (GB as GiB): 2 sequences fit",
      alt=lambda: (1128 - 856) * GiB // (Fraction(1491, 10) * GiB))
claim("001 §6.3.1", "3 层合计：3 × 34.4 = 103.1 GFLOPs", "M3 full-attention QK^T + PV decode FLOPs, T=2^20", M3,
      "103.1", "GFLOPs", lambda: flops(M3, T=T20, keep=both(under("full_dense_layers"), leaf("scores", "values"))),
      "agrees")
claim("001 §6.3.2", "57 层合计：57 × 1.14 = 65.0 GFLOPs", "M3 MSA index + main QK^T/PV decode FLOPs, T=2^20", M3,
      "65.0", "GFLOPs", lambda: flops(M3, T=T20, attention="causal",
                                      keep=lambda p: p.startswith(MSA) and leaf("scores", "values", "index_scores")(p)),
      "disagrees", cause="at T = 2^20 the query's own block holds 1 key: 15 x 128 + 1 = 1,921 keys, not 2,048",
      alt=lambda: 57 * (2 * 4 * 128 * (T20 + 1) + 2 * 2 * 64 * 128 * 2048))
claim("001 §6.3.4", "Per-layer 投影合计：≈ 213.9 MFLOPs。60 层：12.8 GFLOPs", "M3 q/k/v/o decode FLOPs, 60 layers",
      M3, "12.8", "GFLOPs", lambda: flops(M3, T=T20, keep=both(leaf("q_proj", "k_proj", "v_proj", "o_proj"),
                                               lambda p: "indexer" not in p)), "agrees")
claim("001 §6.3.5", "57 层 MoE：57 × 0.5676 = 32.4 GFLOPs", "M3 MoE decode FLOPs, 57 layers", M3, "32.4", "GFLOPs",
      lambda: flops(M3, T=T20, keep=under(MSA + "mlp")), "agrees")
claim("001 §6.3.6", "3 层合计：1.36 GFLOPs", "M3 dense FFN decode FLOPs, 3 layers", M3, "1.36", "GFLOPs",
      lambda: flops(M3, T=T20, keep=under("full_dense_layers/mlp")), "agrees")
claim("001 §6.3.7", "57 层：0.45 GFLOPs", "M3 indexer projections decode FLOPs", M3, "0.45", "GFLOPs",
      lambda: flops(M3, T=T20, keep=leaf("index_q_proj", "index_k_proj")), "agrees")
claim("001 §6.3.9", "M3 花了 57 层 Indexer 的代价（+0.224B 参数", "M3 indexer params", M3, "0.224", "B",
      lambda: params(M3, MSA + "indexer"), "agrees")
claim("001 §6.4", "Batch=4 时 KV Cache 已超过 500 GiB", "M3 cache at B=4, T=2^20", M3, "500", "GiB",
      lambda: cache(M3, T20, B=4), "agrees", rule="gt")


# -- the report --------------------------------------------------------------------------------------
@dataclass
class Row:
    claim: Claim
    value: int | Fraction | None
    verdict: str  # agrees | disagrees | not yet checkable
    error: str = ""
    alt_value: int | Fraction | None = None


def evaluate() -> list[Row]:
    rows = []
    for c in CLAIMS:
        try:
            v = c.value()
        except SymcostError as e:  # a model that cannot be built yet: never a made-up number
            rows.append(Row(c, None, "not yet checkable", str(e)))
            continue
        rows.append(Row(c, v, "agrees" if c.judge(v) else "disagrees", "",
                        c.alt() if c.alt is not None else None))
    return rows


def _num(x) -> str:
    """An exact value for print: integers grouped, fractions to 4 significant decimals."""
    x = Fraction(x)
    if x.denominator == 1:
        return f"{int(x):,}"
    return f"{float(x):,.4f}".rstrip("0").rstrip(".")


def in_unit(c: Claim, v, unit: str | None = None) -> str:
    unit = c.unit if unit is None else unit
    x = Fraction(v) / SCALE[unit]
    d = c.decimals() + 2
    text = f"{float(x):,.{d}f}" if x.denominator != 1 or SCALE[unit] != 1 else f"{int(x):,}"
    return f"{text} {unit}".strip()


def difference(c: Claim, v) -> str:
    if c.rule in ("gt", "nearly"):
        return ""
    diff = Fraction(v) - c.number() * SCALE[c.unit]
    if c.unit in ("%", "x", "GPUs", "batch", "bytes/param", "s"):
        return f"{float(diff):+,.4g}{' points' if c.unit == '%' else (' ' + c.unit)}"
    rel = f" ({float(diff / (c.number() * SCALE[c.unit]) * 100):+.2f}%)" if c.number() else ""
    base = {"GiB": "bytes", "GB": "bytes", "MiB": "bytes", "TiB": "bytes", "KB": "bytes", "KiB": "bytes",
            "MB": "bytes"}.get(c.unit, "")
    return f"{'+' if diff >= 0 else '-'}{_num(abs(diff))}{(' ' + base) if base else ''}{rel}"


def summary(rows: list[Row]) -> dict[str, int]:
    out = {"claims": len(rows)}
    for r in rows:
        out[r.verdict] = out.get(r.verdict, 0) + 1
    return out


RULES = {"round": "rounds to the digits written", "truncate": "truncates to the digits written",
         "gt": "is more than the number", "nearly": "is within 10% below the number"}

INTRO = ("Every numeric claim of the seed documents (the project's five Chinese teaching notes) for "
         "a model symcost can build, next to symcost's exact value. A claim **agrees** when the exact "
         "value, in the seed's unit, rounds to the digits the seed wrote (a tie counts as agreeing); "
         "for each disagreement the cause is stated and, where the seed's number can be re-derived, "
         "the seed's own formula is evaluated exactly and reproduces it (`tests/test_audit.py`). "
         "GiB = 2^30 bytes, GB = 10^9 bytes. \"1M\" context is 10^6 in the seeds' FLOPs chapters "
         "(their arithmetic uses it) and 2^20 in the KV-cache chapters (they say so). Decode at "
         "context T attends T cached keys plus the new one. FLOPs count matmuls only, 2 per "
         "multiply-accumulate; MSA main attention is counted block-sparse (`attention=causal`) "
         "where the seed describes the sparse kernel, MLA as transformers computes it "
         "(`mla=expand`) unless stated. Seed 002 states closed forms only, with no number for a "
         "specific model, so it has no rows here.")


def _section_key(row) -> tuple:
    """Reading order: seed, then its section numbers (``001 §3.10`` after ``001 §3.9``)."""
    seed, _, sec = row.claim.seed.partition(" ")
    return (seed, tuple(int(n) for n in re.findall(r"\d+", sec)), sec)


def _md_to_tex(text: str) -> str:
    """INTRO's light Markdown as LaTeX: escaped text, **bold**, `code`, powers such as 2^30."""
    from .latex import texescape as esc
    out = []
    for i, part in enumerate(re.split(r"(\*\*.+?\*\*|`.+?`|\b\d+\^\d+\b)", text)):
        if part.startswith("**"):
            out.append(r"\textbf{" + esc(part[2:-2]) + "}")
        elif part.startswith("`"):
            out.append(r"\texttt{" + esc(part[1:-1]) + "}")
        elif re.fullmatch(r"\d+\^\d+", part):
            base, exp = part.split("^")
            out.append(f"${base}^{{{exp}}}$")
        else:
            out.append(esc(part))
    return "".join(out)


def render_markdown() -> str:
    rows = sorted(evaluate(), key=_section_key)
    s = summary(rows)
    out = ["# Seeds audit", "", "Generated by `python -m symcost.generate` from `symcost/audit.py`; do not edit.", "",
           INTRO, "",
           f"**{s['claims']} claims: {s.get('agrees', 0)} agree, {s.get('disagrees', 0)} disagree"
           + (f", {s['not yet checkable']} not yet checkable" if s.get("not yet checkable") else "") + ".**", "",
           "## Models", "", "| model | source |", "| --- | --- |"]
    for key in dict.fromkeys(r.claim.model for r in rows):
        out.append(f"| `{key}` | {source(key)} |")
    for seed in dict.fromkeys(r.claim.seed.split()[0] for r in rows):
        out += ["", f"## Seed {seed}", "",
                "| § | claim (as written) | model · metric | seed | symcost (exact) | verdict | difference · cause |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in (r for r in rows if r.claim.seed.split()[0] == seed):
            c = r.claim
            if r.value is None:
                got, diff = "—", f"not yet checkable: {r.error}"
            else:
                got = in_unit(c, r.value)
                diff = difference(c, r.value) if r.verdict == "disagrees" else ""
                if c.cause:
                    diff = f"{diff} · {c.cause}" if diff else c.cause
                if r.verdict == "disagrees" and c.alt is not None:
                    diff += f" (seed's formula: {in_unit(c, r.alt_value, c.alt_unit)})"
            mark = {"agrees": "agrees", "disagrees": "**disagrees**"}.get(r.verdict, r.verdict)
            cells = [c.seed.split(" ", 1)[1], c.quote, f"`{c.model}` · {c.what}", f"{c.said} {c.unit}".strip(),
                     got, f"{mark} ({RULES[c.rule]})" if c.rule != "round" else mark, diff]
            out.append("| " + " | ".join(x.replace("|", "/").replace("\n", " ") for x in cells) + " |")
    return "\n".join(out) + "\n"


def render_tex() -> str:
    """The same table as a LaTeX document (English only: pdflatex has no CJK fonts by default)."""
    from .latex import texescape as esc
    rows = sorted(evaluate(), key=_section_key)
    s = summary(rows)
    lines = [r"\documentclass[9pt,a4paper,landscape]{article}", r"\usepackage[margin=1.5cm]{geometry}",
             r"\usepackage{booktabs,longtable,array}", r"\setlength{\parindent}{0pt}",
             r"\newcolumntype{L}[1]{>{\raggedright\arraybackslash}p{#1}}",
             r"\title{Seeds audit}\author{generated by symcost}\date{}", r"\begin{document}", r"\maketitle",
             _md_to_tex(INTRO), "",
             rf"\textbf{{{s['claims']} claims: {s.get('agrees', 0)} agree, {s.get('disagrees', 0)} disagree"
             + (f", {s['not yet checkable']} not yet checkable" if s.get("not yet checkable") else "") + ".}", "",
             r"Quotes are in the Markdown version (\texttt{reports/seeds-audit.md}); here each claim is named by "
             r"its seed section and an English description.", ""]
    for seed in dict.fromkeys(r.claim.seed.split()[0] for r in rows):
        lines += [rf"\section*{{Seed {esc(seed)}}}", r"{\footnotesize",
                  r"\begin{longtable}{@{}L{1.3cm}L{6.0cm}L{2.2cm}L{2.9cm}L{1.6cm}L{9.6cm}@{}}", r"\toprule",
                  r"\S & model: metric & seed & symcost (exact) & verdict & difference, cause \\", r"\midrule",
                  r"\endhead"]
        for r in (r for r in rows if r.claim.seed.split()[0] == seed):
            c = r.claim
            if r.value is None:
                got, diff = "--", "not yet checkable: " + r.error
            else:
                got = in_unit(c, r.value)
                diff = difference(c, r.value) if r.verdict == "disagrees" else ""
                if c.cause:
                    diff = f"{diff}; {c.cause}" if diff else c.cause
                if r.verdict == "disagrees" and c.alt is not None:
                    diff += f" (seed's formula: {in_unit(c, r.alt_value, c.alt_unit)})"
            cells = [c.seed.split(" ", 1)[1], f"{c.model}: {c.what}", f"{c.said} {c.unit}".strip(), got,
                     r.verdict, diff]
            lines.append(" & ".join(esc(x) for x in cells) + r" \\")
        lines += [r"\bottomrule", r"\end{longtable}}"]
    lines.append(r"\end{document}")
    return "\n".join(lines) + "\n"
