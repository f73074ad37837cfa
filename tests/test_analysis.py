"""Symbolic analysis: structure in T, derivatives, crossovers, hand-derivation checks, sweeps."""
from __future__ import annotations

import random

import numpy as np
import pytest
import sympy

import symcost
from symcost.analysis.symbolic import compare, crossover, derivative, lambdify_by_name, polynomial_in, ratio
from symcost.core.conventions import Phase
from symcost.core.errors import SymcostError
from symcost.core.exprparse import parse, parse_map
from symcost.core.notation import sym

# A Mistral-style model whose every layer has a 4096-token sliding window.
SWA = {"model_type": "mistral", "hidden_size": 4096, "vocab_size": 32000, "num_hidden_layers": 32,
       "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
       "sliding_window": 4096}

# (model, phase kind, attention, expected degree in T)
DEGREES = [
    ("llama-3.1-8b", "prefill", "full", 2),
    ("llama-3.1-8b", "prefill", "causal", 2),
    ("llama-3.1-8b", "decode", "full", 1),
    ("llama-2-7b", "decode", "causal", 1),
]


@pytest.mark.parametrize("name, kind, attention, degree", DEGREES)
def test_degree_in_T(name, kind, attention, degree):
    m = symcost.build(name)
    for values in (None, m.values):
        s = polynomial_in(m.flops(Phase(kind=kind, attention=attention)), sym.T, values=values)
        assert s["degree"] == degree and s["polynomial"]
        assert s["big_o"] == ("O(T)" if degree == 1 else f"O(T^{degree})")
    assert polynomial_in(m.params(), sym.T)["big_o"] == "O(1)"
    assert polynomial_in(m.cache(), sym.T)["degree"] == 1


def test_named_coefficients():
    m = symcost.build("llama-3.1-8b")
    s = polynomial_in(m.flops(Phase(kind="prefill")), sym.T)
    assert set(s["by_term"][2]) == {"layers/self_attn/scores", "layers/self_attn/values"}
    assert sympy.expand(s["leading_term"] - 4 * sym.B * sym.L * sym.H_q * sym.D_h * sym.T**2) == 0


@pytest.mark.parametrize("attention", ["full", "causal"])
def test_sliding_window_decode_constant_beyond_W(attention):
    m = symcost.build(SWA)
    s = polynomial_in(m.flops(Phase(kind="decode", attention=attention)), sym.T)
    assert s["degree"] is None and not s["polynomial"]
    assert s["big_o"] == "O(1)" and s["asymptotic_degree"] == 0
    small, large = s["regimes"]
    assert small["degree"] == 1 and large["degree"] == 0
    assert sym.T not in large["expr"].free_symbols
    # and numerically: constant once the window is full
    flops = m.flops(Phase(kind="decode", attention=attention))
    W = m.values[sym.W]
    at = [flops.total_at(m.values_with(T=t, B=1)) for t in (W, W + 1, 10 * W)]
    assert len(set(at)) == 1


def test_sliding_window_prefill_causal_linear_beyond_W():
    m = symcost.build(SWA)
    s = polynomial_in(m.flops(Phase(kind="prefill", attention="causal")), sym.T, values=m.values)
    assert [r["degree"] for r in s["regimes"]] == [2, 1]
    assert s["big_o"] == "O(T)"
    assert s["regimes"][1]["when"] == "T >= 4096"


def _mamba2():
    from tests.tiny import mamba2
    try:
        return symcost.build(mamba2.tiny(random.Random(0), "mamba2"))
    except SymcostError:
        pytest.skip("no mamba2 adapter")


