"""The generated documents (``symcost.documents.generate.render_all``), rendered once per test
session: a render takes minutes on two cores, and test_generated_docs, test_plot and test_sync
each ask for the same pages. Read-only: a test that wants to change a page copies it."""
from __future__ import annotations

import functools
from types import MappingProxyType

from symcost.documents.generate import render_all


@functools.cache
def rendered() -> MappingProxyType:
    """Relative path → text of every generated file (``generate.CONTEXTS`` is filled by the same call)."""
    return MappingProxyType(render_all())
