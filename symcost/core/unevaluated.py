"""Expressions built as written -- SymPy's automatic evaluation off -- without ``sympy.evaluate(False)``.

``with sympy.evaluate(False):`` flips a global flag, and SymPy clears its whole cache at every flip
(``sympy.core.parameters._global_parameters.__setattr__``: the cached constructors do not key on the
flag), two clears per block. The documents build hundreds of unevaluated expressions (printed
derivations, the page's formulas), so every later assumption query and constructor started cold: the
DeepSeek-V3 ``sheet --html`` flipped it 2,112 times. These helpers pass ``evaluate=False`` to each
node's own constructor instead -- part of the cache key, so nothing leaks into evaluated expressions
-- and fall back to the block only for a class whose constructor takes no such argument.
"""
from __future__ import annotations

from collections.abc import Mapping

import sympy


def build(func, *args):
    """``func(*args)`` unevaluated: ``Add``, ``Mul``, ``Pow``, ``Max``, functions, relations, ...
    (``func(*args, evaluate=False)``; a constructor without that argument inside the global block)."""
    try:
        return func(*args, evaluate=False)
    except TypeError:
        with sympy.evaluate(False):
            return func(*args)


def xreplace(expr, mapping: Mapping):
    """``expr.xreplace(mapping)`` with every node it rebuilds left unevaluated (a node none of whose
    arguments changed is kept as it is, as ``xreplace`` keeps it)."""
    seen: dict = {}

    def walk(e):
        if e in mapping:
            return mapping[e]
        if not e.args:
            return e
        got = seen.get(e)
        if got is None:
            new = tuple(walk(a) for a in e.args)
            got = seen[e] = build(e.func, *new) if new != e.args else e
        return got

    return walk(sympy.sympify(expr))
