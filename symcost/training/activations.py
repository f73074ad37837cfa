"""Activation memory of training: the tensors one micro-batch's backward keeps, from each component.

Every component declares what its backward needs (``Component.saved(bw)``, a list of
``primitives.Saved``: token rows × width × bytes per element, and how tensor parallelism splits
it); this module only sums the declarations over the layer groups, once per layer, plus the
tables every layer shares (``saved_shared``: the RoPE cos/sin), and applies the parallel splits:

    bytes = Σ_groups L_g · Σ_saved rows·width·nbytes / split  +  embedding + final norm + head/loss

with rows = B·T (``T → T/N_cp`` under context parallelism), split = N_tp for head/FFN/vocab
shards, N_tp for hidden-wide tensors only under sequence parallelism, 1 otherwise.
Recomputation (``conventions.Backward``): ``selective`` changes what attention declares (the
core's inputs instead of its probabilities); ``full`` keeps only each layer's input ``b_a·d``
(transformers' / Megatron's full checkpointing), and while one layer is recomputed in backward
its own saved set is alive again (``per_layer``: the train command adds the largest), which a
saved-tensors count does not see.

The convention is transformers' reference modules (what ``tests/test_activations.py`` measures
with ``saved_tensors_hooks``); ``korthikanti`` is the published dense-GPT closed form
``s·b·h·(34 + 5·a·s/h)`` (Korthikanti et al. 2022, Table 2) kept as a named preset.
"""
from __future__ import annotations

import sympy

from ..conventions import Backward
from ..errors import SymcostError
from ..notation import sym
from ..primitives import Saved
from ..terms import Terms

B, T = sym.B, sym.T


def _records(c, bw: Backward) -> list[Saved]:
    try:
        return c.saved(bw)
    except NotImplementedError as e:
        raise SymcostError(f"activation memory: {e} (use --activations korthikanti for a dense "
                           f"GPT estimate)") from None


def _bytes(s: Saved, *, sp: bool, tp=sym.N_tp, cp=sym.N_cp) -> sympy.Expr:
    rows = B * T if s.rows is None else s.rows
    rows = rows.xreplace({T: T / cp}) if cp != 1 else rows
    split = {"tp": tp, "seq": tp if sp else 1, "none": 1}[s.split]
    return rows * s.width * s.nbytes / split


def _tree(records: list[Saved], **kw) -> Terms:
    t = Terms()
    for s in records:
        t.add(s.name, _bytes(s, **kw), s.doc or None)
    return t


def layer_input(c_d) -> Saved:
    return Saved("layer_input", c_d, sym.b_a, "seq", doc="checkpointed layer input (full recompute)")


def activations(model, bw: Backward, *, sp: bool = False, tp=sym.N_tp, cp=sym.N_cp) -> Terms:
    """Bytes saved for backward over one micro-batch of ``B`` sequences of ``T`` tokens, all layers.

    Symbolic in ``B``, ``T``, ``b_a`` and the parallel sizes ``N_tp``, ``N_cp`` (pass integers to
    fix them); substitute the model's values to get numbers.
    """
    kw = dict(sp=sp, tp=tp, cp=cp)
    out = Terms()
    shared: dict[str, Saved] = {}
    for c in model.pre:
        out.add(c.key, _tree(_records(c, bw), **kw), c.label())
    for g in model.groups:
        layer = Terms()
        if bw.recompute == "full":
            layer.add("layer_input", _bytes(layer_input(sym.d), **kw), "checkpointed layer input b_a·d")
        else:
            for c in g.components:
                recs = _records(c, bw)
                for s in c.saved_shared(bw):
                    shared.setdefault(s.name, s)
                if recs:
                    layer.add(c.key, _tree(recs, **kw), c.label())
        out.add(g.name, layer.scale(g.count), f"{g.count} layers")
    if shared:
        out.add("shared", _tree(list(shared.values()), **kw), "computed once, read by every layer")
    for c in model.post:
        out.add(c.key, _tree(_records(c, bw), **kw), c.label())
    return out


def per_layer(model, bw: Backward, **kw) -> dict[str, Terms]:
    """One layer's saved bytes for each layer group (no recomputation), by group name."""
    inner = Backward(kernel=bw.kernel, recompute="none" if bw.recompute == "full" else bw.recompute,
                     act_dtype=bw.act_dtype, scan=bw.scan)
    out = {}
    for g in model.groups:
        t = Terms()
        for c in g.components:
            recs = _records(c, inner)
            if recs:
                t.add(c.key, _tree(recs, **{"sp": False, "tp": sym.N_tp, "cp": sym.N_cp, **kw}), c.label())
        out[g.name] = t
    return out


def korthikanti(model, *, recompute: str = "none", sp: bool = True, tp=sym.N_tp, cp=sym.N_cp) -> Terms:
    """Korthikanti et al. 2022 (Table 2), per layer × L, 2-byte activations, dense MHA GPT layer:
    none: s·b·h·(34 + 5·a·s/h) (÷t with sequence parallelism; without it 10 + 24/t + 5as/(ht));
    selective: 34·s·b·h/t; full: 2·s·b·h. Here s = T/N_cp, b = B, h = d, a = H_q, t = N_tp."""
    s, b, h, t = T / cp, B, sym.d, tp
    a = sym.H_q if sym.H_q in model.values else None
    if a is None:
        raise SymcostError("--activations korthikanti needs attention heads (a dense MHA model)")
    L = sum((g.count for g in model.groups), sympy.Integer(0))
    if recompute == "none":
        per = s * b * h * (34 + 5 * a * s / h) / t if sp else s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    elif recompute == "selective":
        per = 34 * s * b * h / t if sp else s * b * h * (10 + 24 / t)
    elif recompute == "full":
        per = 2 * s * b * h
    else:
        raise SymcostError(f"--recompute: unknown mode {recompute!r}")
    return Terms({"layers": L * per}, {"layers": "Korthikanti et al. 2022 Table 2, per layer × L"})
