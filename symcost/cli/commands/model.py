"""The model's own costs: ``models``, ``params``, ``flops``, ``cache``."""
from __future__ import annotations

import sympy

from ...architectures import loader
from ...core.elementwise import CONVENTION as ELEMENTWISE
from ...core.errors import SymcostError
from ...core.notation import sym
from ...core.terms import exact
from ...core.units import human_bytes, human_count
from .. import options as o
from ..output import breakdown, table
from .common import check_positions, phase

OPTIONS = {
    "models": (),
    "params": (o.MODEL,),
    "flops": (o.MODEL, o.PHASE.but(required=True), o.T.but(required=True, help="tokens (prefill) / context (decode)"),
              o.BATCH.but(help="sequences B (default 1)"), *o.CONVENTIONS,
              o.IMAGES.but(help=o.IMAGES_HELP + "; a prefill adds N x the tower's per-image FLOPs (breakdown key "
                                               "'vision'; decode runs no tower)"), o.ELEMENTWISE),
    "cache": (o.MODEL, o.T.but(required=True), o.BATCH, o.DTYPE, o.LAYOUT,
              o.BLOCK_SIZE.but(default=16, help="tokens per KV page (vLLM layout)"),
              o.MAX_BATCHED_TOKENS.but(help="tokens per chunked-prefill step (vLLM's max_num_batched_tokens)"),
              o.IMAGES),
}

PARAMS_CONVENTION = ("total: parameters the transformers class registers (tied head once); active: all "
                     "non-expert parameters + router + k routed + shared experts (embedding table included, "
                     "listed separately)")


def cmd_models(args, out):
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
    out.emit({"models": rows}, "Bundled reference configs:\n" + text)


def cmd_params(args, out):
    m = loader.build(args.model)
    vals = m.values
    total_t, active_t = m.params(), m.active_params()
    total, active = total_t.total_at(vals), active_t.total_at(vals)
    parts = breakdown(total_t, vals)
    buffers = {k: exact(v, vals) for k, v in m.buffers().depth(3).items()}
    extras = {k: exact(v, vals) for k, v in m.extras.depth(1).items()}
    payload = {"model": m.name, "model_type": m.model_type, "total": total, "active": active,
               "breakdown": parts, "active_breakdown": breakdown(active_t, vals),
               "formula": {"total": str(total_t.total), "active": str(active_t.total)},
               "buffers": buffers, "not_built": extras, "values": {str(k): int(v) for k, v in vals.items()},
               "convention": PARAMS_CONVENTION, "notes": m.notes}
    text_counts = []
    if m.has_towers:  # model cards quote the text model's counts beside the full ones
        payload["text_total"] = m.text_params().total_at(vals)
        payload["text_active"] = m.text_active_params().total_at(vals)
        text_counts = [(label, payload[k]) for label, k in (("text-only total", "text_total"),
                                                             ("text-only active", "text_active"))]
    if args.json:  # printing every formula costs more than computing them
        return out.emit(payload, "")
    rows = [(k, str(v), parts[k]) for k, v in total_t.depth(2).items()]
    lines = [f"{m.name} ({m.model_type}): parameters", table(rows, total),
             f"  {'total':<20} {total:>22,}  = {human_count(total)}   formula: {total_t.total}",
             f"  {'active per token':<20} {active:>22,}  = {human_count(active)}"]
    lines += [f"  {label:<20} {n:>22,}  = {human_count(n)}" for label, n in text_counts]
    lines += [f"  buffer (not a parameter in transformers): {k} = {v:,}" for k, v in buffers.items()]
    lines += [f"  not built by transformers: {k} = {v:,}" for k, v in extras.items()]
    lines += [f"  note: {n}" for n in m.notes]
    out.emit(payload, "\n".join(lines))


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


def _text_T(expr, added: int):
    """A formula in the full context T rewritten in the text tokens (T -> T + vision tokens)."""
    return sympy.expand(expr.xreplace({sym.T: sym.T + added})) if added else expr


def _context(args, added: int) -> str:
    return f"T={args.T + added}" + (f" (T_text={args.T} + {added} vision tokens)" if added else "")


