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
>>> from symcost.core.conventions import Phase
>>> AltUp().flops(Phase(kind="decode")).total
2*B*d*n_alt**2 + 4*B*d*n_alt + 2*B*n_alt**3 + 2*B*n_alt**2
>>> AltUpProjections().params().total
2*d**2*(n_alt - 1)
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.conventions import Phase
from ..core.elementwise import COST
from ..core.notation import sym
from ..core.primitives import Linear, Matmul, Norm, Param, Saved, is_one
from ..core.terms import Terms
from .base import Component
from .norm import pow_rms_saved


@dataclass(frozen=True)
class AltUp(Component):
    key = "altup"
    d: sympy.Expr = sym.d
    n: sympy.Expr = sym.n_alt
    correct_scale: bool = True  # altup_correct_scale: the active stream × correct_output_scale (saved only)
    coef_clip: bool = True  # altup_coef_clip set: training clamps the correction weight (saved only)

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

    def residual_width(self):
        """The layer passes on all n_alt streams [n_alt, B, T, d]: what full recomputation checkpoints."""
        return self.n * self.d

    def saved(self, bw) -> list:
        """What one layer's ``predict`` and ``correct`` keep (measured, tests/test_activations.py), per token.

        predict: the layer's input streams ``b_a·n_alt·d`` (the matmul reads a permuted view of the
        stack); the router on the active stream — router_norm (``norm.pow_rms_saved``; its ``x.float()``
        below fp32 only: in fp32 it is a view of the streams), × the ``router_input_scale`` buffer
        (one element per layer), the router's input ``b_a·d``, tanh of the fp32 logits ``4·n_alt``
        and, below fp32, the modalities cast back ``b_a·n_alt`` (in fp32 they are tanh's output),
        the coefficients ``b_a·n_alt²``. In fp32 ``input_layernorm`` keeps its input as a view of the
        contiguous predictions [n_alt, B, T, d]: the other ``4·(n_alt − 1)·d`` of that storage.
        correct: the same router on the layer's output, the innovation repeated to n_alt streams
        ``b_a·n_alt·d`` and the coefficients + 1 ``b_a·n_alt`` (their product); with
        ``altup_coef_clip`` (training) the clamped correction weight [n_alt, n_alt] per layer; with
        ``altup_correct_scale`` the active stream's clone ``b_a·d`` (× correct_output_scale)."""
        a, d, n, one = sym.b_a, self.d, self.n, sympy.Integer(1)
        out = [Saved("streams", n * d, a, "seq", doc="the layer's input [n_alt, B, T, d]"),
               Saved("router_input_scale", one, a, "none", one, "the [] buffer both routers multiply by")]
        for step in ("predict", "correct"):
            norm = pow_rms_saved(f"{step}/router_norm", d, bw)
            if step == "predict" and not bw.upcast:  # x.float() is a view of the streams
                norm = [s for s in norm if not s.name.endswith("/input_fp32")]
            out += norm + [Saved(f"{step}/router_input", d, a, "seq", doc="router_norm(x)·d^-1"),
                           Saved(f"{step}/tanh_fp32", n, 4, "seq", doc="tanh(logits.float())")]
            if bw.upcast:
                out.append(Saved(f"{step}/modalities", n, a, "seq", doc="tanh(..).type_as(x), the coefs' input"))
        out.append(Saved("predict/coefs", n * n, a, "seq", doc="prediction_coefs output, matmul's other input"))
        if not bw.upcast:
            out.append(Saved("predict/predictions", (n - 1) * d, 4, "seq",
                             doc="the rest of the predictions storage input_layernorm's view keeps"))
        out += [Saved("correct/innovation", n * d, a, "seq", doc="innovation.repeat(n_alt, 1, 1, 1)"),
                Saved("correct/coefs", n, a, "seq", doc="correction_coefs(modalities) + 1")]
        if self.coef_clip:
            out.append(Saved("correct/clamped_weight", n * n, a, "none", one, "correction_coefs.weight.clamp(..)"))
        if self.correct_scale:
            out.append(Saved("correct/scale_input", d, a, "seq", doc="the corrected active stream's clone"))
        return out

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

    def saved(self, bw) -> list:
        """Per token, with n_alt > 1 (one stream: no projection, the magnitudes are unused): on each
        side (after the embedding, before the final norm) the mean of x² and its square root, the
        target magnitude, ``b_a`` each, and for each of the n_alt − 1 projected streams the projection
        ``b_a·d`` (squared and scaled), the clamped mean square and its root ``b_a`` each, and the
        scaled stream ``b_a·d`` (divided by the root): ``b_a·(2 + (n_alt − 1)·(2·d + 2))``. The
        unembedding also keeps the last layer's output streams ``b_a·n_alt·d`` (the projections and
        the target read views of it); the embedding output the projections read is counted by the
        per-layer inputs' projection."""
        a, d, n = sym.b_a, self.d, self.n
        many = 1 - is_one(n)
        per = many * (2 + (n - 1) * (2 * d + 2))
        return [Saved("project/magnitudes", per, a, "seq", doc="target, projected streams and their RMS"),
                Saved("unembed/magnitudes", per, a, "seq", doc="target, projected streams and their RMS"),
                Saved("unembed/streams", many * n * d, a, "seq", doc="the last layer's output [n_alt, B, T, d]")]

    def label(self) -> str:
        return "AltUp stream projections"
