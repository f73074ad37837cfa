"""Derivation sheets: a model's costs written out as symbolic formula → numbers plugged in → exact value.

``render_sheet(model)`` returns a LaTeX document (``render_sheet_md`` the same as GitHub Markdown):
conventions, the notation the model uses with its values, then parameters, prefill FLOPs,
decode FLOPs, cache and inference memory, each per component (``Terms.depth(2)``) with every
primitive below it, the share of the total, and the scaling in ``T``. ``write_sheet`` writes the
``.tex`` and, when a TeX engine is installed, builds the PDF without shell escape.

Templates live in ``symcost/templates`` and use LaTeX-safe jinja delimiters: ``\\BLOCK{…}``,
``\\VAR{…}``, ``%%`` line statements, ``\\#{…}`` comments; every config string passes ``texescape``.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import re
import shutil
import subprocess
import tempfile
from fractions import Fraction
from pathlib import Path

import jinja2
import sympy

from .. import components
from ..components.base import Component
from ..core import conventions, unevaluated
from ..core.conventions import Phase
from ..core.errors import SymcostError
from ..core.escape import md_code
from ..core.latex import (
    group_digits,
    latex,
    mdescape,
    plugged,
    rst_to_md,
    rst_to_tex,
    split_lines,
    texbreak,
    texescape,
    ttescape,
)
from ..core.notation import TABLE, sym
from ..core.terms import Terms, exact
from ..core.units import dtype_bytes, human_bytes, human_count
from ..model.assembly import Model
from ..training.sheet import CARD, training_context  # the Training and Communication sections
from .summary import MAX_TRAIN_GPUS, Inputs, by_key, summary
from .summary import served as serve_rows

#: printed width (characters) of one line of a display derivation before it is split
WIDTH = 56
PLUG = {"order": "none", "mul_symbol": "dot"}


# -- jinja ---------------------------------------------------------------------------------------
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("symcost.documents", "templates"),
        block_start_string=r"\BLOCK{", block_end_string="}",
        variable_start_string=r"\VAR{", variable_end_string="}",
        comment_start_string=r"\#{", comment_end_string="}",
        line_statement_prefix="%%", line_comment_prefix="%#",
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        autoescape=False, undefined=jinja2.StrictUndefined)
    env.filters.update(texescape=texescape, ttescape=ttescape, texbreak=texbreak, mdescape=mdescape, mdcode=md_code,
                       digits=group_digits,
                       commas=lambda n: f"{int(n):,}",
                       shapebreak=shapebreak,
                       code_tex=lambda t: re.sub(r"`(.+?)`", lambda m: r"\texttt{" + ttescape(m.group(1)) + "}", t))
    return env


def shapebreak(value) -> str:
    """A tensor shape or short note for a narrow column: breaks only between whole tokens (after a
    comma, a ``·``, a ``/`` or a space), never inside a name such as ``D_h`` (``texbreak`` also breaks
    after ``_``)."""
    return re.sub(r"(\$\\cdot\$|[/,])", r"\1\\allowbreak{}", texescape(value))


# -- pieces of a derivation ----------------------------------------------------------------------
def _pct(part: int, total: int) -> str:
    if not total:
        return "--"
    share = Fraction(part) * 100 / total
    return "<0.01%" if 0 < share < Fraction(1, 100) else f"{float(share):.2f}%"


def display_form(expr: sympy.Expr) -> sympy.Expr:
    """How a term is written: common factors (layer count, ``2·B·T``) pulled out of the sum."""
    return sympy.factor_terms(expr)


def lines_for(lhs: str, forms: list[sympy.Expr], values: dict, value: int, unit: str = "",
              names: dict | None = None) -> list[str]:
    """``align``-ready lines: lhs = symbolic = plugged in = exact (each long one split).
    ``forms``: the symbolic form, optionally followed by the form the values are plugged into; ``names``: LaTeX of symbols defined on the page (not in the notation table)."""
    out: list[str] = []
    kw = {"symbol_names": dict(names)} if names else {}
    sym_lines = split_lines(forms[0], kw, WIDTH)
    seen = [sym_lines]
    if forms[0].free_symbols:
        pl = plugged(forms[-1], values)  # forms[-1]: the form to plug in (e.g. sizes of 1 dropped)
        plug_lines = split_lines(pl, {**PLUG, **kw}, WIDTH)
        if plug_lines != sym_lines and not (len(plug_lines) == 1 and plug_lines[0] == group_digits(value)):
            seen.append(plug_lines)
    for block in seen:
        for i, line in enumerate(block):
            out.append(("&= " if i == 0 else r"&\quad ") + line)
    final = group_digits(value) + (r"\ \text{" + unit + "}" if unit else "")
    if final != sym_lines[-1]:
        out.append("&= " + final)
    out[0] = lhs + " " + out[0]
    return out


def _group_counts(model: Model) -> dict[str, sympy.Expr]:
    return {g.name: g.count for g in model.groups}


def _label(model: Model, path: str) -> str:
    """What a depth-2 key is: ``layers/self_attn`` → the component's label."""
    head, _, tail = path.partition("/")
    for g in model.groups:
        if g.name == head:
            for c in g.components:
                if c.key == tail:
                    return c.label()
    for c in list(model.pre) + list(model.post):
        if c.key == path or path in c.params() or path in c.flops(Phase()):
            return c.label()
    return ""


def _with_unit(human: str, unit: str) -> str:
    """``"19.79 T"`` + ``"FLOP"`` → ``"19.79 TFLOP"``; never a bare ``T`` on a page where ``T``
    is the token count."""
    if not unit:
        return human
    prefixed = unit == "FLOP" and human[-1:].isalpha()  # an SI prefix joins its unit: TFLOP
    return f"{human}{unit}" if prefixed else f"{human} {unit}"


