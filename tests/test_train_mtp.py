"""``--mtp``: the MTP modules trained (``training/mtp.py``), against transformers' own MTP classes.

transformers 5.x builds the MTP modules from the main model (``modeling_layers.MtpModel``: per module
``enorm``, ``hnorm``, ``eh_proj`` [2d → d], one decoder layer of the main model's last layer's class,
``post_norm``; the embedding and head shared). Measured here:

* parameters: ``MtpModel`` on the meta device for the bundled DeepSeek-V3, GLM-5 and MiMo-7B configs,
  its own parameters (embedding and head excluded) equal to the ``mtp`` group's per module and to the
  adapters' ``extras["mtp"]``, exactly;
* saved tensors: one training step of a tiny DeepSeek-V3 with its MTP module (main loss + MTP loss,
  the MTP module fed the main model's output hidden state and the tokens shifted by one, as Megatron's
  ``MultiTokenPredictionLayer`` is) under ``saved_tensors_hooks``, minus the main model alone: equal to
  the engine's ``mtp`` group plus one RoPE table — transformers' ``forward_layer`` recomputes its
  rotary table per module, Megatron passes the decoder's (``rotary_pos_emb``), the engine's convention;
* FLOPs: ``FlopCounterMode`` over the MTP module's forward and head equal to the group's forward
  FLOPs (full attention rectangle, as the counter sees eager attention).
"""
from __future__ import annotations

import functools
import gc
import json
import random
import weakref
from importlib.resources import files

import pytest

import symcost
from symcost.architectures import loader
from symcost.cli.main import main
from symcost.core.conventions import Backward, Phase
from symcost.core.errors import SymcostError
from symcost.core.notation import sym
from symcost.core.terms import exact
from symcost.training import TrainSetup, train_memory
from symcost.training.activations import activations
from symcost.training.flops import compare_presets, train_flops
from symcost.training.mtp import MTP_GROUP, with_mtp

torch = pytest.importorskip("torch")
from transformers.modeling_layers import MtpModel  # noqa: E402

from tests import oracle, saved  # noqa: E402
from tests.tiny import deepseek  # noqa: E402


def _mtp_of(main_model, n):
    cfg = main_model.config.get_text_config()
    for k in ("layer_types", "mlp_layer_types"):  # the MTP layer is the last layer's kind
        if getattr(cfg, k, None) is not None and getattr(cfg, "mtp_" + k, None) is None:
            setattr(cfg, "mtp_" + k, [getattr(cfg, k)[-1]] * n)
    cfg.num_mtp_layers = n
    return MtpModel(main_model, n)


@pytest.mark.parametrize("name", ["deepseek-v3", "glm-5", "mimo-7b-base"])
def test_mtp_parameters_equal_transformers(name):
    raw = json.loads(files("symcost.configs").joinpath(f"{name}.json").read_text())
    m = loader.build(name)
    t = with_mtp(m)
    n = t.tail_layers
    assert n >= 1
    with torch.device("meta"):
        mtp = _mtp_of(oracle.build(raw, "meta"), n)
    own = sum(p.numel() for k, p in mtp.named_parameters() if not k.startswith(("embed_tokens", "shared_head")))
    group = next(g for g in t.groups if g.name == MTP_GROUP)
    per = sum(exact(c.params().total, t.values) for c in group.components)
    assert own == n * per == exact(m.extras["mtp"].total, m.values)
    assert t.params().total_at(t.values) == m.params().total_at(m.values) + own


@functools.lru_cache(maxsize=None)
def _tiny(seed: int):
    raw = deepseek._text(random.Random(f"mtp-{seed}"), "deepseek_v3")
    raw["num_nextn_predict_layers"] = 1
    # the MTP layer is an MoE layer (the adapter's, and transformers' class for layer index ≥ first dense)
    raw["first_k_dense_replace"] = min(raw["first_k_dense_replace"], raw["num_hidden_layers"] - 1)
    return raw


def _saved(main_model, mtp, B, T) -> int:
    """Distinct non-parameter storages autograd keeps after a forward of the main loss (+ the MTP loss)."""
    params = {p.untyped_storage().data_ptr() for p in main_model.parameters()}
    params |= {p.untyped_storage().data_ptr() for p in (mtp.parameters() if mtp is not None else ())}
    packed = []
    ids = oracle._ids(main_model, B, T)
    V = main_model.config.vocab_size
    gc.freeze()  # what exists now is not this forward's garbage (the collection below skips it)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: (packed.append(weakref.ref(t)), t)[1], lambda t: t):
        h = main_model.model(input_ids=ids, use_cache=False).last_hidden_state
        loss = main_model.loss_function(logits=main_model.lm_head(h), labels=ids, vocab_size=V)
        if mtp is not None:
            shifted = torch.roll(ids, -1, dims=1)  # Megatron's roll_tensor of the input ids and labels
            h = mtp.forward_layer(0, h, torch.arange(T)[None], None, input_ids=shifted)
            loss = loss + main_model.loss_function(logits=mtp._project_to_logits(h), labels=shifted, vocab_size=V)
    del h
    gc.collect()
    seen = {}
    for r in packed:
        t = r()
        if t is not None and (p := t.untyped_storage().data_ptr()) not in params and p not in seen:
            seen[p] = t.untyped_storage().nbytes()
    del loss
    return sum(seen.values())


