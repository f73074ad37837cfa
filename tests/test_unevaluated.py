"""``core.unevaluated``: expressions built as written, as ``sympy.evaluate(False)`` builds them, without
flipping SymPy's global flag (each flip clears SymPy's whole cache)."""
import sympy
import sympy.core.cache

from symcost.core import unevaluated
from symcost.core.latex import plugged
from symcost.core.notation import sym

x, y = sympy.symbols("x y", positive=True)


def _blocked(func, *args):
    with sympy.evaluate(False):
        return func(*args)


def test_build_is_what_the_global_block_builds():
    for func, args in ((sympy.Add, (x, x)), (sympy.Mul, (2, x, x)), (sympy.Pow, (x, 1)),
                       (sympy.Max, (x, x + 1)), (sympy.floor, (sympy.Integer(7) / 2,)),
                       (sympy.ceiling, (x / 2,)), (sympy.Min, (3, 5))):
        got = unevaluated.build(func, *args)
        assert got == _blocked(func, *args) and sympy.srepr(got) == sympy.srepr(_blocked(func, *args))
    assert unevaluated.build(sympy.Add, x, x).args == (x, x)


def test_nothing_unevaluated_leaks_into_later_arithmetic():
    unevaluated.build(sympy.Add, y, y)
    unevaluated.build(sympy.Max, y, y + 1)
    assert y + y == 2 * y and sympy.Add(y, y) == 2 * y
    assert sympy.Max(y, y + 1) == y + 1


def test_no_cache_clear(monkeypatch):
    cleared = []
    real = sympy.core.cache.clear_cache
    monkeypatch.setattr("sympy.core.parameters.clear_cache", lambda: (cleared.append(1), real()))
    e = sympy.Max(sym.d * sym.L, sympy.floor(sym.T / sym.B) * 3) + sym.V
    unevaluated.xreplace(e, {sym.d: sympy.Integer(4096), sym.L: sympy.Integer(32)})
    plugged(e, {sym.d: 4096, sym.L: 32, sym.V: 5})
    assert cleared == []
    with sympy.evaluate(False):  # what the helpers avoid: the block clears on entry and on exit
        pass
    assert len(cleared) == 2


def test_xreplace_is_the_blocked_xreplace():
    e = sympy.Max(sym.d * sym.L, sympy.floor(sym.T / sym.B) * 3) + sympy.ceiling(sym.V / 64) * 64
    vals = {sym.d: sympy.Integer(4096), sym.L: sympy.Integer(32), sym.V: sympy.Integer(128256)}
    with sympy.evaluate(False):
        want = e.xreplace(vals)
    got = unevaluated.xreplace(e, vals)
    assert sympy.srepr(got) == sympy.srepr(want)
    assert got.xreplace({sym.T: 8, sym.B: 2}).doit() == want.xreplace({sym.T: 8, sym.B: 2}).doit() == 131072 + 128256
    assert unevaluated.xreplace(e, {}) is e  # nothing replaced: the same object
