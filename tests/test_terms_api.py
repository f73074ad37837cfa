"""The Python API for notebooks: values by name, clear errors, rich display (issue 14)."""
import pytest
import sympy

import symcost
from symcost import Phase, sym
from symcost.core.errors import SymcostError
from symcost.core.terms import Terms

M = symcost.build("llama-3.1-8b")


def test_total_at_takes_names_and_uses_the_models_values():
    prefill = M.flops(Phase(kind="prefill", attention="causal"))
    by_name = prefill.total_at(T=4096, B=1)
    assert by_name == prefill.total_at({"T": 4096, "B": 1}) == prefill.total_at(M.values_with(T=4096, B=1))
    assert by_name == 262144 * 4096**2 + 15009579008 * 4096  # the README's polynomial at T=4096


def test_missing_values_name_the_free_symbols():
    with pytest.raises(SymcostError, match=r"no value for B, T"):
        M.flops(Phase(kind="prefill")).total_at()


def test_unknown_or_bad_keys_are_errors_not_ignored():
    with pytest.raises(SymcostError, match="unknown symbol 'tokens'"):
        M.cache().total_at(tokens=5, B=1)
    with pytest.raises(SymcostError, match="expected an integer"):
        M.cache().total_at(T=1.5, B=1)
    with pytest.raises(SymcostError, match="expected an integer"):
        M.cache().total_at(T=True, B=1)


def test_unbound_tree_needs_every_value():
    t = Terms({"a": sym.d * sym.L})
    assert t.total_at(d=3, L=4) == 12
    with pytest.raises(SymcostError, match="no value for L"):
        t.total_at(d=3)


def test_markdown_and_latex_show_formula_value_and_share():
    md = M.params()._repr_markdown_()
    assert "| value | share |" in md and "8,030,261,248" in md and "| `embed_tokens` | $V d$ | 525,336,576 | 6.54% |" in md
    tex = M.params()._repr_latex_()
    assert tex.startswith("$\\begin{array}") and "8,030,261,248" in tex and "6.54\\%" in tex
    # with free symbols left, the formulas alone
    assert "| share |" not in M.cache()._repr_markdown_()


def test_model_repr_is_short():
    r = repr(M)
    assert r.startswith("<Model 'llama-3.1-8b' (llama)") and len(r) < 120


def test_parse_is_public_and_reads_E_and_N_as_the_notation():
    assert symcost.parse("E*k + N") == sym.E * sym.k + sym.N
    assert symcost.symbols.E is sym.E
    assert sympy.sympify("E") == sympy.E  # the trap parse avoids: Euler's number


def test_largest_is_sympys_max_with_its_pair_comparisons_remembered():
    """``terms.largest`` builds SymPy's own Max (the same expression, whichever pairs it drops), asking
    each pairwise comparison once: a second Max over the same pairs finds them remembered, and SymPy's
    Max is itself again outside."""
    import sympy
    from sympy.functions.elementary.miscellaneous import MinMaxBase
    from symcost.core import terms
    from symcost.core.notation import sym
    M, t = sym.M, sym.N_tp
    args = (M * (7168 + 55296 / t), M * (9280 + 57344 / t), (57600 + 11264 / t) * sympy.Min(32768, M * sym.N_ep),
            sympy.ceiling(M / t) * 5120 + M)
    terms._LARGEST.clear()
    terms._CONNECTED.clear()
    got = terms.largest(*args)
    assert got == sympy.Max(*args) and got.func is sympy.Max
    assert M * (7168 + 55296 / t) not in got.args  # dominated, dropped as SymPy drops it
    asked = len(terms._CONNECTED)
    assert asked >= 3
    terms._LARGEST.clear()
    assert terms.largest(*args, sympy.Integer(1)) == sympy.Max(*args, 1)
    assert all(k[1] in args or k[1] == 1 for k in terms._CONNECTED)
    assert isinstance(MinMaxBase.__dict__["_is_connected"], classmethod)
    assert MinMaxBase.__dict__["_is_connected"].__func__.__name__ == "_is_connected"
