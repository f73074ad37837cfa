"""``--framework deepspeed`` against DeepSpeed's own estimators, to the byte.

DeepSpeed (the test extra; ``DS_BUILD_OPS=0``, its ops unbuilt, runs on CPU) ships
``estimate_zero2_model_states_mem_needs`` and ``estimate_zero3_model_states_mem_needs``
(``deepspeed/runtime/zero/stage_1_and_2.py``, ``stage3.py``): GPU and host bytes of the model
states for a parameter count, the largest module's parameter count and the GPUs. The parameter
counts here are DeepSpeed's own ``model_to_params`` over the transformers class built on the meta
device (the total as ``model.parameters()`` yields it: ``model_to_params``
deduplicates by ``data_ptr()``, which is 0 on meta); symcost's are its own (``plan.stages``, ``memory.modules``). Compared: weights + gradients +
optimizer + gathered (``train``'s breakdown) with the estimator's GPU bytes, and
``host_node`` with its CPU bytes (per node, its 1.5 buffer factor included).

The estimator floors the sharded states once, ``int(18·Ψ/N)``, and computes the host bytes on
3 nodes through the float ``1/num_nodes``: both are its definitions, reproduced as the
``deepspeed`` convention (``states.rounded_states``, ``states.estimator_host_node``), so every case
is equal to the byte, GPU and host.
"""
from __future__ import annotations

import json
from importlib.resources import files

import pytest

from symcost.architectures import loader
from symcost.training import TrainSetup, train_memory

deepspeed_zero = pytest.importorskip("deepspeed.runtime.zero.stage3", reason="deepspeed is in the test extra")
from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs, model_to_params
from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

from tests import oracle

MODELS = ("llama-3.1-8b", "qwen3-30b-a3b", "mixtral-8x7b-v0.1", "gpt-oss-20b", "gpt2", "deepseek-v3")
#: (GPUs per node, nodes)
CLUSTERS = ((1, 1), (8, 1), (8, 4), (4, 2), (8, 3))
CASES = [(z, off) for z in (2, 3) for off in ("none", "optimizer", "params") if not (z == 2 and off == "params")]


def _ds_counts(name: str) -> tuple[int, int]:
    raw = json.loads(files("symcost.configs").joinpath(f"{name}.json").read_text())
    model = oracle.build(raw, "meta")
    _, largest = model_to_params(model)
    # model_to_params deduplicates tied weights by data_ptr(), 0 for every meta tensor: the total is
    # taken as ``model.parameters()`` yields it (each tied weight once), the largest module as DeepSpeed's
    return sum(p.numel() for p in model.parameters()), largest


_COUNTS: dict = {}


def _estimate(name, zero, offload, gpn, nodes):
    if name not in _COUNTS:
        _COUNTS[name] = _ds_counts(name)
    psi, largest = _COUNTS[name]
    if zero == 2:
        cpu, gpu = estimate_zero2_model_states_mem_needs(psi, gpn, nodes, cpu_offload=offload != "none")
    else:
        cpu, gpu, _ = estimate_zero3_model_states_mem_needs(psi, largest, gpn, nodes, cpu_offload=offload != "none",
                                                            cpu_offload_params=offload == "params")
    return psi, gpu, cpu


@pytest.mark.parametrize("name", MODELS)
def test_deepspeed_estimators_to_the_byte(name):
    m = loader.build(name)
    for zero, offload in CASES:
        for gpn, nodes in CLUSTERS:
            n = gpn * nodes
            psi, ds_gpu, ds_cpu = _estimate(name, zero, offload, gpn, nodes)
            # the transformers class DeepSpeed counts has no MTP module: the main model (--mtp 0)
            setup = TrainSetup.of(seq=256, micro_batch=1, dp=n, zero=zero, offload=offload, framework="deepspeed", mtp=0)
            tm = train_memory(m, setup, gpus_per_node=gpn)
            gpu = tm.weights + tm.gradients + tm.optimizer + tm.gathered
            case = f"{name} ZeRO-{zero} offload={offload} {gpn}x{nodes}"
            assert gpu == ds_gpu, case
            assert tm.host_node == ds_cpu, case
            if offload == "params":
                assert tm.gathered > 0 and gpu == tm.gathered, case  # GPU bytes are never 0 under params offload
