"""The seeds audit: every numeric claim of the seed documents next to symcost's exact value.

Each ``Claim`` quotes a seed (file, section, the words as written), names the model (a bundled
config, or a config dict built below from the seeds' own field tables and the published
config.json where no config is bundled), says what is measured and with which inputs, and holds
the seed's number exactly as written with its unit as written (``"B"``, ``"GiB"``, ``"GB"``,
``"G"``). ``value()`` computes symcost's exact value through the public API (``symcost.build``,
``Model.params/active_params/flops/cache``, ``symcost.serving.memory``, ``symcost.training``).

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

import ast
import json
import math
import operator
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from typing import Callable

from ..architectures import loader
from ..core.conventions import Phase
from ..core.errors import SymcostError
from ..core.latex import texescape
from ..core.notation import sym
from ..core.terms import exact
from ..hardware.gpus import gpu
from ..serving.memory import cache_bytes_total, inference_memory, leaf_bytes, weight_bytes
from ..training import TrainSetup, train_flops, train_memory

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


def params_where(key: str, keep: Callable[[str], bool]) -> int:
    """Parameters of the leaves whose path ``keep`` accepts (0 when the model has no such weight)."""
    m = model(key)
    return sum(exact(e, m.values) for p, e in m.params().flatten().items() if keep(p))


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


def elementwise(key: str, *, kind: str = "decode", T: int, B: int = 1,
                keep: Callable[[str], bool] = lambda p: True) -> int:
    """Elementwise FLOPs (norms, activations, softmax; ``symcost.core.elementwise``'s convention)."""
    m = model(key)
    t = m.elementwise(Phase(kind=kind))
    vals = m.values_with(T=T, B=B)
    return sum(exact(e, vals) for p, e in t.flatten().items() if keep(p))


def training_flops(key: str, *, T: int, B: int = 1, keep: Callable[[str], bool] = lambda p: True) -> int:
    """Training FLOPs (forward + backward, ``symcost.training.train_flops``) of one sequence of T tokens."""
    m = model(key)
    vals = m.values_with(T=T, B=B)
    return sum(exact(e, vals) for p, e in train_flops(m).flatten().items() if keep(p))


def image_flops(key: str, n_pat: int | None = None, keep: Callable[[str], bool] = lambda p: True) -> int:
    """Forward FLOPs of one image through the vision tower and projector (``n_pat`` patches; none =
    the config's image size)."""
    m = model(key)
    vals = dict(m.values)
    if n_pat is not None:
        vals[sym.N_pat] = n_pat
    return sum(exact(e, vals) for p, e in m.vision.image_flops().flatten().items() if keep(p))


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


def contains(s: str) -> Callable[[str], bool]:
    return lambda p: s in p


def lacks(s: str) -> Callable[[str], bool]:
    return lambda p: s not in p


def params_under(key: str, *prefixes: str) -> int:
    """Parameters of every top-level subtree whose name starts with one of ``prefixes``."""
    return params(key, *[k for k in model(key).params() if k.startswith(prefixes)])


def train_state_bytes(key: str) -> int:
    """Training bytes of weights + gradients + optimizer state (AdamW mixed precision)."""
    tm = train_memory(model(key), TrainSetup.of(seq=4096, micro_batch=1))
    return tm.weights + tm.gradients + tm.optimizer


def cache(key: str, T: int, B: int = 1, kv: str = "bf16", comps: tuple[str, ...] = ()) -> int:
    """Cache bytes at T (KV in ``kv``, state leaves in their own dtype); ``comps`` filters components."""
    m = model(key)
    total, by = cache_bytes_total(m, kv, m.values_with(T=T, B=B))
    return total if not comps else sum(v for k, v in by.items() if k.startswith(comps))


def cache_elements(key: str, T: int, B: int = 1, keep: Callable[[str], bool] = lambda p: True) -> int:
    """Elements of the cache leaves whose path ``keep`` accepts, after T tokens."""
    m = model(key)
    vals = m.values_with(T=T, B=B)
    return int(sum(exact(e, vals) for p, e in m.cache().flatten().items() if keep(p)))


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


def tp_all_reduces(key: str, group: str = "layers", backward: bool = True) -> int:
    """All-reduces one layer of ``group`` takes part in under Megatron tensor parallelism (no sequence
    parallelism): one after each TP block's forward and, with ``backward``, one before its backward
    (``training.comm.tp_collectives``)."""
    from ..training.comm import tp_collectives  # lazy: only the TP rows need the training comm rules
    from ..training.plan import layer_kinds
    blocks = layer_kinds(model(key))[group].tp_blocks
    ops = tp_collectives(blocks, 0, 2, False)[1]["all_reduce"]
    return ops if backward else blocks


def act_bytes(key: str, *, T: int, B: int = 1, phase: str = "decode") -> int:
    """Activation bytes of one forward (``symcost.serving.memory.inference_memory``'s account)."""
    return inference_memory(model(key), T=T, B=B, phase=phase).activation_bytes


# -- claims: rows of symcost/data/seed_claims.json ------------------------------------------------
SCALE = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12, "GFLOPs": 10**9,
         "MFLOPs": 10**6, "TFLOPs": 10**12, "G FLOPs": 10**9, "M FLOPs": 10**6, "bytes": 1,
         "KB": 10**3, "MB": 10**6, "GB": GB, "TB": 10**12, "KiB": 2**10, "MiB": MiB, "GiB": GiB, "TiB": TiB,
         "%": 1, "x": 1, "Ki": 2**10, "GPUs": 1, "s": 1, "ms": Fraction(1, 1000), "bytes/param": 1, "batch": 1,
         "FLOPs": 1, "FLOPs/param": 1, "万": 10**4, "亿": 10**8, "x10^14 FLOPs": 10**14}
