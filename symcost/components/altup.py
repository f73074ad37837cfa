"""AltUp (alternating updates, Gemma 3n): the hidden state is carried as n_alt streams of width d;
each layer computes on one of them and a small learned map predicts and corrects all of them.

transformers 5.24 ``Gemma3nTextAltUp`` (per layer) and ``Gemma3nTextModel`` (once per model):

* per layer (``AltUp``): ``modality_router`` d → n_alt (run twice per token: on the active stream in
  ``predict`` and on the layer's output in ``correct``), ``router_norm`` RMSNorm(d) before it,
  ``prediction_coefs`` n_alt → n_alt² and ``correction_coefs`` n_alt → n_alt (no bias),
  ``correct_output_scale`` [d]. ``predict`` mixes the streams with a per-token n_alt × n_alt matrix
  (``torch.matmul`` of [B, T, d, n_alt] by [B, T, n_alt, n_alt]); ``correct`` adds the innovation
  times a per-stream coefficient (elementwise).
  Parameters d·n_alt + n_alt³ + n_alt² + 2·d; FLOPs per token 2·(2·d·n_alt + n_alt³ + n_alt² + d·n_alt²).
* per model (``AltUpProjections``): ``altup_projections`` and ``altup_unembed_projections``,
  (n_alt − 1) × [d, d] each: the streams made from the embedding before the first layer and folded
  back (then averaged) after the last, over every new token. Parameters 2·(n_alt − 1)·d²; FLOPs
  2·tokens·2·(n_alt − 1)·d².

Elementwise: router_norm twice per token 4·2·d, tanh of the router logits (counted 0), the predict
residual n_alt·d, the correction 2·n_alt·d, the output scale d; the projections' magnitude matching
(about 4 per element of each of 2·(n_alt − 1) streams, counted 4) and the mean over the streams n_alt·d.

>>> AltUp().params().total
d*n_alt + 2*d + n_alt**3 + n_alt**2
>>> from symcost.conventions import Phase
>>> AltUp().flops(Phase(kind="decode")).total
2*B*d*n_alt**2 + 4*B*d*n_alt + 2*B*n_alt**3 + 2*B*n_alt**2
>>> AltUpProjections().params().total
2*d**2*(n_alt - 1)
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..conventions import Phase
from ..elementwise import COST
from ..notation import sym
from ..primitives import Linear, Matmul, Norm, Param
from ..terms import Terms
from .base import Component


@dataclass(frozen=True)
class AltUp(Component):
    key = "altup"
    d: sympy.Expr = sym.d
    n: sympy.Expr = sym.n_alt

    def primitives(self, ph: Phase | None = None):
        d, n = self.d, self.n
        rows = None if ph is None else 2 * ph.tokens  # predict and correct each route once
        prims = [Param("correct_output_scale", d, doc="[d]"),
                 Norm("router_norm", d, doc="RMSNorm [d] before the modality router"),
                 Linear("modality_router", d, n, rows=rows, doc="[d, n_alt], run in predict and in correct"),
                 Linear("prediction_coefs", n, n * n, doc="[n_alt, n_alt²]"),
                 Linear("correction_coefs", n, n, doc="[n_alt, n_alt]")]
        if ph is not None:
            prims.append(Matmul("predict_mix", 2 * ph.tokens * d * n * n,
                                "[d, n_alt] streams × [n_alt, n_alt] coefficients per token"))
        return prims

    def elementwise(self, ph: Phase) -> Terms:
        rows, d, n = ph.tokens, self.d, self.n
        return Terms({"router_norm": 2 * COST["rmsnorm"] * rows * d,
                      "predict_add": rows * n * d,
                      "correct": 2 * rows * n * d,
                      "output_scale": rows * d},
                     {"router_norm": "RMSNorm(d) in predict and correct", "predict_add": "predictions + streams",
                      "correct": "innovation × coefficient + prediction", "output_scale": "× correct_output_scale"})

    def label(self) -> str:
        return "AltUp"


@dataclass(frozen=True)
class AltUpProjections(Component):
    key = "altup_projections"
    d: sympy.Expr = sym.d
    n: sympy.Expr = sym.n_alt

    def primitives(self, ph: Phase | None = None):
        d, extra = self.d, self.n - 1
        return [Linear("altup_projections", d, d, copies=extra, doc="(n_alt − 1) × [d, d], after the embedding"),
                Linear("altup_unembed_projections", d, d, copies=extra,
                       doc="(n_alt − 1) × [d, d], after the last layer")]

    def elementwise(self, ph: Phase) -> Terms:
        rows, d, n = ph.tokens, self.d, self.n
        return Terms({"magnitude": 2 * 4 * rows * (n - 1) * d, "mean": rows * n * d},
                     {"magnitude": "RMS matching of each projected stream", "mean": "mean over the streams"})

    def label(self) -> str:
        return "AltUp stream projections"
