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
