"""Xiaomi MiMo-7B (``mimo``, ``MiMoForCausalLM``): Qwen2 with multi-token-prediction layers.

transformers has no ``mimo`` class: the checkpoints (XiaomiMiMo/MiMo-7B-Base, -RL, -SFT) ship
``modeling_mimo.py`` and ``configuration_mimo.py`` (``auto_map``), the reference here, as their public
copies show them: ``MiMoConfig(Qwen2Config)`` adds ``num_nextn_predict_layers`` (default 0);
``MiMoForCausalLM(Qwen2ForCausalLM)`` builds ``MiMoModel(Qwen2Model)``, which adds
``mtp_layers = [MiMoMTPLayers(config)] * num_nextn_predict_layers`` and keeps ``Qwen2Model.forward``.
So the main model is exactly Qwen2 (``llama.Qwen2Adapter``: q/k/v biases, o_proj without, windows
only with ``use_sliding_window``), and the oracle suite measures it with ``Qwen2ForCausalLM``.

Each MTP layer (``MiMoMTPLayers``): ``token_layernorm`` d and ``hidden_layernorm`` d on the next
token's embedding and the main model's hidden state, ``input_proj`` [2d, d] without bias on their
concatenation, then one Qwen2 decoder layer (``input_layernorm``, ``self_attn``, ``post_attention_layernorm``,
``mlp``) and ``final_layernorm`` d; embedding and LM head shared with the main model. The forward
never runs them (speculative decoding does, outside the class; vLLM loads the main model without
``mtp_layers`` and the MTP layers as a separate draft model), so — as for every family here — they are
reported in ``Model.extras["mtp"]``, not in the total; the class and the checkpoint hold total + mtp.
"""
from __future__ import annotations

from typing import ClassVar

from ..components.attention import Attention
from ..components.ffn import FFN
from ..components.mtp import add_mtp
from ..components.norm import Norms
from ..core.notation import sym
from ..core.terms import Terms
from . import register
from .base import NonNegInt
from .llama import LAYER_NORMS, Qwen2Adapter


def mimo_mtp_layer(attention: Attention, ffn: FFN) -> Terms:
    """Parameters of one ``MiMoMTPLayers``: 5 RMSNorms of d, input_proj 2d·d, a Qwen2 attention and MLP."""
    d = sym.d
    layer = Terms()
    for c in (Norms(LAYER_NORMS), attention, ffn):
        layer.add(c.key, c.params(), c.label())
    return Terms({"token_layernorm": d, "hidden_layernorm": d, "input_proj": 2 * d * d, "layer": layer,
                  "final_layernorm": d},
                 {"token_layernorm": "RMSNorm [d] on the next token's embedding",
                  "hidden_layernorm": "RMSNorm [d] on the main model's hidden state",
                  "input_proj": "[2d, d], no bias", "layer": "one Qwen2 decoder layer",
                  "final_layernorm": "RMSNorm [d]"})


@register("mimo")
class MiMoAdapter(Qwen2Adapter):
    reference: ClassVar[str] = "MiMoForCausalLM (remote code: modeling_mimo.py; main model = Qwen2ForCausalLM)"
    unused: ClassVar[dict[str, str]] = {
        "use_mrope": "a MiMo config flag its modeling code never reads (text-only RoPE)",
    }

    num_nextn_predict_layers: NonNegInt = 0

    def to_model(self):
        model = super().to_model()
        n = self.num_nextn_predict_layers
        if n:
            add_mtp(model, n, mimo_mtp_layer(self.attention(None), self.ffn()))
            model.notes.append(
                f"{n} MTP layer(s) (extras, not in the total): token and hidden RMSNorms, input_proj [2d, d] and one "
                "Qwen2 decoder layer with a final RMSNorm each, embedding and head shared; MiMoForCausalLM "
                "registers them (model.mtp_layers) but its forward never runs them")
        return model
