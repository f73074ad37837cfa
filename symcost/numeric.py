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


class _Printer(NumPyPrinter):
    """NumPy printer whose ``Min`` / ``Max`` fold pairwise into ``numpy.minimum`` / ``maximum``."""

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


def source(exprs: dict, symbols: Iterable[sympy.Symbol], name: str = "compiled") -> tuple[str, dict]:
    """(Python source of ``def name(<symbols>)`` returning ``{key: value}``, the namespace it needs)."""
    import numpy
    printer = _Printer({"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False})
    args = [s.name for s in symbols]
    body = [f"        {k!r}: {printer.doprint(sympy.sympify(e))}," for k, e in exprs.items()]
    src = f"def {name}({', '.join(args)}):\n    return {{\n" + "\n".join(body) + "\n    }\n"
    ns = {"numpy": numpy, "functools": functools}
    return src, ns


def compile_exprs(exprs: dict, symbols: Iterable[sympy.Symbol]) -> Callable:
    """One NumPy function of ``symbols`` (positional; arrays broadcast) returning ``{key: array}``
    for every expression of ``exprs``."""
    src, ns = source(exprs, list(symbols))
    exec(compile(src, "<symcost.numeric>", "exec"), ns)  # printed from engine-built SymPy trees
    return ns["compiled"]


def compile_expr(expr, symbols: Iterable[sympy.Symbol]) -> Callable:
    """One NumPy function of ``symbols`` (positional) for one expression."""
    f = compile_exprs({"value": expr}, symbols)
    return lambda *args: f(*args)["value"]
