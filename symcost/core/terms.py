"""Terms: an ordered tree of named SymPy terms.

Every cost (parameters, FLOPs, cache elements) is a ``Terms`` tree whose leaves are SymPy
expressions and whose keys are stable snake_case names (``attn/q_proj``). The tree, not a
flattened sum, is what the LaTeX derivation prints, what a hand-derivation check diffs and what
keeps simplification cheap.

>>> from symcost.core.notation import sym
>>> t = Terms({"q_proj": sym.d * sym.H_q * sym.D_h, "norm": sym.d})
>>> t.total
D_h*H_q*d + d
>>> t.at({sym.d: 8, sym.H_q: 2, sym.D_h: 4})["q_proj"]
64
>>> t.total_at(d=8, H_q=2, D_h=4)
72

A tree built by a ``Model`` carries the config's values (``bound``), so only the user's inputs
remain to give: ``m.flops(phase).total_at(T=4096, B=1)``.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Iterator, Mapping, Union

import sympy

from .errors import SymcostError
from .notation import by_name

Leaf = sympy.Expr
Node = Union[Leaf, "Terms"]


class Terms:
    """An ordered mapping ``name -> expression | Terms`` with an optional doc per name."""

    __slots__ = ("_items", "docs", "bound")

    def __init__(self, items: Mapping[str, Node] | None = None, docs: Mapping[str, str] | None = None,
                 bound: Mapping | None = None):
        self._items: dict[str, Node] = {}
        self.docs: dict[str, str] = dict(docs or {})
        #: default symbol values (a model's config values) used by ``at`` / ``total_at``
        self.bound: dict = dict(bound or {})
        for key, value in (items or {}).items():
            self.add(key, value)

    # -- building ----------------------------------------------------------------------------
    def add(self, key: str, value: Node | int, doc: str | None = None) -> "Terms":
        """Add (or accumulate into) ``key``. Returns self, so calls chain."""
        if not isinstance(value, Terms):
            value = sympy.sympify(value) if isinstance(value, int) else value
        if key in self._items:
            old = self._items[key]
            if isinstance(old, Terms) and isinstance(value, Terms):
                old.merge(value)
            elif not isinstance(old, Terms) and not isinstance(value, Terms):
                self._items[key] = old + value
            else:
                raise ValueError(f"term {key!r} is both a leaf and a subtree")
        else:
            self._items[key] = value
        if doc:
            self.docs[key] = doc
        return self

    def merge(self, other: "Terms") -> "Terms":
        for key, value in other._items.items():
            self.add(key, value.copy() if isinstance(value, Terms) else value, other.docs.get(key))
        return self

    def copy(self) -> "Terms":
        return Terms({k: (v.copy() if isinstance(v, Terms) else v) for k, v in self._items.items()},
                     self.docs, self.bound)

    def bind(self, values: Mapping) -> "Terms":
        """The same tree with ``values`` as its default substitution (see ``at``)."""
        out = self.copy()
        out.bound = dict(values)
        return out

    # -- reading -----------------------------------------------------------------------------
    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __getitem__(self, key: str) -> Node:
        node: Node = self
        for part in key.split("/"):
            if not isinstance(node, Terms):
                raise KeyError(key)
            node = node._items[part]
        return node

    def __contains__(self, key: str) -> bool:
        try:
            self[key]
        except KeyError:
            return False
        return True

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def items(self):
        return self._items.items()

    def flatten(self, prefix: str = "") -> dict[str, Leaf]:
        """Leaves by full path (``layers/attn/q_proj``)."""
        out: dict[str, Leaf] = {}
        for key, value in self._items.items():
            path = f"{prefix}{key}"
            if isinstance(value, Terms):
                out.update(value.flatten(path + "/"))
            else:
                out[path] = value
        return out

    def docs_flat(self, prefix: str = "") -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in self._items.items():
            path = f"{prefix}{key}"
            if key in self.docs:
                out[path] = self.docs[key]
            if isinstance(value, Terms):
                out.update(value.docs_flat(path + "/"))
        return out

    def node_total(self, node: Node) -> Leaf:
        return node.total if isinstance(node, Terms) else node

    @property
    def total(self) -> Leaf:
        """The sum of all leaves (kept unexpanded: a sum of products)."""
        return sympy.Add(*self.flatten().values())

    def depth(self, level: int) -> dict[str, Leaf]:
        """Subtotals of the nodes ``level`` deep (1 = top-level keys)."""
        out: dict[str, Leaf] = {}
        for key, value in self._items.items():
            if isinstance(value, Terms) and level > 1:
                for sub, expr in value.depth(level - 1).items():
                    out[f"{key}/{sub}"] = expr
            else:
                out[key] = self.node_total(value)
        return out

    # -- transforming ------------------------------------------------------------------------
    def map(self, fn) -> "Terms":
        """A new tree with ``fn`` applied to every leaf (structure and docs kept)."""
        return Terms({k: (v.map(fn) if isinstance(v, Terms) else fn(v)) for k, v in self._items.items()},
                     self.docs, self.bound)

    def scale(self, factor) -> "Terms":
        return self.map(lambda e: factor * e)

    def subs(self, values: Mapping) -> "Terms":
        return self.map(lambda e: e.xreplace(values))

    def diff(self, symbol) -> "Terms":
        return self.map(lambda e: sympy.diff(e, symbol))

    def prune(self) -> "Terms":
        """Drop leaves that are identically zero and subtrees left empty."""
        out = Terms()
        for k, v in self._items.items():
            if isinstance(v, Terms):
                v = v.prune()
                if v:
                    out.add(k, v, self.docs.get(k))
            elif v != 0:
                out.add(k, v, self.docs.get(k))
        return out

    def values(self, values: Mapping | None = None, **by_name) -> dict:
        """The substitution ``at`` uses: the bound values, then ``values`` (keys: symbols or their
        names), then keyword names (``T=4096``). An unknown name is an error, never ignored."""
        out = dict(self.bound)
        for key, v in list((values or {}).items()) + list(by_name.items()):
            out[_symbol(key)] = v if isinstance(v, sympy.Basic) else _number(key, v)
        return out

    def at(self, values: Mapping | None = None, **by_name) -> dict[str, int]:
        """Exact integer value of every leaf with ``values`` substituted (flattened paths)."""
        vals = self.values(values, **by_name)
        return {path: exact(expr, vals) for path, expr in self.flatten().items()}

    def total_at(self, values: Mapping | None = None, **by_name) -> int:
        """The exact integer total: ``total_at(T=4096, B=1)`` or ``total_at({sym.T: 4096})``."""
        return exact(self.total, self.values(values, **by_name))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k!r}: {v!r}" for k, v in self._items.items())
        return f"Terms({{{inner}}})"

    # -- notebooks ---------------------------------------------------------------------------
    def _rows(self) -> list[tuple[str, Leaf, int | None]]:
        """(path, formula, exact value or None) for each leaf; values only when all are known."""
        flat = self.flatten()
        try:
            vals = [exact(e, self.bound) for e in flat.values()] if self.bound else None
        except ValueError:
            vals = None
        return [(p, e, vals[i] if vals else None) for i, (p, e) in enumerate(flat.items())]

    def _repr_markdown_(self) -> str:
        rows = self._rows()
        total = sum(v for _, _, v in rows) if rows and rows[0][2] is not None else None
        if total is None:
            out = ["| term | formula |", "| --- | --- |"]
            out += [f"| `{p}` | ${sympy.latex(e)}$ |" for p, e, _ in rows]
            return "\n".join(out)
        out = ["| term | formula | value | share |", "| --- | --- | ---: | ---: |"]
        out += [f"| `{p}` | ${sympy.latex(e)}$ | {v:,} | {_share(v, total)} |" for p, e, v in rows]
        out.append(f"| **total** | | **{total:,}** | 100% |")
        return "\n".join(out)

    def _repr_latex_(self) -> str:
        from .latex import latex  # lazy: Jupyter display only; params and flops never load the printer
        rows = self._rows()
        total = sum(v for _, _, v in rows) if rows and rows[0][2] is not None else None
        name = lambda p: "\\texttt{" + p.replace("_", "\\_") + "}"  # noqa: E731
        if total is None:
            body = " \\\\ ".join(f"{name(p)} & {latex(e)}" for p, e, _ in rows)
            return f"$\\begin{{array}}{{ll}} {body} \\end{{array}}$"
        body = " \\\\ ".join(f"{name(p)} & {latex(e)} & {v:,} & {_share(v, total)}".replace("%", "\\%")
                              for p, e, v in rows)
        return (f"$\\begin{{array}}{{llrr}} {body} \\\\ \\hline \\textbf{{total}} & & {total:,} & "
                f"100\\% \\end{{array}}$")


def _share(v: int, total: int) -> str:
    return f"{100 * v / total:.2f}%" if total else "-"


def _symbol(key) -> sympy.Symbol:
    if isinstance(key, sympy.Symbol):
        return key
    if isinstance(key, str):
        try:
            return by_name(key)
        except (KeyError, AttributeError, ValueError):
            raise SymcostError(f"unknown symbol {key[:40]!r} (the notation's names: "
                               "symcost.core.notation.names())") from None
    raise SymcostError(f"a value key must be a symbol or its name, got {type(key).__name__}")


def _number(key, v) -> sympy.Expr:
    if isinstance(v, bool) or not isinstance(v, (int, sympy.Rational)):
        if isinstance(v, Fraction):
            return sympy.Rational(v.numerator, v.denominator)
        raise SymcostError(f"value of {key}: expected an integer, got {type(v).__name__}")
    return sympy.Integer(v) if isinstance(v, int) else v


def exact(expr, values: Mapping) -> int:
    """Substitute ``values`` and return an exact Python int.

    Raises ``SymcostError`` naming the symbols still free (``T``, ``B``, ...) when values are
    missing, and ``ValueError`` when the result is not an integer.
    """
    value = sympy.sympify(sympy.sympify(expr).xreplace(values))
    if not value.is_Integer:
        value = sympy.nsimplify(value) if value.is_Float else value.doit()
    if not value.is_Integer:
        free = sorted(str(s) for s in getattr(value, "free_symbols", ()))
        if free:
            raise SymcostError(f"no value for {', '.join(free)}: give them, e.g. total_at("
                               + ", ".join(f"{n}=..." for n in free[:4]) + ")")
        raise ValueError(f"expression did not evaluate to an integer: {value}")
    return int(value)


def relax_steps(e: sympy.Expr, var) -> sympy.Expr:
    """``e`` with its staircases in ``var`` replaced by their trend: ``floor(x)``, ``ceiling(x)`` →
    ``x`` and ``Mod(x, m)`` → 0 (consistent: ``m·floor(T/m) + Mod(T, m) = T`` stays ``T``). A step
    function's derivative is 0 almost everywhere, which says nothing about growth; the trend's is
    the slope a user asks ``scale`` for. Used for derivatives only, never for values.

    >>> from symcost.core.notation import sym
    >>> relax_steps(sym.L * sympy.floor(sym.T / 4) + sympy.Mod(sym.T, 4), sym.T)
    L*T/4
    """
    steps = [a for a in e.atoms(sympy.floor, sympy.ceiling, sympy.Mod) if a.has(var)]
    if not steps:
        return e
    return e.xreplace({a: (0 if isinstance(a, sympy.Mod) else a.args[0]) for a in steps})


def largest(*exprs) -> sympy.Expr:
    """``sympy.Max`` of ``exprs`` (0 for none), built once per set of arguments.

    ``Max`` compares every pair of its arguments under the symbols' assumptions to drop the dominated
    ones, which for byte formulas holding ``Max`` themselves costs tenths of a second per call; the
    training formulas ask for the same maxima for every candidate layout of a search (they are in
    the layout symbols), so the result is kept. ``Max`` takes its arguments as a set, so the order
    they come in never changes the result."""
    if not exprs:
        return sympy.Integer(0)
    return _largest(frozenset(sympy.sympify(e) for e in exprs))


_LARGEST: dict = {}


def _largest(args: frozenset) -> sympy.Expr:
    hit = _LARGEST.get(args)
    if hit is None:
        if len(_LARGEST) > 4096:
            _LARGEST.clear()
        with _pairs_remembered():
            hit = _LARGEST[args] = sympy.Max(*args)
    return hit


#: ``Max``'s pairwise comparisons already made: (class, x, y) -> the answer
_CONNECTED: dict = {}


class _pairs_remembered:
    """While building one ``Max``, SymPy's pairwise comparison of two arguments
    (``MinMaxBase._is_connected``: which of x, y is provably larger, under the symbols' assumptions) is
    looked up in ``_CONNECTED`` before it is made. The comparison is a pure function of the two
    expressions, and the byte formulas ask for the same pairs over and over -- the per-layer working sets
    of every pipeline stage and layout, in every ``Max`` that holds them (the Nemotron-Ultra sheet: 1,975
    comparisons of 294 pairs, 3.3 of its 7.0 s) -- while SymPy's own cache, which would keep them, is
    cleared by every ``sympy.evaluate(False)`` block. A pair whose difference is seen to take both
    signs inside the symbols' domain (``_takes_both_signs``) is answered "not comparable" at once: SymPy,
    being sound, answers it so too, after a proof search that costs most of the time spent in ``Max``
    (the Nemotron-Ultra sheet --html: 204 such pairs, 1.1 of its 8.8 s of CPU). The result is SymPy's ``Max`` exactly."""

    def __enter__(self):
        from sympy.functions.elementary.miscellaneous import MinMaxBase
        self.base, self.original = MinMaxBase, MinMaxBase.__dict__.get("_is_connected")
        if not isinstance(self.original, classmethod):  # another SymPy: its own Max, nothing remembered
            return self
        compare = self.original.__func__

        def remembered(cls, x, y):
            if x.is_Number and y.is_Number:  # numbers (the probe's own points among them): compared at once
                return compare(cls, x, y)
            key = (cls, x, y)
            hit = _CONNECTED.get(key)
            if hit is None:
                if len(_CONNECTED) > 65536:
                    _CONNECTED.clear()
                hit = _CONNECTED[key] = False if _takes_both_signs(x - y) else compare(cls, x, y)
            return hit
        MinMaxBase._is_connected = classmethod(remembered)
        return self

    def __exit__(self, *exc):
        if isinstance(self.original, classmethod):
            self.base._is_connected = self.original
        return False


#: the probe values of ``_takes_both_signs``: a symbol at its least or far beyond any size in use
_LOW, _HIGH = sympy.Integer(1), sympy.Integer(2 ** 64)


def _takes_both_signs(d: sympy.Expr) -> bool:
    """Whether ``d`` is seen to be positive at one point and negative at another of its symbols'
    domain, so that neither ``d >= 0`` nor ``d <= 0`` holds for all of them. The points set each
    symbol to 1 or 2^64 (all low, all high, each one high alone, each one low alone), values every
    positive or non-negative symbol, integer or not, admits; a symbol that may be negative ends the
    probe (False: left to SymPy), as does a value that is not a number.

    >>> from symcost.core.notation import sym
    >>> _takes_both_signs(sym.B * sym.T - 3 * sym.d), _takes_both_signs(sym.B * sym.T + sym.d)
    (True, False)
    """
    free = sorted(d.free_symbols, key=lambda s: s.name)
    if not free or len(free) > 16 or not all(s.is_nonnegative for s in free):
        return False
    low, high = dict.fromkeys(free, _LOW), dict.fromkeys(free, _HIGH)
    points = [low, high] + [{**low, s: _HIGH} for s in free] + [{**high, s: _LOW} for s in free]
    seen = set()
    for p in points:
        v = d.xreplace(p)
        if not (v.is_Rational or (v.is_Float and v.is_finite)):
            return False
        if v:
            seen.add(bool(v > 0))
            if len(seen) == 2:
                return True
    return False
