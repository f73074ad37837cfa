"""Terms: an ordered tree of named SymPy terms.

Every cost (parameters, FLOPs, cache elements) is a ``Terms`` tree whose leaves are SymPy
expressions and whose keys are stable snake_case names (``attn/q_proj``). The tree, not a
flattened sum, is what the LaTeX derivation prints, what a hand-derivation check diffs and what
keeps simplification cheap.

>>> from symcost.notation import sym
>>> t = Terms({"q_proj": sym.d * sym.H_q * sym.D_h, "norm": sym.d})
>>> t.total
D_h*H_q*d + d
>>> t.at({sym.d: 8, sym.H_q: 2, sym.D_h: 4})["q_proj"]
64
"""
from __future__ import annotations

from typing import Iterator, Mapping, Union

import sympy

Leaf = sympy.Expr
Node = Union[Leaf, "Terms"]


class Terms:
    """An ordered mapping ``name -> expression | Terms`` with an optional doc per name."""

    __slots__ = ("_items", "docs")

    def __init__(self, items: Mapping[str, Node] | None = None, docs: Mapping[str, str] | None = None):
        self._items: dict[str, Node] = {}
        self.docs: dict[str, str] = dict(docs or {})
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
                     self.docs)

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
                     self.docs)

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

    def at(self, values: Mapping) -> dict[str, int]:
        """Exact integer value of every leaf with ``values`` substituted (flattened paths)."""
        return {path: exact(expr, values) for path, expr in self.flatten().items()}

    def total_at(self, values: Mapping) -> int:
        return exact(self.total, values)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k!r}: {v!r}" for k, v in self._items.items())
        return f"Terms({{{inner}}})"

    # -- notebooks ---------------------------------------------------------------------------
    def _repr_markdown_(self) -> str:
        rows = ["| term | formula |", "| --- | --- |"]
        rows += [f"| `{k}` | ${sympy.latex(v)}$ |" for k, v in self.flatten().items()]
        return "\n".join(rows)


def exact(expr, values: Mapping) -> int:
    """Substitute ``values`` and return an exact Python int (raises if not an integer)."""
    value = sympy.sympify(sympy.sympify(expr).xreplace(values))
    if not value.is_Integer:
        value = sympy.nsimplify(value) if value.is_Float else value.doit()
    if not value.is_Integer:
        raise ValueError(f"expression did not evaluate to an integer: {value}")
    return int(value)
