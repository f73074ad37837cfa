"""Symbolic analysis of cost formulas: structure in T, derivatives, crossovers, ratios, checks.

* ``polynomial_in(expr, T)``: degree, coefficients by power, leading term, big-O class. ``Min``
  and ``Piecewise`` (sliding windows) are not polynomials: the degree is then ``None`` and the
  answer is given per regime — small ``T`` (every window still filling) and large ``T`` (every
  ``Min`` at its bounded branch), the latter also giving the leading term and big-O.
* ``derivative(expr, x)``: ``∂/∂x``, optionally with the config's values substituted (``scale
  --wrt E`` keeps ``E`` symbolic: what one more expert costs).
* ``crossover(a, b, T)``: the smallest positive ``T`` with ``a ≥ b``, exactly (real roots of the
  polynomial on each regime), or ``never``.
* ``compare(terms, user_expr, values)``: is a hand derivation right, and if not, which engine
  terms account for the difference (``symcost check``). Whole-model expressions are only ever
  ``expand``-ed, never ``simplify``-ed.
* ``lambdify_by_name(expr)``: NumPy source and a callable taking the symbols by name, for sweeps.

>>> from symcost.core.notation import sym
>>> s = polynomial_in(4*sym.d*sym.T**2 + 8*sym.d**2*sym.T, sym.T)
>>> s["degree"], s["big_o"], s["leading_term"]
(2, 'O(T^2)', 4*T**2*d)
>>> polynomial_in(sym.B * (sympy.Min(sym.T, sym.W - 1) + 1), sym.T)["big_o"]
'O(1)'
>>> crossover(sym.T**2, 1000 * sym.T, sym.T)["at"]
1000
"""
from __future__ import annotations

import random
import re
import time
from fractions import Fraction
from itertools import combinations
from typing import Mapping

import sympy

from ..core import numeric
from ..core.deadline import DeadlineExceeded, until
from ..core.exprparse import parse, to_text
from ..core.notation import ENTRIES, sym
from ..core.terms import Terms, relax_steps

Expr = sympy.Expr


def _expr(x) -> Expr:
    """A Terms tree's total, an expression, a number — or user text, through the safe parser."""
    if isinstance(x, Terms):
        return x.total
    if isinstance(x, str):
        return parse(x)
    if isinstance(x, (int, Fraction)):
        return sympy.Rational(x)
    if not isinstance(x, sympy.Basic):
        raise TypeError(f"expected an expression, got {type(x).__name__}")
    return x


# -- structure in a variable -----------------------------------------------------------------------
def _subs(expr: Expr, values: Mapping | None, keep: Expr | None = None) -> Expr:
    if not values:
        return expr
    return expr.xreplace({k: v for k, v in values.items() if k != keep})


def _has_regimes(expr: Expr, var) -> bool:
    return any(var in a.free_symbols for a in expr.atoms(sympy.Min, sympy.Max, sympy.Piecewise))


def _degree(expr: Expr, var) -> int | None:
    e = sympy.expand(expr)
    return sympy.degree(e, var) if e.is_polynomial(var) else None


def _pick(args, var, large: bool, is_min: bool):
    """The argument of Min/Max that wins for var → ∞ (large) or var → 0 (small)."""
    if large:
        degs = [(_degree(a, var), a) for a in args]
        if any(d is None for d, _ in degs):
            return None
        best = min(d for d, _ in degs) if is_min else max(d for d, _ in degs)
        tied = [a for d, a in degs if d == best]
    else:
        tied = list(args)
    winners = []
    for a in tied:
        others = [b for b in tied if b is not a]
        try:  # var -> 0 has no value where var divides (1/N_tp): no regime then
            point = a if large else a.subs(var, 0)
            if all(((b if large else b.subs(var, 0)) - point).is_nonnegative if is_min
                   else (point - (b if large else b.subs(var, 0))).is_nonnegative for b in others):
                winners.append(a)
        except (ValueError, TypeError):
            return None
    if not winners:
        return None
    if not large:  # tie at var → 0: the branch that depends on var is the one that starts there
        with_var = [a for a in winners if var in a.free_symbols]
        winners = with_var or winners
    return winners[0]


def regime(expr: Expr, var, large: bool = True) -> Expr:
    """``expr`` with every ``Min``/``Max``/``Piecewise`` in ``var`` replaced by the branch that
    holds for ``var → ∞`` (``large``) or for small ``var`` (below every breakpoint).

    >>> from symcost.core.notation import sym
    >>> regime(sympy.Min(sym.T, sym.W - 1) + 1, sym.T), regime(sympy.Min(sym.T, sym.W - 1), sym.T, False)
    (W, T)
    """
    def rec(e):
        if e.is_Atom or var not in e.free_symbols:
            return e
        if isinstance(e, sympy.Piecewise):
            point = sympy.oo if large else 0
            for piece, cond in e.args:
                truth = cond.subs(var, point) if cond not in (sympy.true, sympy.false) else cond
                if truth == sympy.true:
                    return rec(piece)
                if truth != sympy.false:
                    return e
            return e
        args = [rec(a) for a in e.args]
        if large and isinstance(e, (sympy.ceiling, sympy.floor)):
            return args[0]  # ceiling(T/C) ~ T/C: same leading order
        same = all(a is b for a, b in zip(args, e.args))  # rebuilding a Min/Max re-runs SymPy's pairwise
        if isinstance(e, (sympy.Min, sympy.Max)):         # comparisons of its arguments: keep it as it is
            won = _pick(args, var, large, isinstance(e, sympy.Min))
            return won if won is not None else e if same else e.func(*args)
        return e if same else e.func(*args)
    return rec(expr)