#: the verdicts a row may carry: the first is an agreement, the others name why the number differs
VERDICTS = ("agrees", "rounded", "convention differs", "wrong")
DATA = "data/seed_claims.json"


def pct(a, b) -> Fraction:
    return Fraction(a) * 100 / b


EMB = ("embed_tokens", "lm_head")


def _layer(key, group="layers"):  # one decoder layer of a uniform stack
    return per_layer(key, group)


def _k25_mla():
    return per_layer("kimi-k2.5", "moe_layers", "self_attn")


def _k25_seed_mla():  # the seed's six matrices: q_b to D_nope only, plus a W_q_rope from the hidden state
    K25 = "kimi-k2.5"
    v = model(K25).values
    d, dq, H, Dn, Dr = (int(v[s]) for s in (sym.d, sym.d_q, sym.H_q, sym.D_nope, sym.D_rope))
    return (_k25_mla() - params(K25, "moe_layers/self_attn/q_b_proj") / count(K25, sym.L_moe)
            - params(K25, "moe_layers/self_attn/q_a_layernorm", "moe_layers/self_attn/kv_a_layernorm")
            / count(K25, sym.L_moe) + dq * H * Dn + d * H * Dr)


def _k25_mha():  # the seed's MHA reference: Q, K at D_nope + D_rope, V and O at D_v
    v = model("kimi-k2.5").values
    d, H, Dn, Dr, Dv = (int(v[s]) for s in (sym.d, sym.H_q, sym.D_nope, sym.D_rope, sym.D_v))
    return 2 * d * H * (Dn + Dr) + 2 * d * H * Dv


# -- the metric language: a row's ``metric`` and ``seed_formula`` are expressions over the names
# below (calls, arithmetic, tuples, keyword arguments, ``sym.X``), read by a whitelist walker over
# the parsed tree. Nothing else is reachable: no eval, no attribute starting with "_".
_FUNCS = {f.__name__: f for f in (
    params, params_where, active, routed, extras, count, per_layer, flops, weight_flops_per_token, leaf, under, both,
    tp_all_reduces,
    contains, lacks, params_under, elementwise, image_flops, cache_elements, training_flops, act_bytes, train_state_bytes, cache, _leaf_bytes, max_batch, pct, _layer,
    _k25_mla, _k25_seed_mla, _k25_mha, model, weight_bytes, gpu, Fraction, min, max, int)}
_CONSTS = {"sym": sym, "GiB": GiB, "GB": GB, "MiB": MiB, "TiB": TiB, "M1": M1, "T20": T20, "EMB": EMB,
           "CORE": CORE}
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow, ast.Mod: operator.mod}


