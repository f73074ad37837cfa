"""Multi-token-prediction (MTP / next-n) modules, which transformers does not build.

DeepSeek-V3 layout (also assumed for MiniMax M3), per module:
    enorm d + hnorm d + eh_proj 2d·d + one decoder layer + shared_head norm d,
with the embedding and the LM head shared with the main model (the checkpoint file repeats them).
Source: DeepSeek-V3 technical report §2.2 and transformers ``modeling_layers.MtpModel``; the
weights go to ``Model.extras["mtp"]``, never into the total.

>>> from symcost.components.norm import Norms
>>> mtp_module((Norms(("norm",)),)).total
2*d**2 + 4*d
"""
from __future__ import annotations

from ..core.notation import sym, values
from ..core.terms import Terms

DOCS = {"enorm": "RMSNorm [d] on the embedding", "hnorm": "RMSNorm [d] on the hidden state",
        "eh_proj": "[2d, d]", "shared_head_norm": "RMSNorm [d] before the shared head"}


def mtp_module(layer_components, layer_doc: str = "one decoder layer") -> Terms:
    """Parameters of one MTP module whose decoder layer is made of ``layer_components``."""
    layer = Terms()
    for c in layer_components:
        layer.add(c.key, c.params(), c.label())
    d = sym.d
    return Terms({"enorm": d, "hnorm": d, "eh_proj": 2 * d * d, "layer": layer, "shared_head_norm": d},
                 {**DOCS, "layer": layer_doc})


def add_mtp(model, n: int, module: Terms) -> None:
    """Record ``n`` MTP modules in ``model.extras`` with the count symbol L_mtp."""
    model.extras.add("mtp", module.scale(sym.L_mtp), f"{n} multi-token-prediction module(s)")
    model.values.update(values(L_mtp=n))


# -- the MTP module as components, for training (``training.mtp``) ---------------------------------
from dataclasses import dataclass  # noqa: E402

import sympy  # noqa: E402

from ..core.conventions import Phase  # noqa: E402
from ..core.primitives import Linear, Saved  # noqa: E402
from .base import Component  # noqa: E402
from .embedding import LMHead  # noqa: E402
from .norm import Norms  # noqa: E402


@dataclass(frozen=True)
class MTPProjection(Component):
    """The MTP module's entry (Megatron's ``MultiTokenPredictionLayer``: ``enorm``, ``hnorm``,
    ``eh_proj``; DeepSeek-V3 report §2.2): RMSNorm of the shifted tokens' embedding and of the
    previous depth's hidden state, concatenated [.., 2d] and projected to d by ``eh_proj``
    (column-parallel; Megatron gathers its output). The embedding lookup is the main model's
    (shared weight): it keeps the shifted int64 token ids for its gradient. Saved: the two norms'
    tensors as the model's norm ``kind`` keeps them (hnorm's fp32 input only below fp32: in fp32 it is
    the main head's saved input itself), the concatenation (eh_proj's input, 2d)."""

    key = "mtp_proj"
    d: sympy.Expr = sym.d
    norm_kind: str = "standard"

    def _norms(self) -> Norms:
        return Norms(("enorm", "hnorm"), self.d, kind=self.norm_kind)

    def primitives(self, ph: Phase | None = None):
        return [*self._norms().primitives(ph), Linear("eh_proj", 2 * self.d, self.d, tp="col", doc=DOCS["eh_proj"])]

    def saved(self, bw) -> list:
        # hnorm reads the main model's output hidden state, which the LM head saves as its input: in
        # fp32 the norm's x.float() is that tensor itself (kept once, by the head); below fp32 a copy
        norms = [s for s in self._norms().saved(bw) if bw.upcast or s.name not in ("hnorm/input_fp32", "hnorm/input")]
        return [*norms,
                Saved("eh_proj/input", 2 * self.d, sym.b_a, "none", doc="cat(enorm(emb), hnorm(h)) [.., 2d]"),
                Saved("input_ids", 1, 8, "none", sym.B * sym.T, "shifted int64 token ids, the shared embedding's")]

    def label(self) -> str:
        return "MTP entry (enorm, hnorm, eh_proj)"


@dataclass(frozen=True)
class MTPHead(Component):
    """The MTP module's exit: its final RMSNorm (``shared_head.norm``) and the main model's LM head
    run again (shared weight, no parameter here) with a cross-entropy over the next-next tokens —
    the logits FLOPs 2·d·V per token and the head's saved set (``LMHead.saved``) once more."""

    key = "mtp_head"
    d: sympy.Expr = sym.d
    V: sympy.Expr = sym.V
    norm_kind: str = "standard"

    def primitives(self, ph: Phase | None = None):
        head = LMHead(self.d, self.V, tied=True).primitives(ph)
        return [*Norms(("shared_head_norm",), self.d, kind=self.norm_kind).primitives(ph), *head]

    def saved(self, bw) -> list:
        return [*Norms(("shared_head_norm",), self.d, kind=self.norm_kind).saved(bw),
                *LMHead(self.d, self.V, tied=True).saved(bw)]

    def label(self) -> str:
        return "MTP shared head (norm, LM head, loss)"