def _roots(e: Expr, x) -> list[Expr]:
    """``sympy.solve(e, x)``: the roots of ``e = 0`` that ``x``'s assumptions allow. A numerator linear in
    ``x`` (every Min/Max and step of a cost formula crosses so) is solved directly, ``x = −c₀/c₁``, kept
    unless ``x``'s positivity or integrality rules it out or the denominator vanishes there — what
    ``solve`` returns, without its general machinery (0.5 s of CPU on a calibrated TTFT's regimes)."""
    num, den = sympy.fraction(sympy.together(e))
    if num.is_polynomial(x) and den.is_polynomial(x) and num.has(x):
        poly = sympy.Poly(num, x)
        if poly.degree() == 1:
            r = sympy.factor_terms(sympy.cancel(-poly.nth(0) / poly.nth(1)))
            ruled_out = ((x.is_positive and r.is_positive is False) or (x.is_integer and r.is_integer is False)
                         or sympy.cancel(den.xreplace({x: r})) == 0)
            return [] if ruled_out else [r]
    return sympy.solve(e, x)


def breakpoints(expr: Expr, var) -> list[Expr]:
    """Values of ``var`` where a ``Min``/``Max``/``Piecewise`` switches branch."""
    out = []
    x = sympy.Dummy("x", positive=True)
    for node in expr.atoms(sympy.Min, sympy.Max):
        if var in node.free_symbols:
            for a, b in combinations(node.args, 2):
                try:
                    out += [r.xreplace({x: var}) for r in _roots((a - b).xreplace({var: x}), x)]
                except (NotImplementedError, TypeError):
                    pass
    for node in expr.atoms(sympy.Piecewise):
        for _, cond in node.args:
            for rel in cond.atoms(sympy.core.relational.Relational):
                if var in rel.free_symbols:
                    try:
                        out += _roots(rel.lhs - rel.rhs, var)
                    except (NotImplementedError, TypeError):
                        pass
    uniq = []
    for b in out:
        if b not in uniq:
            uniq.append(b)
    return uniq


def big_o(degree: int | None, var) -> str:
    if degree is None:
        return "unknown"
    return "O(1)" if degree == 0 else f"O({var})" if degree == 1 else f"O({var}^{degree})"


def _structure(expr: Expr, var) -> dict:
    e = sympy.expand(expr)
    if not e.is_polynomial(var):
        return {"degree": None, "coefficients": {}, "leading_term": e,
                "leading_coefficient": None, "big_o": "unknown"}
    poly = sympy.Poly(e, var)
    n = poly.degree() if e != 0 else 0
    coeffs = {int(k[0]): sympy.factor_terms(c) for k, c in zip(poly.monoms(), poly.coeffs())}
    lead = coeffs.get(n, sympy.Integer(0))
    return {"degree": int(n), "coefficients": coeffs, "leading_term": lead * var ** n,
            "leading_coefficient": lead, "big_o": big_o(int(n), var)}


def polynomial_in(expr: Expr | Terms, var=sym.T, *, values: Mapping | None = None) -> dict:
    """Structure of ``expr`` (or a ``Terms`` tree's total) as a polynomial in ``var``.

    Keys: ``degree`` (int, or None when not a polynomial), ``coefficients`` ({power: expr}),
    ``leading_term``, ``leading_coefficient``, ``big_o`` (``O(1)``, ``O(T)``, ``O(T^2)``),
    ``polynomial`` (bool), ``regimes`` (list of {when, expr, degree, big_o}: small and large
    ``var``, only when ``Min``/``Piecewise`` depend on ``var``), ``breakpoints``, and for a
    ``Terms`` input ``by_term`` ({power: {path: coefficient}}, the named coefficients, for
    ``var → ∞``). For a non-polynomial, ``leading_term``, ``big_o`` and ``asymptotic_degree``
    describe ``var → ∞`` (``ceiling(T/C)`` counts as ``T/C`` there).
    """
    terms = expr if isinstance(expr, Terms) else None
    e = _subs(terms.total if terms is not None else _expr(expr), values, var)
    out = _structure(e, var)
    out["polynomial"] = out["degree"] is not None
    out["note"] = ""
    rounded = [a for a in e.atoms(sympy.floor, sympy.ceiling) if var in a.free_symbols]
    if rounded and not out["polynomial"] and not _has_regimes(e, var):
        # ⌈T/C⌉ chunks: a polynomial on the multiples of C, where ⌈T/C⌉ = T/C exactly
        out = _structure(e.xreplace({a: a.args[0] for a in rounded}), var)
        out["polynomial"] = False
        out["note"] = (f"floor/ceiling of {var}/C taken as {var}/C: the degree and coefficients are "
                       f"exact when C divides {var}")
    out["asymptotic_degree"] = out["degree"]
    out["regimes"] = []
    out["breakpoints"] = []
    if not out["polynomial"] and _has_regimes(e, var):
        bps = breakpoints(e, var)
        out["breakpoints"] = bps
        for large in (False, True):
            r = regime(e, var, large)
            s = _structure(r, var)
            bound = (f"{var} >= {to_text(bps[0])}" if len(bps) == 1 and large
                     else f"{var} <= {to_text(bps[0])}" if len(bps) == 1
                     else f"{var} -> infinity" if large else f"{var} below every breakpoint")
            out["regimes"].append({"when": bound, "expr": sympy.factor_terms(sympy.expand(r)),
                                   "degree": s["degree"], "big_o": s["big_o"]})
    if not out["polynomial"]:
        big = _structure(regime(e, var, True), var)
        out.update(leading_term=big["leading_term"], leading_coefficient=big["leading_coefficient"],
                   big_o=big["big_o"], asymptotic_degree=big["degree"])
    if terms is not None:
        by: dict[int, dict[str, Expr]] = {}
        for path, leaf in terms.flatten().items():
            leaf = _subs(leaf, values, var)
            s = _structure(regime(leaf, var, True), var)
            for p, c in s["coefficients"].items():
                if c != 0:
                    by.setdefault(p, {})[path] = c
        out["by_term"] = dict(sorted(by.items(), reverse=True))
    return out


