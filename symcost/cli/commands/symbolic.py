"""The symbolic commands, on a metric's formula: ``check``, ``export``, ``scale``, ``crossover``."""
from __future__ import annotations

import json

import time

import sympy

from ...analysis.metrics import LAYOUT, Options, metric_terms, wrt_symbol
from ...analysis.symbolic import compare, crossover, derivative, ratio, scale_summary
from ...analysis.vocabulary import resolve
from ...architectures import loader
from ...core.deadline import DeadlineExceeded, deadline
from ...core.errors import SymcostError
from ...core.exprparse import parse, parse_map, to_text
from ...core.notation import sym
from ...core.terms import Terms
from .. import options as o
from ..options import METRICS, METRICS_LAYOUT
from .common import phase

OPTIONS = {
    "check": (o.MODEL, o.METRIC, o.EXPR, o.STRICT, o.MAP,
              o.T.but(help="substitute T in the difference"), o.BATCH.but(default=None), *o.SYMBOLIC_PHASE,
              o.metric_section()),
    "export": (o.MODEL, o.METRIC, o.TO, o.KEEP, *o.SYMBOLIC_PHASE, o.metric_section()),
    "scale": (o.MODEL, o.METRIC, o.WRT, o.BATCH.but(default=None),
              o.T.but(help="bind T (the serving and training metrics; not with --wrt T)"), *o.SYMBOLIC_PHASE,
              o.metric_section()),
    "crossover": (o.MODEL, o.METRIC, o.A, o.B, o.VS, o.BATCH,
                  o.WEIGHTS_DTYPE.but(help="weights side: every weight in this dtype (default: the checkpoint's "
                                           "bytes)"), o.KV_DTYPE, *o.SYMBOLIC_PHASE, o.metric_section(dtypes=False)),
}

#: metrics whose formula is a whole quantity (exported code rounds nothing)
WHOLE_METRICS = {"params", "active", "flops", "cache", "cache_bytes", "weights_bytes", "kv_capacity"}
#: the options that bind a serving or training metric's symbols (``metrics.Options``)
METRIC_OPTIONS = ("dp", "tp", "pp", "ep", "cp", "gpu", "kv_dtype", "weights_dtype", "mem_util", "max_batched_tokens",
                  "overhead_gib", "mla", "zero", "recompute", "T", "ideal")


def _metric_options(args) -> Options:
    given = {k: getattr(args, k) for k in METRIC_OPTIONS if getattr(args, k, None) is not None}
    return Options(**given)


def _resolve(args, command: str) -> None:
    """``--metric``/``--phase`` in the shared vocabulary (``analysis.vocabulary``): an alias unfolded
    (``decode_flops`` is ``flops --phase decode``), the phase prefill when not given."""
    args.metric, args.phase = resolve(args.metric, args.phase, command)
    args.phase = args.phase or "prefill"


def _metric_terms(m, args):
    """The engine Terms a metric refers to (bound to the config's values and, for bytes, to the dtype
    sizes ``b_kv`` = 2, ``b_state`` = 4, ``b_w`` = 2); the serving and training metrics come from
    ``symcost.analysis.metrics``, in the layout symbols N_*."""
    if args.metric in METRICS_LAYOUT:
        return metric_terms(m, loader.read_json(args.model)[1], args.metric, _metric_options(args))
    for flag in ("tp", "pp", "dp", "ep", "cp", "gpu"):
        if getattr(args, flag, None) is not None:
            raise SymcostError(f"--{flag} applies to the serving and training metrics "
                               f"({', '.join(METRICS_LAYOUT)}), not to --metric {args.metric}")
    engine = {"params": m.params, "active": m.active_params, "cache": m.cache, "cache_bytes": m.cache_bytes,
              "weights_bytes": m.weights_bytes}
    if args.metric == "flops_per_token":  # a prompt's FLOPs over its B·T tokens
        return m.flops(phase(args).model_copy(update={"kind": "prefill"})).scale(1 / (sym.B * sym.T))
    return engine[args.metric]() if args.metric in engine else m.flops(phase(args))


