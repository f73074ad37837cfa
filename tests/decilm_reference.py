"""A runnable stand-in for ``modeling_decilm.DeciLMForCausalLM`` (nemotron-nas), built from transformers' Llama.

transformers has no DeciLM class; the checkpoints' own ``modeling_decilm.py`` imports a private copy of
transformers 4.44 and cannot be loaded here. Its ``DeciLMDecoderLayer`` is a ``LlamaDecoderLayer`` whose
parts a block config switches (``DeciLMDecoderLayer.__init__`` / ``forward`` of
nvidia/Llama-3_3-Nemotron-Super-49B-v1): this module builds the real ``LlamaForCausalLM`` and replaces,
layer by layer, what ``block_configs`` changes — the attention by ``LlamaAttention`` with
H_kv = H_q // n_heads_in_group, by a bias-free ``linear_attn`` [d, d], or by nothing (and then no
``input_layernorm``); the MLP by ``LlamaMLP`` of width round_up(int(2·ffn_mult·d/3), 256), by a
bias-free ``linear_mlp`` [d, d], or by nothing (no ``post_attention_layernorm``). A skipped part adds
zeros to the residual, as the reference's ``pass`` leaves it unchanged. The engine is written from the
DeciLM code's description, this from transformers' Llama modules: the tests compare the two.
"""
from __future__ import annotations

import copy

import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaAttention, LlamaMLP


def _width(ffn_mult: float, d: int) -> int:
    size = int(2 * ffn_mult * d / 3)
    return size if size % 256 == 0 else size + 256 - size % 256


class _Skip(nn.Module):
    """A no-op part: the residual gets zeros (no weights, no matmul)."""

    def __init__(self, attention: bool):
        super().__init__()
        self.attention = attention

    def forward(self, hidden_states, *args, **kwargs):
        zero = torch.zeros_like(hidden_states)
        return (zero, None) if self.attention else zero


class _Linear(nn.Module):
    def __init__(self, name: str, d: int, attention: bool):
        super().__init__()
        self.name, self.attention = name, attention
        setattr(self, name, nn.Linear(d, d, bias=False))

    def forward(self, hidden_states, *args, **kwargs):
        out = getattr(self, self.name)(hidden_states)
        return (out, None) if self.attention else out


def build(raw: dict, device: str = "cpu", seed: int = 0, width=_width):
    """The model for a nemotron-nas ``raw`` config (``width``: the FFN-width rule, for a test to vary)."""
    d, H = raw["hidden_size"], raw["num_attention_heads"]
    cfg = LlamaConfig(hidden_size=d, vocab_size=raw["vocab_size"], num_hidden_layers=raw["num_hidden_layers"],
                      num_attention_heads=H, num_key_value_heads=H, head_dim=raw.get("head_dim") or d // H,
                      intermediate_size=1, attention_bias=raw.get("attention_bias", False),
                      mlp_bias=raw.get("mlp_bias", False), tie_word_embeddings=raw.get("tie_word_embeddings", False),
                      max_position_embeddings=raw.get("max_position_embeddings", 64), rms_norm_eps=1e-5)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    with torch.device(device):
        model = LlamaForCausalLM(cfg)
        for i, (layer, block) in enumerate(zip(model.model.layers, raw["block_configs"])):
            a, f = block.get("attention", {}), block.get("ffn", {})
            if a.get("no_op"):
                layer.input_layernorm, layer.self_attn = nn.Identity(), _Skip(attention=True)
            elif a.get("replace_with_linear"):
                layer.self_attn = _Linear("linear_attn", d, attention=True)
            else:
                c = copy.copy(cfg)
                c.num_key_value_heads = H // a["n_heads_in_group"]
                layer.self_attn = LlamaAttention(c, layer_idx=i)
            if f.get("no_op"):
                layer.post_attention_layernorm, layer.mlp = nn.Identity(), _Skip(attention=False)
            elif f.get("replace_with_linear"):
                layer.mlp = _Linear("linear_mlp", d, attention=False)
            else:
                c = copy.copy(cfg)
                c.intermediate_size = width(f["ffn_mult"], d)
                layer.mlp = LlamaMLP(c)
    if device == "meta":
        return model
    return model.float().eval()