def _diff(e: Expr, var) -> Expr:
    """``∂e/∂var`` with ``Min``/``Max`` unfolded into ``Piecewise`` regimes first, so the result is
    a ``Piecewise`` of ordinary derivatives (which ``symcost.parse`` reads back), never the
    ``Heaviside`` SymPy gives for ``d Min(T, W)/dT`` (STYLE.md trap 6).

    >>> from symcost.core.notation import sym
    >>> _diff(sym.L * sympy.Min(sym.T, sym.W - 1), sym.T)
    Piecewise((L, T <= W - 1), (0, True))
    """
    e = relax_steps(e, var)
    if any(m.has(var) for m in e.atoms(sympy.Min, sympy.Max)):  # a Min/Max free of var is a constant
        try:
            e = sympy.piecewise_fold(e.rewrite(sympy.Piecewise))
        except (TypeError, ValueError, NotImplementedError):  # SymPy's set algebra gives up on some
            pass  # conditions (a ConditionSet over N_tp): differentiate the Min/Max as they stand
    # no staircase in var is left (relax_steps): no Derivative(floor) terms. A Piecewise is differentiated
    # piece by piece and built once (sympy.diff would build it, and collapse its conditions, twice)
    if isinstance(e, sympy.Piecewise):
        return sympy.Piecewise(*[(sympy.factor_terms(sympy.expand(sympy.diff(p, var))), c) for p, c in e.args])
    d = sympy.diff(e, var)
    if isinstance(d, sympy.Piecewise):
        d = sympy.Piecewise(*[(sympy.factor_terms(sympy.expand(p)), c) for p, c in d.args])
    return d


def derivative(expr: Expr | Terms, var, *, values: Mapping | None = None, at=None) -> Expr:
    """``∂expr/∂var``, with ``values`` (all but ``var``) substituted first; at a point if ``at``.

    >>> from symcost.core.notation import sym
    >>> derivative(sym.L * (3 * sym.E * sym.d * sym.d_ff + sym.d * sym.E), sym.E)
    L*d*(3*d_ff + 1)
    """
    e = _expr(expr)
    d = _diff(_subs(e, values, var), var)
    if at is not None:
        return sympy.expand(d.xreplace({var: _expr(at)}))
    if d.is_polynomial(*d.free_symbols) if d.free_symbols else True:
        return sympy.factor_terms(sympy.expand(d))
    return d


def scale_summary(expr: Expr | Terms, var, *, values: Mapping | None = None, d: Expr | None = None) -> dict:
    """What ``symcost scale --wrt var`` prints: JSON-ready, formulas as ``to_text`` strings.

    ``values`` (the config's) are substituted for every symbol but ``var``; ``d``, when the caller has it,
    is ``derivative(expr, var, values=values)`` (not computed again). Keys: ``wrt``,
    ``derivative``, ``leading_term``, ``degree`` (None when not a polynomial in ``var``),
    ``asymptotic_degree``, ``big_o``, ``coefficients`` ({"2": str, ...}), ``regimes``
    ([{when, expr, degree, big_o}]).

    >>> from symcost.core.notation import sym
    >>> scale_summary(sym.L * sym.d * (3 * sym.E * sym.d_ff + sym.E), sym.E, values={sym.L: 2})
    {'wrt': 'E', 'derivative': '2*d*(3*d_ff + 1)', 'leading_term': '2*E*d*(3*d_ff + 1)', 'degree': 1, 'asymptotic_degree': 1, 'big_o': 'O(E)', 'coefficients': {'1': '2*d*(3*d_ff + 1)'}, 'regimes': [], 'note': ''}
    """
    s = polynomial_in(_expr(expr), var, values=values)
    e = _expr(expr)
    if any(a.has(var) for a in e.atoms(sympy.floor, sympy.ceiling, sympy.Mod)):
        relaxed = f"the derivative is that of the trend: floor/ceiling(x) read as x and Mod(x, m) as 0 in {var}"
        s["note"] = f"{s['note']}; {relaxed}" if s["note"] else relaxed
    return {
        "wrt": str(var),
        "derivative": to_text(d if d is not None else derivative(expr, var, values=values)),
        "leading_term": to_text(s["leading_term"]),
        "degree": s["degree"], "asymptotic_degree": s["asymptotic_degree"], "big_o": s["big_o"],
        "coefficients": {str(p): to_text(c) for p, c in s["coefficients"].items()},
        "regimes": [{**r, "expr": to_text(r["expr"])} for r in s["regimes"]],
        "note": s["note"],
    }