def human_params(n: int) -> str:
    """A parameter count as readers write it: ``8.03 B``, ``124.44 M`` (B = 10^9, M = 10^6, K = 10^3)."""
    for unit, scale in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if abs(n) >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n:,}"


def human_value(value, unit: str, card: str = "") -> str:
    """A summary figure with its unit: parameters ``8.03 B``, ``70.27 TFLOP``, bytes in GiB (GB),
    ``446,208 tokens``, ``16 × H100``."""
    if value is None:
        return "--"
    if unit == "params":
        return human_params(value)
    if unit in ("FLOP", "FLOP/token"):
        return _with_unit(human_count(value), "FLOP") + ("/token" if unit == "FLOP/token" else "")
    if unit == "B":
        return human_bytes(value)
    if unit == "B/token":
        return f"{value / 2**10:,.2f} KiB/token"
    if unit == "GPUs":
        return f"{value:,} × {card}" if card else f"{value:,} GPUs"
    return f"{value:,} {unit}"


def factored_total(terms: Terms) -> sympy.Expr:
    """The total as the tree's top-level parts, each with its layer count factored out
    (``L_dense·(…) + L_moe·(…) + V·d + …``), unevaluated so the grouping survives printing."""
    parts = []
    for e in terms.depth(1).values():
        f = sympy.factor_terms(sympy.expand(e))
        parts += list(f.as_ordered_terms()) if f.is_Add else [f]  # no common factor: its terms
    parts = [p for p in parts if p != 0]
    if len(parts) < 2:
        return sympy.Add(*parts)
    return unevaluated.build(sympy.Add, *parts)


def _by_part(terms: Terms) -> Terms:
    """The tree's leaves regrouped by their top-level part (embedding, each layer group, head)."""
    out = Terms()
    for p, e in terms.prune().flatten().items():
        out.add(p.split("/", 1)[0], e)
    return out


def section(model: Model, terms: Terms, values: dict, *, title: str, lhs: str, unit: str = "",
            byte_label: bool = False, weights: dict | None = None, unit_name: str = "") -> dict:
    """One cost (params, FLOPs, cache bytes): per component and per primitive, with totals.

    ``weights`` maps a flattened leaf path to its multiplier (bytes per element) for byte sections;
    ``unit_name`` follows the magnitude in the human-readable figures (``TFLOP``).
    """
    counts = _group_counts(model)
    terms = terms.prune()
    leaves = terms.flatten()
    if weights is not None:
        leaves = {p: weights[p] * e for p, e in leaves.items()}
    leaf_vals = {p: exact(e, values) for p, e in leaves.items()}
    total = sum(leaf_vals.values())
    docs = terms.docs_flat()
    human = (human_bytes if byte_label else human_params if unit_name == "params"
             else (lambda v: _with_unit(human_count(v), unit_name)))
    comps = []
    for key in terms.depth(2):
        paths = [p for p in leaves if p == key or p.startswith(key + "/")]
        expr = sympy.Add(*(leaves[p] for p in paths))
        value = sum(leaf_vals[p] for p in paths)
        count = counts.get(key.split("/")[0]) if "/" in key else None
        rows = []
        for p in paths:
            form = leaves[p]
            rows.append({
                "name": p[len(key) + 1:] if p != key else p.rsplit("/", 1)[-1],
                "doc": docs.get(p, ""),
                "symbolic": latex(form),
                "plugged": latex(plugged(form, values), **PLUG) if form.free_symbols else "",
                "value": leaf_vals[p], "share": _pct(leaf_vals[p], total),
            })
        form = display_form(expr)
        comps.append({
            "key": key, "label": _label(model, key),
            "count": latex(count) if count is not None else "",
            "lines": lines_for(lhs + r"_{\mathrm{" + texescape(key.rsplit("/", 1)[-1]) + "}}",
                               [form], values, value, unit),
            "value": value, "human": human(value), "share": _pct(value, total), "leaves": rows,
        })
    total_expr = sympy.Add(*leaves.values())
    by_part = Terms()
    for p, e in leaves.items():
        by_part.add(p.split("/", 1)[0], e)
    total_lines = split_lines(factored_total(by_part), {"order": "none"}, WIDTH)
    sum_lines = split_lines(sympy.Add(*(sympy.Integer(c["value"]) for c in comps), evaluate=False),
                            PLUG, WIDTH) if len(comps) > 1 else []
    lines = [("&= " if i == 0 else r"&\quad ") + t for i, t in enumerate(total_lines)]
    lines += [("&= " if i == 0 else r"&\quad ") + t for i, t in enumerate(sum_lines)]
    lines.append("&= " + group_digits(total) + (r"\ \text{" + unit + "}" if unit else ""))
    lines[0] = lhs + " " + lines[0]
    return {"title": title, "components": comps, "total": total, "human": human(total),
            "total_lines": lines, "total_expr": total_expr}