def test_mamba2_degrees():
    m = _mamba2()
    # impl="minimal" (default): the SSD scan over exactly T tokens, a polynomial (exact when C | T)
    for values in (None, m.values):
        assert polynomial_in(m.flops(Phase(kind="decode")), sym.T, values=values)["degree"] == 0
        s = polynomial_in(m.flops(Phase(kind="prefill")), sym.T, values=values)
        assert s["degree"] == 1 and s["big_o"] == "O(T)"  # ⌈T/C⌉ state steps: exact when C | T
        assert s["polynomial"] or "C divides T" in s["note"]
    # impl="reference": transformers' torch path pads T to ⌈T/C⌉ chunks (not a polynomial) and
    # runs the state passing between chunk boundaries as an (n+1)² matmul over the n chunks:
    # quadratic in T/C, with coefficient 1/C².
    ref = Phase(kind="prefill", impl="reference")
    s = polynomial_in(m.flops(ref), sym.T)
    assert not s["polynomial"]
    assert set(s["by_term"]) <= {0, 1, 2}
    assert set(s["by_term"][2]) == {"layers/mixer/ssd_state_passing"}
    assert polynomial_in(m.flops(Phase(kind="decode", impl="reference")), sym.T)["degree"] == 0


def test_mixtral_per_expert_derivative():
    m = symcost.build("mixtral-8x7b-v0.1")
    d = derivative(m.params(), sym.E)
    assert sympy.expand(d - sym.L * (3 * sym.d * sym.d_ff + sym.d)) == 0
    assert derivative(m.params(), sym.E, values=m.values) == 5_637_275_648


def test_derivative_at_a_point():
    m = symcost.build("llama-3.1-8b")
    f = m.flops(Phase(kind="prefill"))
    slope = derivative(f, sym.T, values={**m.values, sym.B: 1}, at=1000)
    assert slope == f.total_at(m.values_with(T=1001, B=1)) - f.total_at(m.values_with(T=1000, B=1)) - 524288


# -- crossovers and ratios ------------------------------------------------------------------------
def _split(flops):
    att = sympy.Add(*(v for k, v in flops.flatten().items() if k.endswith(("scores", "values"))))
    proj = sympy.Add(*(v for k, v in flops.flatten().items() if "proj" in k))
    return att, proj


def test_crossover_attention_vs_projections():
    m = symcost.build("llama-3.1-8b")
    att, proj = _split(m.flops(Phase(kind="prefill")))
    c = crossover(att, proj, sym.T, values=m.values)
    # 4·L·H_q·D_h·T² = 2·L·T·(2·d·H_q·D_h + 2·d·H_kv·D_h + 3·d·d_ff)  ⇒  T = 26624
    assert c["at"] == 26624 and c["first_integer"] == 26624 and not c["never"]
    # a 4096-token window caps causal attention below the projections for ever
    swa = symcost.build(SWA)
    att, proj = _split(swa.flops(Phase(kind="prefill", attention="causal")))
    assert crossover(att, proj, sym.T, values=swa.values)["never"]


def test_crossover_cases():
    T = sym.T
    assert crossover(T**2, 1000 * T, T)["at"] == 1000
    assert crossover(T**2, T**2 + 1, T)["never"]
    assert crossover(T**2 + 1, T, T)["always"]
    c = crossover(T**3 + 3, 5 * T, T)  # ≥ on (0, r1] and [r2, ∞): first integer where it holds
    assert c["first_integer"] == 2 and c["exact"]
    c = crossover(10 * sympy.Min(T, 4095), 3 * T + 7000, T)
    assert c["at"] == 1000 and c["set"] == "Interval(1000, 33950/3)"
    assert crossover(sym.d * T**2, 8 * sym.d**2 * T, T)["at"] == 8 * sym.d  # symbolic


def test_cache_overtakes_weights():
    m = symcost.build("llama-3.1-8b")
    c = crossover(m.cache(), m.params(), sym.T, values={**m.values, sym.B: 1})
    assert c["first_integer"] == 122533  # KV elements ≥ parameters from T = 122,533 (batch 1)


def test_ratio():
    a = symcost.build("llama-3.1-8b").flops(Phase(kind="prefill"))
    r = ratio(a, a.scale(2), sym.T)
    assert r["ratio"] == sympy.Rational(1, 2) and r["limit"] == sympy.Rational(1, 2)


# -- checking hand derivations --------------------------------------------------------------------
def test_seed_formula_equals_llama3_with_map():
    m = symcost.build("llama-3.1-8b")
    extra = parse_map(["d_kv=H_kv*D_h", "m=d_ff", "c=2"])  # d_kv is also a notation name
    for text in ("L(2d^2+2d d_kv+3dm+2d)+d+cVd",
                 "L*(2*d**2 + 2*d*d_kv + 3*d*m + 2*d) + d + c*V*d"):
        r = compare(m.params(), parse(text, extra=extra), m.values)
        assert r["equal"] and r["equal_for_config"] and not r["equal_symbolically"]  # d = H_q·D_h
        assert r["difference_value"] == 0


