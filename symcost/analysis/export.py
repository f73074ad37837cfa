"""Exported formulas: a metric as standalone code with named arguments, for plugging in numbers.

``export(expr, values, keep=..., to=...)`` substitutes the config's ``values`` (except the symbols
in ``keep``) and prints the rest as code whose arguments are the free symbols *by name*
(``T``, ``B``, ``b_kv``, ...; STYLE.md: never by position). No target needs symcost to run:

* ``python`` — exact integer arithmetic: rationals become ``Fraction``, ``min``/``max``/``ceil``
  stay exact, the result is an ``int`` (any size: no overflow at ``T = 2^21``);
* ``numpy`` — vectorised, every argument converted with ``np.asarray(x, dtype=dtype)``;
  ``dtype=float64`` by default, because int64 silently wraps past 2^63 (a prefill at
  ``T = 2^21, B = 8`` does); pass ``dtype=object`` for exact Python integers element by element;
* ``c`` — a ``double`` function (IEEE doubles: exact below 2^53, rounded beyond);
* ``js`` — an ES module: ``export function name({T, B})`` (arguments by name, as one object), exact
  rationals over ``BigInt`` (the runtime ``exact.js``, package data, is inlined: the module imports
  nothing); a whole metric returns a ``BigInt``, any other the exact ``{n, d}`` (a ``BigInt`` when
  whole). The HTML page (``documents.html``) evaluates the same functions;
* ``latex``, ``sympy`` (``srepr``: code that rebuilds the exact expression, assumptions included),
  ``json`` (the formula string, parseable with ``symcost.parse``, and the free symbols).

>>> from symcost.core.notation import sym
>>> code = export(2 * sym.B * sym.T * sym.d, {sym.d: 4096}, name="cache", to="python")
>>> code.splitlines()[-1]
'    return _int(8192*B*T)'
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from fractions import Fraction
from importlib import resources

import sympy
from sympy.printing.c import C99CodePrinter
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from ..core.errors import SymcostError
from ..core.exprparse import to_text
from ..core.notation import by_name
from ..core.powers import RatioPow

TARGETS = ("python", "numpy", "c", "latex", "sympy", "json", "js")


class _ExactPython(PythonCodePrinter):
    """Python source with exact rationals (``Fraction``) and exact ceil/floor."""

    def _print_Rational(self, e):
        return f"Fraction({e.p}, {e.q})"

    def _print_Half(self, e):
        return self._print_Rational(e)

    def _print_Mul(self, e):
        # a quotient of integers in Python is a float (``a/b``): divide a Fraction instead, so
        # floor(x / N_tp) and the per-GPU shares stay exact (the JS export found the rounding)
        num, den = e.as_numer_denom()
        if den == 1 or not den.free_symbols and num == e * den and den.is_Integer:
            return super()._print_Mul(e)
        return f"Fraction({self._print(num)}) / ({self._print(den)})"

    def _print_ceiling(self, e):
        return f"_ceil({self._print(e.args[0])})"

    def _print_floor(self, e):
        return f"_floor({self._print(e.args[0])})"

    def _print_Min(self, e):
        return "min(" + ", ".join(self._print(a) for a in e.args) + ")"

    def _print_Max(self, e):
        return "max(" + ", ".join(self._print(a) for a in e.args) + ")"


class _Numpy(NumPyPrinter):
    """NumPy source; rationals as float quotients (``dtype=object`` callers get Fractions)."""

    def _print_Rational(self, e):
        return f"q({e.p}, {e.q})"

    def _print_Half(self, e):
        return self._print_Rational(e)


# -- JavaScript: exact rationals over BigInt ---------------------------------------------------------
_JS_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_JS_RESERVED = {"do", "if", "in", "for", "let", "new", "try", "var", "case", "else", "enum", "eval", "null",
                "this", "true", "void", "with", "await", "break", "catch", "class", "const", "false", "super",
                "throw", "while", "yield", "delete", "export", "import", "public", "return", "static",
                "switch", "typeof", "default", "extends", "finally", "package", "private", "continue",
                "debugger", "function", "arguments", "interface", "protected", "implements", "instanceof"}
_JS_CALLS = {sympy.Min: "$min", sympy.Max: "$max", sympy.floor: "$floor", sympy.ceiling: "$ceil",
             sympy.Abs: "$abs", sympy.Mod: "$mod"}
_JS_RELATIONS = {sympy.StrictLessThan: "$lt", sympy.LessThan: "$le", sympy.StrictGreaterThan: "$gt",
                 sympy.GreaterThan: "$ge", sympy.Equality: "$eq", sympy.Unequality: "$ne"}


def js_runtime() -> str:
    """The exact-arithmetic functions every exported JS formula calls (``exact.js``)."""
    return resources.files(__package__).joinpath("exact.js").read_text(encoding="utf-8")


def js_name(name: str) -> str:
    """``name`` as a JS identifier (a notation symbol or a metric); SymcostError if it cannot be one."""
    if not _JS_NAME.match(name) or name in _JS_RESERVED or name.startswith("$"):
        raise SymcostError(f"--to js: {name[:40]!r} is not usable as a JavaScript name")
    return name


def js_expr(e, refs: Mapping | None = None) -> str:
    """A SymPy expression as a JS expression over ``exact.js`` (a rational {n, d}); conditions of a
    Piecewise as booleans. Only the nodes symcost's formulas use are printed; any other is an error.
    ``refs`` maps a ``Dummy`` to the key of another formula of the same page: it prints as
    ``$ref(key, $in)``, that formula at the same inputs (the page defines ``$ref``)."""
    if refs and e in refs:
        return f"$ref({json.dumps(refs[e])}, $in)"
    def sub(a):
        return js_expr(a, refs)
    if e is sympy.true:
        return "true"
    if e is sympy.false:
        return "false"
    if isinstance(e, sympy.Integer):
        return f"$q({int(e)}n)"
    if isinstance(e, sympy.Float):  # should not occur (counts are exact); printed as its double's exact value
        v = Fraction(float(e))
        return f"$q({v.numerator}n, {v.denominator}n)"
    if isinstance(e, sympy.Rational):
        return f"$q({e.p}n, {e.q}n)"
    if isinstance(e, sympy.Symbol):
        return js_name(e.name)
    if isinstance(e, sympy.Add):
        return "$add(" + ", ".join(sub(a) for a in e.args) + ")"
    if isinstance(e, sympy.Mul):
        return "$mul(" + ", ".join(sub(a) for a in e.args) + ")"
    if isinstance(e, sympy.Pow):
        if not e.exp.is_Integer:
            raise SymcostError(f"--to js: a power with exponent {e.exp} has no exact rational value")
        return f"$pow({sub(e.base)}, {int(e.exp)}n)"
    for cls, fn in _JS_CALLS.items():
        if isinstance(e, cls):
            return fn + "(" + ", ".join(sub(a) for a in e.args) + ")"
    for cls, fn in _JS_RELATIONS.items():
        if isinstance(e, cls):
            return f"{fn}({sub(e.lhs)}, {sub(e.rhs)})"
    if isinstance(e, sympy.And):
        return "(" + " && ".join(sub(a) for a in e.args) + ")"
    if isinstance(e, sympy.Or):
        return "(" + " || ".join(sub(a) for a in e.args) + ")"
    if isinstance(e, sympy.Not):
        return "!" + sub(e.args[0])
    if isinstance(e, sympy.Piecewise):
        return "$pw(" + ", ".join(f"[{sub(c)}, () => {sub(v)}]" for v, c in e.args) + ")"
    raise SymcostError(f"--to js: {type(e).__name__} {str(e)[:40]} has no exact JavaScript form")


def js_function(e: sympy.Expr, *, whole: bool = True, doc: str = "", refs: Mapping | None = None) -> str:
    """An anonymous JS function of one object argument ``$in`` holding the free symbols by name,
    returning a BigInt (``whole``: throws on a fraction) or the exact rational (a BigInt when whole)."""
    args = [js_name(s.name) for s in free_symbols(e) if not (refs and s in refs)]
    conv = "".join(f"  const {a} = $arg({json.dumps(a)}, $in.{a});\n" for a in args)
    head = "function ($in = {}) {\n"
    return (head + (f"  // {doc}\n" if doc else "") + conv
            + f"  return {'$int' if whole else '$exact'}({js_expr(e, refs)});\n}}")


def free_symbols(expr: sympy.Expr) -> list[sympy.Symbol]:
    return sorted(expr.free_symbols, key=lambda s: s.name)


def prepare(expr: sympy.Expr, values: Mapping, keep: Iterable[str] = ()) -> sympy.Expr:
    """``expr`` with every value substituted but the symbols named in ``keep``."""
    kept = set()
    for name in keep:
        try:
            kept.add(by_name(name))
        except KeyError:
            raise SymcostError(f"--keep: unknown symbol {name[:40]!r}") from None
    missing = sorted(s.name for s in kept if s not in values and s not in expr.free_symbols)
    if missing:
        raise SymcostError(f"--keep: the formula has no {', '.join(missing)}")
    return expr.xreplace({k: v for k, v in values.items() if k not in kept})


def export(expr: sympy.Expr, values: Mapping, *, keep: Iterable[str] = (), to: str = "python",
           name: str = "cost", doc: str = "", whole: bool = True) -> str:
    """The code (or text) for ``expr`` in target ``to`` (see the module docstring). ``whole``:
    the metric is a whole number (counts, bytes) and the Python function insists on it; otherwise
    (seconds, concurrency, per-GPU shares) it returns the exact ``Fraction`` (an ``int`` when whole)."""
    if to not in TARGETS:
        raise SymcostError(f"--to: unknown target {to!r} (choose from {', '.join(TARGETS)})")
    e = prepare(sympy.sympify(expr), values, keep)
    args = [s.name for s in free_symbols(e)]
    doc = doc or f"{name}: exported by symcost"
    if to == "latex":
        from ..core.latex import latex  # lazy: only --to latex loads the printer
        return latex(e)
    if to == "json":
        return json.dumps({"name": name, "formula": to_text(e), "arguments": args, "doc": doc})
    if to == "sympy":  # srepr: the exact tree, symbols with the notation's assumptions
        plain = e.replace(lambda x: isinstance(x, RatioPow), lambda x: x.as_pow())  # SymPy's own Pow
        lines = ["from sympy import *  # noqa: F403 (srepr names SymPy's classes)", "",
                 f"# {doc}; free symbols: {', '.join(args) or 'none'}",
                 f"{name} = {sympy.srepr(plain)}", ""]
        return "\n".join(lines)
    if to == "js":
        fn = js_function(e, whole=whole)
        ident = js_name(name)
        comment = doc.replace("*/", "* /")
        return "\n".join([f"/* {comment}. Free symbols: {', '.join(args) or 'none'}.",
                          (f"   Call {ident}({{{', '.join(f'{a}: ...' for a in args)}}}) with numbers, BigInts "
                          f"or digit strings; returns {'a BigInt' if whole else 'a BigInt when whole, else {n, d}'}. "
                          f"Exported by symcost; imports nothing. */"),
                          js_runtime(), f"export function {ident}" + fn[len("function "):],
                          f"export default {ident};", ""])
    sig = ", ".join(args)
    if to == "python":
        body = _ExactPython({"fully_qualified_modules": False}).doprint(e)
        return "\n".join([
            "from fractions import Fraction", "import math", "",
            "",
            "def _ceil(x):", "    return math.ceil(x)", "",
            "",
            "def _floor(x):", "    return math.floor(x)", "",
            "",
            "def _int(x):",
            "    x = Fraction(x)",
            "    if x.denominator != 1:",
            "        raise ValueError(f'not a whole number: {x}')",
            "    return int(x)", "",
            "",
            *([] if whole else ["def _exact(x):", "    x = Fraction(x)",
                                "    return int(x) if x.denominator == 1 else x", "", ""]),
            f"def {name}(*{', ' if sig else ''}{sig}):",
            (f'    """{doc}. Exact: integer arguments give an int of any size."""' if whole else
             f'    """{doc}. Exact: integer arguments give a Fraction (an int when whole)."""'),
            f"    return {'_int' if whole else '_exact'}({body})", ""])
    if to == "numpy":
        body = _Numpy({"fully_qualified_modules": True}).doprint(e)
        conv = "".join(f"    {a} = numpy.asarray({a}, dtype=dtype)\n" for a in args)
        return "\n".join([
            "import functools", "from fractions import Fraction", "", "import numpy", "",
            "",
            f"def {name}(*{', ' if sig else ''}{sig}{', ' if sig else ''}dtype=numpy.float64):",
            f'    """{doc}.',
            "",
            "    Arguments are converted to ``dtype`` (default float64: int64 would silently overflow",
            "    past 2**63); ``dtype=object`` computes with exact Python integers.",
            '    """',
            "    q = Fraction if dtype is object else (lambda p, r: p / r)  # noqa: F841 (rationals)",
            conv.rstrip("\n") or "    pass",
            f"    return {body}", ""])
    # c
    cargs = ", ".join(f"double {a}" for a in args) or "void"
    body = C99CodePrinter().doprint(e)
    return "\n".join(["#include <math.h>", "", f"/* {doc}. IEEE double: exact below 2^53. */",
                      f"double {name}({cargs}) {{", f"    return {body};", "}", ""])

