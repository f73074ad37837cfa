"""Multi-token prediction in training (``--mtp auto|0|N``): the MTP modules as Megatron-LM trains
them, one switch for the memory, the FLOPs (exact and every preset), the step time and ``budget``.

Megatron-LM ``--mtp-num-layers N`` (``megatron/core/transformer/multi_token_prediction.py``:
``MultiTokenPredictionBlock`` of N ``MultiTokenPredictionLayer``; DeepSeek-V3 report §2.2): on the
last pipeline stage, after the decoder, module j takes the tokens shifted by j, looks them up in
the shared embedding, normalises that and the previous depth's hidden state (``enorm``,
``hnorm``), concatenates and projects them to d (``eh_proj``, 2d → d), runs one transformer
layer, normalises (``final_layernorm``) and computes logits with the shared output layer and a
cross-entropy loss (``process_mtp_loss``) scaled by ``--mtp-loss-scaling-factor``. Each module is
therefore trained like one more decoder layer plus a second head and loss on the last stage.

``with_mtp(model, n)`` returns the model with those modules as one more layer group, ``mtp``
(``MTP_GROUP``, count L_mtp = n), pinned to the end of the last pipeline stage
(``MTPModel.tail_layers``; the pipeline splits the L decoder layers as before,
``plan.stages``): components ``components.mtp.MTPProjection`` (enorm, hnorm, eh_proj), the
transformer layer's components — the model's last decoder layer's, which is what every adapter's
MTP module is (DeepSeek-V3's and GLM's an MoE layer, MiMo's a dense Qwen2 layer, Qwen3-Next's a
full-attention MoE layer) — and ``components.mtp.MTPHead`` (final norm, the shared head, no weight
of its own). Parameters, saved tensors, FLOPs, FSDP units and EP all-to-alls then follow from the
components as for any layer. The parameter count is the adapter's, reused: the group's
parameters per module must equal ``Model.extras["mtp"]`` per module (``MTPModel`` checks), else
``--mtp`` is refused for that model.

``auto`` is the config's count (``num_nextn_predict_layers``, ``num_mtp_layers``: L_mtp of the
adapter), 0 trains none (the main model alone, what HF/torchtitan train), N any positive count of
the config's module (Megatron's ``--mtp-num-layers`` may exceed the released checkpoint's).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import sympy

from ..components.mtp import MTPHead, MTPProjection
from ..components.norm import Norms
from ..core.errors import SymcostError
from ..core.memo import PerModel
from ..core.notation import sym
from ..core.terms import exact
from ..model.assembly import LayerGroup, Model

MTP_GROUP = "mtp"


@dataclass
class MTPModel(Model):
    """A model whose last ``tail_layers`` entries of ``layers()`` (the MTP modules) sit on the last
    pipeline stage beside its share of the decoder layers; ``n_layers()`` counts the decoder layers
    alone (what a pipeline splits)."""

    tail_layers: int = 0

    def n_layers(self) -> int:
        return len(self.layers()) - self.tail_layers


def parse(text) -> str | int:
    """``--mtp``: auto, or a non-negative integer."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    elif str(text).strip().lower() == "auto":
        return "auto"
    else:
        try:
            value = int(str(text).strip())
        except ValueError:
            raise SymcostError(f"--mtp must be auto or a number of modules >= 0, got {text!r}") from None
    if value < 0:
        raise SymcostError(f"--mtp must be auto or a number of modules >= 0, got {value}")
    return value


def configured(model) -> int:
    """The config's MTP modules (L_mtp), 0 when it has none."""
    return int(model.values.get(sym.L_mtp, 0)) if "mtp" in model.extras else 0


def count(model, choice="auto") -> int:
    """The MTP modules ``--mtp`` trains on ``model``."""
    choice = parse(choice)
    return configured(model) if choice == "auto" else choice


def _norm_kind(layer_groups) -> str:
    for g in layer_groups:
        for c in g.components:
            if isinstance(c, Norms):
                return c.kind
    return "standard"


