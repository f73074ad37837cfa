"""MLA: the absorbed and the expanded forms are the same weights and cache; only FLOPs differ."""
import sympy

from symcost.components.mla import MLA
from symcost.core.conventions import Phase
from symcost.core.notation import sym

B, T, H, d_kv, Dn, Dr, Dv = sym.B, sym.T, sym.H_q, sym.d_kv, sym.D_nope, sym.D_rope, sym.D_v


def _weights(mla, ph):
    """Parameters of the primitives a phase runs (kv_b_proj is split in two when absorbed)."""
    return sympy.expand(sum(p.params() for p in mla.primitives(ph)))


def test_absorbed_and_expanded_store_the_same_weights_and_cache():
    for mla in (MLA(), MLA(d_q=None), MLA(bias=True)):
        params = sympy.expand(mla.params().total)
        for kind in ("prefill", "decode"):
            assert _weights(mla, Phase(kind=kind, mla="absorb")) == params
            assert _weights(mla, Phase(kind=kind, mla="expand")) == params
        assert sympy.expand(mla.cache().total - B * T * (d_kv + Dr)) == 0  # one cache, either form


def test_absorb_minus_expand_flops():
    mla = MLA()
    diff = {}
    for kind in ("prefill", "decode"):
        absorb = mla.flops(Phase(kind=kind, mla="absorb")).total
        expand = mla.flops(Phase(kind=kind, mla="expand")).total
        diff[kind] = sympy.expand(absorb - expand)
    # prefill: kv_b_proj runs over the same B·T rows either way; each (query, key) pair costs
    # 2·H_q·(d_kv+D_rope) + 2·H_q·d_kv absorbed instead of 2·H_q·(D_nope+D_rope) + 2·H_q·D_v.
    assert diff["prefill"] == sympy.expand(2 * B * H * (2 * d_kv - Dn - Dv) * T ** 2)
    # decode: no re-expansion of the T cached latents (kv_b_proj over B rows, not B·(T+1)).
    assert diff["decode"] == sympy.expand(2 * B * H * (2 * d_kv - Dn - Dv) * (T + 1)
                                          - 2 * B * T * d_kv * H * (Dn + Dv))


def test_decode_reexpands_the_whole_cache():
    f = MLA().flops(Phase(kind="decode", mla="expand"))
    assert f["kv_b_proj"] == 2 * B * (T + 1) * d_kv * H * (Dn + Dv)
    assert f["scores"] == 2 * B * H * (Dn + Dr) * (T + 1)


def test_sparse_selection_counts_only_under_causal():
    dense, sparse = MLA(), MLA(k_sel=sym.k_I)
    full = Phase(kind="prefill", attention="full")
    assert sparse.flops(full).total == dense.flops(full).total  # eager masks after the matmul
    causal = Phase(kind="decode", attention="causal", mla="expand")
    assert sparse.flops(causal)["values"] == 2 * B * H * Dv * sympy.Min(T + 1, sym.k_I)


def test_expanded_cache_alternative():
    assert sympy.expand(MLA().cache_expanded().total) == sympy.expand(B * T * H * (Dn + Dr + Dv))


def test_auto_is_expanded_prefill_and_absorbed_decode():
    mla = MLA()
    for kind, mode in (("prefill", "expand"), ("decode", "absorb")):
        assert Phase(kind=kind).mla_mode == mode
        assert mla.flops(Phase(kind=kind)).total == mla.flops(Phase(kind=kind, mla=mode)).total
        assert f"mla=auto ({mode}ed in {kind})" in Phase(kind=kind).describe()
