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
* ``latex``, ``sympy`` (``srepr``: code that rebuilds the exact expression, assumptions included),
  ``json`` (the formula string, parseable with ``symcost.parse``, and the free symbols).

>>> from symcost.core.notation import sym
>>> code = export(2 * sym.B * sym.T * sym.d, {sym.d: 4096}, name="cache", to="python")
>>> code.splitlines()[-1]
'    return _int(8192*B*T)'
"""
from __future__ import annotations

import json
from typing import Iterable, Mapping

import sympy
from sympy.printing.c import C99CodePrinter
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from ..core.errors import SymcostError
from ..core.exprparse import to_text
from ..core.powers import RatioPow
from ..core.notation import by_name

TARGETS = ("python", "numpy", "c", "latex", "sympy", "json")


class _ExactPython(PythonCodePrinter):
    """Python source with exact rationals (``Fraction``) and exact ceil/floor."""

    def _print_Rational(self, e):
        return f"Fraction({e.p}, {e.q})"

    def _print_Half(self, e):
        return self._print_Rational(e)

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