# -- scaling in T --------------------------------------------------------------------------------
def _regimes(expr: sympy.Expr):
    """[(label, polynomial-ready expression)]: one regime, or short/long context around windows."""
    T = sym.T
    mins = [a for a in expr.atoms(sympy.Min, sympy.Max, sympy.Piecewise) if a.has(T)]
    if not mins:
        return [("", expr)]
    bounds = []

    def solve(lhs, rhs):
        try:
            return [x for x in sympy.solve(sympy.Eq(lhs, rhs), T) if x.is_number and x.is_real]
        except (NotImplementedError, ValueError, TypeError):
            return []

    for a in mins:
        if isinstance(a, sympy.Piecewise):
            cond = a.args[0].cond
            if isinstance(cond, sympy.core.relational.Relational):
                bounds += solve(cond.lhs, cond.rhs)
        else:
            with_t = [x for x in a.args if x.has(T)]
            without = [x for x in a.args if not x.has(T)]
            if len(with_t) == 1 and without:
                bounds += solve(with_t[0], without[0])

    def pick(e, short):
        if isinstance(e, sympy.Piecewise):
            return e.args[0].expr if short else e.args[-1].expr
        with_t = [x for x in e.args if x.has(T)]
        without = [x for x in e.args if not x.has(T)]
        if len(with_t) != 1 or not without:
            return e
        grows = isinstance(e, sympy.Min) != short  # long context: a Min is its constant arm
        return without[0] if grows else with_t[0]

    short = expr.replace(lambda e: e in mins, lambda e: pick(e, True))
    long_ = expr.replace(lambda e: e in mins, lambda e: pick(e, False))
    lo = min(bounds) if bounds else None
    hi = max(bounds) if bounds else None
    return [(f"T \\le {group_digits(int(sympy.floor(lo)))}" if lo is not None else "short context", short),
            (f"T \\ge {group_digits(int(sympy.ceiling(hi)))}" if hi is not None else "long context", long_)]


def scaling(name: str, lhs: str, expr: sympy.Expr, values: dict) -> dict:
    """``expr`` as a polynomial in ``T`` with everything else substituted; leading term; crossover."""
    e = sympy.expand(sympy.sympify(expr).xreplace({k: v for k, v in values.items() if k != sym.T}))
    rows = []
    for label, part in _regimes(e):
        part = sympy.expand(part)
        try:
            poly = sympy.Poly(part, sym.T)
        except sympy.PolynomialError:
            rows.append({"regime": label, "lines": [f"{lhs} &= " + latex(part)], "leading": "",
                         "degree": "", "crossover": ""})
            continue
        terms = [(m[0], c) for m, c in poly.terms() if c != 0]
        (n, a_n) = terms[0]
        lead = latex(a_n * sym.T ** n)
        cross = ""
        if len(terms) > 1:
            m, a_m = terms[1]
            ratio = Fraction(int(sympy.numer(a_m)) * int(sympy.denom(a_n)),
                             int(sympy.denom(a_m)) * int(sympy.numer(a_n)))
            if ratio > 0:
                t = int(ratio ** Fraction(1, n - m)) if n - m > 1 else int(ratio)
                while t ** (n - m) <= ratio:
                    t += 1
                while t > 1 and (t - 1) ** (n - m) > ratio:
                    t -= 1
                cross = (f"the $T^{{{n}}}$ term exceeds the "
                         f"{'constant' if m == 0 else f'$T^{{{m}}}$'} term from $T = {group_digits(t)}$ on")
        pl = split_lines(poly.as_expr(), {}, WIDTH)
        rows.append({"regime": label,
                     "lines": [f"{lhs} &= {pl[0]}"] + [r"&\quad " + x for x in pl[1:]],
                     "leading": lead, "degree": n, "crossover": cross})
    return {"name": name, "rows": rows}


# -- the whole sheet -----------------------------------------------------------------------------
def conventions_items() -> list[str]:
    """The bullets of ``symcost.core.conventions``' docstring, as raw text."""
    items: list[str] = []
    for line in (conventions.__doc__ or "").splitlines():
        s = line.strip()
        if s.startswith("* "):
            items.append(s[2:])
        elif s and items:
            items[-1] += " " + s
    return items


def model_conventions(model: Model, prefill: Phase, decode: Phase, has_mla: bool) -> list[str]:
    """The counting conventions that apply to this model, as mathematics (LaTeX text with ``$…$``):
    a sliding window, MLA's forms or the scans' implementation only when the model has them."""
    comps = {type(c).__name__ for c in model.components()}
    has_attention = any("Attention" in n or n in ("MLA", "MSA") for n in comps)
    windowed = sym.W in model.values
    out = [r"A multiply-accumulate is 2 FLOPs: a weight of $n_{\text{in}} \times n_{\text{out}}$ applied to "
           r"$n$ token rows costs $2\,n\,n_{\text{in}} n_{\text{out}}$; norms, activations, softmax and RoPE "
           r"are not matmuls and count 0 (as `torch.utils.flop_counter` measures).",
           r"Prefill runs $T$ new tokens with context $T$; a decode step runs $1$ new token after $T$ cached "
           r"ones; batch $B$ multiplies both."]
    if has_attention:
        if prefill.attention == "full":
            text = (r"Attention counts every (query, key) pair of the buffer, as eager attention computes it: "
                    r"$T^{2}$ pairs per head in prefill, $T + 1$ keys per head in decode")
            if windowed:
                text += r"; a sliding-window layer keeps $W - 1$ cached tokens, so $\min(T, W - 1) + 1$ keys in decode"
        else:
            text = (r"Attention counts only the pairs the causal mask keeps: $T (T + 1)/2$ per head in prefill"
                    + (r", $\sum_{i=1}^{T} \min(i, W)$ under a window $W$" if windowed else ""))
        out.append(text + ".")
    out.append(r"The LM head runs on " + (r"all $T$ new positions" if prefill.logits == "all" else
                                         r"the last position only") + " in prefill, on the one new token in decode.")
    if has_mla:
        forms = {"expand": "expanded (the latents re-expanded through the key/value up-projection every pass, "
                           "as transformers runs it)",
                 "absorb": "absorbed (the up-projections folded into the query and the output, attention in the "
                           "latent space)"}
        out.append(f"MLA: prefill {forms[prefill.mla_mode]}; decode {forms[decode.mla_mode]}"
                   + (" — how vLLM and SGLang run it." if (prefill.mla_mode, decode.mla_mode) == ("expand", "absorb")
                      else "."))
    try:
        scans = (model.flops(prefill.model_copy(update={"impl": "reference"})).total_at(model.values_with(T=4096, B=1))
                 != model.flops(prefill.model_copy(update={"impl": "minimal"})).total_at(model.values_with(T=4096, B=1)))
    except Exception:  # noqa: BLE001 - a model without a second implementation: nothing to state
        scans = False
    if scans:
        out.append("Chunked scans: " + ("what the mathematics needs, exactly $T$ tokens with a linear pass of states "
                                        "between chunks" if prefill.impl == "minimal" else
                                        "what the transformers torch path computes, the prompt padded to a whole "
                                        "number of chunks") + ".")
    return out


