"""Values derived once per model object, where one command asks the same question several times.

A ``Model`` is built once per command and not changed afterwards, so what is derived from it alone
(and from a few hashable options) can be kept by the model's identity: ``memory`` profiles the
engine at every tensor-parallel size it tries, the sheet's training search and ``train_memory``
split the same stages for every candidate. The model is kept with its entry, so its ``id`` is not
reused while the entry lives; a table holds at most ``size`` entries and starts again when full.
Callers that change a returned object copy it first (``Terms.copy``), as with any shared tree.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable


class PerModel:
    """A small table of ``build()`` results by (model identity, ``key``)."""

    def __init__(self, size: int = 32):
        self.size = size
        self._table: dict = {}

    def get(self, model, key: Hashable, build: Callable):
        """``build()`` for (``model``, ``key``), computed on the first call only."""
        k = (id(model), key)
        hit = self._table.get(k)
        if hit is not None and hit[0] is model:
            return hit[1]
        if len(self._table) >= self.size:
            self._table.clear()
        out = build()
        self._table[k] = (model, out)
        return out
