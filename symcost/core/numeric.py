"""Formulas compiled to NumPy, for sweeps over many values at once (plots, deploy, train --search).

One path for every caller: each expression is printed once by SymPy's NumPy printer (``Min`` and
``Max`` as ``numpy.minimum`` / ``numpy.maximum``, which broadcast scalars against arrays, where
SymPy's ``amin((a, b))`` does not), the printed code is compiled with one ``exec`` in a namespace
holding only the NumPy names it uses. ``sympy.lambdify(modules="numpy")`` would run
``from numpy import *``, which loads numpy.f2py and friends: most of its cost in a CLI command.
The code is printed from SymPy trees the engine built, never from user text.
"""
from __future__ import annotations

import functools
from typing import Callable, Iterable

import sympy
from sympy.printing.numpy import NumPyPrinter


def _integer_polynomial(e) -> bool:
    """Whether ``e`` is visibly a polynomial with integer coefficients (integers, symbols, sums,
    products, positive integer powers): the cheap test; ``integer_ratio`` falls back to ``Poly``."""
    if e.is_Integer or e.is_Symbol:
        return True
    if e.is_Add or e.is_Mul:
        return all(_integer_polynomial(a) for a in e.args)
    if e.is_Pow:
        return e.exp.is_Integer and e.exp > 0 and _integer_polynomial(e.base)
    return False


def integer_ratio(expr):
    """(numerator, denominator) of ``expr`` as polynomials with integer coefficients in its
    symbols, or None when it is not such a ratio (a ``Min``, a float, a non-integer power)."""
    num, den = sympy.fraction(sympy.together(expr))
    if _integer_polynomial(num) and _integer_polynomial(den):
        return num, den
    syms = sorted(expr.free_symbols, key=str)
    try:
        if not all(sympy.Poly(x, *syms).domain.is_ZZ for x in (num, den)) if syms else not (
                num.is_Integer and den.is_Integer):
            return None
    except sympy.PolynomialError:
        return None
    return num, den


class _Printer(NumPyPrinter):
    """NumPy printer whose ``Min`` / ``Max`` fold pairwise into ``numpy.minimum`` / ``maximum``;
    with ``exact_int`` a ``ceiling`` / ``floor`` of a ratio of integer polynomials is printed as
    integer floor division (exact on int64 arrays, where ``numpy.ceil`` of the float quotient can
    land one above an exact integer: ceil(11/10·10) = 12 in floats)."""

    def __init__(self, settings=None, exact_int=False):
        super().__init__(settings)
        self._exact_int = exact_int

    def _ratio(self, arg):
        if not self._exact_int:
            return None
        r = integer_ratio(arg)
        return None if r is None else (self._print(r[0]), self._print(r[1]))

    def _print_ceiling(self, expr):
        r = self._ratio(expr.args[0])
        return super()._print_ceiling(expr) if r is None else f"(-((-({r[0]})) // ({r[1]})))"

    def _print_floor(self, expr):
        r = self._ratio(expr.args[0])
        return super()._print_floor(expr) if r is None else f"(({r[0]}) // ({r[1]}))"

    def _fold(self, expr, fn):
        args = [self._print(a) for a in expr.args]
        out = args[0]
        for a in args[1:]:
            out = f"{self._module_format('numpy.' + fn)}({out}, {a})"
        return out

    def _print_Min(self, expr):
        return self._fold(expr, "minimum")

    def _print_Max(self, expr):
        return self._fold(expr, "maximum")


def source(exprs: dict, symbols: Iterable[sympy.Symbol], name: str = "compiled",
           exact_int: bool = False) -> tuple[str, dict]:
    """(Python source of ``def name(<symbols>)`` returning ``{key: value}``, the namespace it needs)."""
    import numpy  # lazy: optional; check, scale and memory load numeric without it
    printer = _Printer({"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False},
                       exact_int=exact_int)
    args = [printer.doprint(s) for s in symbols]  # a Dummy prints with its index, as in the body
    body = [f"        {k!r}: {printer.doprint(sympy.sympify(e))}," for k, e in exprs.items()]
    src = f"def {name}({', '.join(args)}):\n    return {{\n" + "\n".join(body) + "\n    }\n"
    ns = {"numpy": numpy, "functools": functools}
    return src, ns


def compile_exprs(exprs: dict, symbols: Iterable[sympy.Symbol], exact_int: bool = False) -> Callable:
    """One NumPy function of ``symbols`` (positional; arrays broadcast) returning ``{key: array}``
    for every expression of ``exprs`` (``exact_int``: ceilings and floors of integer ratios in
    integer arithmetic, for int64 arguments)."""
    src, ns = source(exprs, list(symbols), exact_int=exact_int)
    exec(compile(src, "<symcost.core.numeric>", "exec"), ns)  # printed from engine-built SymPy trees
    return ns["compiled"]