#: a model family named in a notation meaning's remark: "MiMo-V2-Flash", "LongCat-Flash", "Mamba-1 in Jamba"
_FAMILY = re.compile(r"\b(?:MiMo|LongCat|Jamba|LFM|Gemma|Qwen|Llama|DeepSeek|Kimi|MiniMax|Nemotron|GLM|Zamba|Falcon"
                     r"|Mixtral|Mistral|OLMo|GPT|Granite|Hunyuan|Ernie|Bailing)[\w.-]*")


def _meaning_for(meaning: str, model_type: str | None) -> str:
    """A notation meaning for one model's sheet: a remark in brackets that names another family
    (D_v's "MLA; MiMo-V2-Flash attention" on DeepSeek's sheet) loses that part."""
    if model_type is None:
        return meaning

    def keep(m):
        parts = [p.strip() for p in m.group(1).split(";")]
        mine = model_type.replace("_", "").lower()
        parts = [p for p in parts if not _FAMILY.search(p)
                 or any(w.replace("-", "").lower().startswith(mine[:4]) for w in _FAMILY.findall(p))]
        return f" ({'; '.join(parts)})" if parts else ""
    return re.sub(r"\s*\(([^()]*)\)", keep, meaning)


def notation_rows(symbols, values: dict | None = None, model_type: str | None = None) -> list[dict]:
    used = {s.name for s in symbols}
    rows = []
    for e in TABLE:
        if e.name in used:
            v = values.get(getattr(sym, e.name)) if values else None
            rows.append({"name": e.name, "latex": e.latex, "meaning": _meaning_for(e.meaning, model_type),
                         "fields": e.fields, "value": int(v) if v is not None else None})
    return rows


def sheet_phases(prefill_phase: Phase | None, decode_phase: Phase | None,
                 mla: str | None) -> tuple[Phase, Phase]:
    """The sheet's prefill and decode conventions: ``decode_phase`` defaults to the prefill one;
    ``mla`` overrides the MLA form of both."""
    prefill_phase = (prefill_phase or Phase()).model_copy(update={"kind": "prefill"})
    decode_phase = (decode_phase or prefill_phase).model_copy(update={"kind": "decode"})
    if mla is not None:
        prefill_phase = prefill_phase.model_copy(update={"mla": mla})
        decode_phase = decode_phase.model_copy(update={"mla": mla})
    return prefill_phase, decode_phase


def _argv(*words) -> str:
    return "symcost " + " ".join(str(w) for w in words)


