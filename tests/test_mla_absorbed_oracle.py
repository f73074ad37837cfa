"""Absorbed MLA decode, measured: an absorbed attention written here from the same weights of a tiny
transformers DeepSeek-V3 runs one decode step under FlopCounterMode; its FLOPs equal the engine's
``mla="absorb"`` (and the default ``mla="auto"``) decode count, and its logits equal the expanded
reference path's.

The absorbed forward (DeepSeek's own inference code, vLLM/SGLang MLA backends):
    kv_b_proj.weight [H·(D_nope+D_v), d_kv] splits per head into W_UK [H, D_nope, d_kv] and
    W_UV [H, D_v, d_kv];  q_lat = q_nope·W_UK  [B, H, 1, d_kv];
    scores = [q_lat, q_rope]·[latent, k_rope]ᵀ over the T+1 cached latents (one shared "head");
    out_lat = softmax(scores)·latent  [B, H, 1, d_kv];  out = out_lat·W_UVᵀ → o_proj.
"""
import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402
from transformers.models.deepseek_v3 import modeling_deepseek_v3 as hf  # noqa: E402

import symcost  # noqa: E402
from symcost.core.conventions import Phase  # noqa: E402
from tests import oracle  # noqa: E402
from tests.tiny import deepseek as tiny_deepseek  # noqa: E402

SEEDS = (0, 1, 2, 3)


def absorbed_forward(self, hidden_states, position_embeddings, attention_mask, cache=None, **kwargs):
    B, S = hidden_states.shape[:-1]
    H, Dn, Dr, Dv, C = (self.num_heads, self.qk_nope_head_dim, self.qk_rope_head_dim,
                        self.v_head_dim, self.kv_lora_rank)
    if self.q_lora_rank is None:
        q = self.q_proj(hidden_states)
    else:
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
    q = q.view(B, S, H, Dn + Dr).transpose(1, 2)
    q_nope, q_rot = torch.split(q, [Dn, Dr], dim=-1)
    kv_nope, k_rot = torch.split(self.kv_a_proj_with_mqa(hidden_states), [C, Dr], dim=-1)
    kv_nope = self.kv_a_layernorm(kv_nope).view(B, 1, S, C)
    k_rot = k_rot.view(B, 1, S, Dr)
    cos, sin = position_embeddings
    rope = hf.apply_rotary_pos_emb_interleave if self.config.rope_interleave else hf.apply_rotary_pos_emb
    q_rot, k_rot = rope(q_rot, k_rot, cos, sin)
    if cache is not None:
        kv_nope, k_rot = cache.update(kv_nope, k_rot, self.layer_idx, kwargs=kwargs)
    w = self.kv_b_proj.weight.view(H, Dn + Dv, C)
    w_uk, w_uv = w[:, :Dn, :], w[:, Dn:, :]
    q_lat = torch.einsum("bhsn,hnc->bhsc", q_nope, w_uk)  # W_UK absorbed into the query
    query = torch.cat((q_lat, q_rot), dim=-1)  # [B, H, S, d_kv + D_rope]
    key = torch.cat((kv_nope, k_rot), dim=-1)  # [B, 1, T+1, d_kv + D_rope], shared by all heads
    scores = torch.matmul(query, key.transpose(2, 3)) * self.scaling
    if attention_mask is not None:
        scores = scores + attention_mask[..., : key.shape[-2]]
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    out_lat = torch.matmul(probs, kv_nope)  # values in the latent space: [B, H, S, d_kv]
    out = torch.einsum("bhsc,hvc->bhsv", out_lat, w_uv)  # W_UV after attention
    out = out.transpose(1, 2).reshape(B, S, H * Dv)
    return self.o_proj(out), None


def _decode(model, ids, T):
    with torch.no_grad():
        out = model(ids[:, :T], use_cache=True)
        cache = oracle._cache_of(out)
        with FlopCounterMode(display=False) as counter:
            step = model(ids[:, T:], cache=cache, use_cache=True)
    return counter.get_total_flops(), step.logits


@pytest.mark.parametrize("seed", SEEDS)
def test_absorbed_decode_flops_and_output(seed, monkeypatch):
    rng = random.Random(1000 + seed)
    raw = tiny_deepseek.tiny(rng, "deepseek_v3")
    raw["num_nextn_predict_layers"] = 0
    m = symcost.build(dict(raw))
    model = oracle.build(raw).double()
    B = 2
    for T in (5, 9):
        ids = oracle._ids(model, B, T + 1)
        expanded_flops, expanded_logits = _decode(model, ids, T)
        with monkeypatch.context() as mp:
            mp.setattr(hf.DeepseekV3Attention, "forward", absorbed_forward)
            absorbed_flops, absorbed_logits = _decode(model, ids, T)
        vals = m.values_with(T=T, B=B)
        ph = dict(kind="decode", attention="full", logits="all", impl="reference")
        assert m.flops(Phase(**ph, mla="expand")).total_at(vals) == expanded_flops
        assert m.flops(Phase(**ph, mla="absorb")).total_at(vals) == absorbed_flops
        assert m.flops(Phase(**ph)).total_at(vals) == absorbed_flops  # the default, auto
        assert absorbed_flops != expanded_flops
        torch.testing.assert_close(absorbed_logits, expanded_logits, rtol=1e-9, atol=1e-9)