# -- crossovers and ratios -------------------------------------------------------------------------
def _pieces(d: Expr, x) -> list[tuple[Expr, sympy.Set]] | None:
    """``d`` as (expression, interval of x > 0) pieces, Min/Max/Piecewise unfolded."""
    pos = sympy.Interval.open(0, sympy.oo)
    if not _has_regimes(d, x):
        return [(d, pos)]
    pw = sympy.piecewise_fold(d.rewrite(sympy.Piecewise))
    if not isinstance(pw, sympy.Piecewise):
        return [(pw, pos)]
    out, taken = [], sympy.EmptySet
    for piece, cond in pw.args:
        try:
            where = (pos if cond == sympy.true else cond.as_set().intersect(pos)) - taken
        except (NotImplementedError, TypeError, ValueError):
            return None
        taken = taken | where
        if where != sympy.EmptySet:
            out.append((piece, where))
    return out


def _intervals(s: sympy.Set) -> list[sympy.Interval]:
    if isinstance(s, sympy.Interval):
        return [s]
    if isinstance(s, sympy.Union):
        return [i for a in s.args for i in _intervals(a)]
    if isinstance(s, sympy.FiniteSet):
        return [sympy.Interval(p, p) for p in s]
    return []


def _nonneg_set(p: Expr, x, where: sympy.Set) -> sympy.Set | None:
    """Where the polynomial ``p(x) ≥ 0`` inside ``where`` (exact real roots, any degree)."""
    p = sympy.expand(p)
    if not p.is_polynomial(x):
        return None
    if p.is_number:
        return where if p >= 0 else sympy.EmptySet
    roots = sorted(set(sympy.Poly(p, x).real_roots()), key=lambda r: float(r.evalf(30)))
    result = sympy.EmptySet
    for iv in _intervals(where):
        cuts = [iv.start] + [r for r in roots if iv.start < r < iv.end] + [iv.end]
        for lo, hi in zip(cuts, cuts[1:]):
            mid = (lo + 1 if hi == sympy.oo else (lo + hi) / 2)
            if p.xreplace({x: mid}).evalf(50) >= 0:
                result = result | sympy.Interval(lo, hi)
        for r in cuts:
            if r.is_finite and p.xreplace({x: r}).evalf(50) >= -1e-40:
                result = result | sympy.FiniteSet(r)
        result = result.intersect(iv)
    return result


def crossover(a: Expr | Terms, b: Expr | Terms, var=sym.T, *, values: Mapping | None = None) -> dict:
    """The smallest positive ``var`` where ``a ≥ b`` (values substituted first).

    Keys: ``at`` (the first ``var > 0`` where the order of a and b changes, exact, or None),
    ``at_float``, ``first_integer`` (smallest integer ``var ≥ 1`` with ``a ≥ b``), ``ranges`` (the
    integers ``var ≥ 1`` with ``a ≥ b``: ``integer_ranges``), ``crossings`` (every change of order,
    with who leads after it: ``crossings``), ``never`` (bool), ``always`` (true for every
    ``var > 0``), ``set`` (where ``a ≥ b``, as text), ``exact`` (bool), ``candidates`` (symbolic
    roots when other symbols remain).

    A ratio a/b that starts above 1 and falls (an MLP against attention, whose FLOPs grow as T²) is
    ``a ≥ b`` on ``(0, r]``: the crossover is ``r``, where b overtakes a — not the set's infimum 0.
    """
    ea = _expr(a)
    eb = _expr(b)
    x = sympy.Dummy("x", positive=True)
    d = _subs(ea - eb, values, var).xreplace({var: x})
    scale, rest = sympy.factor_terms(d).as_independent(x, as_Add=False)
    if scale.is_positive and rest.free_symbols:  # a positive common factor (B) keeps the sign
        d = rest
    out = {"at": None, "at_float": None, "first_integer": None, "never": False, "always": False,
           "set": None, "exact": True, "candidates": [], "ranges": [], "crossings": []}
    if d.free_symbols - {x}:  # symbolic: the positive roots, where decidable
        e = sympy.expand(d)
        if e.is_polynomial(x) and sympy.degree(e, x) <= 4:
            roots = [r for r in sympy.solve(e, x) if r.is_positive is not False and r.is_real is not False]
            out["candidates"] = [r.xreplace({x: var}) for r in roots]
            out["at"] = out["candidates"][0] if len(roots) == 1 else None
        else:
            out["exact"] = False
        return out
    pieces = _pieces(d, x)
    result = sympy.EmptySet
    for piece, where in pieces or []:
        s = _nonneg_set(piece, x, where)
        if s is None:
            pieces = None
            break
        result = result | s
    if pieces is None:
        out["exact"] = False
        return out
    out["set"] = str(result)
    out["ranges"] = integer_ranges(result)
    out["crossings"] = crossings(result)
    if result == sympy.EmptySet:
        out["never"] = True
        return out
    out["always"] = bool(sympy.Interval.open(0, sympy.oo).is_subset(result))
    if out["crossings"]:  # the first T > 0 where the order changes (not the 0 of a set (0, r])
        first = out["crossings"][0]["at"]
        out["at"], out["at_float"] = first, float(first.evalf(30))
    if out["ranges"]:
        out["first_integer"] = out["ranges"][0][0]
    return out