def summary_context(model: Model, raw: dict, inp: Inputs, sections: list, phases: tuple[Phase, Phase],
                    has_mla: bool, train: dict) -> dict:
    """Page 1: the summary rows (``documents.summary``, the CLI's own calls) with units, the serving
    rows on the fewest GPUs that serve, the searched training setup, the rules of thumb with ratios,
    and the command lines that print each figure."""
    rows = by_key(summary(model, raw, inp, formulas=False))  # the figures: the sheet derives its own formulas
    n_serve = rows["serve_gpus"].value
    served = (serve_rows(model, raw, dataclasses.replace(inp, tp=n_serve), formulas=False) if n_serve and n_serve > 1
              else rows)
    name, T1, T2, B = model.name, inp.T_prefill, inp.T_decode, inp.batch
    conv = [f"--attention {ph.attention} --logits {ph.logits} --mla {ph.mla} --impl {ph.impl}" for ph in phases]
    dt = f"--kv-dtype {inp.kv_dtype}" + (f" --weights-dtype {inp.weights_dtype}" if inp.weights_dtype else "")

    def row(label, value, unit, cmd, note=""):
        return {"label": label, "value": value, "human": human_value(value, unit, inp.gpu), "cmd": cmd,
                "note": note, "exact": f"{value:,}" if isinstance(value, int) else "--"}

    r = rows
    out = [row("parameters, total", r["params_total"].value, "params", _argv("params", name)),
           row("parameters, active per token", r["params_active"].value, "params", _argv("params", name)),
           row(f"prefill FLOPs, T = {T1:,}, B = {B}", sections[1]["total"], "FLOP",
               _argv("flops", name, "--phase prefill --T", T1, "--batch", B, conv[0]),
               _conventions_of(phases[0], has_mla)),
           row(f"decode FLOPs, one step at T = {T2:,}, B = {B}", sections[2]["total"], "FLOP",
               _argv("flops", name, "--phase decode --T", T2, "--batch", B, conv[1]),
               _conventions_of(phases[1], has_mla)),
           row(f"cache per token ({inp.kv_dtype} KV)", r["kv_per_token"].value, "B/token",
               _argv("cache", name, "--T", T2, "--batch", B, "--dtype", inp.kv_dtype),
               "" if r["kv_per_token"].value is not None else "not one figure: a window or a fixed state"),
           row(f"cache at T = {T2:,}, B = {B}", r["kv_at_T"].value, "B",
               _argv("cache", name, "--T", T2, "--batch", B, "--dtype", inp.kv_dtype)),
           row("weights as stored", r["weights_stored"].value, "B",
               _argv("memory", name, "--T", T2, "--batch", B, "--gpu", inp.gpu, dt), str(r["weights_stored"].label)
               .replace("weights as stored ", "").strip("()")),
           row(f"fewest {inp.gpu} to serve B = {B} at T = {T2:,}", n_serve, "GPUs",
               _argv("memory", name, "--T", T2, "--batch", B, "--gpu", inp.gpu, dt),
               "smallest tensor-parallel size (power of two) whose KV pages hold the batch, vLLM accounting")]
    if n_serve:
        tp = f" --tp {n_serve}" if n_serve > 1 else ""
        out += [row(f"serving memory per GPU on {n_serve} × {inp.gpu} (TP{n_serve})", served["serve_per_gpu"].value,
                    "B", _argv("memory", name, "--T", T2, "--batch", B, "--gpu", inp.gpu, dt) + tp),
                row(f"KV capacity per GPU on {n_serve} × {inp.gpu}", served["kv_capacity"].value, "tokens",
                    _argv("memory", name, "--T", T2, "--batch", B, "--gpu", inp.gpu, dt) + tp)]
    out.append(row(f"fewest {inp.gpu} to train with FSDP (ZeRO-3, full recompute, seq {T1:,})",
                   r["train_gpus"].value, "GPUs",
                   _argv("train", name, "--seq", T1, "--micro-batch", B, "--zero 3 --recompute full --gpu",
                         inp.gpu, "--dp", r["train_gpus"].value if r["train_gpus"].value is not None
                         else MAX_TRAIN_GPUS),  # none fits: the largest tried, which the note says
                   "; ".join(r["train_gpus"].notes)))
    if not train.get("error"):
        out.append(row(f"fewest {train['card']} to train, any layout (the search of symcost train)", train["gpus"],
                       "GPUs",
                       _argv(*train["search_argv"]), train["described"]))
        out.append(row("training memory per GPU on that setup", train["memory"]["total"], "B",
                       _argv(*train["train_argv"])))
    rules = []
    for key, of in (("rule_2n", "prefill FLOPs per token"), ("rule_6n", "training FLOPs per token"),
                    ("rule_12ld2", "parameters without embedding and head"), ("rule_16b", "training states")):
        if key in r:
            x = r[key]
            ratio = x.ratio
            if key == "rule_2n":  # against this page's prefill, under the conventions the sheet was asked for
                ratio = float(Fraction(sections[1]["total"], B * T1) / x.value)
            rules.append({"label": x.label, "human": human_value(x.value, x.unit, inp.gpu), "of": of,
                          "ratio": f"{ratio:.3f}", "note": x.convention})
    return {"rows": out, "rules": rules}


