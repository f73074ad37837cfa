"""Chunked scans (Mamba-2 SSD, Gated DeltaNet) under ``impl="minimal"`` and ``impl="reference"``.

``reference`` is what transformers' torch path computes (T padded to a multiple of the chunk, the
all-pairs chunk-state einsum, heads repeated, the decode conv over K_c + 1 columns, broadcast
recurrences that count 0); tests/test_oracle_hf.py proves it exact against FlopCounterMode and
the pins below keep it unchanged. ``minimal`` (the default) is what the algorithm needs for
exactly T tokens; these tests pin how the two relate.
"""
from __future__ import annotations

import random

import pytest
import sympy

import symcost
from symcost.analysis.symbolic import polynomial_in
from symcost.components.gated_deltanet import GatedDeltaNet
from symcost.components.mamba2 import Mamba2
from symcost.core.conventions import Phase
from symcost.core.notation import sym

B, T = sym.B, sym.T
PRE, DEC = Phase(kind="prefill"), Phase(kind="decode")
PRE_REF, DEC_REF = Phase(kind="prefill", impl="reference"), Phase(kind="decode", impl="reference")
MAMBA_DIMS = {sym.d: 48, sym.H_m: 8, sym.D_m: 12, sym.G: 2, sym.N: 16, sym.K_c: 4, sym.C: 16, sym.B: 2}
DN_DIMS = {sym.d: 64, sym.H_lk: 2, sym.H_lv: 4, sym.D_lk: 16, sym.D_lv: 24, sym.K_c: 4,
           sym.C_dn: 64, sym.B: 2}
GRID = [1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 1000, 4096, 4097]


def _at(terms, dims, t):
    return {k: sympy.sympify(v).xreplace({**dims, T: t}) for k, v in terms.flatten().items()}


def _diff(a, b):
    return {k: sympy.expand(a[k] - b.get(k, 0)) for k in a} | {k: -b[k] for k in b if k not in a}


# -- reference: unchanged --------------------------------------------------------------------------
def test_mamba2_reference_pinned():
    H, P, N, G, K, C = sym.H_m, sym.D_m, sym.N, sym.G, sym.K_c, sym.C
    c, n = H * P + 2 * G * N, sympy.ceiling(T / C)
    f = Mamba2().flops(PRE_REF)
    expected = {"conv1d": 2 * B * (T + K - 1) * c * K, "ssd_scores": 2 * B * n * C**2 * H * N,
                "ssd_values": 2 * B * n * C**2 * H * P, "ssd_chunk_states": 2 * B * n * C * H * P * N,
                "ssd_state_passing": 2 * B * (n + 1) ** 2 * H * P * N,
                "ssd_state_readout": 2 * B * n * C * H * P * N}
    for k, v in expected.items():
        assert sympy.expand(f[k] - v) == 0, k
    causal = Phase(kind="prefill", impl="reference", attention="causal")
    assert Mamba2().flops(causal).flatten() == f.flatten()
    d = Mamba2().flops(DEC_REF)
    assert sympy.expand(d["conv1d"] - 4 * B * c * K) == 0
    assert sympy.expand(d["ssm_readout"] - 2 * B * H * P * N) == 0
    assert "ssm_update" not in d.flatten()


def test_gated_deltanet_reference_pinned():
    Hv, dk, dv, K, C = sym.H_lv, sym.D_lk, sym.D_lv, sym.K_c, sym.C_dn
    c, n = 2 * sym.H_lk * dk + Hv * dv, sympy.ceiling(T / C)
    f = GatedDeltaNet().flops(PRE_REF)
    expected = {"conv1d": 2 * B * (T + K - 1) * c * K, "chunk_kk": 2 * B * Hv * n * C**2 * dk,
                "chunk_qk": 2 * B * Hv * n * C**2 * dk, "chunk_values": 2 * B * Hv * n * C**2 * dv,
                "state_reads": 4 * B * Hv * n * C * dk * dv, "state_update": 2 * B * Hv * n * C * dk * dv}
    assert set(f.flatten()) - {"in_proj_qkvz", "in_proj_ba", "out_proj"} == set(expected)
    for k, v in expected.items():
        assert sympy.expand(f[k] - v) == 0, k
    d = GatedDeltaNet().flops(DEC_REF)  # the recurrent step is broadcast multiplies: 0
    assert set(d.flatten()) == {"in_proj_qkvz", "in_proj_ba", "out_proj", "conv1d"}
    assert sympy.expand(d["conv1d"] - 4 * B * c * K) == 0


# -- minimal ---------------------------------------------------------------------------------------
def test_mamba2_minimal_is_linear_in_T():
    for attention in ("full", "causal"):
        s = polynomial_in(Mamba2().flops(Phase(kind="prefill", attention=attention)), T)
        assert s["degree"] == 1 and "C divides T" in s["note"]  # ⌈T/C⌉ state steps
    assert polynomial_in(Mamba2().flops(DEC), T)["degree"] == 0
    d = Mamba2().flops(DEC)
    assert sympy.expand(d["ssm_update"] - d["ssm_readout"]) == 0  # the update is a real product


@pytest.mark.parametrize("attention", ["full", "causal"])
def test_mamba2_minimal_never_exceeds_reference(attention):
    mini = Mamba2().flops(Phase(kind="prefill", attention=attention))
    ref = Mamba2().flops(Phase(kind="prefill", attention=attention, impl="reference"))
    for t in GRID:
        m, r = _at(mini, MAMBA_DIMS, t), _at(ref, MAMBA_DIMS, t)
        assert set(m) == set(r)
        assert all(m[k] <= r[k] for k in m), (t, m, r)
    assert _at(Mamba2().flops(DEC), MAMBA_DIMS, 1)["conv1d"] * 2 == _at(
        Mamba2().flops(DEC_REF), MAMBA_DIMS, 1)["conv1d"]