def integer_ranges(where: sympy.Set) -> list[tuple[int, int | None]]:
    """The integers ``n ≥ 1`` in ``where`` as ascending, merged ``(first, last)`` ranges, ``last`` None
    for no end: ``(0, 16384]`` → [(1, 16384)], ``[1000, ∞)`` → [(1000, None)].

    >>> integer_ranges(sympy.Union(sympy.Interval.Lopen(0, sympy.Rational(7, 2)), sympy.Interval(9, sympy.oo)))
    [(1, 3), (9, None)]
    """
    out: list[list] = []
    for iv in sorted(_intervals(where), key=lambda i: float(i.start.evalf(30))):
        lo = max(1, int(sympy.ceiling(iv.start)))
        if iv.left_open and lo == iv.start:
            lo += 1
        hi = None
        if iv.end != sympy.oo:
            hi = int(sympy.floor(iv.end))
            if iv.right_open and hi == iv.end:
                hi -= 1
            if hi < lo:
                continue
        if out and out[-1][1] is not None and lo <= out[-1][1] + 1:
            out[-1][1] = None if hi is None else max(hi, out[-1][1])
        elif not (out and out[-1][1] is None):
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


def crossings(where: sympy.Set) -> list[dict]:
    """The points ``T > 0`` where membership of ``where`` (the set of ``a ≥ b``) changes, ascending:
    ``{"at": exact point, "a_leads": whether a ≥ b just after it}``. A set ``(0, r]`` crosses once, at
    ``r`` where b overtakes a; ``[r, ∞)`` once, at ``r`` where a overtakes b."""
    ivs = sorted(_intervals(where), key=lambda i: float(i.start.evalf(30)))
    out = []
    for iv in ivs:
        if iv.start != 0 and not (out and out[-1]["at"] == iv.start):
            out.append({"at": iv.start, "a_leads": True})
        if iv.end != sympy.oo:
            out.append({"at": iv.end, "a_leads": False})
    # an isolated point (a = b touching) and a gap of measure zero are not a change of order
    merged = []
    for c in out:
        if merged and merged[-1]["at"] == c["at"]:
            merged.pop()
            continue
        merged.append(c)
    return merged


def ratio(a: Expr | Terms, b: Expr | Terms, var=sym.T, *, values: Mapping | None = None) -> dict:
    """``a / b`` simplified (polynomial cancellation), and its limits as ``var → ∞`` and at 1.

    >>> from symcost.core.notation import sym
    >>> ratio(sym.T**2 + sym.T, 2 * sym.T, sym.T)["ratio"]
    T/2 + 1/2
    """
    ea = _subs(_expr(a), values, var)
    eb = _subs(_expr(b), values, var)
    r = sympy.cancel(sympy.expand(ea) / sympy.expand(eb))
    la, lb = regime(ea, var, True), regime(eb, var, True)
    try:
        limit = sympy.limit(sympy.cancel(sympy.expand(la) / sympy.expand(lb)), var, sympy.oo)
    except (NotImplementedError, ValueError, TypeError):
        limit = None
    return {"ratio": r, "limit": limit}


# -- checking a hand derivation ----------------------------------------------------------------------
def _num(e: Expr, point: Mapping):
    v = e.xreplace(point)
    if not v.is_Rational:
        v = sympy.nsimplify(v) if v.is_Float else v.doit()
        if not v.is_Rational:
            return None
    return int(v) if v.is_Integer else Fraction(int(v.p), int(v.q))


def _candidates(terms: Terms) -> list[tuple[str, Expr]]:
    """Leaves and subtree totals at every depth (paths unique, tree order)."""
    seen: dict[str, Expr] = {}
    level = 1
    while True:
        layer = terms.depth(level)
        new = {k: v for k, v in layer.items() if k not in seen}
        if not new and level > 1:
            break
        seen.update(new)
        level += 1
        if level > 12:
            break
    order = list(terms.flatten())
    rank = {p: i for i, p in enumerate(order)}

    def pos(path):  # a subtree sorts at its first leaf
        return min((rank[p] for p in order if p == path or p.startswith(path + "/")), default=0)
    return sorted(((p, e) for p, e in seen.items() if e != 0), key=lambda pe: pos(pe[0]))


def _related(p: str, q: str) -> bool:
    return p == q or p.startswith(q + "/") or q.startswith(p + "/")


def explain(terms: Terms, diff: Expr, values: Mapping, *, max_terms: int = 3,
            seed: int = 0) -> dict:
    """Engine terms whose (±) sum equals ``diff`` — symbolically, else at the config's values.

    Returns {"match": "symbolic"|"config"|None, "sign": ±1, "terms": [paths],
    "alternatives": [[paths], ...]}. Candidates are leaves and subtree totals (no path together
    with its own ancestor); among equal matches the fewest and highest-level terms win, and for
    identical expressions (a tied embedding and head both ``V·d``) the later term in the tree.
    """
    cands = _candidates(terms)
    syms = set(diff.free_symbols)
    for _, e in cands:
        syms |= e.free_symbols
    rng = random.Random(seed)
    ordered = sorted(syms, key=lambda s: s.name)
    sym_points = [{s: sympy.Integer(rng.randrange(10_007, 1_000_003)) for s in ordered} for _ in range(2)]
    cfg_points = [{**{s: sympy.Integer(rng.randrange(10_007, 1_000_003)) for s in ordered},
                   **{k: sympy.Integer(v) for k, v in values.items()}} for _ in range(2)]
    none = {"match": None, "sign": 1, "terms": [], "alternatives": []}
    for kind, points in (("symbolic", sym_points), ("config", cfg_points)):
        target = tuple(_num(diff, pt) for pt in points)
        if None in target or all(t == 0 for t in target):
            continue
        vals = [tuple(_num(e, pt) for pt in points) for _, e in cands]
        index: dict[tuple, list[int]] = {}
        for i, v in enumerate(vals):
            if None not in v:
                index.setdefault(v, []).append(i)
        for size in range(1, max_terms + 1):
            found = []
            for sign in (1, -1):
                want = tuple(sign * t for t in target)
                for combo in combinations([i for i, v in enumerate(vals) if None not in v], size - 1):
                    paths = [cands[i][0] for i in combo]
                    if any(_related(p, q) for p, q in combinations(paths, 2)):
                        continue
                    rest = tuple(w - sum(vals[i][k] for i in combo) for k, w in enumerate(want))
                    for j in index.get(rest, []):
                        if j in combo or (combo and j < max(combo)):
                            continue
                        if any(_related(cands[j][0], p) for p in paths):
                            continue
                        chosen = list(combo) + [j]
                        total = sympy.Add(*(cands[i][1] for i in chosen))
                        residual = sympy.expand(sign * total - diff)
                        if kind == "config":
                            residual = sympy.expand(residual.xreplace(values))
                        if residual == 0:
                            found.append((sign, chosen))
            if found:
                def key(sc):
                    sign, chosen = sc
                    depth = sum(cands[i][0].count("/") for i in chosen)
                    return (sign != 1, depth, -max(chosen))
                found.sort(key=key)
                best = found[0]
                return {"match": kind, "sign": best[0], "terms": [cands[i][0] for i in best[1]],
                        "alternatives": [[cands[i][0] for i in c] for _, c in found[1:]]}
    return none