def sheet_context(model: Model, *, T_prefill: int = 4096, T_decode: int = 4096, batch: int = 1,
                  dtype: str = "bf16", prefill_phase: Phase | None = None,
                  decode_phase: Phase | None = None, mla: str | None = None, raw: dict | None = None,
                  weights_dtype: str | None = None, gpu: str = CARD) -> dict:
    """Everything a sheet template prints, computed once (LaTeX strings already rendered).

    ``prefill_phase`` / ``decode_phase`` carry the counting conventions (attention pairs, logits,
    MLA form, scan implementation); each FLOPs section states the one it used. ``mla`` overrides
    the MLA form of both (default ``auto``: expanded prefill, absorbed decode, as servers run it).
    ``raw`` is the config.json (its quantization_config sets the stored weights; None: read the
    bundled config of ``model.name``); ``dtype`` the KV-cache dtype, ``weights_dtype`` overrides the
    checkpoint's (as ``memory --weights-dtype``); ``gpu`` the card serving and training are sized on.
    """
    if raw is None:
        from ..architectures import loader  # the bundled config by name (a path's caller passes it)
        try:
            raw = loader.read_json(model.name)[1]
        except (SymcostError, OSError, ValueError):  # built from a dict: no checkpoint, no quantization_config
            raw = {}
    prefill_phase, decode_phase = sheet_phases(prefill_phase, decode_phase, mla)
    has_mla = any(type(c).__name__ == "MLA" for c in model.components())
    b = dtype_bytes(dtype)
    if b.denominator != 1:
        raise ValueError(f"dtype {dtype!r}: cache bytes per element must be whole")
    prefill_vals = model.values_with(T=T_prefill, B=batch)
    decode_vals = model.values_with(T=T_decode, B=batch)

    params = model.params()
    sections = [section(model, params, model.values, title="Parameters", lhs="P", unit_name="params")]
    active = model.active_params()
    active_total = active.total_at(model.values)
    prefill = model.flops(prefill_phase)
    decode = model.flops(decode_phase)
    sections.append(section(model, prefill, prefill_vals, lhs="F", unit_name="FLOP",
                            title=f"Prefill FLOPs at T = {T_prefill:,}, B = {batch} "
                                  f"({_conventions_of(prefill_phase, has_mla)})"))
    sections.append(section(model, decode, decode_vals, lhs="F", unit_name="FLOP",
                            title=f"Decode FLOPs for one new token at T = {T_decode:,}, B = {batch} "
                                  f"({_conventions_of(decode_phase, has_mla)})"))
    cache = model.cache()
    cache_vals = {**decode_vals, sym.b_kv: sympy.Integer(int(b))}
    weights = {}
    for p in cache.flatten():
        leaf = p.rsplit("/", 1)[-1]
        weights[p] = (sympy.Integer(int(dtype_bytes(model.state_dtype[leaf])))
                      if leaf in model.state_dtype else sym.b_kv)
    cache_sec = None
    if cache.prune():
        cache_sec = section(model, cache, cache_vals, lhs="M", unit="bytes", byte_label=True,
                            title=f"Cache at T = {T_decode:,}, B = {batch}, {dtype}",
                            weights=weights)
        sections.append(cache_sec)
    cache_bytes = cache_sec["total"] if cache_sec else 0

    scale = [scaling("prefill FLOPs", "F_{\\text{prefill}}(T)", prefill.total, {**prefill_vals}),
             scaling("decode FLOPs", "F_{\\text{decode}}(T)", decode.total, {**decode_vals})]
    if cache_sec:
        scale.append(scaling("cache bytes", "M(T)", cache_sec["total_expr"], cache_vals))

    extras = None
    if model.extras.prune():
        ex = model.extras.prune()
        docs = ex.docs_flat()
        v = ex.total_at(model.values)
        extras = {"rows": [{"name": p, "doc": docs.get(p, ""), "symbolic": latex(e),
                            "value": exact(e, model.values)} for p, e in ex.flatten().items()],
                  "lines": lines_for(r"P_{\text{not built}}", [display_form(ex.total)], model.values, v),
                  "value": v, "human": human_params(v)}
    used = set()
    for t in (params, prefill, decode, cache, model.extras):
        for e in t.flatten().values():
            used |= e.free_symbols
    inputs = [sym.T, sym.B] + ([sym.b_kv] if cache_sec else []) + [sym.b_w]
    training = training_context(model, seq=T_prefill, lines_for=lines_for, card=gpu)
    inp = Inputs(T_prefill=T_prefill, T_decode=T_decode, batch=batch, kv_dtype=dtype, weights_dtype=weights_dtype,
                 gpu=gpu, mla=mla or prefill_phase.mla)
    page1 = summary_context(model, raw, inp, sections, (prefill_phase, decode_phase), has_mla, training)
    return {
        "summary": page1, "gpu": gpu,
        "training": training,
        "name": model.name, "model_type": model.model_type,
        "T_prefill": T_prefill, "T_decode": T_decode, "batch": batch, "dtype": dtype,
        "dtype_bytes": int(b),
        "conventions": model_conventions(model, prefill_phase, decode_phase, has_mla),
        "notation": notation_rows(sorted(used - set(inputs), key=lambda s: s.name), model.values, model.model_type),
        "inputs": notation_rows(inputs),
        "sections": sections,
        "active_total": active_total, "active_human": human_params(active_total),
        "active_lines": lines_for("P_{\\text{active}}", [factored_total(_by_part(active))], model.values,
                                  active_total)
        if active_total != sections[0]["total"] else [],
        "memory": {"cache": cache_bytes, "cache_human": human_bytes(cache_bytes)},
        "scaling": scale,
        "extras": extras,
        "notes": list(model.notes),
    }


def _conventions_of(ph: Phase, has_mla: bool = True) -> str:
    """The conventions a FLOPs section used, briefly: ``attention full, logits all, MLA absorbed``."""
    return (f"attention {ph.attention}, logits {ph.logits}"
            + (f", MLA {ph.mla_mode}ed" if has_mla else "") + f", scans {ph.impl}")


def render_sheet(model: Model, *, T_prefill: int = 4096, T_decode: int = 4096, batch: int = 1,
                 dtype: str = "bf16", plots: dict | None = None, context: dict | None = None, **phases) -> str:
    """The LaTeX derivation document for ``model`` (compiles with plain pdflatex).

    ``plots``: None (no figures, no mention: the generated ``reports/``), or ``{"files": {"flops":
    name, "cache": name}, "missing": reason}`` — file names next to the .tex, or why there are none.
    ``context``: a ``sheet_context`` already computed (the .tex and the .md of one model share it).
    """
    ctx = context or sheet_context(model, T_prefill=T_prefill, T_decode=T_decode, batch=batch, dtype=dtype,
                                   **phases)
    return environment().get_template("sheet.tex.j2").render(**ctx, plots=plots, rst=rst_to_tex)


def render_sheet_md(model: Model, *, T_prefill: int = 4096, T_decode: int = 4096, batch: int = 1,
                    dtype: str = "bf16", context: dict | None = None, **phases) -> str:
    """The same derivation as GitHub Markdown with ``$…$`` / ``$$…$$`` math."""
    ctx = context or sheet_context(model, T_prefill=T_prefill, T_decode=T_decode, batch=batch, dtype=dtype,
                                   **phases)
    return environment().get_template("sheet.md.j2").render(**ctx, rst=rst_to_md)


# -- building the PDF ----------------------------------------------------------------------------
TEX_FLAGS = ["-no-shell-escape", "-halt-on-error", "-interaction=nonstopmode"]


def tex_engine() -> list[str] | None:
    """The command that builds a PDF from a .tex file, or None when no TeX engine is installed."""
    if shutil.which("latexmk") and shutil.which("pdflatex"):
        return ["latexmk", "-pdf", "-quiet", *[f"-pdflatex=pdflatex {' '.join(TEX_FLAGS)} %O %S"]]
    if shutil.which("pdflatex"):
        return ["pdflatex", *TEX_FLAGS]
    return None


