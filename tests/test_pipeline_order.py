"""Pipeline stages hold the layers in the model's real order (issue 13).

``training.plan.stages(model, pp)`` splits the decoder layers over pipeline stages; each stage's
parameters (split + whole + experts) set the per-GPU weights, gradients, optimizer state and
activations. For every bundled config and every tiny config whose model has several layer groups,
the real transformers model is built on the meta device, its decoder-layer ModuleList found (the
one of length L outside any vision/audio tower), and for pp in (2, 3, 4), pp ≤ L, each stage's
parameter count from ``stages()`` — less the embedding (and the tower blocks) on the first stage
and the final norm and head (and a tied head's own copy) on the last — must equal the parameters
of the real layers ``layers[i]`` for the indices i the stage holds (same split rule: L/pp each,
the L mod pp extra layers on the interior stages), counted once per stage (a block shared by
several layers of a stage is one set of weights there). Exact, to the parameter. The rest of the
model (embedding, towers, final norm, head) must then equal the real model less its layers.
Every family with several groups is covered (no exclusions): hybrids by pattern, local/global
attention, interleaved MoE, per-layer widths and top-k, KV-shared layers, towers (stage 0),
LongCat's sublayers + shortcut MoE and GLM-DSA's indexers (one layer each), and Zamba/Zamba2's
shared blocks (one copy per stage that runs it; untied, one per hybrid layer).
"""
import pytest
import torch

import symcost
from symcost.architectures import loader
from symcost.core.errors import SymcostError
from symcost.core.terms import exact
from symcost.training.plan import _split, stage_sizes, stages
from tests import oracle
from tests.tiny import cases

TOWER_WORDS = ("vision", "visual", "audio", "image", "vit")


def _several_groups(m) -> bool:
    """Several layer groups (towers included), or weights the layers share (Zamba's blocks)."""
    return len(m.groups) > 1 or bool(m.shared_copies)


def _cases():
    out = []
    for name in loader.bundled_names():
        try:
            m = symcost.build(name)
        except SymcostError:
            continue
        if _several_groups(m):
            out.append(pytest.param(loader.read_json(name)[1], id=name))
    for cid, raw, _ in cases():
        if _several_groups(symcost.build(dict(raw))):
            out.append(pytest.param(raw, id=cid))
    return out


def layer_list(model, L: int):
    """The decoder layers: the one ModuleList of length L outside any tower (its name ending in
    ``layers`` when several qualify)."""
    found = [(n, mod) for n, mod in model.named_modules()
             if isinstance(mod, torch.nn.ModuleList) and len(mod) == L
             and not any(w in n.lower() for w in TOWER_WORDS)]
    if len(found) > 1:
        found = [(n, mod) for n, mod in found if n.endswith("layers")]
    assert len(found) == 1, [n for n, _ in found]
    return found[0][1]


def _unique_params(modules) -> int:
    seen = {}
    for mod in modules:
        for p in mod.parameters():
            seen[id(p)] = p.numel()
    return sum(seen.values())


@pytest.mark.parametrize("raw", _cases())
def test_stage_params_equal_the_real_layers(raw):
    m = symcost.build(dict(raw))
    hf = oracle.build(raw, "meta")
    L = m.n_layers()
    layers = layer_list(hf, L)
    v = m.values
    # the embedding; weights the layers share (Zamba's blocks) sit with the layers, as in the class
    emb = sum(_split([c for c in m.pre if c.key not in m.shared_copies], v))
    head = sum(_split(m.post, v))
    towers = sum(sum(_split(g.components, v)) * exact(g.count, v) for g in m.groups if g.tower)
    # everything outside the layers is the embedding, the towers and the head (tied: counted once)
    tied = sum(exact(c.d * c.V, v) for c in m.post if getattr(c, "tied", False))
    total = sum(p.numel() for p in hf.parameters())
    assert emb + towers + head == total - _unique_params(layers)
    for pp in (2, 3, 4):
        if pp > L:
            continue
        st = stages(m, pp)
        sizes = stage_sizes(L, pp)
        assert [len(s["layer_ids"]) for s in st] == sizes
        start = 0
        for s, row in enumerate(st):
            ids = list(range(start, start + sizes[s]))
            start += sizes[s]
            assert row["layer_ids"] == ids
            got = row["split"] + row["whole"] + row["experts"]
            if s == 0:
                got -= emb + towers
            if s == pp - 1:
                got -= head + tied
            assert got == _unique_params(layers[i] for i in ids), (pp, s, ids)


def test_stage_sizes_put_extra_layers_inside():
    assert stage_sizes(10, 4) == [2, 3, 3, 2]
    assert stage_sizes(7, 3) == [2, 3, 2]
    assert stage_sizes(11, 4) == [2, 3, 3, 3]
    assert stage_sizes(8, 4) == [2, 2, 2, 2]


def test_every_model_has_a_consistent_layer_order():
    """Every bundled and tiny model's ``layer_order`` names each non-tower group as often as its
    count (``Model.layers`` raises otherwise), and a model with several decoder-layer groups states
    its order explicitly."""
    models = [symcost.build(n) for n in loader.bundled_names() if _builds(n)]
    models += [symcost.build(dict(raw)) for _, raw, _ in cases()]
    for m in models:
        assert len(m.layers()) == m.n_layers()
        if len([g for g in m.groups if not g.tower]) > 1:
            assert m.layer_order is not None, m.model_type


def _builds(name) -> bool:
    try:
        symcost.build(name)
    except SymcostError:
        return False
    return True


def test_an_inconsistent_layer_order_is_refused():
    m = symcost.build("gemma-2-9b-it")
    assert m.layer_order.count("full_layers") == 21
    m.layer_order = m.layer_order[:-1]
    with pytest.raises(ValueError, match="layer_order"):
        m.layers()


def test_pipeline_depth_counts_decoder_layers_only():
    """Gemma 4 26B-A4B: 30 decoder layers beside a 27-block vision tower (which sits on stage 0);
    --pp may not exceed the 30, and a LongCat layer (two sublayers + a shortcut MoE) is one layer."""
    from symcost.training.plan import Plan
    m = symcost.build("gemma-4-26b-a4b")
    assert m.n_layers() == 30
    Plan(pp=30).check(m)
    with pytest.raises(SymcostError, match="exceeds the layers L=30"):
        Plan(pp=31).check(m)
    st = stages(m, 2)
    assert st[0]["layers"]["vision_layers"] == 27 and "vision_layers" not in st[1]["layers"]
    for raw in (raw for _, raw, _ in cases() if raw["model_type"] == "longcat_flash"):
        n = raw["num_layers"] if "num_layers" in raw else raw["num_hidden_layers"] // 2  # the attribute map's 2·L
        lc = symcost.build(dict(raw))
        assert lc.n_layers() == n and [len(layer) for layer in lc.layers()] == [3] * n