def test_exact_symbolic_match():
    m = symcost.build("llama-3.1-8b")
    user = parse("L*(2*d*H_q*D_h + 2*d*H_kv*D_h + 3*d*d_ff + 2*d) + d + 2*V*d")
    r = compare(m.params(), user, m.values)
    assert r["equal"] and r["equal_symbolically"] and r["difference"] == "0"


def test_llama2_tied_embedding_mistake():
    m = symcost.build("llama-2-7b")
    r = compare(m.params(), parse("L*(4*d**2 + 3*d*d_ff + 2*d) + d + V*d"), m.values)
    assert not r["equal"]
    assert r["difference"] == "V*d"
    assert r["difference_value"] == 32000 * 4096
    assert r["explained_by"] == ["lm_head"]


def test_llama2_symbolic_explanation():
    m = symcost.build("llama-2-7b")
    user = parse(r"L\left(2 d H_{q} D_{h} + 2 d H_{kv} D_{h} + 3 d d_{ff} + 2d\right) + d + V d")
    r = compare(m.params(), user, m.values)
    assert r["match"] == "symbolic" and r["explained_by"] == ["lm_head"] and r["difference"] == "V*d"


@pytest.mark.parametrize("text, explained, value", [
    ("L*(4*d**2 + 3*d*d_ff) + d + 2*V*d", ["layers/norms"], 2 * 32 * 4096),
    ("L*(4*d**2 + 3*d*d_ff) + 2*V*d", ["layers/norms", "norm"], 2 * 32 * 4096 + 4096),
    ("L*(4*d**2 + 3*d*d_ff + 2*d) + d + 3*V*d", ["lm_head"], -32000 * 4096),  # one V·d too many
])
def test_forgotten_terms(text, explained, value):
    m = symcost.build("llama-2-7b")
    r = compare(m.params(), parse(text), m.values)
    assert not r["equal"] and r["explained_by"] == explained and r["difference_value"] == value


def test_flops_check_keeps_T():
    m = symcost.build("llama-3.1-8b")
    ph = Phase(kind="prefill")
    user = parse("2*B*T*(L*(2*d*H_q*D_h + 2*d*H_kv*D_h + 3*d*d_ff) + V*d)")  # forgot attention
    r = compare(m.flops(ph), user, m.values)
    assert not r["equal"] and r["difference_value"] is None  # T, B remain
    assert r["explained_by"] == ["layers/self_attn/scores", "layers/self_attn/values"]
    assert r["match"] == "symbolic"


def test_unknown_symbols_and_config_numbers():
    m = symcost.build("llama-2-7b")
    text = "32*(4*d**2 + 3*d*d_ff + 2*d) + d + 2*V*d + P*d"
    r = compare(m.params(), parse(text), m.values, user_text=text)
    assert r["unknown_symbols"] == ["P"]
    assert {"number": 32, "symbols": ["L", "H_q", "H_kv"]} in r["config_numbers"]


# -- export ---------------------------------------------------------------------------------------
def test_lambdify_by_name():
    m = symcost.build(SWA)
    expr = m.flops(Phase(kind="decode")).total.xreplace({**m.values, sym.B: 1})
    src, f = lambdify_by_name(expr)
    assert "def formula(*, T):" in src and "numpy.minimum" in src
    T = np.array([1, 100, 4095, 4096, 100_000], dtype=np.float64)
    got = f(T=T)
    want = [m.flops(Phase(kind="decode")).total_at(m.values_with(T=int(t), B=1)) for t in T]
    assert np.allclose(got, want, rtol=1e-12)
    with pytest.raises(TypeError, match="missing"):
        f(B=1)
    src, f = lambdify_by_name(m.params().total)  # keywords by name, in any order
    assert f(**{s.name: int(v) for s, v in reversed(m.values.items())}) == m.params().total_at(m.values)
