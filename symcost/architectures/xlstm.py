"""xLSTM (``xlstm``, xLSTM-7B): a stack of mLSTM blocks, each RMSNorm → mLSTM → residual,
RMSNorm → gated SiLU FFN → residual (transformers 5.24 ``xLSTMBlock``, its native implementation,
used when the ``xlstm`` package is absent; ``components/mlstm.py``).

Sizes as ``xLSTMConfig`` and ``xLSTMLayer`` derive them: q/k width int(hidden_size·qk_dim_factor),
v width int(hidden_size·v_dim_factor), both split over ``num_heads`` (D_mk, D_mv); the FFN width
d_ff = ⌈hidden_size·ffn_proj_factor⌉ rounded up to ``ffn_round_up_to_multiple_of``. ``use_bias``
puts biases on every projection and norm but the final ``out_norm``. The head is never tied
(``xLSTMForCausalLM`` declares no tied weights, whatever ``tie_word_embeddings`` says) and runs on
every position (its forward takes no ``logits_to_keep``): ``impl="reference"`` counts that, ``minimal``
follows ``--logits``. ``embedding_dim`` and
``num_blocks`` are the original names of ``hidden_size`` and ``num_hidden_layers``: each defaults to
the other, and the class builds ``num_blocks`` blocks on ``embedding_dim``-wide embeddings but
``hidden_size``-wide layers and ``num_hidden_layers`` cache entries, so a config where a pair differs
is refused (transformers cannot run it).

FLOPs follow ``mode: inference`` (the default, and what ``generate`` runs); the training modes use
the chunkwise kernel only. Prompts longer than ``max_inference_chunksize`` are processed in pieces of
that size, which this count equals when it is a multiple of ``chunk_size`` (the default, 16384 = 256·64).
"""
from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ..components.embedding import Embedding
from ..components.ffn import FFN
from ..components.mlstm import MLSTMLayer, XlstmHead
from ..components.norm import Norms
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model
from . import register
from .base import Adapter, LayerCount, PosInt, values

#: a positive finite factor (a JSON number; the widths are int(hidden_size·factor))
Factor = Annotated[float, Field(gt=0, le=2**20, allow_inf_nan=False)]


def round_up(x: float, multiple: int) -> int:
    """transformers' ``round_up_to_next_multiple_of`` (float floor division, then int)."""
    return int(((x + multiple - 1) // multiple) * multiple)


@register("xlstm")
class XlstmAdapter(Adapter):
    reference: ClassVar[str] = "xLSTMForCausalLM"

    vocab_size: PosInt = 50304
    hidden_size: PosInt | None = 4096
    embedding_dim: PosInt | None = None
    num_hidden_layers: LayerCount | None = 32
    num_blocks: LayerCount | None = None
    num_heads: PosInt = 8
    use_bias: bool = False
    qk_dim_factor: Factor = 0.5
    v_dim_factor: Factor = 1.0
    chunk_size: PosInt = 64
    ffn_proj_factor: Factor = 2.667
    ffn_round_up_to_multiple_of: PosInt = 64
    weight_mode: Literal["single", "fused"] = "single"
    mode: Literal["train", "train_with_padding", "inference"] = "inference"
    max_inference_chunksize: PosInt = 16384
    #: soft caps cap·tanh(x/cap) on the i/f gate pre-activations and on the logits (null: none);
    #: what the backward keeps, not the weights or FLOPs
    gate_soft_cap: float | None = 15.0
    output_logit_soft_cap: float | None = 30.0

    @field_validator("qk_dim_factor", "v_dim_factor", "ffn_proj_factor", mode="before")
    @classmethod
    def _number(cls, v):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError("must be a JSON number")
        return v

    @model_validator(mode="after")
    def _consistent(self):
        if self.hidden_size is None and self.embedding_dim is None:
            self.fail("hidden_size", "hidden_size and embedding_dim are both null")
        if self.num_hidden_layers is None and self.num_blocks is None:
            self.fail("num_hidden_layers", "num_hidden_layers and num_blocks are both null")
        if self.embedding_dim is not None and self.hidden_size is not None and self.embedding_dim != self.hidden_size:
            self.fail("embedding_dim", f"embedding_dim={self.embedding_dim} differs from hidden_size={self.hidden_size}: "
                      "transformers embeds at embedding_dim but builds hidden_size-wide blocks")
        if self.num_blocks is not None and self.num_hidden_layers is not None and self.num_blocks != self.num_hidden_layers:
            self.fail("num_blocks", f"num_blocks={self.num_blocks} differs from num_hidden_layers={self.num_hidden_layers}: "
                      "transformers builds num_blocks blocks but caches num_hidden_layers states")
        for field, width in (("qk_dim_factor", self.qk_dim), ("v_dim_factor", self.v_dim)):
            if width <= 0 or width % self.num_heads:
                self.fail(field, f"int(hidden_size·{field}) = {width} must be a positive multiple of "
                          f"num_heads={self.num_heads}")
        return self

    @property
    def d(self) -> int:
        return self.hidden_size or self.embedding_dim

    @property
    def L(self) -> int:
        return self.num_blocks or self.num_hidden_layers

    @property
    def qk_dim(self) -> int:
        return int(self.d * self.qk_dim_factor)

    @property
    def v_dim(self) -> int:
        return int(self.d * self.v_dim_factor)

    def to_model(self) -> Model:
        H = self.num_heads
        vals = values(d=self.d, V=self.vocab_size, L=self.L, H_ml=H, D_mk=self.qk_dim // H, D_mv=self.v_dim // H,
                      C_ml=self.chunk_size, d_ff=round_up(self.d * self.ffn_proj_factor, self.ffn_round_up_to_multiple_of))
        layer = (Norms(("norm_mlstm", "norm_ffn"), bias=self.use_bias, kind="rms_stats"),
                 MLSTMLayer(bias=self.use_bias, fused=self.weight_mode == "fused",
                            gate_softcap=self.gate_soft_cap is not None, mode=self.mode),
                 FFN(bias=self.use_bias, act="silu"))
        model = Model(self.name, self.model_type, (Embedding(name="embeddings"),),
                      (LayerGroup("blocks", sym.L, layer),), (Norms(("out_norm",)), XlstmHead(softcap=self.output_logit_soft_cap is not None)), vals)
        model.notes.append("the head is never tied (xLSTMForCausalLM declares no tied weights) and, under --impl "
                           "reference, runs on every position even with --logits last (it takes no logits_to_keep)")
        if any(w % 64 for w in (self.qk_dim, self.v_dim)):
            model.notes.append("q/k or v width is not a multiple of 64: transformers' xLSTMCache rounds the state "
                               "shapes up and its cached forward (generate) fails; weights and uncached FLOPs are "
                               "as counted")
        if self.mode != "inference":
            model.notes.append(f"mode={self.mode!r}: FLOPs are counted for mode 'inference' (generate); the "
                               "training kernels run the chunkwise form on whole chunks")
        if self.max_inference_chunksize % self.chunk_size:
            model.notes.append(f"max_inference_chunksize={self.max_inference_chunksize} is not a multiple of "
                               f"chunk_size={self.chunk_size}: reference FLOPs hold up to that many tokens")
        return model
