"""Nemotron-H / Nemotron 3: a hybrid stack where every layer is one RMSNorm and one mixer.

transformers ``NemotronHForCausalLM``: a layer (``NemotronHBlock``) is ``norm`` then one of
Mamba-2 (``M`` / ``linear_attention`` / legacy ``mamba``), GQA attention without RoPE and
without biases (``*`` / ``full_attention`` / legacy ``attention``), an ungated ReLU² MLP
(``-`` / ``mlp``) or a ReLU² MoE (``E`` / ``moe``: sigmoid router with an
``e_score_correction_bias`` buffer, one shared expert of width ``moe_shared_expert_intermediate_size``,
optional LatentMoE ``moe_latent_size``). The stack is ``layers_block_type`` when given, otherwise
``hybrid_override_pattern`` (``layer_types`` is an alias of the list, as in transformers'
``attribute_map``); ``num_hidden_layers``, which transformers ignores, must agree with it when given.
Groups: L_M Mamba, L_A attention, L_F MLP, L_E MoE layers. The LM head is never tied (the class
declares no tied weights, whatever ``tie_word_embeddings`` says). d_in = mamba_num_heads ·
mamba_head_dim (``expand`` is unused).

MTP (``num_nextn_predict_layers`` > 0) is not built by transformers; its checkpoint weights go to
``extras`` as vLLM's ``NemotronHMultiTokenPredictor`` builds them, sharing embedding and head:
    L_mtp · (enorm d + hnorm d + eh_proj 2d·d + Σ_{mtp layers} (d + mixer) + final_layernorm d).
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, Field, model_validator

from ..components.attention import Attention
from ..components.embedding import Embedding, LMHead
from ..components.ffn import FFN
from ..components.mamba2 import Mamba2
from ..components.moe import MoE, MoESaves
from ..components.norm import Norms
from ..core.notation import sym
from ..core.terms import Terms
from ..model.assembly import LayerGroup, Model, layer_order
from . import register
from .base import LEGACY_LAYER_TYPES, MAX_LAYERS, Adapter, DtypeName, LayerCount, NonNegInt, PosInt, quote, values

PATTERN = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
LEGACY = LEGACY_LAYER_TYPES  # transformers' remap_legacy_layer_types
#: layer kind -> (group name, count symbol)
KINDS = {"linear_attention": ("mamba_layers", sym.L_M), "full_attention": ("attention_layers", sym.L_A),
         "mlp": ("mlp_layers", sym.L_F), "moe": ("moe_layers", sym.L_E)}


def _alias(*names, default):
    return Field(default, validation_alias=AliasChoices(*names))


@register("nemotron_h")
class NemotronHAdapter(Adapter):
    reference: ClassVar[str] = "NemotronHForCausalLM"
    unused: ClassVar[dict[str, str]] = {"tie_word_embeddings": "NemotronHForCausalLM declares no tied weights"}

    vocab_size: PosInt
    hidden_size: PosInt
    layers_block_type: list[str] | None = _alias("layer_types", "layers_block_type", default=None)
    hybrid_override_pattern: str | None = None
    num_hidden_layers: LayerCount | None = None  # transformers derives it from the stack
    num_attention_heads: PosInt = 32
    num_key_value_heads: PosInt | None = 8
    head_dim: PosInt = 128
    intermediate_size: PosInt = 21504
    mlp_bias: bool = False
    ssm_state_size: PosInt = 128
    mamba_num_heads: PosInt = 128
    mamba_head_dim: PosInt = 64
    mamba_ssm_cache_dtype: DtypeName = "float32"
    n_groups: PosInt = _alias("mamba_n_groups", "n_groups", default=8)
    conv_kernel: PosInt = _alias("mamba_d_conv", "conv_kernel", default=4)
    use_conv_bias: bool = _alias("mamba_conv_bias", "use_conv_bias", default=True)
    chunk_size: PosInt = _alias("mamba_chunk_size", "chunk_size", default=128)
    use_bias: bool = False
    n_routed_experts: PosInt = _alias("num_local_experts", "n_routed_experts", default=8)
    num_experts_per_tok: PosInt = 2
    moe_intermediate_size: PosInt = 7688
    moe_shared_expert_intermediate_size: PosInt = 7688
    moe_latent_size: PosInt | None = None
    n_group: PosInt = 1
    num_nextn_predict_layers: NonNegInt = 0
    mtp_layers_block_type: list[str] | None = None
    mtp_hybrid_override_pattern: str | None = None

    @model_validator(mode="after")
    def _consistent(self):
        types = self.layer_types()  # validates the pattern / list
        field = "layers_block_type" if self.layers_block_type is not None else "hybrid_override_pattern"
        if not types:
            self.fail(field, "is empty: the model needs at least one layer")
        if len(types) > MAX_LAYERS:
            self.fail(field, f"has {len(types)} layers (at most {MAX_LAYERS})")
        if self.num_hidden_layers is not None:
            self.check_count(field, len(types), self.num_hidden_layers)
        if self.num_nextn_predict_layers:
            self.mtp_layer_types()
        if self.num_attention_heads % self.H_kv:
            self.fail("num_key_value_heads", f"num_attention_heads={self.num_attention_heads} is not "
                      f"divisible by num_key_value_heads={self.H_kv}")
        self.require_divisible("mamba_num_heads", "n_groups")
        self.require_divisible("n_routed_experts", "n_group")
        if self.num_experts_per_tok > self.n_routed_experts:
            self.fail("num_experts_per_tok", f"{self.num_experts_per_tok} > n_routed_experts="
                      f"{self.n_routed_experts}")
        return self

    @property
    def H_kv(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads

    @staticmethod
    def _kinds(field: str, pattern: str | None, names: list[str] | None) -> list[str]:
        if names is not None:
            kinds = [LEGACY.get(n, n) for n in names]
            bad = sorted(set(kinds) - set(KINDS))
            if bad:
                Adapter.fail(field, f"unknown layer type(s) {quote(bad)} (expected {sorted(KINDS)})")
            return kinds
        bad = sorted(set(pattern) - set(PATTERN))
        if bad:
            Adapter.fail(field, f"unknown pattern character(s) {quote(bad)} (expected one of 'M*-E')")
        return [PATTERN[ch] for ch in pattern]

    def layer_types(self) -> list[str]:
        """The stack as transformers resolves it: the list wins over the pattern string."""
        if self.layers_block_type is not None:
            return self._kinds("layers_block_type", None, self.layers_block_type)
        if self.hybrid_override_pattern is not None:
            return self._kinds("hybrid_override_pattern", self.hybrid_override_pattern, None)
        return ["linear_attention", "moe", "full_attention", "mlp"]

    def mtp_layer_types(self) -> list[str]:
        if self.mtp_layers_block_type is not None:
            kinds = self._kinds("mtp_layers_block_type", None, self.mtp_layers_block_type)
            if kinds != ["full_attention", "moe"] or self.mtp_hybrid_override_pattern is None:
                return kinds
        if self.mtp_hybrid_override_pattern is not None:
            return self._kinds("mtp_hybrid_override_pattern", self.mtp_hybrid_override_pattern, None)
        return ["full_attention", "moe"]

    # -- the model -----------------------------------------------------------------------------------
    def mixer(self, kind: str):
        if kind == "linear_attention":
            return Mamba2(bias=self.use_bias, conv_bias=self.use_conv_bias)
        if kind == "full_attention":
            return Attention(rope=False)  # no positional encoding in the attention layers
        if kind == "mlp":
            return FFN(gated=False, bias=self.mlp_bias, act="relu2")
        return MoE(gated=False, d_sh=sym.d_sh, shared_gated=False, correction_bias=True, act="relu2", router="sigmoid_group",
                   d_lat=None if self.moe_latent_size is None else sym.d_lat, proj_bias=self.mlp_bias,
                   saves=MoESaves(weighted_fp32=True))  # NemotronHMoE accumulates the weighted outputs in fp32

    def kind_values(self, kind: str) -> dict:
        if kind == "linear_attention":
            return values(N=self.ssm_state_size, H_m=self.mamba_num_heads, D_m=self.mamba_head_dim,
                          G=self.n_groups, K_c=self.conv_kernel, C=self.chunk_size)
        if kind == "full_attention":
            return values(H_q=self.num_attention_heads, H_kv=self.H_kv, D_h=self.head_dim)
        if kind == "mlp":
            return values(d_ff=self.intermediate_size)
        return values(E=self.n_routed_experts, k=self.num_experts_per_tok, d_moe=self.moe_intermediate_size,
                      d_sh=self.moe_shared_expert_intermediate_size, d_lat=self.moe_latent_size)

    def to_model(self) -> Model:
        types = self.layer_types()
        norm = Norms(("norm",), kind="fp32_weight")
        vals = values(d=self.hidden_size, V=self.vocab_size)
        groups = []
        for kind, (name, count) in KINDS.items():
            if kind in types:
                groups.append(LayerGroup(name, count, (norm, self.mixer(kind))))
                vals.update(self.kind_values(kind))
                vals[count] = types.count(kind)
        model = Model(self.name, self.model_type, (Embedding(name="embeddings"),), tuple(groups),
                      (Norms(("norm_f",), kind="fp32_weight"), LMHead(tied=False)), vals,
                      state_dtype={"recurrent_states": self.mamba_ssm_cache_dtype},
                      layer_order=layer_order(types, lambda k: KINDS[k][0]))
        model.notes.append("lm_head is never tied in NemotronHForCausalLM, whatever tie_word_embeddings says")
        if self.layers_block_type is None and self.hybrid_override_pattern is None:
            model.notes.append("neither layers_block_type nor hybrid_override_pattern is given: "
                               "transformers' default 4-layer stack (mamba, moe, attention, mlp) is used")
        if self.num_nextn_predict_layers:
            model.extras = self.mtp(model.values)
            model.notes.append("MTP (extras): L_mtp × (enorm + hnorm + eh_proj [2d, d] + "
                               f"{'+'.join(self.mtp_layer_types())} layers with one norm each + "
                               "final_layernorm); embedding and head shared with the main model")
        return model

    def mtp(self, vals: dict) -> Terms:
        d = sym.d
        step = Terms({"enorm": d, "hnorm": d, "eh_proj": 2 * d * d},
                     {"eh_proj": "[2d, d] fuses the normed embedding and hidden state"})
        for i, kind in enumerate(self.mtp_layer_types()):
            mixer = self.mixer(kind)
            step.add(f"layer_{i}", Terms({"norm": d}).add(mixer.key, mixer.params()), kind)
            vals.update(self.kind_values(kind))
        step.add("final_layernorm", d)
        vals[sym.L_mtp] = self.num_nextn_predict_layers
        return Terms({"mtp": step.scale(sym.L_mtp)}, {"mtp": "next-n prediction modules (not built)"})