def metric(text: str):
    """Evaluate one metric expression of the data file (see above)."""
    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, str)):
            return n.value
        if isinstance(n, ast.Name):
            if n.id in _FUNCS:
                return _FUNCS[n.id]
            if n.id in _CONSTS:
                return _CONSTS[n.id]
        if isinstance(n, ast.Tuple):
            return tuple(ev(e) for e in n.elts)
        if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
            return _BIN[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if isinstance(n, ast.Attribute) and not n.attr.startswith("_"):
            return getattr(ev(n.value), n.attr)
        if isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) and n.func.id in _FUNCS
                                        or isinstance(n.func, ast.Call)):
            args = []
            for a in n.args:
                args.extend(ev(a.value) if isinstance(a, ast.Starred) else [ev(a)])
            return ev(n.func)(*args, **{k.arg: ev(k.value) for k in n.keywords})
        raise SymcostError(f"seed_claims: {ast.dump(n)[:60]} is not part of the metric language")
    return ev(ast.parse(text, mode="eval"))


@dataclass(frozen=True)
class Claim:
    seed: str  # "003 §6.2": file prefix and section
    quote: str  # the seed's words, short, as written (Chinese)
    what: str  # the metric and inputs, in English
    model: str  # a key of ``model()``
    said: str  # the seed's number exactly as written
    unit: str  # the seed's unit as written
    metric: str  # symcost's exact value, an expression of the metric language, in base units of ``unit``
    verdict_said: str  # one of VERDICTS (the test pins it against the computed agreement)
    rule: str = "round"  # round | truncate | gt | nearly
    cause: str = ""  # one sentence, for a disagreement (or a note for an agreement)
    pattern: str = ""  # the error pattern (summary), for a disagreement
    formula: str = ""  # the seed's formula in words, where it gives one
    seed_formula: str | None = None  # the seed's formula as a metric expression, evaluated exactly
    alt_unit: str | None = None  # the unit the seed's formula is read in (default ``unit``)
    alt_rule: str | None = None
    layout: str = ""  # the parallel layout, for GPU-count and batch rows
    also: tuple[str, ...] = ()  # other "seed §section" places that repeat the claim word for word
    line: int | None = None  # the line of the seed file the quote stands on (1-based)
    also_lines: tuple[int | None, ...] = ()  # the line of each ``also`` place
    repeats: tuple[tuple[int, str], ...] = ()  # (line, value) where the same seed states this number again
    as_written: str | None = None  # the number as the seed writes it when ``said`` is its reading (1/2000)

    @property
    def expect(self) -> str:
        return "agrees" if self.verdict_said == "agrees" else "disagrees"

    def value(self):
        return metric(self.metric)

    @property
    def alt(self):
        return None if self.seed_formula is None else (lambda: metric(self.seed_formula))

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
        if rule == "lt":  # "占比 <1%"
            return x < s
        if rule == "nearly":
            return s * Fraction(9, 10) <= x <= s
        if rule == "about":  # a nominal size ("550B", "约 1 TB"): within 1 %
            return abs(x - s) <= s / 100
        if rule == "sig":  # "≈ 400B": the trailing zeros of a whole number are not significant
            z = len(self.said.replace(",", "")) - len(self.said.replace(",", "").rstrip("0")) if d == 0 else 0
            return abs(x - s) <= Fraction(10**z, 2 * 10**d)
        raise ValueError(rule)

    def verdict(self) -> str:
        return "agrees" if self.judge(self.value()) else "disagrees"

    def alt_reproduces(self) -> bool:
        return self.alt is not None and self.judge(self.alt(), self.alt_unit, self.alt_rule)