def build_pdf(tex_path: str | Path, pdf_path: str | Path | None = None, timeout: int = 300,
              assets: list[Path] = ()) -> Path:
    """Compile ``tex_path`` in a temporary directory (with ``assets``, e.g. its figures, copied
    beside it); raises RuntimeError with the log's tail."""
    tex_path = Path(tex_path)
    pdf_path = Path(pdf_path) if pdf_path else tex_path.with_suffix(".pdf")
    engine = tex_engine()
    if engine is None:
        raise RuntimeError("no TeX engine found (install latexmk or pdflatex, e.g. Debian's "
                           "texlive-latex-base texlive-latex-recommended latexmk)")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "sheet.tex"
        shutil.copyfile(tex_path, src)
        for a in assets:
            shutil.copyfile(a, Path(tmp) / Path(a).name)
        runs = 1 if engine[0] == "latexmk" else 2  # longtable widths settle on the second pass
        for _ in range(runs):
            proc = subprocess.run([*engine, "sheet.tex"], cwd=tmp, capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
            if proc.returncode != 0:
                log = Path(tmp) / "sheet.log"
                tail = log.read_text(errors="replace")[-3000:] if log.exists() else proc.stdout[-3000:]
                raise RuntimeError(f"pdflatex failed on {tex_path}:\n{tail}")
        shutil.copyfile(Path(tmp) / "sheet.pdf", pdf_path)
    return pdf_path


def have_matplotlib() -> bool:
    """Whether the optional plotting dependency is installed (checked without importing it)."""
    return importlib.util.find_spec("matplotlib") is not None


def _plot_stem(tex_path: Path) -> Path:
    """Where the figures go: ``<stem>-flops.pdf`` beside the .tex, the stem reduced to characters
    that are safe in ``\\includegraphics`` (letters, digits, ``-``, ``_``; dots become ``-``)."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "-", tex_path.stem) or "sheet"
    return tex_path.with_name(safe)


def write_sheet(model: Model, path: str | Path, pdf: bool = False, plots: bool = True,
                **kw) -> tuple[Path, Path | None, str]:
    """Write the ``.tex`` (and with ``pdf`` the PDF next to it). Returns (tex, pdf or None, message).

    With ``plots`` and matplotlib installed, ``<stem>-flops.pdf`` and ``<stem>-cache.pdf`` (cost
    against ``T``, log-log) are written beside the .tex and included; without matplotlib the sheet
    keeps its tables and says in one sentence that the plots are left out.
    """
    tex_path = Path(path)
    figs: dict[str, Path] = {}
    info = None
    if plots:
        if have_matplotlib():
            from .plot import sheet_plots  # lazy: plot loads numpy; only a sheet with figures needs it
            ctx_phases = sheet_phases(kw.get("prefill_phase"), kw.get("decode_phase"), kw.get("mla"))
            figs = sheet_plots(model, _plot_stem(tex_path), batch=kw.get("batch", 1),
                               dtype=kw.get("dtype", "bf16"), prefill_phase=ctx_phases[0],
                               decode_phase=ctx_phases[1])
            info = {"files": {k: p.name for k, p in figs.items()}, "missing": ""}
        else:
            info = {"files": {}, "missing": "matplotlib is not installed (pip install 'symcost[plot]')"}
    tex_path.write_text(render_sheet(model, plots=info, **kw), encoding="utf-8")
    wrote = ", ".join(str(p) for p in [tex_path, *figs.values()])
    if not pdf:
        return tex_path, None, f"wrote {wrote}"
    if tex_engine() is None:
        return tex_path, None, (f"wrote {wrote}; no PDF: no TeX engine found (install latexmk or "
                                f"pdflatex, e.g. texlive-latex-base texlive-latex-recommended latexmk)")
    pdf_path = build_pdf(tex_path, assets=list(figs.values()))
    return tex_path, pdf_path, f"wrote {wrote} and {pdf_path}"


# -- mechanism sheets (formulas/) ----------------------------------------------------------------
def mechanisms() -> list[dict]:
    """Every component module with its ``Component`` classes, found by walking the package."""
    out = []
    for mod in components.modules():
        classes = [c for _, c in inspect.getmembers(mod, inspect.isclass)
                   if issubclass(c, Component) and c is not Component and c.__module__ == mod.__name__
                   and not c.__dict__.get("abstract", False)]  # a shared base: its subclasses are the sheet
        classes.sort(key=lambda c: inspect.getsourcelines(c)[1])
        if classes:
            out.append({"module": mod.__name__.rsplit(".", 1)[1], "doc": inspect.getdoc(mod) or "", "classes": classes})
    return out


def _symbolic_section(title: str, lhs: str, terms: Terms) -> dict | None:
    terms = terms.prune()
    if not terms:
        return None
    docs = terms.docs_flat()
    rows = [{"name": p, "doc": docs.get(p, ""), "formula": latex(e)} for p, e in terms.flatten().items()]
    total = split_lines(display_form(terms.total), {}, WIDTH)
    return {"title": title, "rows": rows,
            "lines": [f"{lhs} &= {total[0]}"] + [r"&\quad " + x for x in total[1:]]}


#: what a reader's sheet leaves out of a module docstring: test-file names, internal seed pointers
_INTERNAL = re.compile(r"\s*\((?:[^()]*\btests?/[^()]*|seeds?\s+\d{3}[^()]*)\)|\s*\(?\btests?/\S+\)?"
                       r"|,?\s*\bseeds?\s+\d{3}(?:\s*§\s*[\d.]+)?;?", re.I)


def _clean(line: str) -> str:
    """One docstring line for readers: no test-file names, no internal seed references, no
    Markdown bold (the sheets set their own emphasis)."""
    out = re.sub(r"\*\*(.+?)\*\*", r"\1", _INTERNAL.sub("", line))
    out = re.sub(r"\s*\(\s*[;,]\s*\)|\s*\(\s+\)", "", out)
    return re.sub(r"\(\s*[;,]?\s+", "(", out).rstrip()


def _doc_blocks(doc: str) -> list[dict]:
    """A module docstring for readers: paragraphs ``{"kind": "lead"|"text"|"formula", "lines"}``.

    The first paragraph is the lead (what the mechanism is); indented paragraphs are formula
    layouts kept line by line; doctest examples are dropped (they are tests, not prose).
    """
    blocks, cur = [], None
    for raw in doc.splitlines():
        if raw.lstrip().startswith((">>>", "...")) or (cur and cur["kind"] == "doctest" and raw.strip()):
            if cur is None or cur["kind"] != "doctest":
                cur = {"kind": "doctest", "lines": []}
                blocks.append(cur)
            continue
        if not raw.strip():
            cur = None
            continue
        line = _clean(raw)
        if not line.strip():
            continue
        bullet = re.match(r"^[*-] ", line)
        if cur is None or cur["kind"] == "doctest" or bullet:
            cur = {"kind": "text", "lines": [], "bullet": bool(bullet)}  # a bullet item: a paragraph
            blocks.append(cur)
            line = line[2:] if bullet else line
        elif not cur["bullet"] and (raw.startswith((" ", "\t"))
                                    or re.match(r"^[A-Z][\w ,()/'-]*:\s", line)):
            cur["kind"] = "formula"  # an aligned layout: keep its lines
        cur["lines"].append(line.strip() if cur["bullet"] else line)
    blocks = [b for b in blocks if b["kind"] != "doctest"]
    for b in blocks:  # a layout is shown verbatim: RST literal quotes would print as ``x``
        if b["kind"] == "formula":
            b["lines"] = [re.sub(r"``(.+?)``", r"\1", x) for x in b["lines"]]
    if blocks and blocks[0]["kind"] == "text":
        blocks[0]["kind"] = "lead"
    return blocks


def _short_flag(value) -> str:
    """A default field as a reader wants it: a nested component by its class name only."""
    text = str(value)
    return f"{type(value).__name__}(...)" if len(text) > 40 and "(" in text else text


def mechanism_context(mech: dict) -> dict:
    comps = []
    for cls in mech["classes"]:
        entry = {"name": cls.__name__, "key": getattr(cls, "key", ""), "sections": [], "error": ""}
        try:
            c = cls()
            entry["label"] = c.label()
            cands = [("Parameters", "P", c.params())]
            if sympy.expand(c.active_params().total - c.params().total) != 0:
                cands.append(("Active parameters per token", r"P_{\text{active}}", c.active_params()))
            decode = c.flops(Phase(kind="decode", mla="expand"))
            absorbed = c.flops(Phase(kind="decode", mla="absorb"))
            cands += [("Prefill FLOPs (T new tokens, batch B)", "F", c.flops(Phase(kind="prefill"))),
                      ("Decode FLOPs (one new token after T, batch B)", "F", decode)]
            if sympy.expand(absorbed.total - decode.total) != 0:
                cands[-1] = ("Decode FLOPs, expanded (as transformers runs it)",
                             "F", decode)
                cands.append(("Decode FLOPs, absorbed (as vLLM and SGLang run it)",
                              r"F_{\text{absorb}}", absorbed))
            cands += [("Cache elements after T tokens, batch B", "C", c.cache()),
                      ("Buffers (not parameters)", "N", c.buffers())]
            entry["sections"] = [s for s in (_symbolic_section(*x) for x in cands) if s]
            names = [f.name for f in dataclasses.fields(c)]
            entry["fields"] = [(f, latex(getattr(c, f))) for f in names
                               if isinstance(getattr(c, f), sympy.Basic)]
            entry["flags"] = [(f, _short_flag(getattr(c, f))) for f in names
                              if not isinstance(getattr(c, f), sympy.Basic)]
        except Exception as e:  # a component without usable defaults: say so, keep going
            entry["label"] = ""
            entry["error"] = f"{cls.__name__}() with default fields failed: {type(e).__name__}: {e}"
            entry["fields"], entry["flags"] = [], []
        entry["fields_md"] = ", ".join([f"`{f}` = ${v}$" for f, v in entry["fields"]]
                                       + [f"`{f}` = `{v}`" for f, v in entry["flags"]]) + "."
        entry["fields_tex"] = ", ".join([rf"\texttt{{{ttescape(f)}}} $= {v}$" for f, v in entry["fields"]]
                                        + [rf"\texttt{{{ttescape(f)}}} = \texttt{{{ttescape(v)}}}"
                                           for f, v in entry["flags"]]) + "."
        comps.append(entry)
    used = set()
    for cls in mech["classes"]:
        try:
            c = cls()
            for t in (c.params(), c.flops(Phase(kind="prefill")), c.flops(Phase(kind="decode")), c.cache()):
                used |= t.total.free_symbols
        except Exception:
            pass
    return {"module": mech["module"], "blocks": _doc_blocks(mech["doc"]), "components": comps,
            "notation": notation_rows(used), "conventions": conventions_items()}


def render_mechanism(mech: dict, fmt: str = "tex") -> str:
    ctx = mechanism_context(mech)
    return environment().get_template(f"mechanism.{fmt}.j2").render(
        **ctx, rst=rst_to_tex if fmt == "tex" else rst_to_md)


def render_overview() -> str:
    """``formulas/overview.md``: the symbol table and the list of mechanisms."""
    mechs = [{"module": m["module"], "summary": (m["doc"].splitlines() or [""])[0],
              "classes": [c.__name__ for c in m["classes"]]} for m in mechanisms()]
    return environment().get_template("overview.md.j2").render(
        table=[{"name": e.name, "latex": e.latex, "meaning": e.meaning, "fields": e.fields,
                "kind": e.kind} for e in TABLE],
        mechanisms=mechs, conventions=conventions_items(), rst=rst_to_md)