def _tidy(e: Expr) -> Expr:
    e = sympy.expand(e)
    return sympy.factor_terms(e) if e.free_symbols else e


# -- diagnosing a hand derivation ------------------------------------------------------------------
#: (symbols swapped or replaced in the engine's formula, what the user did if that reproduces theirs)
_SWAPS = (
    ({sym.H_kv: sym.H_q}, "K and V are counted with H_q heads (as multi-head attention); this model "
                          "has H_kv key/value heads (grouped-query attention)"),
    ({sym.H_q: sym.H_kv}, "H_kv is used where H_q (query heads) belongs"),
    ({sym.d_moe: sym.d_ff}, "the dense width d_ff is used for the experts, whose width is d_moe"),
    ({sym.d_ff: sym.d_moe}, "the expert width d_moe is used for the dense FFN, whose width is d_ff"),
    ({sym.k: sym.E}, "all E experts are counted where only k are active per token"),
    ({sym.E: sym.k}, "k experts are counted where all E exist"),
    ({sym.B: 1}, "the batch factor B is missing"),
    ({sym.D_h: sym.d / sym.H_q}, "D_h is taken as d/H_q; this model's head dim differs"),
)


def _group_counts(engine: Expr, values: Mapping) -> list[sympy.Symbol]:
    """Layer-group counts (``L_dense``, ``L_moe``, ``L_full``, ...) that add up to ``L``."""
    groups = sorted((s for s in engine.free_symbols if s.name.startswith("L_") and s in values),
                    key=lambda s: s.name)
    if sym.L not in values or not groups or sum(int(values[g]) for g in groups) != int(values[sym.L]):
        return []
    return groups


def _same(a: Expr, b: Expr, values: Mapping) -> bool:
    d = sympy.expand(a - b)
    return d == 0 or sympy.expand(d.xreplace(values)) == 0


def diagnose(engine: Expr, user: Expr, values: Mapping) -> list[str]:
    """Plain-language causes that reproduce ``user`` from ``engine`` exactly (at the config's
    values): a symbol swapped or replaced (``_SWAPS``), a constant or symbolic factor off, or the
    layer count taken as one ``L``. Empty when no single cause explains the difference."""
    found = []
    for sub, why in _SWAPS:
        if any(s in engine.free_symbols for s in sub) and _same(engine.xreplace(sub), user, values):
            found.append(why)
    T2, TT = sym.T ** 2, sym.T * (sym.T + 1)
    if sym.T in engine.free_symbols and sym.T in user.free_symbols and not found:
        if _same(sympy.expand(user).xreplace({T2: TT}), engine, values):
            found.append("T² is written where the count has T(T+1): causal attention pairs each of T queries "
                         "with the keys up to and including itself, T(T+1)/2 pairs, not T²/2")
        elif _same(sympy.expand(engine).xreplace({T2: TT}), user, values):
            found.append("T(T+1) is written where the count has T²: under --attention full every query meets "
                         "all T keys (T² pairs); T(T+1)/2 is the causal count")
    if user != 0 and not found:
        ratio = sympy.cancel(sympy.expand(engine.xreplace(values)) / sympy.expand(user.xreplace(values)))
        if ratio.is_Rational and ratio != 1 and max(abs(ratio.p), ratio.q) <= 64:
            found.append(f"the whole expression is off by a factor {ratio} (engine / yours)")
        elif ratio.free_symbols and sympy.denom(ratio).is_number \
                and sympy.numer(ratio).is_polynomial(*ratio.free_symbols) \
                and sympy.Poly(sympy.numer(ratio), *ratio.free_symbols).is_monomial:
            # (⌊T/C⌋, Max(0, 2 − B) are no polynomial generators: no factor named)
            found.append(f"a factor {ratio} is missing (engine / yours)")
    return found


