"""The ``symcost`` command line (contract: shared INTERFACE.md). ``python -m symcost`` is the same.

Every command takes ``--json`` and then prints one JSON object. Bad input exits with status 2 and
one line on stderr (plus ``{"error": ...}`` on stdout with ``--json``), never a traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import sympy

from . import loader, startup
from .conventions import Phase
from .errors import SymcostError
from .notation import sym
from .terms import Terms, exact
from .units import human_bytes, human_count


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print usage + exit 2; keep it to one line
        where = self.prog.removeprefix("symcost").strip()  # main() prints the one "symcost:" prefix
        hint = self._did_you_mean(message)
        message += f" (did you mean {hint}?)" if hint else ""
        raise SymcostError(f"{where}: {message}" if where else message)

    def _did_you_mean(self, message: str) -> str | None:
        """The closest known option to an unrecognised one, or the closest choice to an invalid one."""
        import difflib
        import re
        bad = re.match(r"argument .*: invalid choice: '(.*)' \(choose from (.*)\)$", message)
        if bad:
            words, known = [bad[1]], re.findall(r"'([^']*)'", bad[2])
        elif message.startswith("unrecognized arguments:"):
            parsers = [self] + [sp for a in self._actions if isinstance(a, argparse._SubParsersAction)
                                for sp in a.choices.values()]  # the top level reports for commands
            known = sorted({o for p in parsers for a in p._actions for o in a.option_strings
                            if o.startswith("--")})
            words = [arg.split("=")[0] for arg in message.split(":", 1)[1].split()]
        else:
            return None
        for word in words:
            close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
            if close:
                return close[0]
        return None


#: size suffixes, binary as context lengths are quoted (128K = 131,072; 1M = 1,048,576)
_SUFFIX = {"K": 2**10, "M": 2**20, "G": 2**30}


def parse_size(text: str) -> int:
    """``"4096"``, ``"128K"`` (131,072), ``"1M"`` (1,048,576), ``"2G"``; ``ValueError`` otherwise.

    >>> parse_size("128K"), parse_size("1M"), parse_size("4096")
    (131072, 1048576, 4096)
    """
    t = text.strip().replace("_", "")
    mult = _SUFFIX.get(t[-1:].upper(), 1)
    digits = t[:-1] if mult > 1 else t
    if not digits.isascii() or not digits.isdigit() or len(digits) > 30:
        raise ValueError(text)
    return int(digits) * mult


def _real(name, low=0.0, high=None, *, open_low=False):
    """A finite number in [low, high] (``open_low``: low excluded); never nan, inf or text."""
    import math

    def parse(text):
        try:
            value = float(text)
        except ValueError:
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {shown!r}") from None
        if not math.isfinite(value) or value < low or (open_low and value == low) or \
                (high is not None and value > high):
            where = f"{'(' if open_low else '['}{low:g}, {'∞)' if high is None else f'{high:g}]'}"
            raise argparse.ArgumentTypeError(f"{name} must be in {where}, got {text}")
        return value
    return parse


def _ratio(name):
    """A positive exact ratio: ``1.25`` or ``5/4`` (read as decimal text, never via a float)."""
    from fractions import Fraction

    def parse(text):
        try:
            value = Fraction(text.strip())
        except (ValueError, ZeroDivisionError):
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise argparse.ArgumentTypeError(f"{name} must be a number such as 1.25 or 5/4, got {shown!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be > 0, got {text}")
        return value
    return parse


def _shard(name):
    """A positive integer, or ``none`` (no hybrid sharding, given explicitly)."""
    def parse(text):
        if text.strip().lower() == "none":
            return "none"
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value <= 0:
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise argparse.ArgumentTypeError(f"{name} must be a positive integer or 'none', got {shown!r}")
        return value
    return parse


def _positive(name):
    def parse(text):
        try:
            value = parse_size(text)
        except ValueError:
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise argparse.ArgumentTypeError(f"{name} must be a positive integer (suffixes K, M, G "
                                             f"= 2^10, 2^20, 2^30), got {shown!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be positive, got {value}")
        return value
    return parse


# -- helpers -------------------------------------------------------------------------------------
def _breakdown(terms: Terms, values: dict, level: int = 2) -> dict[str, int]:
    return {k: exact(v, values) for k, v in terms.depth(level).items()}


def _table(rows: list[tuple[str, str, int]], total: int, fmt=human_count) -> str:
    """A plain-text table: name, formula, exact value, share of the total."""
    width = max((len(r[0]) for r in rows), default=4)
    lines = []
    for name, formula, value in rows:
        share = f"{100 * value / total:6.2f}%" if total else "      -"
        lines.append(f"  {name:<{width}}  {value:>22,}  {fmt(value):>12}  {share}  {formula}")
    return "\n".join(lines)


#: warnings of the running command (``_context_warnings``), printed by ``_emit`` on success only
_WARNINGS: list[str] = []


def _context_warnings(args) -> list[str]:
    """A context beyond what the config supports (``symcost.limits``), from the raw config only."""
    from .limits import context_warnings
    model = getattr(args, "model", None)
    T = max((v for v in (getattr(args, a, None) for a in ("T", "seq", "T_prefill", "T_decode"))
             if isinstance(v, int)), default=None)
    if not isinstance(model, str) or T is None:
        return []
    try:
        _, raw = loader.read_json(model)
    except SymcostError:
        return []  # the command reports the problem itself
    return context_warnings(raw, T)


def _field_warnings(args) -> list[str]:
    """Config fields the model's adapter does not read (``symcost.fields``): those switched on
    and not classed cost-neutral always; with ``--verbose``, every one."""
    from . import fields
    models = getattr(args, "model", None)
    out = []
    for source in models if isinstance(models, list) else [models]:
        if not isinstance(source, str):
            continue
        try:
            adapter = loader.load_config(source)
        except SymcostError:
            return []  # the command reports the problem itself
        cls, raw = type(adapter), loader.loaded(source)[1]
        name = adapter.name or source
        flagged = fields.flagged(cls, raw)
        if flagged:
            out.append(f"{name}: config fields symcost does not read, which may change the architecture "
                       f"(the counts follow {cls.reference or 'the adapter'} without them): "
                       + ", ".join(flagged[:12]) + (f" and {len(flagged) - 12} more" if len(flagged) > 12 else ""))
        if getattr(args, "verbose", False):
            every = fields.unread(cls, raw)
            out.append(f"{name}: {len(every)} config fields not read (cost-neutral or unknown): "
                       + (", ".join(every) if every else "none"))
    return out


def _dtype_warnings(args) -> list[str]:
    """A quantized checkpoint costed at another dtype (``--weights-dtype`` / ``--experts-dtype``)."""
    override = [(o, getattr(args, a, None)) for o, a in (("--weights-dtype", "weights_dtype"),
                                                          ("--experts-dtype", "experts_dtype"))]
    override = [(o, v) for o, v in override if v]
    hit = loader.loaded(args.model) if override and isinstance(getattr(args, "model", None), str) else None
    if hit is None:
        return []
    from .serving.quant import quant_config
    q, _ = quant_config(hit[1])
    if q is None:
        return []
    method = q.get("quant_method", "quantized")
    return [f"{hit[0].name or args.model}: the checkpoint is {method} (quantization_config); weights costed "
            f"as {' and '.join(f'{v} ({o})' for o, v in override)} instead"]


def _emit(args, payload: dict, text: str) -> None:
    if args.json:
        print(json.dumps({**payload, "warnings": list(_WARNINGS)} if _WARNINGS else payload))
    else:
        print(text)
    for w in _WARNINGS:
        print(f"symcost: warning: {w}", file=sys.stderr)


# -- commands ------------------------------------------------------------------------------------
def cmd_models(args):
    rows = []
    for name in loader.bundled_names():
        _, raw = loader.read_json(name)
        mt = raw.get("model_type")
        try:
            m = loader.build(name)
            rows.append({"name": name, "model_type": mt, "supported": True,
                         "params": m.params().total_at(m.values)})
        except SymcostError as e:
            rows.append({"name": name, "model_type": mt, "supported": False, "reason": str(e)})
    text = "\n".join(f"  {r['name']:<34} {r['model_type']:<14} "
                     + (f"{r['params']:>20,} params" if r["supported"] else
                        "unsupported" + (" model_type" if "unsupported architecture" in r["reason"]
                                         else ": " + r["reason"]))
                     for r in rows)
    _emit(args, {"models": rows}, "Bundled reference configs:\n" + text)


def cmd_params(args):
    m = loader.build(args.model)
    vals = m.values
    total_t, active_t = m.params(), m.active_params()
    total, active = total_t.total_at(vals), active_t.total_at(vals)
    breakdown = _breakdown(total_t, vals)
    buffers = {k: exact(v, vals) for k, v in m.buffers().depth(3).items()}
    extras = {k: exact(v, vals) for k, v in m.extras.depth(1).items()}
    payload = {
        "model": m.name, "model_type": m.model_type, "total": total, "active": active,
        "breakdown": breakdown,
        "active_breakdown": _breakdown(active_t, vals),
        "formula": {"total": str(total_t.total), "active": str(active_t.total)},
        "buffers": buffers, "not_built": extras,
        "values": {str(k): int(v) for k, v in vals.items()},
        "convention": "total: parameters the transformers class registers (tied head once); "
                      "active: all non-expert parameters + router + k routed + shared experts "
                      "(embedding table included, listed separately)",
        "notes": m.notes,
    }
    if args.json:  # printing every formula costs more than computing them
        return _emit(args, payload, "")
    rows = [(k, str(v), breakdown[k]) for k, v in total_t.depth(2).items()]
    lines = [f"{m.name} ({m.model_type}): parameters", _table(rows, total),
             f"  {'total':<20} {total:>22,}  = {human_count(total)}   formula: {total_t.total}",
             f"  {'active per token':<20} {active:>22,}  = {human_count(active)}"]
    for k, v in buffers.items():
        lines.append(f"  buffer (not a parameter in transformers): {k} = {v:,}")
    for k, v in extras.items():
        lines.append(f"  not built by transformers: {k} = {v:,}")
    lines += [f"  note: {n}" for n in m.notes]
    _emit(args, payload, "\n".join(lines))


def _phase(args) -> Phase:
    return Phase(kind=args.phase, attention=args.attention, logits=args.logits, mla=args.mla,
                 impl=args.impl)


def _images(m, args) -> tuple[int, dict]:
    """``--images N``: the context grows by N·image_tokens per sequence; (tokens added, JSON fields)."""
    n = args.images
    if n < 0:
        raise SymcostError(f"--images must be non-negative, got {n}")
    if n and m.vision is None:
        raise SymcostError(f"--images {n}: {m.name} has no vision tower")
    per_image = exact(m.vision.image_tokens(), m.values) if m.vision is not None else 0
    added = n * per_image
    return added, {"images": n, "tokens_per_image": per_image, "vision_tokens": added,
                   "T_text": args.T, "T": args.T + added, "formula_T": "T_text" if added else "T"}


def _check_positions(m, positions: int, flag: str = "--T") -> None:
    """Learned absolute positions (GPT-2's wpe) cap the context at P tokens."""
    P = m.values.get(sym.P)
    if P is not None and positions > int(P):
        raise SymcostError(f"{flag}: {positions} positions exceed the {int(P)} learned positions "
                           f"(n_positions) of {m.name}")


def _text_T(expr, added: int):
    """A formula in the full context T rewritten in the text tokens (T -> T + vision tokens)."""
    return sympy.expand(expr.xreplace({sym.T: sym.T + added})) if added else expr


def cmd_flops(args):
    m = loader.build(args.model)
    ph = _phase(args)
    terms = m.flops(ph)
    added, img = _images(m, args)
    _check_positions(m, args.T + added + (1 if args.phase == "decode" else 0))
    in_T = _text_T(sympy.expand(terms.total.xreplace(m.values)), added)
    vision = {}
    if added and args.phase == "prefill":  # the tower runs once per image, in the prefill
        per_image = m.vision.image_flops()
        vision = {k: exact(v, m.values) for k, v in per_image.depth(2).items()}
        terms.add("vision", args.images * sym.B * per_image.total,
                  f"{args.images} image(s) per sequence × {m.vision.label()}")
        in_T = sympy.expand(in_T + args.images * sym.B * per_image.total.xreplace(m.values))
    T = args.T + added
    vals = m.values_with(T=T, B=args.batch)
    total = terms.total_at(vals)
    breakdown = _breakdown(terms, vals)
    payload = {"model": m.name, "phase": args.phase, "T": T, "batch": args.batch,
               "total": total, "breakdown": breakdown, "formula": str(in_T),
               "symbolic": str(terms.total), "convention": ph.describe(), **img,
               "vision_flops_per_image": vision}
    if args.elementwise:  # a separate group: never part of "total"
        from .elementwise import CONVENTION
        ew = m.elementwise(ph)
        ew_total, ew_break = ew.total_at(vals), _breakdown(ew, vals)
        payload["elementwise"] = {"total": ew_total, "breakdown": ew_break, "convention": CONVENTION}
    if args.json:
        return _emit(args, payload, "")
    rows = [(k, str(v), breakdown[k]) for k, v in terms.depth(2).items()]
    ctx = f"T={T}" + (f" (T_text={args.T} + {added} vision tokens)" if added else "")
    text = "\n".join([f"{m.name}: forward FLOPs, {args.phase}, {ctx}, B={args.batch}",
                      f"  ({ph.describe()})", _table(rows, total),
                      f"  total {total:,} = {human_count(total)}FLOP",
                      f"  as a function of T{'_text' if added else ''}, B: {in_T}"])
    if args.elementwise:
        text += "\n".join(["", "  elementwise (norms, activations, softmax, RoPE, residuals; "
                            "a convention, not in the total above):",
                            _table([(k, str(v), ew_break[k]) for k, v in ew.depth(2).items()], ew_total),
                            f"  elementwise total {ew_total:,} = {human_count(ew_total)}FLOP"])
    _emit(args, payload, text)


def cmd_cache(args):
    from .serving.memory import cache_bytes, cache_bytes_total
    m = loader.build(args.model)
    terms = m.cache()
    if args.layout == "vllm":
        from .serving.vllm import paged_cache
        terms = paged_cache(m, args.block_size, args.max_batched_tokens)
    added, img = _images(m, args)
    _check_positions(m, args.T + added)
    vals = m.values_with(T=args.T + added, B=args.batch)
    elements = terms.total_at(vals)
    total, breakdown = cache_bytes_total(m, args.dtype, vals, terms)
    formula = _text_T(sympy.expand(cache_bytes(m, args.dtype, terms).xreplace(m.values)), added)
    payload = {"model": m.name, "T": args.T, "batch": args.batch, "dtype": args.dtype,
               "bytes": total, "elements": elements, "breakdown": breakdown, "formula": str(formula),
               "bytes_per_token": None, "layout": args.layout, "state_dtypes": m.state_dtype, **img}
    per_token = sympy.diff(formula, sym.T) if formula.is_polynomial(sym.T) else None
    if per_token is not None and not per_token.free_symbols - {sym.B}:
        payload["bytes_per_token"] = int(per_token.xreplace({sym.B: args.batch}))
    rows = [(k, str(v), breakdown.get(k, 0)) for k, v in terms.depth(2).items()]
    ctx = f"T={args.T + added}" + (f" (T_text={args.T} + {added} vision tokens)" if added else "")
    text = "\n".join([f"{m.name}: cache after {ctx} tokens, B={args.batch}, {args.dtype}, "
                      f"{args.layout} layout",
                      _table(rows, total, human_bytes),
                      f"  total {total:,} bytes = {human_bytes(total)}  ({elements:,} elements)",
                      f"  bytes as a function of T{'_text' if added else ''}, B: {formula}"])
    _emit(args, payload, text)


SERVE_NOTE = ("vLLM accounting per GPU: budget = usable memory x --mem-util; weights = checkpoint bytes "
              "(quantization_config, scales included) split by the layout; activations = the peak of one "
              "chunked-prefill step of --max-batched-tokens tokens (an estimate); overhead = a stated "
              "allowance (--overhead-gib non-torch + --cudagraph-gib); the rest holds KV pages "
              "(vLLM block sizes, hybrid page alignment)")


def _serve_plan(args, m, raw, lay, g, T):
    from .serving.plan import plan
    return plan(m, raw, lay=lay, gpu=g, T=T, mem_util=args.mem_util,
                max_batched_tokens=args.max_batched_tokens, kv_dtype=args.kv_dtype,
                weights_dtype=args.weights_dtype, experts_dtype=args.experts_dtype,
                quant_fallback=args.quant_fallback, overhead_gib=args.overhead_gib,
                cudagraph_gib=args.cudagraph_gib, block_size=args.block_size)


def _read_model(source):
    m = loader.build(source)
    raw = loader.read_json(source)[1]
    return m, raw


def cmd_memory(args):
    from .serving.gpus import gpu as find_gpu
    from .serving.memory import cache_bytes_total
    from .serving.plan import Layout, check_layout
    m, raw = _read_model(args.model)
    _check_positions(m, args.T)
    g = find_gpu(args.gpu) if args.gpu else None
    lay = Layout.vllm(m, tp=args.tp, pp=args.pp, dp=args.dp, ep=args.ep)
    p = _serve_plan(args, m, raw, lay, g, args.T)
    cache, _ = cache_bytes_total(m, args.kv_dtype, m.values_with(T=args.T, B=args.batch))
    per_gpu = p.per_gpu_bytes(args.batch)
    gpus_needed = None
    if g is not None:
        tp = 1
        while tp <= 64:
            try:
                check_layout(m, Layout(tp=tp))
                q = _serve_plan(args, m, raw, Layout(tp=tp), g, args.T)
                if q.max_batch is not None and q.max_batch >= args.batch:
                    gpus_needed = tp
                    break
            except SymcostError:
                pass
            tp *= 2
    kv = p.kv
    payload = {"model": m.name, "T": args.T, "batch": args.batch,
               "weights_dtype": args.weights_dtype or "checkpoint", "kv_dtype": args.kv_dtype,
               "quantization": _quant_label(raw, args),
               "weights_bytes": p.weights_total, "cache_bytes": cache,
               "activation_bytes": p.activation_rank,
               "total_bytes": p.weights_total + cache + lay.gpus * (p.activation_rank + p.overhead_rank),
               "per_gpu_bytes": per_gpu, "gpus": lay.gpus, "gpus_needed": gpus_needed,
               "max_batch": p.max_batch, "fits": None if g is None else bool(p.max_batch and p.max_batch >= args.batch),
               "gpu": g.name if g else None, "usable_bytes_per_gpu": g.usable_bytes if g else None,
               "budget_bytes_per_gpu": p.budget_rank, "weights_per_gpu_bytes": p.weights_rank,
               "overhead_bytes_per_gpu": p.overhead_rank, "kv_available_bytes_per_gpu": p.kv_available_rank,
               "kv_capacity_tokens": kv.tokens if g else None,
               "max_concurrency": kv.max_concurrency if g else None,
               "kv_block_size": kv.block_size, "kv_page_bytes": kv.page_bytes,
               "kv_blocks_per_request": kv.blocks_per_request, "kv_notes": kv.notes,
               "max_batched_tokens": args.max_batched_tokens, "mem_util": args.mem_util,
               "tp": args.tp, "pp": args.pp, "dp": args.dp, "ep": args.ep, "mla": args.mla,
               "component_dtypes": p.dtypes, "notes": p.notes,
               "formula": {k: str(v) for k, v in p.formulas.formula().items()},
               "formula_values": {str(k): int(v) for k, v in p.values.items()
                                  if k in (sym.N_tp, sym.N_ep, sym.N_pp, sym.N_dp, sym.M, sym.T, sym.M_gpu)},
               "convention": SERVE_NOTE,
               "activation_note": "activations: peak of one chunked-prefill step, an estimate (symcost.serving.plan)"}
    lines = [f"{m.name}: serving memory at T={args.T}, B={args.batch}, layout {lay.label()} "
             f"(weights {payload['quantization']}, KV {args.kv_dtype})"]
    for key in ("weights_bytes", "cache_bytes", "weights_per_gpu_bytes", "activation_bytes",
                "overhead_bytes_per_gpu", "per_gpu_bytes"):
        lines.append(f"  {key:<24} {payload[key]:>22,}  {human_bytes(payload[key])}")
    if g:
        lines.append(f"  on {g.name} ({human_bytes(g.usable_bytes)} usable, x{args.mem_util}) x {lay.gpus}: "
                     f"KV available {human_bytes(max(p.kv_available_rank, 0))} per GPU -> "
                     f"{kv.tokens:,} tokens (block {kv.block_size}), max concurrency at T={args.T}: "
                     f"{kv.max_concurrency:.2f}x; fits B={args.batch}: {payload['fits']}; "
                     f"GPUs needed (TP, powers of two): {gpus_needed}")
    lines += [f"  note: {n}" for n in p.notes + kv.notes]
    lines.append(f"  ({SERVE_NOTE}; MLA form {args.mla}: FLOPs only, bytes unchanged)")
    _emit(args, payload, "\n".join(lines))


def _quant_label(raw, args):
    from .serving.quant import scheme
    if args.weights_dtype:
        return args.weights_dtype
    s = scheme(raw, None, args.quant_fallback)
    return s.base.label if s.method == "none" else f"{s.method}: {s.layout.label}"


def _gpu_counts(text: str) -> list[int]:
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            return list(range(lo, hi + 1)) if 0 < lo <= hi else []
        return [int(text)] if int(text) > 0 else []
    except ValueError:
        return []


def cmd_deploy(args):
    from .serving.deploy import deploy
    from .serving.gpus import gpu as find_gpu
    m, raw = _read_model(args.model)
    _check_positions(m, args.T)
    g = find_gpu(args.gpu)
    counts = _gpu_counts(args.gpus) if args.gpus else []
    if args.gpus and not counts:
        raise SymcostError(f"--gpus: expected N or MIN-MAX (positive integers), got {args.gpus!r}")
    smallest = not counts
    if smallest:  # the smallest N (powers of two up to 64) with a layout that fits
        counts = [1, 2, 4, 8, 16, 32, 64]
    over = int((args.overhead_gib + args.cudagraph_gib) * 2**30)
    kw = dict(kv_dtype=args.kv_dtype, weights_dtype=args.weights_dtype, experts_dtype=args.experts_dtype,
              quant_fallback=args.quant_fallback, overhead_bytes=over, mla=args.mla,
              max_batched_tokens=args.max_batched_tokens, mem_util=args.mem_util)
    res = deploy(m, raw, gpu=g, gpus=counts, T=args.T, batch=args.batch, smallest=smallest, **kw)
    rows = res["layouts"][: args.top] if args.top else res["layouts"]
    payload = {"model": m.name, "gpu": g.name, "T": args.T, "batch": args.batch,
               "gpus": counts if not smallest else [rows[0]["gpus"]] if rows else [],
               "layouts": rows, "count": len(res["layouts"]),
               "compute_dtype": res["compute_dtype"], "peak_dtype_used": res["peak_dtype_used"],
               "convention": SERVE_NOTE + "; " + ROOF_NOTE + "; layouts evaluated in float64 from formulas "
                             "compiled once (symcost memory/roofline give one layout exactly)"}
    lines = [f"{m.name} on {g.name}: {len(res['layouts'])} valid layouts, T={args.T}, batch={args.batch} "
             f"({res['compute_dtype']} compute, {res['peak_dtype_used']} peak)",
             f"  {'layout':<22} {'GPUs':>4} {'fits':>5} {'KV tokens':>12} {'conc@T':>8} {'TTFT s':>8} "
             f"{'TPOT ms':>8} {'tok/s/GPU':>10}"]
    for r in rows:
        lines.append(f"  TP{r['tp']}·PP{r['pp']}·DP{r['dp']}·EP{r['ep']:<7} {r['gpus']:>4} {str(r['fits']):>5} "
                     f"{r['kv_capacity_tokens']:>12,} {r['max_concurrency']:>8.2f} {r['ttft_s']:>8.3f} "
                     f"{r['tpot_s'] * 1e3:>8.2f} {r['tokens_per_s_per_gpu']:>10.1f}")
    _emit(args, payload, "\n".join(lines))


def cmd_gpus(args):
    from .serving.gpus import CATALOGUE
    rows = [{"name": g.name, "memory_bytes": g.memory_bytes, "usable_bytes": g.usable_bytes,
             "usable_measured": g.usable_measured, "bandwidth_bytes_per_s": g.bandwidth_bytes_per_s,
             "peak_flops": {k: round(v * 10**12) for k, v in g.peak_tflops.items()},
             "link_bytes_per_s": round(g.link_gbs * 10**9), "link": g.link, "source": g.source}
            for g in CATALOGUE.values()]
    text = "\n".join(f"  {r['name']:<12} {human_bytes(r['usable_bytes']):>28}{'' if r['usable_measured'] else '*'}  "
                     f"{r['bandwidth_bytes_per_s'] / 1e12:5.2f} TB/s  "
                     + "  ".join(f"{k} {v / 1e12:,.0f}" for k, v in r["peak_flops"].items()) + " TFLOPS"
                     for r in rows)
    _emit(args, {"gpus": rows, "convention": "usable_bytes: total memory as the driver reports it "
                 "(* = not measured, nominal used); peak_flops: dense tensor-core FLOP/s per dtype"},
          "GPU catalogue (usable memory, HBM bandwidth, dense peaks):\n" + text
          + "\n  * no driver report in the catalogue: nominal memory")


def _parallel(args) -> dict:
    return {k: getattr(args, k) for k in ("dp", "tp", "pp", "ep", "cp")}


#: options ``train --search`` sweeps unless given, and the value each has when it is not given
SWEPT_DEFAULTS = {"zero": 0, "recompute": "none", "sp": False, "virtual_stages": 1, "offload": "none",
                  "hsdp_shard": None}


def _train_defaults(args) -> None:
    """A single layout (``train`` without --search, ``comm``): an option not given takes its
    default (--hsdp-shard none = shard over all of dp)."""
    for k, default in SWEPT_DEFAULTS.items():
        if getattr(args, k) is None or (k == "hsdp_shard" and args.hsdp_shard == "none"):
            setattr(args, k, default)


def _train_options(args) -> dict:
    cf = args.capacity_factor  # an exact Fraction (``_ratio``)
    return dict(seq=args.seq, micro_batch=args.micro_batch, global_batch=args.global_batch,
                zero=args.zero, sp=args.sp, recompute=args.recompute, hsdp_shard=args.hsdp_shard,
                offload=args.offload, virtual=args.virtual_stages, capacity=cf,
                recompute_method=args.recompute_method, recompute_layers=args.recompute_layers,
                **_parallel(args))


def _recompute_label(args) -> str:
    from .training.recompute import Recompute
    return Recompute(args.recompute, args.recompute_method, args.recompute_layers).describe()


def _step_time(m, args, tm, cm, setup):
    from .gpus import gpu as find_gpu
    from .training.steptime import Links, step_time
    g = find_gpu(args.gpu)
    world = args.dp * args.tp * args.pp * args.cp
    links = Links(nvlink_bytes_s=g.link_gbs * 1e9, ib_bytes_s=args.ib_gbs * 1e9,
                  gpus_per_node=args.gpus_per_node, alpha_s=args.alpha_us * 1e-6,
                  pcie_bytes_s=args.pcie_gbs * 1e9)
    return g, step_time(tm.flops_per_step // world, cm, setup, peak_flops=g.bf16_tflops * 1e12, mfu=args.mfu,
                        links=links, overlap=args.overlap)


def cmd_train(args):
    from .gpus import gpu as find_gpu
    from .training import TrainSetup, train_memory
    m = loader.build(args.model)
    _check_positions(m, args.seq, "--seq")
    if args.search:
        return _train_search(m, args)
    _train_defaults(args)
    g = find_gpu(args.gpu) if args.gpu else None
    setup = TrainSetup.of(optimizer=args.optimizer, grad_dtype=args.grad_dtype, kernel=args.attention_kernel,
                          act_dtype=args.act_dtype, activation_model=args.activations, scan=args.scan,
                          **_train_options(args))
    tm = train_memory(m, setup)
    fits = None if g is None else tm.per_gpu <= g.memory_bytes
    formula = {k: str((v.total if isinstance(v, Terms) else v).xreplace(m.values))
               for k, v in tm.formula.items()}
    if "activations" in tm.formula:
        formula["total"] = str(sum((tm.formula[k] for k in ("weights", "gradients", "optimizer",
                                                            "activations")), sympy.Integer(0)))
    payload = {"model": m.name, "seq": args.seq, "micro_batch": args.micro_batch,
               "global_batch": args.global_batch or args.micro_batch * args.dp,
               "per_gpu_bytes": tm.per_gpu,
               "breakdown": {"weights": tm.weights, "gradients": tm.gradients,
                             "optimizer": tm.optimizer, "activations": tm.activations,
                             "recompute_working": tm.recompute_working},
               "host_bytes_per_gpu": tm.host, "offload": args.offload, "hsdp_shard": args.hsdp_shard,
               "virtual_stages": args.virtual_stages,
               "capacity_factor": None if args.capacity_factor is None else str(args.capacity_factor),
               "heaviest_stage": tm.stage, "micro_batches": tm.micro_batches,
               "in_flight_micro_batches": tm.in_flight,
               "stages": [{k: v for k, v in r.items()} for r in tm.stages],
               "flops_per_step": tm.flops_per_step, "gpus": args.dp * args.tp * args.pp * args.cp,
               "fits": fits, "gpu": g.name if g else None, "zero": args.zero, "sp": args.sp,
               "recompute": args.recompute, "recompute_method": args.recompute_method,
               "recompute_layers": args.recompute_layers, "optimizer": args.optimizer, "grad_dtype": args.grad_dtype,
               "attention_kernel": args.attention_kernel, "act_dtype": args.act_dtype,
               "scan": args.scan, "activations_model": args.activations, "notes": tm.notes, "formula": formula,
               **_parallel(args)}
    if g is not None:
        from .training.comm import comm
        cm = comm(m, setup.replace(recompute="none") if args.recompute == "selective" and args.cp == 1
                  else setup)
        payload["step"] = _step_time(m, args, tm, cm, setup)[1]
    lines = [f"{m.name}: training memory per GPU (heaviest pipeline stage {tm.stage}), seq={args.seq}, "
             f"micro-batch={args.micro_batch}, ZeRO-{args.zero}, {_recompute_label(args)}, {args.optimizer}"]
    for k, v in payload["breakdown"].items():
        lines.append(f"  {k:<18} {v:>22,}  {human_bytes(v)}")
    lines.append(f"  {'per GPU':<18} {tm.per_gpu:>22,}  {human_bytes(tm.per_gpu)}"
                 + (f"   fits on {g.name}: {fits}" if g else ""))
    if args.offload != "none":
        lines.append(f"  {'host (offloaded)':<18} {tm.host:>22,}  {human_bytes(tm.host)}  per GPU, in CPU memory")
    lines.append(f"  micro-batches per step {tm.micro_batches}, in flight on that stage {tm.in_flight}")
    lines.append(f"  FLOPs per step (exact, causal): {tm.flops_per_step:,} = {human_count(tm.flops_per_step)}FLOP")
    if "step" in payload:
        lines.append(f"  step time on {g.name} at MFU {args.mfu:.0%}: {payload['step']['step_time_s']:.3f} s "
                     f"(bubble {payload['step']['bubble']:.1%})")
    lines += [f"  note: {n}" for n in tm.notes]
    _emit(args, payload, "\n".join(lines))


def _train_search(m, args):
    import time
    from .gpus import gpu as find_gpu
    from .training import TrainSetup
    from .training.search import search
    from .training.steptime import Links
    if not (args.gpus and args.gpu and args.global_batch):
        raise SymcostError("--search needs --gpus, --gpu and --global-batch")
    if args.activations != "engine":
        raise SymcostError("--search evaluates the engine's activations; drop --activations korthikanti")
    if (args.recompute_method, args.recompute_layers) != ("uniform", 1):
        raise SymcostError("--search sweeps --recompute none|selective|full with every layer its own "
                           "checkpoint; --recompute-method / --recompute-layers apply to one layout (drop --search)")
    t0, c0 = time.perf_counter(), time.process_time()
    g = find_gpu(args.gpu)
    base = TrainSetup.of(seq=args.seq, global_batch=args.global_batch, capacity=args.capacity_factor,
                         kernel=args.attention_kernel, act_dtype=args.act_dtype, scan=args.scan,
                         grad_dtype=args.grad_dtype, optimizer=args.optimizer)
    links = Links(nvlink_bytes_s=g.link_gbs * 1e9, ib_bytes_s=args.ib_gbs * 1e9, gpus_per_node=args.gpus_per_node,
                  alpha_s=args.alpha_us * 1e-6, pcie_bytes_s=args.pcie_gbs * 1e9)
    r = search(m, base, gpus=args.gpus, gpu=g, zero=args.zero, recompute=args.recompute, sp=args.sp,
               virtual=args.virtual_stages, hsdp=args.hsdp_shard, offload=args.offload, links=links,
               mfu=args.mfu, overlap=args.overlap)
    r["seconds"] = time.perf_counter() - t0
    r["cpu_seconds"] = time.process_time() - c0
    payload = {"model": m.name, "gpus": args.gpus, "gpu": args.gpu, "seq": args.seq,
               "global_batch": args.global_batch,
               "capacity_factor": None if args.capacity_factor is None else str(args.capacity_factor), **r}
    pins = ", ".join(f"{k}={v}" for k, v in r["pinned"].items())
    lines = [f"{m.name}: {r['candidates']:,} candidates on {args.gpus} x {args.gpu} ({r['fitting']:,} fit), "
             f"evaluated in {r['seconds']:.2f} s ({r['cpu_seconds']:.2f} s CPU)"
             + (f"; pinned: {pins}" if pins else "") + "; fastest that fit:"]
    head = ("dp", "tp", "pp", "ep", "cp", "v", "mb", "m", "ZeRO", "hsdp", "offload", "recompute", "sp",
            "s/step", "per GPU")
    rows = [(b["dp"], b["tp"], b["pp"], b["ep"], b["cp"], b["virtual_stages"], b["micro_batch"], b["micro_batches"],
             b["zero"], "-" if b["hsdp_shard"] is None else b["hsdp_shard"], b["offload"], b["recompute"],
             "on" if b["sp"] else "off", f"{b['step_time_s']:.3f}", human_bytes(b["per_gpu_bytes"]))
            for b in r["best"]]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for row in (head, *rows):
        lines.append("  " + "  ".join(str(x).rjust(w) for x, w in zip(row, widths)))
    if not r["best"]:
        lines.append(f"  (none fits in {human_bytes(find_gpu(args.gpu).memory_bytes)})")
    if r["not_costed"]:
        lines.append(f"  {r['not_costed']:,} setups left out: an activation tensor would split into a fraction of "
                     f"a byte (a vocabulary- or sequence-parallel split that tp does not divide)")
    if args.capacity_factor is not None:
        lines.append(f"  MoE capacity factor {args.capacity_factor} (not swept: it changes what is computed)")
    _emit(args, payload, "\n".join(lines))


def cmd_comm(args):
    from .training import TrainSetup, train_memory
    from .training.comm import comm
    m = loader.build(args.model)
    _check_positions(m, args.seq, "--seq")
    _train_defaults(args)
    from .training.memory import check_capacity
    check_capacity(m, args.capacity_factor)  # a dense model first says it has no experts
    if args.capacity_factor is not None and args.ep == 1 and not args.gpu:
        raise SymcostError("--capacity-factor changes communication only with --ep > 1 (the all-to-all) "
                           "or --gpu (the padded expert FLOPs in the step time)")
    setup = TrainSetup.of(optimizer=args.optimizer, grad_dtype=args.grad_dtype, kernel=args.attention_kernel,
                          act_dtype=args.act_dtype, **_train_options(args))
    cm = comm(m, setup)
    per = cm["bytes"]
    t, g, step = None, None, None
    if args.gpu:
        tm = train_memory(m, setup)
        g, step = _step_time(m, args, tm, cm, setup)
        t = step["step_time_s"]
    formula = {k: str(e) for k, e in cm["formula"].items()}
    formula["total"] = str(sum(cm["formula"].values(), sympy.Integer(0)))
    payload = {"model": m.name, "bytes_per_step": per, "total_bytes_per_step": sum(per.values()),
               "formula": formula, "collectives_per_step": cm["collectives"], "micro_batches": cm["micro_batches"],
               "step_time_s": t, "step": step, "gpu": g.name if g else None, "zero": args.zero,
               "sp": args.sp, "recompute": args.recompute, "recompute_method": args.recompute_method,
               "recompute_layers": args.recompute_layers, **_parallel(args),
               "offload": args.offload, "hsdp_shard": args.hsdp_shard, "virtual_stages": args.virtual_stages,
               "capacity_factor": None if args.capacity_factor is None else str(args.capacity_factor),
               "note": "bytes the busiest GPU of each dimension sends per step (ring collectives); "
                       "step time: alpha-beta per collective, NVLink inside a node, scale-out link "
                       "across nodes, compute at --mfu of the dense BF16 peak, --overlap hidden, "
                       "pipeline bubble (p-1)/(v*m+p-1); dp_replicate: HSDP's all-reduce across replicas; "
                       "host: CPU offload's PCIe bytes, both directions, at --pcie-gbs"}
    lines = [f"{m.name}: communication per GPU per training step ({cm['micro_batches']} micro-batches)"]
    lines += [f"  {k:<12} {v:>22,}  {human_bytes(v)}  in {cm['collectives'][k]} collectives"
              for k, v in per.items()]
    if t is not None:
        lines.append(f"  step time on {g.name} at MFU {args.mfu:.0%}, overlap {args.overlap:.0%}: {t:.3f} s")
    _emit(args, payload, "\n".join(lines))


def cmd_budget(args):
    from .gpus import gpu as find_gpu
    from .training import train_flops
    from .training.steptime import budget
    from fractions import Fraction
    m = loader.build(args.model)
    _check_positions(m, args.seq, "--seq")
    g = find_gpu(args.gpu)
    per_seq = train_flops(m).total_at(m.values_with(T=args.seq, B=1))
    flops = args.flops if args.flops is not None else float(Fraction(per_seq, args.seq) * args.tokens)
    r = budget(flops, gpus=args.gpus, peak_flops=g.bf16_tflops * 1e12, mfu=args.mfu,
               gpu_hours=args.gpu_hours, tokens=args.tokens)
    payload = {"model": m.name, "gpu": g.name, "seq": args.seq, "flops_source":
               "--flops" if args.flops is not None else "exact training FLOPs (3 x forward, causal) per token x tokens",
               "step_time_s": None, **r}
    if args.global_batch:
        steps = args.tokens / (args.global_batch * args.seq)
        payload["step_time_s"] = r["wall_time_s"] / steps
        payload["steps"] = steps
    lines = [f"{m.name}: training budget for {args.tokens:,} tokens on {args.gpus} x {g.name}",
             f"  FLOPs {r['flops']:.4g} ({payload['flops_source']})",
             f"  at MFU {r['mfu']:.1%}: {r['wall_time_s'] / 86400:.2f} days, {r['gpu_hours'] / 1e6:.3f}M GPU-hours, "
             f"{r['tokens_per_s']:.4g} tokens/s"]
    if "implied_mfu" in r:
        lines.append(f"  {args.gpu_hours:,.0f} GPU-hours imply MFU {r['implied_mfu']:.1%} of the BF16 peak")
    _emit(args, payload, "\n".join(lines))


ROOF_NOTE = ("per rank of the layout: FLOPs of the step split over t*p ranks (matmuls, causal attention, "
             "logits of the last token); bytes = the rank's checkpoint weights (routed experts as far as the "
             "batch touches them, uniform routing; once per chunk of --max-batched-tokens in prefill) + KV "
             "read/written; step = max(FLOPs/peak, bytes/bandwidth) + TP all-reduce + EP all-to-all at "
             "the link bandwidth, no overlap; a step crosses the p stages in turn; efficiencies as given")


def _roof_eval(rf, vals):
    import sympy as _s
    out = {}
    for key in ("flops", "bytes", "compute_time", "memory_time", "comm_time", "step_time"):
        out[key] = _s.sympify(getattr(rf, key)).xreplace(vals)
    return out


def _roofline_formulas(rf, batch: int) -> dict[str, str]:
    """The roofline's formulas as text, B substituted: the touched-expert fraction
    1 − (1 − k/E)^(rows) then has a numeric exponent. When that power written out exactly would
    pass Python's 4,300-digit limit (a batch of millions), B stays a symbol instead."""
    import sympy as _s
    parts = (("flops", rf.flops), ("bytes", rf.bytes), ("time_s", rf.step_time * sym.N_pp),
             ("total", rf.step_time * sym.N_pp))
    try:
        return {k: str(_s.sympify(v).xreplace({sym.B: _s.Integer(batch)})) for k, v in parts}
    except ValueError:  # int-to-text conversion limit
        return {k: str(v) for k, v in parts}


def cmd_roofline(args):
    import sympy as _s
    from .serving.formulas import compute_dtype, gpu_values, roofline_formulas
    from .serving.gpus import gpu as find_gpu
    from .serving.plan import Layout
    from .serving.quant import checkpoint
    m, raw = _read_model(args.model)
    _check_positions(m, args.T + (1 if args.phase == "decode" else 0))
    g = find_gpu(args.gpu)
    lay = Layout.vllm(m, tp=args.tp, pp=args.pp, dp=args.dp, ep=args.ep)
    p = _serve_plan(args, m, raw, lay, g, args.T)
    ck = checkpoint(m, raw, args.weights_dtype, args.quant_fallback, args.experts_dtype)
    cdt = compute_dtype(ck, args.compute_dtype)
    gvals, used = gpu_values(g, cdt, args.mem_util)
    gvals[sym.F_gpu] = gvals[sym.F_gpu] * _s.Rational(str(args.compute_eff))
    gvals[sym.BW_hbm] = gvals[sym.BW_hbm] * _s.Rational(str(args.bw_eff))
    base = {**p.values, **gvals}
    res = {}
    for phase, Tq, Bq in (("prefill", args.T, 1), ("decode", args.T, args.batch), (args.phase, args.T, args.batch)):
        rf = roofline_formulas(m, ck, phase, kv_dtype=args.kv_dtype, mla=args.mla)
        vals = {**base, sym.T: _s.Integer(Tq), sym.B: _s.Integer(Bq)}
        res[(phase, Bq)] = (rf, _roof_eval(rf, vals))
    rf, r = res[(args.phase, args.batch)]
    _, pre = res[("prefill", 1)]
    _, dec = res[("decode", args.batch)]
    ttft = float(pre["step_time"]) * args.pp
    tpot = float(dec["step_time"]) * args.pp
    # the decode batch where the step turns compute-bound (compute time >= memory time)
    drf = res[("decode", args.batch)][0]
    crit = None
    lo, hi = 1, 1 << 16
    def cb(b):
        v = {**base, sym.T: _s.Integer(args.T), sym.B: _s.Integer(b)}
        return float(drf.compute_time.xreplace(v)) >= float(drf.memory_time.xreplace(v))
    if cb(hi):
        while lo < hi:
            mid = (lo + hi) // 2
            if cb(mid):
                hi = mid
            else:
                lo = mid + 1
        crit = lo
    flops, nbytes = int(_s.ceiling(r["flops"])), int(_s.ceiling(r["bytes"]))
    ct, mt, comm = float(r["compute_time"]), float(r["memory_time"]), float(r["comm_time"])
    payload = {"model": m.name, "phase": args.phase, "T": args.T, "batch": args.batch, "gpu": g.name,
               "flops": flops, "bytes": nbytes, "intensity": flops / nbytes if nbytes else None,
               "ridge_intensity": float(gvals[sym.F_gpu] / gvals[sym.BW_hbm]),
               "bound": "compute" if ct >= mt else "memory",
               "time_s": (max(ct, mt) + comm) * args.pp, "compute_time_s": ct, "memory_time_s": mt,
               "comm_time_s": comm, "ttft_s": ttft, "tpot_s": tpot,
               "tokens_per_s": args.batch * args.dp / tpot if tpot else None,
               "tokens_per_s_per_gpu": args.batch / tpot / (args.tp * args.pp) if tpot else None,
               "compute_bound_batch": crit, "compute_dtype": cdt, "peak_dtype_used": used,
               "peak_flops": int(gvals[sym.F_gpu]), "bandwidth_bytes_per_s": int(gvals[sym.BW_hbm]),
               "tp": args.tp, "pp": args.pp, "dp": args.dp, "ep": args.ep, "mla": args.mla,
               "fits": bool(p.max_batch and p.max_batch >= args.batch),
               "kv_capacity_tokens": p.kv.tokens, "max_concurrency": p.kv.max_concurrency,
               "per_gpu_weights_bytes": p.weights_rank,
               "weight_bytes": int(_s.ceiling(rf.parts["weights_read"].xreplace({**base, sym.T: args.T, sym.B: args.batch}))),
               "formula": _roofline_formulas(rf, args.batch),
               "convention": ROOF_NOTE + "; " + Phase(kind=args.phase, attention="causal", logits="last",
                                                       mla=args.mla).describe(),
               "note": f"{lay.label()} on {g.name}, {used} dense peak x {args.compute_eff}, "
                       f"HBM x {args.bw_eff}"}
    text = (f"{m.name}: roofline of one {args.phase} step, T={args.T}, B={args.batch}, {lay.label()} on {g.name}\n"
            f"  per rank: FLOPs {flops:,}   bytes {nbytes:,}   intensity {payload['intensity']:.1f} FLOP/B "
            f"(ridge {payload['ridge_intensity']:.1f}, {used} peak)\n"
            f"  {payload['bound']}-bound: compute {ct * 1e3:.3f} ms, memory {mt * 1e3:.3f} ms, "
            f"communication {comm * 1e3:.3f} ms -> step {payload['time_s'] * 1e3:.3f} ms\n"
            f"  TTFT (one prompt of T) {ttft * 1e3:.1f} ms   TPOT at B={args.batch} {tpot * 1e3:.2f} ms   "
            f"{payload['tokens_per_s_per_gpu']:.0f} tokens/s per GPU   decode turns compute-bound at B={crit}\n"
            f"  fits at B={args.batch}: {payload['fits']} (KV {p.kv.tokens:,} tokens per GPU)\n"
            f"  ({ROOF_NOTE})")
    _emit(args, payload, text)


def cmd_presets(args):
    from .training import compare_presets
    m = loader.build(args.model)
    rows = compare_presets(m, args.seq, args.batch)
    payload = {"model": m.name, "seq": args.seq, "batch": args.batch, "presets": rows}
    lines = [f"{m.name}: training FLOPs per step, seq={args.seq}, batch={args.batch}, by convention"]
    for r in rows:
        value = f"{r['flops']:>26,}" if r["flops"] is not None else f"{'n/a':>26}"
        ratio = f"{r['ratio_to_exact']:.4f}x" if r["ratio_to_exact"] else "      "
        lines.append(f"  {r['preset']:<20} {value}  {ratio}  {r['note']}")
        if r.get("minus_exact"):
            lines.append(f"  {'':<20} minus exact, as a function of T and B: {r['minus_exact']}")
    _emit(args, payload, "\n".join(lines))


def cmd_sheet(args):
    from pathlib import Path

    from .report import write_sheet
    m = loader.build(args.model)
    _, source = loader.resolve(args.model)
    out = Path(args.output)
    if source is not None and out.exists() and out.resolve() == source.resolve():
        raise SymcostError(f"-o {args.output}: that is the model's config.json; choose another file")
    if out.suffix != ".tex":
        raise SymcostError(f"-o {args.output}: the sheet is LaTeX; give a path ending in .tex")
    phase = Phase(attention=args.attention, logits=args.logits, mla=args.mla, impl=args.impl)
    try:
        tex, pdf, message = write_sheet(m, args.output, pdf=args.pdf, T_prefill=args.T_prefill,
                                        T_decode=args.T_decode, batch=args.batch, dtype=args.dtype,
                                        prefill_phase=phase)
    except (RuntimeError, OSError) as e:
        raise SymcostError(f"sheet: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    payload = {"model": m.name, "tex": str(tex), "pdf": str(pdf) if pdf else None, "message": message,
               "mla": args.mla}
    _emit(args, payload, message)


def cmd_plot(args):
    from .plot import plot_vs_T
    models = [loader.build(name) for name in args.model]
    try:
        plot = plot_vs_T(models, args.metric, args.output, T_min=args.T_min, T_max=args.T_max,
                         batch=args.batch, dtype=args.dtype, mla=args.mla)
    except OSError as e:
        raise SymcostError(f"plot: cannot write {args.output}: {e.strerror or e}") from None
    payload = {"path": str(plot.path), "models": plot.models, "metric": plot.metric, "mla": args.mla}
    _emit(args, payload, f"wrote {plot.path} ({plot.metric} vs T for {', '.join(plot.models)})")


#: what `check` and `scale` compare, and the unit each counts (+ the serving and training
#: metrics of ``symcost.metrics``)
METRICS = {"params": "parameters", "active": "active parameters per token",
           "flops": "forward matmul FLOPs (--phase, conventions)", "cache": "cache elements",
           "cache_bytes": "cache bytes (b_kv per KV element, b_state per fp32 state element)",
           "weights_bytes": "weight bytes (b_w per parameter)"}
from .metrics import METRICS as _LAYOUT_METRICS  # noqa: E402 (the serving/training metrics)

METRICS.update(_LAYOUT_METRICS)
METRICS_HELP = "; ".join(f"{k}: {v}" for k, v in METRICS.items())
METRICS_LAYOUT = tuple(_LAYOUT_METRICS)
WHOLE_METRICS = {"params", "active", "flops", "cache", "cache_bytes", "weights_bytes", "kv_capacity"}


def _metric_options(args):
    from .metrics import Options
    o = Options()
    for k in ("dp", "tp", "pp", "ep", "cp", "gpu", "kv_dtype", "weights_dtype", "mem_util", "max_batched_tokens",
              "overhead_gib", "mla", "zero", "recompute", "T"):
        if getattr(args, k, None) is not None:
            setattr(o, k, getattr(args, k))
    return o


def _metric_terms(m, args):
    """The engine Terms a `check`/`scale` metric refers to (bound to the config's values and,
    for bytes, to the dtype sizes ``b_kv`` = 2, ``b_state`` = 4, ``b_w`` = 2); the serving and
    training metrics come from ``symcost.metrics``, in the layout symbols N_*."""
    from .metrics import METRICS as layout_metrics, metric_terms
    if args.metric in layout_metrics:
        return metric_terms(m, loader.read_json(args.model)[1], args.metric, _metric_options(args))
    for flag in ("tp", "pp", "dp", "ep", "cp", "gpu"):
        if getattr(args, flag, None) is not None:
            raise SymcostError(f"--{flag} applies to the serving and training metrics "
                               f"({', '.join(layout_metrics)}), not to --metric {args.metric}")
    if args.metric == "params":
        return m.params()
    if args.metric == "active":
        return m.active_params()
    if args.metric == "cache":
        return m.cache()
    if args.metric == "cache_bytes":
        return m.cache_bytes()
    if args.metric == "weights_bytes":
        return m.weights_bytes()
    return m.flops(_phase(args))


def cmd_check(args):
    from .analysis import compare
    from .exprparse import parse, parse_map
    m = loader.build(args.model)
    extra = parse_map(args.map or [])
    user = parse(args.expr, extra=extra)
    inputs = {k: v for k, v in (("T", args.T), ("B", args.batch)) if v is not None}
    terms = _metric_terms(m, args)
    result = compare(terms, user, {**terms.bound, **m.values_with(**inputs)}, user_text=args.expr)
    payload = {"model": m.name, "metric": args.metric, "unit": METRICS[args.metric], **result}
    verdict = ("EQUAL" if result["equal"] else "NOT EQUAL")
    lines = [f"{m.name}: {args.metric}: your expression is {verdict} to the engine's"]
    if not result["equal"]:
        lines.append(f"  difference (engine - yours): {result['difference']}"
                     + (f" = {result['difference_value']:,}" if result["difference_value"] is not None else ""))
        if result["explained_by"] and not result["diagnosis"]:
            lines.append(f"  explained by: {', '.join(result['explained_by'])}")
        wrong = [r for r in result["components"] if not r["equal"]]
        if wrong:
            lines.append("  per component (yours vs the engine's, at this config):")
            lines += [f"    {r['term']:<28} yours {r['yours']}  engine {r['engine']}" for r in wrong]
    if result["note"]:
        lines.append(f"  {'cause: ' if result['diagnosis'] else ''}{result['note']}")
    if result["unknown_symbols"]:
        lines.append(f"  unknown symbols (map them with --map NAME=EXPR): {', '.join(result['unknown_symbols'])}")
    if result["config_numbers"]:
        nums = ", ".join(f"{c['number']} (= {'/'.join(c['symbols'])})" for c in result["config_numbers"])
        lines.append(f"  numbers in your expression that equal config values: {nums}")
    _emit(args, payload, "\n".join(lines))
    return 1 if args.strict and not result["equal"] else 0


def cmd_export(args):
    from .export import export
    m = loader.build(args.model)
    terms = _metric_terms(m, args)
    convention = f"; {_phase(args).describe()}" if args.metric == "flops" else ""
    keep = [k.strip() for k in (args.keep or "").split(",") if k.strip()]
    doc = f"{m.name} {args.metric} ({METRICS[args.metric]}{convention})"
    ident = "".join(ch if ch.isalnum() else "_" for ch in f"{args.metric}").strip("_")
    code = export(terms.total, terms.bound, keep=keep, to=args.to, name=ident, doc=doc,
                  whole=args.metric in WHOLE_METRICS)
    if args.json and args.to != "json":  # the code as one JSON object (``--to json`` is one already)
        print(json.dumps({"model": m.name, "metric": args.metric, "to": args.to, "doc": doc, "code": code}))
    else:
        print(code)


def cmd_scale(args):
    from .analysis import derivative, scale_summary
    from .metrics import LAYOUT, wrt_symbol
    m = loader.build(args.model)
    var = wrt_symbol(args.wrt)
    layout = {s for _, s in LAYOUT}
    if var not in m.values and var not in (sym.T, sym.B) and var not in layout:
        raise SymcostError(f"--wrt {args.wrt}: the model has no {args.wrt}")
    if var in layout and args.metric not in METRICS_LAYOUT:
        raise SymcostError(f"--wrt {args.wrt}: --metric {args.metric} does not depend on the layout "
                           f"(the serving and training metrics do: {', '.join(METRICS_LAYOUT)})")
    if args.T is not None and (var is sym.T or args.metric not in METRICS_LAYOUT):
        raise SymcostError(f"--T {args.T}: binds T of the serving and training metrics, not with --wrt T"
                           if var is sym.T else f"--T applies to {', '.join(METRICS_LAYOUT)}")
    if var is sym.N_pp and args.metric == "train_memory":
        raise SymcostError("--wrt N_pp: train_memory takes the stage composition of --pp (whole layers "
                           "per stage), not a symbol N_pp")
    terms = _metric_terms(m, args)
    values = {k: v for k, v in {**terms.bound, **m.values}.items() if k is not var}
    if args.batch is not None:
        values[sym.B] = sympy.Integer(args.batch)
    from .exprparse import to_text
    summary = scale_summary(terms, var, values=values)
    symbolic = to_text(derivative(terms.total, var))
    payload = {"model": m.name, "metric": args.metric, **summary, "derivative_symbolic": symbolic}
    lines = [f"{m.name}: how {args.metric} grows with {var}",
             f"  d/d{var}: {symbolic} = {summary['derivative']}",
             f"  leading term: {summary['leading_term']}   degree: {summary['degree']}   {summary['big_o']}"]
    for r in summary["regimes"]:
        lines.append(f"  when {r['when']}: {r['expr']}  ({r['big_o']})")
    _emit(args, payload, "\n".join(lines))


def _under(path: str, prefix: str) -> bool:
    """``path`` is ``prefix`` or below it. A leading ``layers`` stands for every layer group
    (``dense_layers``, ``moe_layers``, ``full_layers``, ...), so ``layers/self_attn`` means the
    attention of the whole stack on any model.

    >>> _under("moe_layers/self_attn/q_proj", "layers/self_attn"), _under("lm_head", "layers")
    (True, False)
    """
    if path == prefix or path.startswith(prefix + "/"):
        return True
    head, _, rest = prefix.partition("/")
    if head != "layers":
        return False
    group, _, below = path.partition("/")
    return group.endswith("layers") and (not rest or below == rest or below.startswith(rest + "/"))


def _select(m, terms, what: str, args):
    """A crossover side: ``total``, ``weights`` (weight bytes, for --metric cache) or a term path
    prefix of the metric's tree (``layers/self_attn``; several joined with ``+``)."""
    if what == "total":
        return terms.total
    if what == "weights" and "weights" not in terms:
        # the checkpoint's bytes (quantization_config) unless --weights-dtype; serve_memory has its own
        from .serving.quant import checkpoint
        _, raw = loader.read_json(args.model)
        return sympy.Integer(checkpoint(m, raw, args.weights_dtype).total(m.values, served=True))
    flat = terms.flatten()
    total = sympy.Integer(0)
    for part in what.split("+"):
        hit = [e for p, e in flat.items() if _under(p, part.rstrip("/"))]
        if not hit:
            raise SymcostError(f"--a/--b: no term {part!r} in {args.metric} "
                               f"(terms: {', '.join(terms.depth(2))})")
        total += sympy.Add(*hit)
    return total


def cmd_crossover(args):
    from .analysis import crossover, ratio
    from .exprparse import to_text
    m = loader.build(args.model)
    terms = _metric_terms(m, args)
    values = {**terms.bound, **m.values, sym.B: sympy.Integer(args.batch)}  # b_kv, b_w for bytes
    if args.metric in METRICS_LAYOUT:  # a crossover in T: the layout sizes not given are 1
        from .metrics import LAYOUT
        values = {**{s: sympy.Integer(1) for _, s in LAYOUT}, **values}
    if args.metric == "cache":  # in bytes, so it can be weighed against the weights
        from .serving.memory import cache_bytes_terms
        terms = cache_bytes_terms(m, args.kv_dtype)
    a = _select(m, terms, args.a, args)
    if args.vs:
        other = loader.build(args.vs)
        other_terms = _metric_terms(other, args)
        b = other_terms.total
        values_b = {**other_terms.bound, **other.values, sym.B: sympy.Integer(args.batch)}
        a, b = a.xreplace(values), b.xreplace(values_b)
        label_b = f"{other.name} {args.metric}"
    else:
        b = _select(m, terms, args.b, args)
        label_b = args.b
    cross = crossover(a, b, sym.T, values=values)
    rat = ratio(a, b, sym.T, values=values)
    payload = {"model": m.name, "metric": args.metric, "a": args.a, "b": label_b,
               "at": to_text(cross["at"]) if cross["at"] is not None else None,
               "at_float": cross["at_float"], "first_integer": cross["first_integer"],
               "never": cross["never"], "always": cross["always"], "where": cross["set"],
               "ratio": to_text(rat["ratio"]), "ratio_limit": to_text(rat["limit"])}
    when = ("never" if cross["never"] else "for every T" if cross["always"]
            else f"from T = {cross['first_integer']:,}" if cross["first_integer"] else "undecided")
    text = (f"{m.name}: {args.metric}: {args.a} >= {label_b} {when}"
            + (f" (exact root {payload['at']})" if payload["at"] else "")
            + f"\n  ratio {args.a} / {label_b} = {payload['ratio']}  (T -> infinity: {payload['ratio_limit']})")
    _emit(args, payload, text)


# -- parser --------------------------------------------------------------------------------------
IMAGES_HELP = ("N images per sequence at the config's default image size (vision models): the context "
               "becomes T = T_text + N x tokens per image, --T being T_text (JSON: T, T_text, vision_tokens)")


DTYPES_W = ["bf16", "fp16", "fp32", "fp8", "int4", "fp4"]


def serve_flags(sp, gpu_required=False):
    """The serving options shared by memory, roofline and deploy."""
    sp.add_argument("--gpu", required=gpu_required, default=None,
                    help="GPU from the catalogue (symcost gpus)")
    sp.add_argument("--weights-dtype", choices=DTYPES_W, default=None,
                    help="cost every weight in this dtype, no scales (default: the checkpoint's "
                         "quantization_config, scales included)")
    sp.add_argument("--experts-dtype", choices=DTYPES_W, default=None,
                    help="routed experts' dtype when it differs")
    sp.add_argument("--quant-fallback", action="store_true",
                    help="an unknown quantization method falls back to the base dtype (default: error)")
    sp.add_argument("--kv-dtype", choices=["bf16", "fp16", "fp32", "fp8"], default="bf16")
    sp.add_argument("--mem-util", type=_real("--mem-util", open_low=True, high=1.0), default=0.9, help="vLLM's gpu_memory_utilization (0.9)")
    sp.add_argument("--max-batched-tokens", type=_positive("--max-batched-tokens"), default=8192,
                    help="tokens per chunked-prefill step (vLLM's max_num_batched_tokens, 8192)")
    sp.add_argument("--overhead-gib", type=_real("--overhead-gib"), default=1.0,
                    help="allowance for non-torch memory per GPU (CUDA context, NCCL, cuBLAS), GiB")
    sp.add_argument("--cudagraph-gib", type=_real("--cudagraph-gib"), default=0.0,
                    help="allowance for CUDA graphs per GPU, GiB (0: captured after KV sizing, vLLM <= 0.10)")
    sp.add_argument("--block-size", type=_positive("--block-size"), default=None,
                    help="KV block tokens (default vLLM's: 16, 64 for MLA, raised for hybrids)")
    for flag in ("--tp", "--pp", "--dp", "--ep"):
        sp.add_argument(flag, type=_positive(flag), default=1)
    sp.add_argument("--mla", **MLA_FLAG)


MLA_FLAG = dict(choices=["auto", "expand", "absorb"], default="auto",
                help="MLA form: auto = expanded for prefill, absorbed for decode (vLLM/SGLang's MLA "
                     "backends); expand = re-expand the cached latents every pass (transformers); "
                     "absorb = up-projections folded into query and output (default auto)")


#: help for options many commands share (by dest); ``_document`` fills any option left without
#: one and appends the default, so every option of every command says what it does, its unit
#: and its default.
OPTION_HELP = {
    "T": "tokens: prompt length (prefill) or cached context (decode); suffixes K, M = 2^10, 2^20",
    "seq": "sequence length in tokens; suffixes K, M = 2^10, 2^20",
    "batch": "sequences B in the batch",
    "micro_batch": "sequences per micro-batch on one data-parallel rank",
    "global_batch": "sequences per optimizer step over all ranks (default: micro-batch x dp)",
    "dtype": "element dtype of the cache (bytes per element: bf16/fp16 2, fp32 4, fp8 1)",
    "kv_dtype": "KV-cache element dtype (bytes per element: bf16/fp16 2, fp32 4, fp8 1)",
    "tp": "tensor-parallel size (GPUs a layer's heads and FFN are split over)",
    "pp": "pipeline-parallel stages (layers split in order)",
    "dp": "data-parallel replicas",
    "ep": "expert-parallel size (GPUs the routed experts are split over)",
    "cp": "context-parallel size (sequence split over GPUs, ring attention)",
    "zero": "ZeRO stage: 0 none, 1 optimizer states, 2 + gradients, 3 + parameters sharded over dp",
    "recompute": "activation recomputation: none, selective (attention core) or full (every layer)",
    "optimizer": "optimizer state bytes per parameter, fp32 master copy included: adamw 12 (two fp32 "
                 "moments), sgd 8 (momentum), adam8bit 6 + 1/256 (two int8 moments, fp32 block scales)",
    "gpu": "GPU from the catalogue (`symcost gpus` lists them)",
    "wrt": "the symbol to differentiate and take the leading order in",
    "T_prefill": "prompt tokens of the prefill section",
    "T_decode": "cached context of the decode section",
    "T_min": "smallest T on the x axis",
    "T_max": "largest T on the x axis",
    "layout": "hf: tensors exactly as transformers holds them; vllm: paged blocks as vLLM allocates",
    "block_size": "tokens per KV page (vLLM layout)",
    "max_batched_tokens": "tokens per chunked-prefill step (vLLM's max_num_batched_tokens)",
    "mem_util": "fraction of usable GPU memory the engine may take (vLLM's gpu_memory_utilization)",
    "overhead_gib": "allowance for non-torch memory per GPU (CUDA context, NCCL, cuBLAS), GiB",
    "compute_eff": "fraction of the dense peak FLOP/s reached (1.0: the roofline bound)",
    "bw_eff": "fraction of the HBM bandwidth reached (1.0: the roofline bound)",
    "metric": "the quantity compared",
    "tokens": "training tokens in all (suffixes K, M, G = 2^10, 2^20, 2^30; plain digits for 15T-style counts)",
    "gpus": "GPUs in the job",
    "b": "the other side: a term path prefix, 'total', or 'weights' (weight bytes)",
    "phase": "prefill: T new tokens, context T; decode: 1 new token after T cached",
    "impl": "chunked scans: minimal counts what the math needs; reference what the transformers "
            "torch path computes, padding included",
}

#: one real example per command, shown at the end of its --help
EXAMPLES = {
    "models": "symcost models --json",
    "params": "symcost params deepseek-v3",
    "flops": "symcost flops llama-3.1-8b --phase decode --T 128K --batch 8",
    "cache": "symcost cache qwen3-next-80b-a3b-thinking --T 1M --layout vllm",
    "memory": "symcost memory deepseek-v3 --T 32K --batch 16 --gpu H200 --tp 8",
    "train": "symcost train llama-3.1-8b --seq 8K --micro-batch 1 --dp 8 --zero 1",
    "comm": "symcost comm llama-3.1-70b --seq 8K --micro-batch 1 --dp 4 --tp 8 --gpu H100",
    "roofline": "symcost roofline deepseek-v3 --phase decode --T 32K --batch 64 --gpu H200 --tp 8",
    "deploy": "symcost deploy deepseek-v3 --gpu H200 --gpus 8-16 --T 32K --top 5",
    "gpus": "symcost gpus",
    "presets": "symcost presets llama-3.1-8b --seq 8K",
    "budget": "symcost budget deepseek-v3 --tokens 14800000000000 --gpus 2048 --gpu H800 --gpu-hours 2664000",
    "check": "symcost check llama-2-7b --metric params --expr 'L(4d^2 + 3d d_ff + 2d) + d + 2Vd' --strict",
    "scale": "symcost scale gemma-2-9b-it --metric cache_bytes --wrt T",
    "crossover": "symcost crossover llama-3.1-8b --metric cache --a total --b weights",
    "export": "symcost export llama-3.1-8b --metric flops --phase prefill --to python",
    "sheet": "symcost sheet deepseek-v3 -o deepseek-v3.tex --pdf",
    "plot": "symcost plot llama-3.1-8b qwen3-next-80b-a3b-thinking --metric cache_bytes -o cache.png",
}


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """The example epilog kept as written; help text beside options up to 30 columns wide."""

    def __init__(self, prog):
        super().__init__(prog, max_help_position=30)


def _unset(default) -> bool:
    """No default worth stating: None, a store_true's False, argparse's SUPPRESS (0 is a value)."""
    return default is None or default is False or default == argparse.SUPPRESS


def _document(parser: argparse.ArgumentParser) -> None:
    """Every option of every command gets a help line (``OPTION_HELP`` where the command gave
    none) ending in its default, and every command an example epilog."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sp in sub.choices.items():
        if name in EXAMPLES:
            sp.epilog = f"example:\n  {EXAMPLES[name]}"
            sp.formatter_class = _Formatter
        for a in sp._actions:
            if isinstance(a, (argparse._HelpAction, argparse._VersionAction)) or not a.option_strings:
                continue
            if a.metavar is None and a.choices is None and a.nargs is None and a.type is not None \
                    and len(a.dest) > 6:  # --max-batched-tokens N, not MAX_BATCHED_TOKENS
                a.metavar = "X" if a.type is float else "N"
            text = a.help or OPTION_HELP.get(a.dest, "")
            if a.required and "required" not in text:
                text += " (required)"
            elif not _unset(a.default) and "default" not in text and f"{a.default})" not in text:
                text += f" (default {a.default})"
            a.help = text.strip()


WRT_CHOICES = ["N_dp", "N_tp", "N_pp", "N_ep", "N_cp", "dp", "tp", "pp", "ep", "cp"]


def metric_flags(sp, dtypes=True):
    """What the serving and training metrics (``symcost.metrics``) take; a layout size not given
    stays a symbol N_*."""
    g = sp.add_argument_group("serving and training metrics (" + ", ".join(METRICS_LAYOUT) + ")")
    for flag, what in (("--tp", "N_tp"), ("--pp", "N_pp"), ("--dp", "N_dp"), ("--cp", "N_cp")):
        g.add_argument(flag, type=_positive(flag), default=None, metavar="N", help=f"bind {what} (default: a symbol)")
    g.add_argument("--ep", type=_positive("--ep"), default=None, metavar="N",
                   help="serving: vLLM's expert-parallel group N_tp·N_ep; training: N_ep (default: a symbol)")
    g.add_argument("--gpu", default=None, help="bind M_gpu, F_gpu, BW_hbm, BW_link (default: symbols)")
    if dtypes:
        g.add_argument("--weights-dtype", choices=DTYPES_W, default=None,
                       help="cost every weight in this dtype (default: the checkpoint's quantization_config)")
        g.add_argument("--kv-dtype", choices=["bf16", "fp16", "fp32", "fp8"], default="bf16")
    g.add_argument("--mem-util", type=_real("--mem-util", open_low=True, high=1.0), default=0.9, help="vLLM's gpu_memory_utilization")
    g.add_argument("--max-batched-tokens", type=_positive("--max-batched-tokens"), default=8192,
                   help="M, tokens per chunked-prefill step")
    g.add_argument("--overhead-gib", type=_real("--overhead-gib"), default=1.0, help="non-torch allowance per GPU, GiB")
    g.add_argument("--zero", type=int, default=0, metavar="N", help="train_memory: ZeRO stage 0-3")
    g.add_argument("--recompute", choices=["none", "selective", "full"], default="none",
                   help="train_memory: activation recomputation")


def conventions(sp):
    """The counting conventions of every command that prices FLOPs (``conventions.Phase``)."""
    sp.add_argument("--attention", choices=["full", "causal"], default="full",
                    help="full: every (query, key) in the buffer, as eager attention computes; "
                         "causal: only the pairs the masks keep (default full)")
    sp.add_argument("--logits", choices=["all", "last"], default="all",
                    help="LM head on every new position or only the last (default all)")
    sp.add_argument("--mla", **MLA_FLAG)
    sp.add_argument("--impl", choices=["minimal", "reference"], default="minimal",
                    help="chunked scans: minimal counts what the math needs; reference what the "
                         "transformers torch path computes, padding included (default minimal)")


class _Version(argparse._VersionAction):
    """``--version``, reading the installed version only when asked (importlib.metadata: ms)."""

    def __call__(self, parser, namespace, values, option_string=None):
        self.version = f"symcost {_version()}"
        super().__call__(parser, namespace, values, option_string)


class _Unbuilt:
    """The sub-parser of a command the command line does not name (``build_parser(only=...)``):
    its options are never parsed, so they are not built (a twentieth of a command's run)."""

    def add_argument(self, *args, **kwargs):
        return None

    def add_argument_group(self, *args, **kwargs):
        return self

    def set_defaults(self, **kwargs):
        return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only`` (the command argv names) just that command's options,
    falling back to the whole parser when ``only`` names no command (its error lists them)."""
    p = _Parser(prog="symcost", description="Closed-form cost formulas for LLMs from a config.json.")
    p.add_argument("--version", action=_Version, version="symcost", help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name, fn, help_):
        if only is not None and name != only:
            return _Unbuilt()
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.add_argument("--json", action="store_true", help="print one JSON object")
        sp.add_argument("--verbose", action="store_true",
                        help="also list every config field symcost does not read (a warning)")
        sp.set_defaults(fn=fn)
        return sp

    command("models", cmd_models, "list the bundled reference configs")
    sp = command("params", cmd_params, "total and active parameters, per component")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")

    sp = command("flops", cmd_flops, "forward FLOPs of a prefill or a decode step")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")
    sp.add_argument("--phase", choices=["prefill", "decode"], required=True,
                    help="prefill: T new tokens, context T; decode: 1 new token after T cached")
    sp.add_argument("--T", type=_positive("--T"), required=True, help="tokens (prefill) / context (decode)")
    sp.add_argument("--batch", type=_positive("--batch"), default=1, help="sequences B (default 1)")
    conventions(sp)
    sp.add_argument("--images", type=int, default=0, metavar="N",
                    help=IMAGES_HELP + "; a prefill adds N x the tower's per-image FLOPs (breakdown key "
                         "'vision'; decode runs no tower)")
    sp.add_argument("--elementwise", action="store_true",
                    help="also report elementwise FLOPs (norms, activations, softmax, RoPE, residual "
                         "adds) as a separate group under symcost.elementwise's convention")

    sp = command("cache", cmd_cache, "KV cache and recurrent state held after T tokens")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")
    sp.add_argument("--T", type=_positive("--T"), required=True)
    sp.add_argument("--batch", type=_positive("--batch"), default=1)
    sp.add_argument("--dtype", choices=["bf16", "fp16", "fp32", "fp8"], default="bf16")
    sp.add_argument("--layout", choices=["hf", "vllm"], default="hf",
                    help="hf: the tensors transformers' cache holds; vllm: paged blocks")
    sp.add_argument("--block-size", type=_positive("--block-size"), default=16)
    sp.add_argument("--max-batched-tokens", type=_positive("--max-batched-tokens"), default=8192)
    sp.add_argument("--images", type=int, default=0, metavar="N", help=IMAGES_HELP)

    sp = command("memory", cmd_memory, "serving memory per GPU as vLLM accounts for it: weights, "
                 "activations, overhead, KV capacity and max concurrency")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")
    sp.add_argument("--T", type=_positive("--T"), required=True, help="context per request (max_model_len)")
    sp.add_argument("--batch", type=_positive("--batch"), required=True, help="concurrent requests of T tokens")
    serve_flags(sp)
    sp.add_argument("--phase", choices=["prefill", "decode"], default="prefill",
                    help="accepted for compatibility: the activation peak is one chunked-prefill step")

    def phase_flags(sp, required=False):
        sp.add_argument("--phase", choices=["prefill", "decode"], default=None if required else "prefill",
                        required=required,
                        help="prefill: T new tokens, context T; decode: 1 new token after T cached"
                             + ("" if required else " (default prefill)"))
        conventions(sp)

    sp = command("check", cmd_check, "compare a hand-derived expression with the engine's")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")
    sp.add_argument("--metric", choices=list(METRICS), required=True, help=METRICS_HELP)
    sp.add_argument("--expr", required=True, help="plain text (H_kv*D_h, ^ for powers) or LaTeX")
    sp.add_argument("--strict", "--exit-code", dest="strict", action="store_true",
                    help="exit with status 1 when the expressions are NOT EQUAL (default: 0 either way)")
    sp.add_argument("--map", action="append", metavar="NAME=EXPR",
                    help="rename your symbols into the notation, e.g. --map m=d_ff --map c=2")
    sp.add_argument("--T", type=_positive("--T"), default=None, help="substitute T in the difference")
    sp.add_argument("--batch", type=_positive("--batch"), default=None)
    phase_flags(sp)
    metric_flags(sp)

    sp = command("export", cmd_export, "a metric as standalone code (Python, NumPy, C) or LaTeX/SymPy/JSON")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")
    sp.add_argument("--metric", choices=list(METRICS), required=True, help=METRICS_HELP)
    sp.add_argument("--to", choices=["python", "numpy", "c", "latex", "sympy", "json"], default="python",
                    help="python: exact int arithmetic; numpy: vectorised, float64 by default (dtype=object "
                         "for exact); c: double; latex; sympy: code rebuilding the expression; json "
                         "(default python)")
    sp.add_argument("--keep", default="", metavar="SYMS",
                    help="comma-separated notation symbols left as arguments instead of the config's "
                         "values, e.g. --keep d,L (default: only T, B and other inputs stay free)")
    phase_flags(sp)
    metric_flags(sp)

    sp = command("scale", cmd_scale, "derivative, leading term and big-O in T or E")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")
    sp.add_argument("--metric", choices=list(METRICS), required=True, help=METRICS_HELP)
    sp.add_argument("--wrt", choices=["T", "E", "B", *WRT_CHOICES], required=True,
                    help="T, E, B, or a parallel size N_dp, N_tp, N_pp, N_ep, N_cp (aliases dp, tp, pp, ep, cp)")
    sp.add_argument("--batch", type=_positive("--batch"), default=None)
    sp.add_argument("--T", type=_positive("--T"), default=None,
                    help="bind T (the serving and training metrics; not with --wrt T)")
    phase_flags(sp)
    metric_flags(sp)

    sp = command("crossover", cmd_crossover,
                 "the T where one term overtakes another (or another model), and their ratio")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")
    sp.add_argument("--metric", choices=list(METRICS), required=True, help=METRICS_HELP)
    sp.add_argument("--a", required=True,
                    help="term path prefix (layers/self_attn, several joined by +) or 'total'")
    sp.add_argument("--b", default="total",
                    help="the other side: a term path prefix, 'total', or 'weights' (weight bytes)")
    sp.add_argument("--vs", default=None, help="compare --a with another model's total instead")
    sp.add_argument("--batch", type=_positive("--batch"), default=1)
    sp.add_argument("--weights-dtype", choices=["bf16", "fp16", "fp32", "fp8", "int4", "fp4"], default=None,
                    help="weights side: every weight in this dtype (default: the checkpoint's bytes)")
    sp.add_argument("--kv-dtype", choices=["bf16", "fp16", "fp32", "fp8"], default="bf16")
    phase_flags(sp)
    metric_flags(sp, dtypes=False)

    sp = command("sheet", cmd_sheet, "write a LaTeX derivation (formula, numbers, exact result)")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")
    sp.add_argument("-o", "--output", required=True, help="the .tex file to write")
    sp.add_argument("--pdf", action="store_true", help="also build the PDF (latexmk or pdflatex)")
    sp.add_argument("--T-prefill", dest="T_prefill", type=_positive("--T-prefill"), default=4096)
    sp.add_argument("--T-decode", dest="T_decode", type=_positive("--T-decode"), default=4096)
    sp.add_argument("--batch", type=_positive("--batch"), default=1)
    sp.add_argument("--dtype", choices=["bf16", "fp16", "fp32", "fp8"], default="bf16",
                    help="cache dtype of the memory section (default bf16)")
    conventions(sp)

    sp = command("plot", cmd_plot, "cost vs T on log-log axes, one model or several (needs matplotlib)")
    sp.add_argument("model", nargs="+", help="config.json paths, directories, or bundled names")
    sp.add_argument("--metric", choices=["flops_per_token", "decode_flops", "cache_bytes"], required=True,
                    help="prefill FLOPs / (B*T), FLOPs of one decode step, or cache bytes")
    sp.add_argument("-o", "--output", required=True, help="the .png or .pdf file to write")
    sp.add_argument("--T-min", dest="T_min", type=_positive("--T-min"), default=2**8)
    sp.add_argument("--T-max", dest="T_max", type=_positive("--T-max"), default=2**21)
    sp.add_argument("--batch", type=_positive("--batch"), default=1)
    sp.add_argument("--dtype", choices=["bf16", "fp16", "fp32", "fp8"], default="bf16",
                    help="cache dtype (cache_bytes)")
    sp.add_argument("--mla", **MLA_FLAG)

    def parallel_flags(sp):
        for flag in ("--dp", "--tp", "--pp", "--ep", "--cp"):
            sp.add_argument(flag, type=_positive(flag), default=1)

    for name, fn, help_ in (("train", cmd_train, "training memory per GPU and FLOPs per step"),
                            ("comm", cmd_comm, "communication bytes per step and step time")):
        sp = command(name, fn, help_)
        sp.add_argument("model", help="config.json path, its directory, or a bundled name")
        sp.add_argument("--seq", type=_positive("--seq"), required=True)
        sp.add_argument("--micro-batch", type=_positive("--micro-batch"), required=True)
        sp.add_argument("--global-batch", type=_positive("--global-batch"), default=None)
        parallel_flags(sp)
        pin = "; --search sweeps it unless given" if name == "train" else ""
        sp.add_argument("--sp", action=argparse.BooleanOptionalAction, default=None,
                        help=f"sequence parallelism (needs --tp > 1; default off{pin})")
        sp.add_argument("--zero", type=int, choices=[0, 1, 2, 3], default=None,
                        help="ZeRO stage (3 = FSDP full shard; 1 + --grad-dtype fp32 = Megatron's "
                             f"distributed optimizer; default 0{pin})")
        sp.add_argument("--recompute", choices=["none", "selective", "full"], default=None,
                        help=f"activation recomputation (default none{pin})")
        sp.add_argument("--recompute-method", choices=["uniform", "block"], default="uniform",
                        help="with --recompute full, Megatron's --recompute-method: uniform — groups of "
                             "--recompute-layers consecutive layers per checkpoint; block — only the first "
                             "--recompute-layers layers of each model chunk are recomputed, the rest keep "
                             "their activations (default uniform)")
        sp.add_argument("--recompute-layers", type=_positive("--recompute-layers"), default=1, metavar="N",
                        help="Megatron's --recompute-num-layers: layers per checkpoint (uniform) or "
                             "recomputed layers per model chunk (block) (default 1)")
        sp.add_argument("--optimizer", choices=["adamw", "sgd", "adam8bit"], default="adamw")
        sp.add_argument("--grad-dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
        sp.add_argument("--act-dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
        sp.add_argument("--attention-kernel", choices=["flash", "eager"], default="flash")
        if name == "train":
            sp.add_argument("--search", action="store_true",
                            help="sweep every valid setup on --gpus GPUs and print the five fastest that fit: "
                                 "layout dp×tp×pp×cp and ep, micro-batch, ZeRO, recompute, sequence "
                                 "parallelism on/off, virtual stages, HSDP shard groups, CPU offload; "
                                 "--zero, --recompute, --sp/--no-sp, --virtual-stages, --hsdp-shard and "
                                 "--offload, when given, pin their dimension (--no-sp, --virtual-stages 1, "
                                 "--hsdp-shard none, --offload none pin them off); "
                                 "--capacity-factor is costed in every candidate, not swept; "
                                 "--micro-batch and --dp/--tp/--pp/--ep/--cp are ignored")
            sp.add_argument("--gpus", type=_positive("--gpus"), default=None, help="world size for --search")
            sp.add_argument("--activations", choices=["engine", "korthikanti"], default="engine",
                            help="engine: each component's saved tensors; korthikanti: the 2022 "
                                 "dense-GPT closed form")
            sp.add_argument("--scan", choices=["fused", "reference"], default="fused",
                            help="what Mamba/DeltaNet/short-conv layers save: fused — the CUDA kernels "
                                 "a GPU run dispatches to (mamba_ssm, fla, causal-conv1d); reference — "
                                 "transformers' torch path (chunked scans), as the tests measure it")
        sp.add_argument("--gpu", default=None)
        sp.add_argument("--mfu", type=_real("--mfu", open_low=True, high=1.0), default=0.4, help="model FLOPs utilisation for the step time")
        sp.add_argument("--overlap", type=_real("--overlap", high=1.0), default=0.0, help="share of communication hidden")
        sp.add_argument("--ib-gbs", type=_real("--ib-gbs", open_low=True), default=50.0, help="scale-out GB/s per GPU")
        sp.add_argument("--gpus-per-node", type=_positive("--gpus-per-node"), default=8)
        sp.add_argument("--alpha-us", type=_real("--alpha-us"), default=10.0, help="latency per collective, µs")
        sp.add_argument("--virtual-stages", type=_positive("--virtual-stages"), default=None,
                        help="interleaved 1F1B: model chunks per pipeline stage (activations of the "
                             f"schedule's peak, p2p per chunk, bubble (p-1)/(v*m+p-1); default 1{pin})")
        sp.add_argument("--offload", choices=["none", "optimizer", "params"], default=None,
                        help="CPU offload: optimizer (ZeRO-Offload: optimizer state and gradients on the "
                             "host, needs --zero >= 1) or params (also the weight shard, needs --zero 3; "
                             f"default none{pin})")
        sp.add_argument("--hsdp-shard", type=_shard("--hsdp-shard"), default=None, metavar="N|none",
                        help="hybrid sharding: ZeRO groups of N data-parallel ranks (x cp), replicated "
                             f"over dp/N groups (default none: shard over all of dp{pin})")
        sp.add_argument("--capacity-factor", type=_ratio("--capacity-factor"), default=None, metavar="X",
                        help="MoE expert capacity factor, padded to capacity (Megatron's "
                             "--moe-expert-capacity-factor): E*ceil(X*k*tokens/E) expert rows "
                             "(default: dropless, k*tokens)")
        sp.add_argument("--pcie-gbs", type=_real("--pcie-gbs", open_low=True), default=63.0,
                        help="host link GB/s per GPU and direction, for --offload (PCIe 5.0 x16)")

    sp = command("budget", cmd_budget, "wall time, tokens/s and GPU-hours to train N tokens")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")
    sp.add_argument("--tokens", type=_positive("--tokens"), required=True)
    sp.add_argument("--gpus", type=_positive("--gpus"), required=True)
    sp.add_argument("--gpu", required=True)
    sp.add_argument("--mfu", type=_real("--mfu", open_low=True, high=1.0), default=None, help="default: 0.4, or implied by --gpu-hours")
    sp.add_argument("--gpu-hours", type=_real("--gpu-hours", open_low=True), default=None, help="a published budget: report its MFU")
    sp.add_argument("--flops", type=_real("--flops", open_low=True), default=None, help="a published FLOPs figure instead of the engine's")
    sp.add_argument("--seq", type=_positive("--seq"), default=4096)
    sp.add_argument("--global-batch", type=_positive("--global-batch"), default=None,
                    help="sequences per step, for the step time")

    sp = command("roofline", cmd_roofline, "roofline of a prefill or decode step on a parallel layout: "
                 "time, TTFT, TPOT, tokens/s")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")
    sp.add_argument("--phase", choices=["prefill", "decode"], required=True)
    sp.add_argument("--T", type=_positive("--T"), required=True)
    sp.add_argument("--batch", type=_positive("--batch"), required=True)
    serve_flags(sp, gpu_required=True)
    sp.add_argument("--compute-dtype", choices=["bf16", "fp8", "fp4"], default=None,
                    help="dtype of the tensor-core peak (default: from the checkpoint: fp8/fp4/bf16)")
    sp.add_argument("--compute-eff", type=_real("--compute-eff", open_low=True, high=1.0), default=1.0, help="fraction of the dense peak reached")
    sp.add_argument("--bw-eff", type=_real("--bw-eff", open_low=True, high=1.0), default=1.0, help="fraction of the HBM bandwidth reached")

    sp = command("deploy", cmd_deploy, "every valid TP x EP x PP x DP layout on N GPUs: fit, KV capacity, "
                 "concurrency, TTFT, TPOT, tokens/s per GPU, sorted")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")
    sp.add_argument("--gpus", default=None, help="N, or MIN-MAX for every N in the range "
                                                 "(default: the smallest power of two that fits)")
    sp.add_argument("--T", type=_positive("--T"), required=True, help="context per request")
    sp.add_argument("--batch", type=_positive("--batch"), default=1, help="concurrent requests per replica")
    sp.add_argument("--top", type=int, default=0, help="print only the best N layouts (0: all)")
    serve_flags(sp, gpu_required=True)

    command("gpus", cmd_gpus, "the GPU catalogue: usable memory, bandwidth, dense peaks per dtype")

    sp = command("presets", cmd_presets,
                 "training FLOPs per step under every published convention, side by side")
    sp.add_argument("model", help="config.json path, its directory, or a bundled name")
    sp.add_argument("--seq", type=_positive("--seq"), required=True)
    sp.add_argument("--batch", type=_positive("--batch"), default=1)
    if only is not None and only not in sub.choices:
        return build_parser()
    _document(p)
    return p


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("symcost")
    except PackageNotFoundError:
        return "0+unknown"


def run() -> None:
    """The console entry (``symcost``, ``python -m symcost``): ``main()``, then exit. The objects
    the command built are frozen first (``startup.quick_exit``) so the interpreter's final
    collections skip them."""
    rc = main()
    startup.quick_exit()
    sys.exit(rc)


def main(argv: list[str] | None = None) -> int:
    startup.defer_sympy_tensor()
    startup.no_pydantic_plugins()
    argv = list(sys.argv[1:] if argv is None else argv)
    want_json = "--json" in argv
    try:
        args = build_parser(only=argv[0] if argv and not argv[0].startswith("-") else None).parse_args(argv)
        with loader.caching():
            _WARNINGS[:] = _context_warnings(args) + _field_warnings(args) + _dtype_warnings(args)
            rc = args.fn(args)
    except BrokenPipeError:  # `symcost ... | head`: the reader left; not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except SymcostError as e:
        msg = str(e).replace("\n", " ")
        if want_json:
            print(json.dumps({"error": msg}))
        print(f"symcost: error: {msg}", file=sys.stderr)
        return 2
    return rc or 0