def load_claims() -> list[Claim]:
    """The rows of the data file, in file order."""
    rows = json.loads(resources.files("symcost").joinpath(DATA).read_text(encoding="utf-8"))
    out = []
    for r in rows:
        if r["verdict"] not in VERDICTS:
            raise SymcostError(f"seed_claims: verdict {r['verdict']!r} is not one of {VERDICTS}")
        out.append(Claim(f"{r['seed']} {r['section']}", r["quote"], r["description"], r["model"], r["value"],
                         r["unit"], r["metric"], r["verdict"], rule=r.get("rule", "round"),
                         cause=r.get("cause", ""), pattern=r.get("pattern", ""), formula=r.get("formula", ""),
                         seed_formula=r.get("seed_formula"), alt_unit=r.get("seed_formula_unit"),
                         alt_rule=r.get("seed_formula_rule"), layout=r.get("layout", ""),
                         also=tuple(r.get("also", ())), line=r.get("line"),
                         also_lines=tuple(r.get("also_lines", ())),
                         repeats=tuple(tuple(x) for x in r.get("repeats", ())), as_written=r.get("as_written")))
    return out


CLAIMS: list[Claim] = load_claims()



# -- the report --------------------------------------------------------------------------------------
@dataclass
class Row:
    claim: Claim
    value: int | Fraction | None
    verdict: str  # one of VERDICTS, or "not yet checkable" / "verdict out of date"
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
        agrees = c.judge(v)
        # the verdict as stated in the data, once the computation confirms it agrees or differs
        verdict = c.verdict_said if agrees == (c.verdict_said == "agrees") else "verdict out of date"
        rows.append(Row(c, v, verdict, "", c.alt() if c.alt is not None else None))
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
    if c.rule in ("gt", "lt", "nearly"):
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


def patterns(rows: list[Row]) -> list[tuple[str, str, int, list[str]]]:
    """The error patterns of the disagreeing rows: (pattern, verdict, count, sections), most frequent first."""
    by: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        if r.verdict in VERDICTS[1:]:
            by.setdefault((r.claim.pattern, r.verdict), []).append(r.claim.seed)
    return sorted(((p, v, len(s), list(dict.fromkeys(s))) for (p, v), s in by.items()), key=lambda t: (-t[2], t[0]))


def _headline(s: dict[str, int]) -> str:
    parts = [f"{s.get(v, 0)} {v}" for v in VERDICTS]
    extra = [f"{s[k]} {k}" for k in ("not yet checkable", "verdict out of date") if s.get(k)]
    return f"{s['claims']} claims: " + ", ".join(parts + extra) + "."


RULES = {"round": "rounds to the digits written", "truncate": "truncates to the digits written",
         "about": "is within 1% of the number",
         "sig": "rounds to its significant digits (80 = 8 x 10)",
         "gt": "is more than the number", "lt": "is less than the number", "nearly": "is within 10% below the number"}

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
         "specific model, so it has no rows here. Each row's verdict is one of: **agrees**; "
         "**rounded** (the seed rounded an input or truncated the result); **convention differs** "
         "(the seed counts under another convention, named in the row); **wrong** (the cause is named). "
         "The rows are data (`symcost/data/seed_claims.json`), each placed by the seed file and the line "
         "its quote stands on (`001:1451` = line 1451 of `seeds/001_39cfed71029e3b81.txt`). A claim is any "
         "number the seeds state about a cost, with or without a unit: sizes and counts with a unit, "
         "ratios (\"约 28 倍\"), fractions (\"约 1/2000\"), changes (\"1→4\"), counts of collectives "
         "(\"两次 all-reduce\") and the results of arithmetic on parameters, FLOPs, bytes or cache; "
         "`tests/seed_numbers.py` extracts them by stated rules and `tests/test_audit.py` counts those "
         "with a row at the same seed line (coverage at least 90 %).")


def _section_key(row) -> tuple:
    """Reading order: seed, then its section numbers (``001 §3.10`` after ``001 §3.9``)."""
    seed, _, sec = row.claim.seed.partition(" ")
    return (seed, tuple(int(n) for n in re.findall(r"\d+", sec)), sec)


#: CJK ideographs, kana and full-width punctuation: set by xeCJK under xelatex, dropped under pdflatex
_CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]+")


def _cjk_tex(text: str) -> str:
    """Text with Chinese in it as LaTeX: the Chinese runs in ``\\seedquote{}`` (printed when the
    document is built with xelatex and a CJK font, dropped under pdflatex), the rest ``texescape``'d."""
    out, pos = [], 0
    for m in _CJK.finditer(text):
        out.append(texescape(text[pos:m.start()]))
        out.append(r"\seedquote{" + m.group() + "}")
        pos = m.end()
    out.append(texescape(text[pos:]))
    return "".join(out)


