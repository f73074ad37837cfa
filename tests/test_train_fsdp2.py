"""FSDP2's working set on the real code path: ``fully_shard`` on a fake process group (CPU).

A tiny Llama is wrapped as torchtitan wraps it (``parallelize.py`` apply_fsdp: the embedding, each
decoder layer, ``[norm, lm_head]`` and the root; bf16 parameters, fp32 reduce) over 4 ranks of the
``fake`` backend, and every module's forward reports which parameters are unsharded at that moment
(FSDP2 swaps a module's sharded DTensor parameters for full bf16 tensors while its unit is gathered).
What symcost's ``gathered`` line assumes is checked against what is seen:

* resharded after forward: at most one wrapping unit is unsharded at a time in a CPU forward, the
  largest being symcost's U (``memory.rank_units``); symcost adds the prefetched next unit (FSDP2
  overlaps it on a CUDA stream, which a CPU run does not have) and the unit's fp32 gradients;
* not resharded (``reshard_after_forward=False``): at the loss every parameter is unsharded in bf16,
  2 B × Ψ — the 2·Ψ_rank term of symcost's formula, to the byte.
"""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from symcost.architectures import loader
from symcost.core.notation import sym
from symcost.training.memory import gathered_formula, rank_units
from symcost.training.plan import rank_stages
from symcost.training.setup import TrainSetup

RAW = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3,
       "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1024, "tie_word_embeddings": False,
       "max_position_embeddings": 128, "rms_norm_eps": 1e-5}
WORLD = 4


@pytest.fixture(scope="module")
def fake_pg():
    from torch.testing._internal.distributed.fake_pg import FakeStore
    if not dist.is_initialized():
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=WORLD)
    yield
    # the fake group is left for other tests of this module; pytest's process ends it


def _run(reshard: bool):
    """Unsharded bf16 bytes seen at each module's forward, and at the loss."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.tensor import DTensor
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.for_model(**RAW)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    mesh = init_device_mesh("cpu", (WORLD,))
    kw = dict(mesh=mesh, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32),
              reshard_after_forward=reshard)
    fully_shard(model.model.embed_tokens, **kw)
    for layer in model.model.layers:
        fully_shard(layer, **kw)
    fully_shard([model.model.norm, model.lm_head], **kw)
    fully_shard(model, **kw)

    def unsharded() -> int:
        return sum(p.numel() * p.element_size() for p in model.parameters() if not isinstance(p, DTensor))

    seen = []
    for mod in model.modules():
        if not list(mod.children()):  # leaves: inside their unit's forward
            mod.register_forward_pre_hook(lambda *_: seen.append(unsharded()))
    ids = torch.randint(0, RAW["vocab_size"], (1, 16))
    out = model(ids, labels=ids)
    at_loss = unsharded()
    out.loss.backward()
    return seen, at_loss, sum(p.numel() for p in model.parameters())


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("fsdp2") / "config.json"
    path.write_text(json.dumps(RAW))
    return loader.build(str(path))


def test_resharded_one_unit_at_a_time_and_symcost_unit(fake_pg, tiny):
    seen, at_loss, psi = _run(True)
    setup = TrainSetup.of(seq=16, dp=WORLD, zero=3, framework="fsdp2")
    U = max(sum(u) for u in rank_units(tiny, setup, 0))
    assert max(seen) == 2 * U  # the largest unit, gathered in bf16, alone on a CPU forward
    assert at_loss == 0  # every unit resharded after its forward (the loss runs outside them)
    g = gathered_formula(tiny, setup, 0, rank_stages(tiny, 1)[0]).xreplace({sym.N_tp: 1, sym.N_ep: 1})
    assert int(g) == 2 * 2 * U + 4 * U  # + the prefetched unit and the unit's fp32 gradients


def test_not_resharded_holds_every_parameter_in_bf16(fake_pg, tiny):
    seen, at_loss, psi = _run(False)
    assert at_loss == 2 * psi
    setup = TrainSetup.of(seq=16, dp=WORLD, zero=3, framework="fsdp2", reshard="off")
    g = gathered_formula(tiny, setup, 0, rank_stages(tiny, 1)[0]).xreplace({sym.N_tp: 1, sym.N_ep: 1})
    U = max(sum(u) for u in rank_units(tiny, setup, 0))
    assert int(g) == 2 * psi + 4 * U  # 2·Ψ_rank as seen, + one unit's gradients in the fp32 reduce dtype