def _vision_tower(m, args, terms, in_T, added: int):
    """A prefill with images runs the tower once per image: its FLOPs join the terms and the formula;
    (the formula, the tower's FLOPs per image by term)."""
    if not (added and args.phase == "prefill"):
        return in_T, {}
    per_image = m.vision.image_flops()
    terms.add("vision", args.images * sym.B * per_image.total,
              f"{args.images} image(s) per sequence × {m.vision.label()}")
    in_T = sympy.expand(in_T + args.images * sym.B * per_image.total.xreplace(m.values))
    return in_T, {k: exact(v, m.values) for k, v in per_image.depth(2).items()}


def _elementwise_text(ew, ew_total: int, ew_parts: dict) -> str:
    return "\n".join(["", ("  elementwise (norms, activations, softmax, RoPE, residuals; a convention, not in "
                      "the total above):"), table([(k, str(v), ew_parts[k]) for k, v in ew.depth(2).items()],
                                                 ew_total),
                      f"  elementwise total {ew_total:,} = {human_count(ew_total)}FLOP"])


def cmd_flops(args, out):
    m = loader.build(args.model)
    ph = phase(args)
    terms = m.flops(ph)
    added, img = _images(m, args)
    check_positions(m, args.T + added + (1 if args.phase == "decode" else 0))
    in_T, vision = _vision_tower(m, args, terms, _text_T(sympy.expand(terms.total.xreplace(m.values)), added),
                                 added)
    vals = m.values_with(T=args.T + added, B=args.batch)
    total, parts = terms.total_at(vals), breakdown(terms, vals)
    payload = {"model": m.name, "phase": args.phase, "T": args.T + added, "batch": args.batch, "total": total,
               "breakdown": parts, "formula": str(in_T), "symbolic": str(terms.total),
               "convention": ph.describe(), **img, "vision_flops_per_image": vision}
    if args.elementwise:  # a separate group: never part of "total"
        ew = m.elementwise(ph)
        ew_total, ew_parts = ew.total_at(vals), breakdown(ew, vals)
        payload["elementwise"] = {"total": ew_total, "breakdown": ew_parts, "convention": ELEMENTWISE}
    if args.json:
        return out.emit(payload, "")
    rows = [(k, str(v), parts[k]) for k, v in terms.depth(2).items()]
    text = "\n".join([f"{m.name}: forward FLOPs, {args.phase}, {_context(args, added)}, B={args.batch}",
                      f"  ({ph.describe()})", table(rows, total), f"  total {total:,} = {human_count(total)}FLOP",
                      f"  as a function of T{'_text' if added else ''}, B: {in_T}"])
    if args.elementwise:
        text += _elementwise_text(ew, ew_total, ew_parts)
    out.emit(payload, text)


def cmd_cache(args, out):
    from ...serving.memory import cache_bytes, cache_bytes_total  # lazy: the serving layer (~4 ms), for cache only
    m = loader.build(args.model)
    terms = m.cache()
    if args.layout == "vllm":
        from ...serving.vllm import paged_cache  # lazy: ~1 ms, for the vLLM layout only
        terms = paged_cache(m, args.block_size, args.max_batched_tokens)
    added, img = _images(m, args)
    check_positions(m, args.T + added)
    vals = m.values_with(T=args.T + added, B=args.batch)
    elements = terms.total_at(vals)
    total, parts = cache_bytes_total(m, args.dtype, vals, terms)
    formula = _text_T(sympy.expand(cache_bytes(m, args.dtype, terms).xreplace(m.values)), added)
    payload = {"model": m.name, "T": args.T, "batch": args.batch, "dtype": args.dtype,
               "bytes": total, "elements": elements, "breakdown": parts, "formula": str(formula),
               "bytes_per_token": None, "layout": args.layout, "state_dtypes": m.state_dtype, **img}
    per_token = sympy.diff(formula, sym.T) if formula.is_polynomial(sym.T) else None
    if per_token is not None and not per_token.free_symbols - {sym.B}:
        payload["bytes_per_token"] = int(per_token.xreplace({sym.B: args.batch}))
    rows = [(k, str(v), parts.get(k, 0)) for k, v in terms.depth(2).items()]
    text = "\n".join([(f"{m.name}: cache after {_context(args, added)} tokens, B={args.batch}, {args.dtype}, "
                      f"{args.layout} layout"), table(rows, total, human_bytes),
                      f"  total {total:,} bytes = {human_bytes(total)}  ({elements:,} elements)",
                      f"  bytes as a function of T{'_text' if added else ''}, B: {formula}"])
    out.emit(payload, text)