def _md_to_tex(text: str) -> str:
    """INTRO's light Markdown as LaTeX: escaped text, **bold**, `code`, powers such as 2^30."""
    out = []
    for i, part in enumerate(re.split(r"(\*\*.+?\*\*|`.+?`|\b\d+\^\d+\b)", text)):
        if part.startswith("**"):
            out.append(r"\textbf{" + texescape(part[2:-2]) + "}")
        elif part.startswith("`"):
            out.append(r"\texttt{" + texescape(part[1:-1]) + "}")
        elif re.fullmatch(r"\d+\^\d+", part):
            base, exp = part.split("^")
            out.append(f"${base}^{{{exp}}}$")
        else:
            out.append(_cjk_tex(part))
    return "".join(out)


def _cells(r: Row, sep: str) -> tuple[str, str, str]:
    """(symcost's value, the seed's number with its formula, difference and cause and layout)."""
    c = r.claim
    said = f"{c.said} {c.unit}".strip() + (f" ({c.formula})" if c.formula else "")
    if r.value is None:
        return "--", said, f"not yet checkable: {r.error}"
    got = in_unit(c, r.value)
    diff = difference(c, r.value) if r.verdict in VERDICTS[1:] else ""
    if c.cause:
        diff = f"{diff}{sep} {c.cause}" if diff else c.cause
    if r.verdict in VERDICTS[1:] and c.alt is not None:
        diff += f" (seed's formula: {in_unit(c, r.alt_value, c.alt_unit)})"
    if c.layout:
        diff += f"{sep} layout: {c.layout}" if diff else f"layout: {c.layout}"
    return got, said, diff


#: the seed files (the project's ``seeds/`` folder), by prefix; a row's place is file:line
SEED_FILES = {"000": "000_8e323c12bb6c420c.txt", "001": "001_39cfed71029e3b81.txt",
              "002": "002_f02808476ab79938.txt", "003": "003_61d123a5f966ef8e.txt",
              "004": "004_3817473e558edf76.txt"}


def _at(seed: str, line) -> str:
    return f"{seed}:{line}" if line else f"{seed}:?"


def _place(c: Claim) -> str:
    """``§2.3, 000:98`` — the section and the seed file's line the quote stands on (and its repeats)."""
    seed, sec = c.seed.split(" ", 1)
    out = f"{sec}, {_at(seed, c.line)}"
    if c.also:
        out += " (also " + ", ".join(f"{a.split(' ', 1)[1]}, {_at(a.split()[0], ln)}"
                                     for a, ln in zip(c.also, c.also_lines or [None] * len(c.also))) + ")"
    return out