@pytest.mark.parametrize("chunks", [1, 2, 5])
def test_mamba2_minimal_is_reference_without_padding(chunks):
    """With C | T and one group per head the two differ only by the conv padding and the state passing."""
    H, P, N, K, C = sym.H_m, sym.D_m, sym.N, sym.K_c, sym.C
    c = H * P + 2 * sym.G * N
    dims = {**MAMBA_DIMS, sym.G: MAMBA_DIMS[sym.H_m]}
    mini, ref = Mamba2().flops(PRE), Mamba2().flops(PRE_REF)
    t = chunks * dims[C]
    extra = _diff(_at(ref, dims, t), _at(mini, dims, t))
    n = chunks
    assert extra == {k: 0 for k in extra} | {
        "conv1d": (2 * B * (K - 1) * c * K).xreplace(dims),
        "ssd_state_passing": (2 * B * ((n + 1) ** 2 - n) * H * P * N).xreplace(dims)}
    # with G < H the scores are per group: H_m/G times fewer than the repeated-head reference
    m, r = _at(mini, MAMBA_DIMS, t), _at(ref, MAMBA_DIMS, t)
    assert r["ssd_scores"] == m["ssd_scores"] * MAMBA_DIMS[sym.H_m] / MAMBA_DIMS[sym.G]


def test_mamba2_causal_counts_the_triangle():
    full, causal = Mamba2().flops(PRE), Mamba2().flops(Phase(kind="prefill", attention="causal"))
    C = sym.C
    assert sympy.simplify(causal["ssd_scores"] / full["ssd_scores"] - (C + 1) / (2 * C)) == 0
    assert sympy.simplify(causal["ssd_values"] / full["ssd_values"] - (C + 1) / (2 * C)) == 0


def _tiny(module, model_type, seed):
    import importlib
    tiny = importlib.import_module(f"tests.tiny.{module}")
    return symcost.build(tiny.tiny(random.Random(seed), model_type))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pure_mamba2_model_minimal(seed):
    m = _tiny("mamba2", "mamba2", seed)
    for values in (None, m.values):
        s = polynomial_in(m.flops(PRE), T, values=values)
        assert s["degree"] == 1  # ⌈T/C⌉ state steps: exact on multiples of C
        assert polynomial_in(m.flops(DEC), T, values=values)["degree"] == 0
    C = m.values[sym.C]
    for t in (1, C - 1, C, C + 1, 3 * C, 3 * C + 1):
        for b in (1, 2):
            vals = m.values_with(T=t, B=b)
            assert m.flops(PRE).total_at(vals) <= m.flops(PRE_REF).total_at(vals)


@pytest.mark.parametrize("name", ["nemotron-h-56b-base-8k", "nemotron-3-nano-30b-a3b"])
def test_bundled_hybrid_minimal_below_reference(name):
    m = symcost.build(name)
    for t in (1, 100, 1000, 8192, 8193):
        vals = m.values_with(T=t, B=1)
        assert m.flops(PRE).total_at(vals) < m.flops(PRE_REF).total_at(vals)


# -- Gated DeltaNet --------------------------------------------------------------------------------
def test_gated_deltanet_minimal_decode_counts_the_recurrence():
    d, r = GatedDeltaNet().flops(DEC), GatedDeltaNet().flops(DEC_REF)
    step = sympy.expand(d["state_reads"] + d["state_update"])
    assert sympy.expand(step - 6 * B * sym.H_lv * sym.D_lk * sym.D_lv) == 0
    assert step.xreplace(DN_DIMS) > 0 and "state_reads" not in r.flatten()
    assert sympy.expand(r["conv1d"] - 2 * d["conv1d"]) == 0
    assert polynomial_in(d, T)["degree"] == 0


def test_gated_deltanet_minimal_prefill():
    for attention in ("full", "causal"):
        s = polynomial_in(GatedDeltaNet().flops(Phase(kind="prefill", attention=attention)), T)
        assert s["polynomial"] and s["degree"] == 1
    # with C_dn | T and H_lk = H_lv: the reference minus the conv padding, plus the triangular
    # solves FlopCounterMode does not see
    dims = {**DN_DIMS, sym.H_lk: DN_DIMS[sym.H_lv]}
    mini, ref = GatedDeltaNet().flops(PRE), GatedDeltaNet().flops(PRE_REF)
    K, c = sym.K_c, 2 * sym.H_lk * sym.D_lk + sym.H_lv * sym.D_lv
    for t in (64, 128, 640):
        delta = _diff(_at(mini, dims, t), _at(ref, dims, t))
        solve = (B * T * (sym.C_dn - 1) * sym.H_lv * (sym.D_lk + sym.D_lv)).xreplace({**dims, T: t})
        assert delta == {k: 0 for k in delta} | {"conv1d": -(2 * B * (K - 1) * c * K).xreplace(dims),
                                                 "ut_solve": solve}
    # the products the reference pads or repeats never exceed it, on any T
    for t in GRID:
        m, r = _at(mini, DN_DIMS, t), _at(ref, DN_DIMS, t)
        assert all(m[k] <= r[k] for k in r), t


def test_qwen3_next_tiny_minimal_runs():
    m = _tiny("qwen3_next", "qwen3_next", 0)
    vals = m.values_with(T=70, B=2)
    for ph in (PRE, DEC, PRE_REF, DEC_REF):
        assert isinstance(m.flops(ph).total_at(vals), int)
    lin = {k: v for k, v in m.flops(DEC).flatten().items() if "state_" in k}
    assert lin and all(sympy.sympify(v).xreplace(vals) > 0 for v in lin.values())