def compound(engine_terms: Terms, user: Expr, values: Mapping) -> list[str]:
    """Two causes together: one symbol slip of ``_SWAPS`` (GQA counted as MHA, ...) and, in the swapped
    tree, engine terms missing from (or extra in) ``user`` — each named. Empty when no such pair
    reproduces ``user`` exactly."""
    engine = engine_terms.total
    for sub, why in _SWAPS:
        if not any(s in engine.free_symbols for s in sub):
            continue
        if all(k in values and sympy.sympify(v).xreplace(values) == values[k] for k, v in sub.items()):
            continue  # the slip changes nothing at this config (H_kv = H_q): it cannot be told apart
        swapped = engine_terms.map(lambda e, sub=sub: e.xreplace(sub))
        rest = sympy.expand(swapped.total - user)
        if rest == 0:
            continue
        found = explain(swapped, rest, values, max_terms=2)
        if found["match"]:
            how = "missing" if found["sign"] > 0 else "counted in addition"
            expr = sympy.Add(*(swapped.node_total(swapped[p]) for p in found["terms"]))
            return [why, f"and {', '.join(found['terms'])} is {how} ({to_text(expr)})"]
    return []


def _nonzero_somewhere(e: Expr, tries: int = 3) -> bool:
    """``e`` is not 0: exactly nonzero at one of a few random positive integer points (a proof that it is
    not identically 0; False says nothing)."""
    rng = random.Random(0)
    for _ in range(tries):
        v = _num(e, {s: sympy.Integer(rng.randrange(1, 100_003)) for s in e.free_symbols})
        if v is not None and v != 0:
            return True
    return False


def compare(engine_terms: Terms, user_expr: Expr, values: Mapping, *,
            user_text: str | None = None, explain_within: float | None = None) -> dict:
    """Check a hand-derived ``user_expr`` against the engine's ``Terms`` (``symcost check``).

    Keys: ``equal`` (symbolically or for this config), ``equal_symbolically``,
    ``equal_for_config``, ``difference`` (engine − user, simplified: the explaining terms'
    expressions when they account for it, else the symbolic difference), ``difference_symbolic``,
    ``difference_for_config`` (with ``values`` substituted; may keep ``T``/``B``),
    ``difference_value`` (int, or None when symbols remain), ``explained_by`` (term paths),
    ``explanation`` ([{term, sign, expr, value}]), ``match`` ("symbolic" | "config" | None),
    ``alternatives``, ``unknown_symbols`` (symbols the model neither uses nor has a value for),
    ``config_numbers`` (numbers ≥ 16 written in ``user_text``, or left in ``user_expr``, that
    equal a config value: hard-coded config numbers), and ``note``.

    ``explain_within``: CPU seconds for the work past the symbolic verdict -- the difference expanded at the
    config's values (past them, an exact nonzero value at a random point decides it, else the expansion
    runs on), its tidy form, and naming the cause (``diagnose``, ``compound``, the components, ``explain``),
    which on a calibrated formula of nested regimes can take seconds; past them the verdict and the
    difference stand and ``note`` says the cause was not looked for to the end.
    """
    # T mod C written either way: a - b·⌊a/b⌋, the form the engine's chunk counts take
    as_floor = lambda e: e.replace(lambda x: isinstance(x, sympy.Mod), lambda x: x.rewrite(sympy.floor))  # noqa: E731
    engine = as_floor(engine_terms.total)
    user = as_floor(_expr(user_expr))
    values = {k: sympy.Integer(v) for k, v in values.items()}
    notes = []
    groups = _group_counts(engine, values)
    if sym.L in user.free_symbols and sym.L not in engine.free_symbols and groups:
        # L·(…) over a stack of several layer kinds: read it as the sum of the groups
        user = user.xreplace({sym.L: sympy.Add(*groups)})
        notes.append(f"L read as {' + '.join(g.name for g in groups)} (this model's layer groups)")
    end = None if explain_within is None else time.process_time() + explain_within
    diff = sympy.expand(engine - user)
    eq_sym = diff == 0
    cut = False  # the budget ran out: the rest is the verdict and the difference as they stand
    try:
        with until(end):
            diff_cfg = sympy.expand(diff.xreplace(values))
    except DeadlineExceeded:
        cut, diff_cfg = True, diff.xreplace(values)
        if not _nonzero_somewhere(diff_cfg):  # perhaps 0: only the expansion can say, however long
            diff_cfg = sympy.expand(diff_cfg)
    eq_cfg = diff_cfg == 0
    tidy = diff  # the expanded difference as it stands, tidied only within the budget
    if not cut:
        try:
            with until(end):
                tidy = _tidy(diff)
        except DeadlineExceeded:
            cut = True
    known = engine.free_symbols | set(values) | {sym.T, sym.B}
    unknown = sorted(s.name for s in user.free_symbols - known)
    inv: dict[int, list[str]] = {}
    for k, v in values.items():
        inv.setdefault(int(v), []).append(k.name)
    literals = ([int(n) for n in re.findall(r"(?<![\w.])\d+(?![\w.])", user_text)] if user_text
                else [abs(int(n)) for n in user.atoms(sympy.Integer)])  # SymPy distributes 32*(...)
    numbers = sorted({n for n in literals if n >= 16})
    config_numbers = [{"number": n, "symbols": inv[n]} for n in numbers if n in inv]
    out = {"equal": bool(eq_sym or eq_cfg), "equal_symbolically": bool(eq_sym),
           "equal_for_config": bool(eq_cfg), "difference": "0",
           "difference_symbolic": to_text(tidy),
           "difference_for_config": to_text(diff_cfg),
           "difference_value": int(diff_cfg) if diff_cfg.is_Integer else None,
           "explained_by": [], "explanation": [], "match": None, "alternatives": [],
           "unknown_symbols": unknown, "config_numbers": config_numbers, "note": "",
           "diagnosis": [], "components": []}
    if eq_sym:
        out["note"] = "; ".join(notes)
        return out
    if eq_cfg:
        out["note"] = "; ".join(notes + ["equal for this config only: the expressions differ "
                                         f"symbolically by {out['difference_symbolic']}, which is 0 "
                                         "at the config's values"])
        return out
    out["difference"] = out["difference_symbolic"]
    try:
        if not cut:
            with until(end):
                diagnosis = diagnose(engine, user, values) or compound(engine_terms, user, values)
                components = _by_component(engine_terms, user, values)
                found = explain(engine_terms, diff, values)
    except DeadlineExceeded:
        cut = True
    if cut:
        notes.append("the cause (a slip, a missing or extra term) was not looked for to the end: past the "
                     "command's CPU budget on this formula's nested regimes, the difference is the whole answer")
        out["note"] = "; ".join(notes)
        return out
    out["diagnosis"], out["components"] = diagnosis, components
    if found["match"]:
        sub = {p: (engine_terms[p] if not isinstance(engine_terms[p], Terms) else engine_terms[p].total)
               for p in found["terms"]}
        expl = sympy.Add(*sub.values()) * found["sign"]
        out["difference"] = to_text(_tidy(expl))
        out.update(explained_by=found["terms"], match=found["match"],
                   alternatives=found["alternatives"])
        for p, e in sub.items():
            v = sympy.expand(e.xreplace(values))
            out["explanation"].append({"term": p, "sign": found["sign"], "expr": to_text(e),
                                       "value": int(v) if v.is_Integer else None})
        who = ", ".join(found["terms"])
        if found["sign"] > 0:
            out["note"] = f"the expression is missing {out['difference']}: {who}"
        else:
            out["note"] = f"the expression has {to_text(_tidy(-expl))} too many: {who}"
        if found["match"] == "config":
            out["note"] += " (at this config's values)"
    if out["diagnosis"]:  # a named cause beats a list of terms that happen to add up to the difference
        out["note"] = "; ".join(out["diagnosis"])
        out["difference"] = out["difference_symbolic"]
    out["note"] = "; ".join(notes + ([out["note"]] if out["note"] else []))
    return out


