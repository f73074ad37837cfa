"""Zamba2: Mamba-2 layers, some of them preceded by a shared transformer block with LoRA adapters.

transformers ``Zamba2ForCausalLM``: ``model.embed_tokens`` (V·d), one layer per entry of
``layers_block_type`` (alias ``layer_types``; the legacy ``mamba`` reads ``linear_attention``):
    ``linear_attention``: input_layernorm RMSNorm(d) → Mamba-2 mixer (``Zamba2MambaMixer``:
        ``components.mamba2`` with d_in = ``mamba_expand``·d, H_m = ``n_mamba_heads``,
        D_m = d_in/H_m (``mamba_headdim``), G = ``mamba_ngroups``, N = ``mamba_d_state``,
        K_c = ``mamba_d_conv``, C = ``chunk_size``; in_proj/out_proj biases with
        ``add_bias_linear``; the conv always has a bias, whatever ``use_conv_bias`` says)
    ``hybrid``: a shared transformer block on [hidden states, original embeddings], its own
        d·d ``linear``, then the same Mamba-2 layer (``components.shared_block``)
then ``final_layernorm`` and ``lm_head`` (tied by default). L_M Mamba-only layers, L_hyb hybrid
layers, N_blk stored blocks and N_ad stored adapter sets: with ``tie_word_embeddings`` (the switch
transformers applies to every tie, the shared blocks' included) N_blk = min(``num_mem_blocks``,
L_hyb) and N_ad = L_hyb; untied every hybrid layer keeps its own block, N_blk = L_hyb, holding
the k_b adapter sets of its block index b = j mod ``num_mem_blocks``, N_ad = Σ_b k_b². d_ff = ``intermediate_size``
(None or 0: 4·d); H_kv = ``num_key_value_heads`` (None: H_q); D_h = ``attention_head_dim``
(alias ``head_dim``; default 2·d // H_q). The config class writes its derived values out
(``attention_hidden_size``, ``attention_head_dim``, ``mamba_headdim``, ``hybrid_layer_ids``, ...)
and honours them when read back; values the model cannot run with are refused, naming the field.
The torch scan keeps the recurrent state in float32 (``Model.state_dtype``).
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.embedding import Embedding, LMHead
from ..components.mamba2 import Mamba2
from ..components.norm import Norms
from ..components.shared_block import SharedBlockCall, SharedBlockWeights
from ..core.notation import sym
from ..model.assembly import LayerGroup, Model, layer_order
from . import register
from .base import LEGACY_LAYER_TYPES, Adapter, LayerCount, NonNegInt, PosInt, quote, values

LEGACY = LEGACY_LAYER_TYPES  # transformers' remap_legacy_layer_types
KINDS = ("linear_attention", "hybrid")


def check_shared_attention(a: Adapter, H_kv: int) -> None:
    """The shared attention block (Zamba, Zamba2): whole query groups per key/value head, and an
    input [hidden states, original embeddings] 2·hidden_size wide."""
    d, H_q = a.hidden_size, a.num_attention_heads
    if H_q % H_kv:
        a.fail("num_key_value_heads", f"num_attention_heads={H_q} is not divisible by "
               f"num_key_value_heads={H_kv}")
    if a.attention_hidden_size is not None and a.attention_hidden_size != 2 * d:
        a.fail("attention_hidden_size", f"attention_hidden_size={a.attention_hidden_size}: the shared "
               f"block reads [hidden states, embeddings], 2·hidden_size = {2 * d} wide")
#: Zamba2Config's default stack (54 layers)


def layer_layout(kinds: list[str], blocks: int, tied: bool, adapters: bool) -> dict:
    """``Model.layer_order`` and ``Model.shared_copies`` of a Zamba stack: hybrid layer j runs block
    j mod ``blocks``; tied, that block is one stored copy for all its layers (holding their k_b adapter
    sets), untied every hybrid layer stores its own copy of it (with the block's k_b adapter sets)."""
    hybrid = [i for i, k in enumerate(kinds) if k == "hybrid"]
    k_b = [len(range(b, len(hybrid), blocks)) for b in range(min(blocks, len(hybrid)))]
    copies: list = [None] * len(kinds)
    for j, i in enumerate(hybrid):
        own = {sym.N_blk: 1, **({sym.N_ad: k_b[j % blocks]} if adapters else {})}
        copies[i] = (j % blocks if tied else j, own)
    order = layer_order(kinds, lambda k: "hybrid_layers" if k == "hybrid" else "mamba_layers")
    return {"layer_order": order, "shared_copies": {SharedBlockWeights.key: tuple(copies)} if hybrid else {}}


DEFAULT_STACK = (["linear_attention"] + (["linear_attention"] * 5 + ["hybrid"]) * 7 + ["linear_attention"] * 4
                 + ["hybrid"] + ["linear_attention"] * 3 + ["hybrid"] + ["linear_attention"] * 2)


@register("zamba2")
class Zamba2Adapter(Adapter):
    reference: ClassVar[str] = "Zamba2ForCausalLM"

    vocab_size: PosInt = 32000
    hidden_size: PosInt = 2560
    num_hidden_layers: LayerCount = 54
    layers_block_type: list[str] | None = Field(None, validation_alias=AliasChoices("layers_block_type",
                                                                                    "layer_types"))
    mamba_d_state: PosInt = 64
    mamba_d_conv: PosInt = 4
    mamba_expand: PosInt = 2
    mamba_ngroups: PosInt = 1
    n_mamba_heads: PosInt = 8
    chunk_size: PosInt = 256
    add_bias_linear: bool = False
    intermediate_size: NonNegInt | None = None
    hidden_act: str = "gelu"
    num_attention_heads: PosInt = 32
    num_key_value_heads: PosInt | None = None
    num_mem_blocks: PosInt = 1
    use_shared_attention_adapter: bool = False
    adapter_rank: PosInt = 128
    use_mem_rope: bool = False
    tie_word_embeddings: bool = True
    # derived by Zamba2Config.__post_init__, written out by it, honoured when given
    attention_head_dim: PosInt | None = Field(None, validation_alias=AliasChoices("attention_head_dim",
                                                                                  "head_dim"))
    attention_hidden_size: PosInt | None = None
    mamba_headdim: PosInt | None = None
    hybrid_layer_ids: list[int] | None = None

    @model_validator(mode="after")
    def _consistent(self):
        d, H_q, H_kv = self.hidden_size, self.num_attention_heads, self.H_kv
        kinds = self.kinds()
        check_shared_attention(self, H_kv)
        if self.use_shared_attention_adapter:
            if H_q * self.D_h != 2 * d:
                self.fail("attention_head_dim", f"num_attention_heads·attention_head_dim = {H_q * self.D_h} must "
                          f"equal 2·hidden_size = {2 * d}: the q adapter's output is added to q_proj's")
            if H_kv != H_q:
                self.fail("num_key_value_heads", f"num_key_value_heads={H_kv} must equal num_attention_heads={H_q}: "
                          "the k and v adapters' 2·hidden_size outputs are added to k_proj's and v_proj's")
        d_in = self.mamba_expand * d
        if d_in % self.n_mamba_heads:
            self.fail("n_mamba_heads", f"n_mamba_heads={self.n_mamba_heads} does not divide the Mamba "
                      f"intermediate size mamba_expand·hidden_size = {d_in}")
        if self.mamba_headdim is not None and self.mamba_headdim * self.n_mamba_heads != d_in:
            self.fail("mamba_headdim", f"mamba_headdim·n_mamba_heads = {self.mamba_headdim * self.n_mamba_heads} "
                      f"must equal the Mamba intermediate size {d_in}")
        if self.n_mamba_heads % self.mamba_ngroups:
            self.fail("mamba_ngroups", f"mamba_ngroups={self.mamba_ngroups} does not divide "
                      f"n_mamba_heads={self.n_mamba_heads}")
        ids = [i for i, k in enumerate(kinds) if k == "hybrid"]
        if self.hybrid_layer_ids is not None and list(self.hybrid_layer_ids) != ids:
            self.fail("hybrid_layer_ids", f"{quote(self.hybrid_layer_ids)} disagrees with layers_block_type, "
                      f"whose hybrid layers are {quote(ids)}")
        return self

    # -- derived values, as Zamba2Config derives them ---------------------------------------------
    @property
    def H_kv(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def D_h(self) -> int:
        return self.attention_head_dim or 2 * self.hidden_size // self.num_attention_heads

    @property
    def d_ff(self) -> int:
        return self.intermediate_size or 4 * self.hidden_size

    def kinds(self) -> list[str]:
        field = "layers_block_type"
        given = DEFAULT_STACK if self.layers_block_type is None else self.layers_block_type
        return self.check_kinds(field, given, self.num_hidden_layers, KINDS)

    # -- the model -----------------------------------------------------------------------------------
    def mamba(self) -> Mamba2:
        return Mamba2(bias=self.add_bias_linear, conv_bias=True)

    def to_model(self) -> Model:
        kinds = self.kinds()
        n_hyb = kinds.count("hybrid")
        n_mamba = len(kinds) - n_hyb
        norm = Norms(("input_layernorm",))
        d_in = self.mamba_expand * self.hidden_size
        vals = values(d=self.hidden_size, V=self.vocab_size, H_m=self.n_mamba_heads,
                      D_m=d_in // self.n_mamba_heads, G=self.mamba_ngroups, N=self.mamba_d_state,
                      K_c=self.mamba_d_conv, C=self.chunk_size)
        pre, groups = [Embedding()], []
        if n_mamba:
            groups.append(LayerGroup("mamba_layers", sym.L_M, (norm, self.mamba())))
            vals.update(values(L_M=n_mamba))
        if n_hyb:
            block = dict(mlp_bias=self.add_bias_linear, attn_adapters=self.use_shared_attention_adapter)
            pre.append(SharedBlockWeights(**block))
            call = SharedBlockCall(rope=self.use_mem_rope, act=self.hidden_act, **block)
            groups.append(LayerGroup("hybrid_layers", sym.L_hyb, (call, norm, self.mamba())))
            M = self.num_mem_blocks
            per_block = [len(range(b, n_hyb, M)) for b in range(min(M, n_hyb))]  # k_b
            tied = self.tie_word_embeddings
            vals.update(values(L_hyb=n_hyb, N_blk=min(M, n_hyb) if tied else n_hyb,
                               N_ad=n_hyb if tied else sum(k * k for k in per_block), H_q=self.num_attention_heads,
                               H_kv=self.H_kv, D_h=self.D_h, d_ff=self.d_ff, r_a=self.adapter_rank))
        return Model(self.name, self.model_type, tuple(pre), tuple(groups),
                     (Norms(("final_layernorm",)), LMHead(tied=self.tie_word_embeddings)), vals,
                     state_dtype={"recurrent_states": "float32"},
                     **layer_layout(kinds, self.num_mem_blocks, self.tie_word_embeddings, adapters=True))