def render_markdown() -> str:
    rows = sorted(evaluate(), key=_section_key)
    s = summary(rows)
    out = ["# Seeds audit", "", "Generated by `python -m symcost.documents.generate` from `symcost/audit.py` and "
           "`symcost/data/seed_claims.json`; do not edit.", "", INTRO, "", f"**{_headline(s)}**", "",
           "## Error patterns", "", "| pattern | verdict | rows | sections |", "| --- | --- | --- | --- |"]
    for p, v, n, secs in patterns(rows):
        out.append(f"| {p} | {v} | {n} | {', '.join(secs)} |")
    out += ["", "## Models", "", "| model | source |", "| --- | --- |"]
    for key in dict.fromkeys(r.claim.model for r in rows):
        out.append(f"| `{key}` | {source(key)} |")
    for seed in dict.fromkeys(r.claim.seed.split()[0] for r in rows):
        out += ["", f"## Seed {seed}", "",
                "| § | claim (as written) | English | model | seed | symcost (exact) | verdict | difference · cause · layout |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in (r for r in rows if r.claim.seed.split()[0] == seed):
            c = r.claim
            got, said, diff = _cells(r, " ·")
            mark = r.verdict if r.verdict == "agrees" else f"**{r.verdict}**" + (f" ({c.pattern})" if c.pattern else "")
            if c.rule != "round":
                mark += f" ({RULES[c.rule]})"
            cells = [_place(c), c.quote, c.what, f"`{c.model}`", said, got, mark, diff]
            out.append("| " + " | ".join(x.replace("|", "/").replace("\n", " ") for x in cells) + " |")
    return "\n".join(out) + "\n"


#: units written with a Chinese magnitude word or a power of ten, typeset as a power of ten in the .tex
_TEX_UNITS = {"万": 4, "亿": 8, "x10^14": 14}


def render_tex() -> str:
    """The same table as a LaTeX document (English only: pdflatex has no CJK fonts by default)."""

    def esc(text: str) -> str:
        for word, power in _TEX_UNITS.items():
            text = text.replace(word, f"POWERTEN{power}POWERTEN")
        text = re.sub(r"\^(\w+)", r"SUPERSCRIPT\1SUPERSCRIPT", text)  # 2^20, QK^T, 10^6
        text = re.sub(r"\s?POWERTEN(\d+)POWERTEN", r" $\\times 10^{\1}$", texescape(text))
        return re.sub(r"SUPERSCRIPT(\w+?)SUPERSCRIPT", r"\\textsuperscript{\1}", text)
    rows = sorted(evaluate(), key=_section_key)
    s = summary(rows)
    lines = [r"\documentclass[9pt,a4paper,landscape]{article}", r"\usepackage[margin=1.5cm]{geometry}",
             r"\usepackage{booktabs,longtable,array,iftex}", r"\setlength{\parindent}{0pt}",
             r"\newcolumntype{L}[1]{>{\raggedright\arraybackslash}p{#1}}",
             # the seeds' Chinese quotes need xelatex and a CJK font (Debian: texlive-xetex, texlive-lang-cjk,
             # fonts-noto-cjk); under pdflatex they are dropped and the document still builds
             r"\newcommand{\seedquote}[1]{}\newcommand{\showquote}[1]{#1}",
             r"\ifXeTeX\IfFileExists{xeCJK.sty}{\usepackage{xeCJK}\setCJKmainfont{Noto Serif CJK SC}"
             r"\let\seedquote\showquote\def\withquotes{1}}{}\fi",
             r"\title{Seeds audit}\author{generated by symcost}\date{}", r"\begin{document}", r"\maketitle",
             _md_to_tex(INTRO), "", r"\textbf{" + esc(_headline(s)) + "}", "",
             r"\ifdefined\withquotes Each row quotes the seed as written, above its English description."
             r"\else Built without a CJK font: the quotes are in the Markdown version "
             r"(\texttt{reports/seeds-audit.md}; build this file with xelatex to print them here), each claim "
             r"named by its seed section, file line and an English description.\fi", "",
             r"\section*{Error patterns}", r"{\footnotesize", r"\begin{longtable}{@{}L{8cm}L{3cm}L{1cm}L{11cm}@{}}",
             r"\toprule", r"pattern & verdict & rows & sections \\", r"\midrule", r"\endhead"]
    for p, v, n, secs in patterns(rows):
        lines.append(" & ".join(esc(x) for x in (p, v, str(n), ", ".join(secs))) + r" \\")
    lines += [r"\bottomrule", r"\end{longtable}}"]
    for seed in dict.fromkeys(r.claim.seed.split()[0] for r in rows):
        lines += [rf"\section*{{Seed {esc(seed)}}}", r"{\footnotesize",
                  r"\begin{longtable}{@{}L{1.6cm}L{5.4cm}L{2.6cm}L{2.9cm}L{2.4cm}L{8.2cm}@{}}", r"\toprule",
                  r"\S & model: metric & seed & symcost (exact) & verdict & difference, cause, layout \\",
                  r"\midrule", r"\endhead"]
        for r in (r for r in rows if r.claim.seed.split()[0] == seed):
            c = r.claim
            got, said, diff = _cells(r, ";")
            verdict = r.verdict + (f" ({c.pattern})" if c.pattern and r.verdict != "agrees" else "")
            if c.rule != "round":
                verdict += f" ({RULES[c.rule]})"
            cells = [esc(_place(c)), r"\seedquote{" + _cjk_tex(c.quote) + r"\newline}" + esc(f"{c.model}: {c.what}"),
                     *(esc(x) for x in (said, got, verdict, diff))]
            lines.append(" & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{longtable}}"]
    lines.append(r"\end{document}")
    return "\n".join(lines) + "\n"