@pytest.mark.parametrize("seed", [0, 4])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_mtp_saved_tensors_equal_measured(seed, dtype):
    raw = _tiny(seed)
    main_model = saved.build(raw, "eager", "none", dtype)
    mtp = _mtp_of(main_model, 1).train().to(saved.DTYPES[dtype])
    t = with_mtp(symcost.build(raw))
    tree = activations(t, Backward(kernel="eager", recompute="none", act_dtype=dtype, scan="reference"))
    for B, T in ((1, 5), (2, 7)):
        v = t.values_with(T=T, B=B)
        v.update({sym.b_a: {"fp32": 4, "bf16": 2}[dtype], sym.N_tp: 1, sym.N_cp: 1})
        measured = _saved(main_model, mtp, B, T) - _saved(main_model, None, B, T)
        rope_again = tree["shared"].total.xreplace(v)  # transformers' forward_layer rebuilds the table
        assert tree[MTP_GROUP].total.xreplace(v) + rope_again == measured, (seed, dtype, B, T)


def test_mtp_forward_flops_equal_flop_counter():
    from torch.utils.flop_counter import FlopCounterMode
    raw = _tiny(4)
    main_model = saved.build(raw, "eager", "none", "fp32")
    mtp = _mtp_of(main_model, 1).train()
    t = with_mtp(symcost.build(raw))
    B, T = 2, 7
    ids = oracle._ids(main_model, B, T)
    h = torch.randn(B, T, raw["hidden_size"])
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        mtp._project_to_logits(mtp.forward_layer(0, h, torch.arange(T)[None], None, input_ids=ids))
    fwd = t.flops(Phase(kind="prefill", attention="full", logits="all"))
    assert exact(fwd[MTP_GROUP].total if hasattr(fwd[MTP_GROUP], "total") else fwd[MTP_GROUP],
                 t.values_with(T=T, B=B)) == counter.get_total_flops()


@pytest.fixture(scope="module")
def dsv3():
    return loader.build("deepseek-v3")


def test_mtp_on_the_last_stage_and_in_every_count(dsv3):
    t = with_mtp(dsv3)
    setup = TrainSetup.of(seq=4096, micro_batch=1, global_batch=64, dp=8, ep=8, pp=16, zero=1)
    plain, with_ = train_memory(dsv3, setup.replace(mtp=0)), train_memory(t, setup)
    assert train_memory(dsv3, setup).per_gpu == with_.per_gpu  # setup.mtp auto: the same modules
    assert [r["layers"] for r in plain.stages] == [
        {k: n for k, n in r["layers"].items() if k != MTP_GROUP} for r in with_.stages]  # the same split
    assert with_.stages[-1]["layers"][MTP_GROUP] == 1
    for a, b in zip(plain.stages[:-1], with_.stages[:-1]):
        assert a["per_gpu"] == b["per_gpu"]
    assert with_.stages[-1]["weights"] > plain.stages[-1]["weights"]
    assert with_.stages[-1]["activations"] > plain.stages[-1]["activations"]
    # FLOPs: the exact count adds 3 × the MTP group's forward; Megatron's own formula already had L_mtp
    v = dsv3.values_with(T=4096, B=1)
    extra = train_flops(t).total_at(t.values_with(T=4096, B=1)) - train_flops(dsv3).total_at(v)
    fwd = t.flops(Phase(kind="prefill", attention="causal", logits="all"))[MTP_GROUP]
    assert extra == 3 * exact(fwd.total, t.values_with(T=4096, B=1))
    rows = {r["preset"]: r["flops"] for r in compare_presets(t, 4096, 1)}
    rows0 = {r["preset"]: r["flops"] for r in compare_presets(with_mtp(dsv3, 0), 4096, 1)}
    assert rows["torchtitan"] > rows0["torchtitan"] and rows["6ND"] > rows0["6ND"]
    assert rows["megatron"] > rows0["megatron"]  # L_mtp = 0 drops Megatron's MTP term


def test_mtp_cli(capsys):
    base = ["train", "deepseek-v3", "--seq", "4096", "--micro-batch", "1", "--dp", "8", "--ep", "8", "--zero", "1",
            "--json"]
    assert main(base) == 0
    auto = json.loads(capsys.readouterr().out)
    assert main([*base, "--mtp", "0"]) == 0
    none = json.loads(capsys.readouterr().out)
    assert main([*base, "--mtp", "2"]) == 0
    two = json.loads(capsys.readouterr().out)
    assert none["per_gpu_bytes"] < auto["per_gpu_bytes"] < two["per_gpu_bytes"]
    assert none["flops_per_step"] < auto["flops_per_step"] < two["flops_per_step"]
    assert main(["budget", "deepseek-v3", "--tokens", "1T", "--gpus", "8", "--gpu", "H800", "--mtp", "0", "--json"]) == 0
    b0 = json.loads(capsys.readouterr().out)
    assert main(["budget", "deepseek-v3", "--tokens", "1T", "--gpus", "8", "--gpu", "H800", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["flops"] > b0["flops"]
    for bad, word in ((["--mtp", "x"], "--mtp"), (["--mtp", "-1"], "--mtp")):
        assert main([*base, *bad]) == 2
        assert word in capsys.readouterr().err
    assert main(["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", "--mtp", "1"]) == 2
    assert "no multi-token-prediction module" in capsys.readouterr().err
    with pytest.raises(SymcostError):
        with_mtp(loader.build("minimax-m3"), 1)  # its adapter's MTP module is not its last layer's
