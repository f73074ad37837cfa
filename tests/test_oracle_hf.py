"""The engine against the real transformers classes: parameters, FLOPs and cache, exactly.

Bundled configs are built on the ``meta`` device (no memory) for the parameter count; tiny random
configs of every family run on CPU under FlopCounterMode (convention ``full``, eager attention and
experts) for prefill at several ``T`` and batch 1 and 2, one decode step with a cache, and the
cache object they return. A polynomial that agrees at enough random points is the same polynomial.

The tiny cases are a module-scoped parameter here (``case``), so pytest runs every test of one case
before the next and the CPU model is built once per case (``hf``), not once per test: the FLOPs and the
cache a forward reports do not depend on the weights, and no test here changes them.
"""
import pytest

import symcost
from symcost.architectures import loader
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from tests import oracle
from tests.conftest import TINY


@pytest.fixture(scope="module", params=[c[1:] for c in TINY], ids=[c[0] for c in TINY])
def case(request):
    """(raw config, tiny module) of one tiny case (conftest's per-test parameter, module-scoped)."""
    return request.param


@pytest.fixture(scope="module")
def hf(case):
    """The case's transformers model on CPU (eager attention and experts), built once."""
    return oracle.build(case[0])


def _supported_bundled():
    out = []
    for name in loader.bundled_names():
        try:
            symcost.build(name)
        except SymcostError:
            continue
        out.append(name)
    return out


@pytest.mark.parametrize("name", _supported_bundled())
def test_bundled_params_equal_transformers(name):
    _, raw = loader.read_json(name)
    m = symcost.build(name)
    assert m.params().total_at(m.values) == oracle.params(raw)


def test_tiny_params(case):
    raw, _ = case
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)


def test_tiny_buffers(case):
    """Checkpoint buffers the engine reports (e_score_correction_bias) exist in the class: per buffer
    name, the engine's groups together hold as many elements as the class's modules of that name."""
    raw, _ = case
    m = symcost.build(dict(raw))
    held = oracle.buffers(oracle.build(raw, "meta"))
    engine: dict[str, int] = {}
    for path, n in m.buffers().at(m.values).items():
        leaf = path.rsplit("/", 1)[-1]
        engine[leaf] = engine.get(leaf, 0) + n
    for leaf, n in engine.items():
        assert sum(v for k, v in held.items() if k.endswith(leaf)) == n, leaf


def test_tiny_prefill_flops(case, hf):
    raw, mod = case
    m = symcost.build(dict(raw))
    model = hf
    terms = m.flops(Phase(kind="prefill", attention="full", logits="all", mla="expand", impl="reference"))
    for T in getattr(mod, "T_VALUES", (5, 9)):
        for B in (1, 2):
            assert terms.total_at(m.values_with(T=T, B=B)) == oracle.prefill_flops(model, B, T), (T, B)


def test_tiny_decode_flops(case, hf):
    raw, mod = case
    m = symcost.build(dict(raw))
    model = hf
    terms = m.flops(Phase(kind="decode", attention="full", logits="all", mla="expand", impl="reference"))
    for T in getattr(mod, "T_VALUES", (5, 9)):
        assert terms.total_at(m.values_with(T=T, B=2)) == oracle.decode_flops(model, 2, T), T


def test_tiny_cache_elements(case, hf):
    raw, mod = case
    m = symcost.build(dict(raw))
    model = hf
    terms = m.cache()
    for T in getattr(mod, "T_VALUES", (5, 9)):
        for B in (1, 2):
            assert terms.total_at(m.values_with(T=T, B=B)) == oracle.cache_elements(model, B, T), (T, B)