def _by_component(terms: Terms, user: Expr, values: Mapping) -> list[dict]:
    """Yours vs the engine's per top-level component, when ``user`` is a sum whose addends can be
    assigned to components by their symbols at the config's values (monomials sharing a
    component's symbol signature). Empty when the assignment is ambiguous."""
    comps = terms.depth(2)
    sig = lambda e: frozenset(s for s in e.free_symbols if s not in (sym.B, sym.T))  # noqa: E731
    by_sig: dict[frozenset, list[str]] = {}
    for path, e in comps.items():
        for mono in sympy.Add.make_args(sympy.expand(e)):
            by_sig.setdefault(sig(mono), [])
            if path not in by_sig[sig(mono)]:
                by_sig[sig(mono)].append(path)
    mine: dict[str, Expr] = {p: sympy.Integer(0) for p in comps}
    for mono in sympy.Add.make_args(sympy.expand(user)):
        owners = by_sig.get(sig(mono), [])
        if len(owners) != 1:
            return []
        mine[owners[0]] += mono
    rows = []
    for p, e in comps.items():
        ev = sympy.expand(e.xreplace(values))
        uv = sympy.expand(mine[p].xreplace(values))
        rows.append({"term": p, "engine": to_text(e), "yours": to_text(_tidy(mine[p])),
                     "engine_value": int(ev) if ev.is_Integer else None,
                     "yours_value": int(uv) if uv.is_Integer else None,
                     "equal": sympy.expand(ev - uv) == 0})
    return rows


# -- export ------------------------------------------------------------------------------------------
def lambdify_by_name(expr: Expr) -> tuple[str, callable]:
    """(Python source, callable) for ``expr``; the callable takes the symbols as keywords.

    Missing symbols and names outside the notation raise ``TypeError``; notation names the
    formula does not use are ignored (so a whole config's values can be passed).

    Vectorised with NumPy: pass arrays (float64 avoids int64 overflow for large models).

    >>> from symcost.core.notation import sym
    >>> src, f = lambdify_by_name(2 * sym.B * sym.T * sym.d)
    >>> f(B=1, T=3, d=4)
    24
    >>> print(src.splitlines()[2])
    def formula(*, B, T, d):
    """
    syms = sorted(expr.free_symbols, key=lambda s: s.name)
    names = [s.name for s in syms]
    for n in names:
        if n not in ENTRIES or not n.isidentifier():
            raise ValueError(f"symbol {n!r} is not a notation name")
    src, ns = numeric.source({"value": expr}, syms, name="_formula")
    exec(compile(src, "<symcost.analysis.symbolic>", "exec"), ns)  # printed from a SymPy tree, not user text
    fn = lambda *args: ns["_formula"](*args)["value"]  # noqa: E731
    body = src.split("\n", 1)[1].replace("    return {\n        'value': ", "    return ").replace(",\n    }\n", "\n")
    src = f"import numpy\n\ndef formula(*, {', '.join(names)}):\n{body}"

    def formula(**kwargs):
        missing = [n for n in names if n not in kwargs]
        unknown = [k for k in kwargs if k not in names and k not in ENTRIES]  # unused names: fine
        if missing or unknown:
            raise TypeError(f"formula() takes keywords {names}; missing {missing}, unexpected {unknown}")
        return fn(*(kwargs[n] for n in names))

    formula.__doc__ = src
    formula.names = names
    return src, formula