def _check_text(m, args, result) -> str:
    lines = [f"{m.name}: {args.metric}: your expression is {'EQUAL' if result['equal'] else 'NOT EQUAL'} "
             f"to the engine's"]
    if not result["equal"]:
        lines.append(f"  difference (engine - yours): {result['difference']}"
                     + (f" = {result['difference_value']:,}" if result["difference_value"] is not None else ""))
        given = [f"--{f.replace('_', '-')} {getattr(args, f)}" for f in ("gpu", "tp", "pp", "dp", "ep", "cp")
                 if getattr(args, f, None) is not None]
        if given and result["difference_for_config"] != result["difference"]:
            lines.append(f"  with the config's values and {' '.join(given)}: {result['difference_for_config']}"
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
    return "\n".join(lines)


#: CPU seconds the open-ended symbolic work may take from the start of a command (building the metric's terms
#: included; core.deadline): scale's regimes refuse past it, check's naming of the cause stops there. With
#: the interpreter's start and SymPy's import, a command answers within 2 s of CPU
BUDGET_CPU_S = 1.3


def _left(start: float) -> float:
    """CPU seconds of ``BUDGET_CPU_S`` left since ``start`` (a ``time.process_time()``)."""
    return max(BUDGET_CPU_S - (time.process_time() - start), 0.05)


def cmd_check(args, out):
    start = time.process_time()
    _resolve(args, "check")
    m = loader.build(args.model)
    user = parse(args.expr, extra=parse_map(args.map or []))
    inputs = {k: v for k, v in (("T", args.T), ("B", args.batch)) if v is not None}
    terms = _metric_terms(m, args)
    result = compare(terms, user, {**terms.bound, **m.values_with(**inputs)}, user_text=args.expr,
                     explain_within=_left(start))
    out.emit({"model": m.name, "metric": args.metric, "unit": METRICS[args.metric], **result},
             _check_text(m, args, result))
    return 1 if args.strict and not result["equal"] else 0


def cmd_export(args, out):
    _resolve(args, "export")
    from ...analysis.export import export  # lazy: SymPy's code printers (~7 ms), for export only
    m = loader.build(args.model)
    terms = _metric_terms(m, args)
    convention = f"; {phase(args).describe()}" if args.metric in ("flops", "flops_per_token") else ""
    keep = [k.strip() for k in (args.keep or "").split(",") if k.strip()]
    doc = f"{m.name} {args.metric} ({METRICS[args.metric]}{convention})"
    ident = "".join(ch if ch.isalnum() else "_" for ch in f"{args.metric}").strip("_")
    code = export(terms.total, terms.bound, keep=keep, to=args.to, name=ident, doc=doc,
                  whole=args.metric in WHOLE_METRICS)
    if args.json and args.to != "json":  # the code as one JSON object (``--to json`` is one already)
        out.write(json.dumps({"model": m.name, "metric": args.metric, "to": args.to, "doc": doc, "code": code}))
    else:
        out.write(code)


def _wrt(m, args):
    """The symbol ``--wrt`` names, once the metric and the other options allow it."""
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
    return var


def _regime_lines(label: str, e) -> list[str]:
    """``label: e``, a Piecewise as one line per regime (``when <condition>: <expression>``)."""
    if not isinstance(e, sympy.Piecewise):
        return [f"  {label}: {to_text(e)}"]
    out = [f"  {label}:"]
    for piece, cond in e.args:
        when = "otherwise" if cond == sympy.true else f"when {to_text(cond)}"
        out.append(f"      {when}: {to_text(piece)}")
    return out


def cmd_scale(args, out):
    start = time.process_time()
    _resolve(args, "scale")
    m = loader.build(args.model)
    var = _wrt(m, args)
    terms = _metric_terms(m, args)
    values = {k: v for k, v in {**terms.bound, **m.values}.items() if k is not var}
    if args.batch is not None:
        values[sym.B] = sympy.Integer(args.batch)
    # the options given (layout sizes, the card, the engine's M) are substituted before the analysis: the
    # derivative stays symbolic in the config's fields and in the variable, not in what the user fixed
    given = {k: v for k, v in terms.bound.items() if k not in m.values and k is not var and k is not sym.T}
    terms = Terms({"total": terms.total.xreplace(given)}, bound=terms.bound) if given else terms
    try:
        with deadline(_left(start)):
            d_sym = derivative(terms.total, var)
            # the values bind nothing left in the formula (the config's fields are numbers already): the
            # derivative at the config's values is this one
            same = not set(values) & terms.total.free_symbols
            summary = scale_summary(terms, var, values=values, d=d_sym if same else None)
    except DeadlineExceeded:
        raise SymcostError(f"scale: the regimes of {args.metric} in {var} (nested min/max and steps) did not "
                           f"resolve within {BUDGET_CPU_S:g} s of CPU; give more of the layout as options "
                           "(--tp/--pp/--dp/--ep, --gpu) or take another --wrt") from None
    symbolic = to_text(d_sym)
    degree = summary["degree"] if summary["degree"] is not None else f"not a polynomial in {var}"
    lines = [f"{m.name}: how {args.metric} grows with {var}"]
    if isinstance(d_sym, sympy.Piecewise):  # one regime a line (the substituted one again, as an expression)
        d_val = d_sym if same else sympy.Piecewise(
            *[(sympy.factor_terms(sympy.expand(e.xreplace(values))), c.xreplace(values))
              for e, c in d_sym.args])  # values hold no var: substituting after is the same
        lines += _regime_lines(f"d/d{var}", d_sym) + _regime_lines("  = at this config's values", d_val)
    else:
        lines.append(f"  d/d{var}: {symbolic} = {summary['derivative']}")
    lines += [f"  leading term: {summary['leading_term']}   degree: {degree}   {summary['big_o']}"]
    lines += [f"  when {r['when']}: {r['expr']}  ({r['big_o']})" for r in summary["regimes"]]
    out.emit({"model": m.name, "metric": args.metric, **summary, "derivative_symbolic": symbolic},
             "\n".join(lines))


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
        from ...serving.quant import checkpoint  # lazy: the serving layer (~2 ms), for crossover only
        _, raw = loader.read_json(args.model)
        return sympy.Integer(checkpoint(m, raw, args.weights_dtype).total(m.values, served=True))
    flat = terms.flatten()
    total = sympy.Integer(0)
    for part in what.split("+"):
        part = part.strip().rstrip("/")
        hit = [e for p, e in flat.items() if _under(p, part)]
        if not hit:  # a name inside every group (``mlp``: each group's .../mlp), summed, and listed
            roots = _inner_matches(flat, part)
            hit = [e for p, e in flat.items() if any(_under(p, r) for r in roots)]
            if hit:
                args.matched = {**getattr(args, "matched", {}), part: roots}
        if not hit:
            raise SymcostError(f"--a/--b: no term {part!r} in {args.metric} "
                               f"(terms: {', '.join(terms.depth(2))})")
        total += sympy.Add(*hit)
    return total


def _inner_matches(flat: dict, part: str) -> list[str]:
    """The subtree paths whose tail is ``part`` (``mlp`` → ``dense_layers/mlp``, ``moe_layers/mlp``)."""
    want = [w for w in part.split("/") if w]
    out = []
    for p in flat:
        keys = p.split("/")
        for i in range(1, len(keys) - len(want) + 1):
            if keys[i:i + len(want)] == want:
                root = "/".join(keys[:i + len(want)])
                if root not in out:
                    out.append(root)
                break
    return out


def _sides(m, args):
    """(a, b, the label of b, the values of T's coefficients) of a crossover in T."""
    terms = _metric_terms(m, args)
    values = {**terms.bound, **m.values, sym.B: sympy.Integer(args.batch)}  # b_kv, b_w for bytes
    if args.metric in METRICS_LAYOUT:  # a crossover in T: the layout sizes not given are 1
        values = {**{s: sympy.Integer(1) for _, s in LAYOUT}, **values}
    if args.metric == "cache":  # in bytes, so it can be weighed against the weights
        from ...serving.memory import cache_bytes_terms  # lazy: the serving layer (~3 ms), crossover only
        terms = cache_bytes_terms(m, args.kv_dtype)
    a = _select(m, terms, args.a, args)
    if not args.vs:
        return a, _select(m, terms, args.b, args), args.b, values
    other = loader.build(args.vs)
    other_terms = _metric_terms(other, args)
    values_b = {**other_terms.bound, **other.values, sym.B: sympy.Integer(args.batch)}
    return a.xreplace(values), other_terms.total.xreplace(values_b), f"{other.name} {args.metric}", values


def _when(cross: dict, a: str, b: str) -> str:
    """Where ``a ≥ b`` over the integers T ≥ 1, in words (``crossover``'s ``ranges``): "from T = n",
    "for T ≤ n; b > a from T = n + 1", or the ranges one after another."""
    if cross["never"]:
        return "never"
    if cross["always"]:
        return "for every T"
    ranges = cross["ranges"]
    if not ranges:
        return "undecided" if not cross["exact"] else "at no integer T"
    if len(ranges) == 1 and ranges[0][1] is None:
        return f"from T = {ranges[0][0]:,}"
    if len(ranges) == 1 and ranges[0][0] == 1:
        return f"for T <= {ranges[0][1]:,}; {b} > {a} from T = {ranges[0][1] + 1:,}"
    return "for T in " + ", ".join(f"{lo:,}.." + ("" if hi is None else f"{hi:,}") for lo, hi in ranges)


def cmd_crossover(args, out):
    _resolve(args, "crossover")
    m = loader.build(args.model)
    a, b, label_b, values = _sides(m, args)
    cross = crossover(a, b, sym.T, values=values)
    rat = ratio(a, b, sym.T, values=values)
    payload = {"model": m.name, "metric": args.metric, "a": args.a, "b": label_b,
               "at": to_text(cross["at"]) if cross["at"] is not None else None,
               "at_float": cross["at_float"], "first_integer": cross["first_integer"],
               "never": cross["never"], "always": cross["always"], "where": cross["set"],
               "ratio": to_text(rat["ratio"]),
               "ratio_limit": to_text(rat["limit"]) if rat["limit"] is not None else None}
    payload["ranges"] = [{"from": lo, "to": hi} for lo, hi in cross["ranges"]]
    payload["crossings"] = [{"at": to_text(c["at"]), "at_float": float(c["at"].evalf(30)),
                             "leads_after": args.a if c["a_leads"] else label_b} for c in cross["crossings"]]
    when = _when(cross, args.a, label_b)
    matched = getattr(args, "matched", {})
    if matched:
        payload["matched"] = matched
    points = ", ".join(c["at"] for c in payload["crossings"])
    text = (f"{m.name}: {args.metric}: {args.a} >= {label_b} {when}"
            + (f" (the order changes at T = {points}, exactly)" if points else "")
            + f"\n  ratio {args.a} / {label_b} = {payload['ratio']}  (T -> infinity: "
            + (f"{payload['ratio_limit']})" if rat["limit"] is not None else "no limit found)")
            + "".join(f"\n  {name} = {' + '.join(roots)} (the sum of every group's)" for name, roots in matched.items()))
    out.emit(payload, text)
