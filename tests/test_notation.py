"""The notation table is the single source of symbols."""
import pathlib
import re

import sympy

from symcost.core import notation
from symcost.core.notation import sym


def test_symbols_are_positive_integers():
    """Every dimension is a positive integer; the calibration's ratios and seconds are positive reals
    and the expert-parallel switch is 0 or 1 (``notation._ASSUME``)."""
    for name in notation.names():
        s = getattr(sym, name)
        kind = notation.ENTRIES[name].kind
        if kind in ("ratio", "seconds"):
            assert s.is_positive and s.is_real and s.is_integer is None, name
        elif kind == "switch":
            assert s.is_integer and s.is_nonnegative and s.is_positive is None, name
        else:
            assert s.is_integer and s.is_positive, name


def test_E_and_N_are_not_sympy_builtins():
    assert sym.E != sympy.E and isinstance(sym.N, sympy.Symbol)


def test_no_symbol_construction_outside_notation():
    root = pathlib.Path(notation.__file__).parent
    pattern = re.compile(r"\b(Symbol|symbols)\(")
    offenders = [str(p) for p in root.rglob("*.py")
                 if p.name != "notation.py" and pattern.search(p.read_text())]
    assert offenders == []


def test_latex_names_split_subscripts():
    assert sympy.latex(sym.H_kv) == "H_{kv}" and sympy.latex(sym.d_ff) == "d_{ff}"
