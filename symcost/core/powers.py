"""A ratio raised to a count, exact while that is cheap: ``RatioPow(q, n) = q**n``.

Serving's touched-expert fraction ``1 − (1 − k/E)^(B·T)`` raises a ratio to a token count. SymPy
evaluates ``Rational**Integer`` exactly on substitution, and at a prefill of T = 2^24 tokens on
DeepSeek-V3 ``(31/32)^(2^24)`` is a fraction of 84 million bits: a command that ran for minutes.
The quantity is a probability (a ratio, where floats are allowed; counts and bytes stay integers),
so ``RatioPow`` evaluates to the exact power while that has at most ``EXACT_BITS`` bits, and past
that stays unevaluated — ``(31/32)**16777216``, exact and printable — until a number is asked for
(``float``, ``evalf``, ``ceiling``), which mpmath computes at the precision asked, in
microseconds. Symbolically it is ``q**n``: it prints as the power in every printer (str, LaTeX,
Python, NumPy, C, JavaScript) and differentiates as one.

>>> from symcost.core.notation import sym
>>> import sympy
>>> RatioPow(sympy.Rational(31, 32), sym.B)
(31/32)**B
>>> RatioPow(sympy.Rational(31, 32), 3)
29791/32768
>>> RatioPow(sympy.Rational(31, 32), 2**64)
(31/32)**18446744073709551616
>>> float(1 - RatioPow(sympy.Rational(31, 32), 2**64))
1.0
"""
from __future__ import annotations

import mpmath
import sympy

EXACT_BITS = 4096


class RatioPow(sympy.Function):
    """``base**n`` for a ratio ``base`` and a count ``n`` (see the module docstring)."""

    nargs = 2
    is_real = True

    @classmethod
    def eval(cls, base, n):
        base, n = sympy.sympify(base), sympy.sympify(n)
        if (base.is_Float or n.is_Float) and base.is_number and n.is_number:
            return base ** n  # a number asked in floats (a ratio: floats are allowed): cheap, no exact power
        if not (base.is_Rational and n.is_Integer):
            return None
        if base == 0 or base == 1 or n == 0 or n == 1:
            return base ** n
        if abs(int(n)) * max(abs(base.p), base.q).bit_length() <= EXACT_BITS:
            return base ** n
        return None  # stays RatioPow(31/32, 16777216): printable, exact; a number only when asked (evalf)

    def _eval_evalf(self, prec):
        base, n = self.args
        if not (base.is_Rational and n.is_Integer):
            return None
        with mpmath.workprec(prec + 20):
            value = mpmath.power(mpmath.mpf(int(base.p)) / int(base.q), int(n))
        return sympy.Float(value, precision=prec)

    def as_pow(self) -> sympy.Expr:
        return sympy.Pow(*self.args, evaluate=False)

    def _eval_rewrite_as_Pow(self, base, n, **kwargs):
        return sympy.Pow(base, n)

    def fdiff(self, argindex=1):
        base, n = self.args
        if argindex == 1:
            return n * RatioPow(base, n - 1)
        return RatioPow(base, n) * sympy.log(base)

    def _eval_is_positive(self):
        return self.args[0].is_positive

    def _print_as_pow(self, printer, *args, **kwargs):
        return printer._print(self.as_pow(), *args, **kwargs)

    _sympystr = _latex = _pythoncode = _numpycode = _ccode = _javascript = _mpmathcode = _print_as_pow