def with_mtp(model, choice="auto"):
    """``model`` with ``count(model, choice)`` MTP modules as its ``mtp`` layer group (module
    docstring); the model itself when that is 0 (or it already is one).

    The same model object for the same (model, number of modules): ``train_memory`` and the search
    call this for every candidate, and what is derived once per model (the search's compiled
    activation sums, the sheet's fewest GPUs to train, the model's own term trees) is kept by the
    model's identity, which a fresh copy per call would defeat (``core.memo.PerModel``)."""
    n = count(model, choice)
    # auto falls back where a number raises
    return _WITH_MTP.get(model, (n, parse(choice) == "auto"), lambda: _with_mtp(model, choice, n))


_WITH_MTP = PerModel(64)


def _with_mtp(model, choice, n: int):
    if isinstance(model, MTPModel) or n == 0:
        if n == 0 and configured(model):
            return _values(model, 0)
        return model
    if "mtp" not in model.extras:
        raise SymcostError(f"--mtp {n}: {model.name}'s config has no multi-token-prediction module "
                           f"(num_nextn_predict_layers) to train; use --mtp 0 or auto")
    if n > model.n_layers():  # each module is one more layer on the last stage, listed one by one
        raise SymcostError(f"--mtp {n:,}: more MTP modules than {model.name}'s {model.n_layers()} decoder layers; "
                           f"its config has {configured(model)} (--mtp auto)")
    try:
        group = mtp_group(model)
    except SymcostError as e:
        if parse(choice) != "auto":
            raise
        out = _values(model, 0)  # auto: the main model, saying why
        out.notes = [*model.notes, f"MTP not trained (--mtp auto): {e}"]
        return out
    kw = {f.name: getattr(model, f.name) for f in fields(Model)}
    kw["groups"] = (*model.groups, group)
    kw["values"] = {**model.values, sym.L_mtp: n}
    if model.layer_order is not None:
        kw["layer_order"] = (*model.layer_order, *([MTP_GROUP] * n))
    kw["notes"] = [*model.notes, f"training {n} MTP module(s) on the last pipeline stage (--mtp)"]
    return MTPModel(**kw, tail_layers=n)


def mtp_group(model) -> LayerGroup:
    """The ``mtp`` layer group of one MTP module of ``model`` (module docstring), its parameters
    checked equal to the adapter's ``extras["mtp"]`` per module (SymcostError when not)."""
    last = model.layers()[-1]
    comps = [c for g in last for c in g.components]
    if len({c.key for c in comps}) != len(comps):
        raise SymcostError(f"--mtp: {model.name}'s last decoder layer is built from several groups with the same "
                           f"components; its MTP module is not modelled for training (use --mtp 0)")
    kind = _norm_kind(last)
    d = model.values.get(sym.d)
    group = LayerGroup(MTP_GROUP, sym.L_mtp, (MTPProjection(norm_kind=kind), *comps, MTPHead(norm_kind=kind)))
    per_module = sum((c.params().total for c in group.components), sympy.Integer(0))
    extra = model.extras["mtp"]
    extra = extra.total if hasattr(extra, "total") else extra
    vals = {**model.values, sym.L_mtp: 1}
    if d is None or exact(per_module, vals) != exact(extra, vals):
        raise SymcostError(f"--mtp: {model.name}'s MTP module ({exact(extra, vals):,} parameters, the adapter's "
                           f"extras) is not one entry block + its last decoder layer + a head norm "
                           f"({exact(per_module, vals):,}); not modelled for training (use --mtp 0)")
    return group


def _values(model, n: int):
    """The model with L_mtp = n (the presets that count MTP read it)."""
    kw = {f.name: getattr(model, f.name) for f in fields(type(model))}
    kw["values"] = {**model.values, sym.L_mtp: n}
    return type(model)(**kw)


def describe(model) -> str | None:
    """The note ``with_mtp`` left on ``model`` (what is trained, or why not), for the train notes."""
    for n in reversed(model.notes):
        if n.startswith(("training ", "MTP not trained")) and "MTP" in n:
            return "mtp: " + n
    return None
