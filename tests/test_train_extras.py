"""Training memory's FP8 weight copies, DualPipe's second stage and activation offload.

* ``fp8_weights`` (``training/fp8.py``): Transformer Engine caches an fp8 copy and a transpose of every
  GEMM weight, so 2 B per element of the decoder layers' ``nn.Linear`` weights — counted here from the
  transformers class on the meta device (every ``nn.Linear`` inside ``model.model.layers``, the MoE
  router excepted), not from symcost's own count.
* DualPipe: rank r holds stages r and pp−1−r; its states are the two 1F1B ranks' added, its
  activations (pp+1)/2 micro-batches of each.
* activation offload: the offloaded layers' bytes are on the host, one of them in transit on the
  GPU; the sum of the GPU's and the host's is the saved set without offload plus that one layer.
"""
from __future__ import annotations

import functools
import json
from importlib.resources import files

import pytest

from symcost.architectures import loader
from symcost.cli.main import main
from symcost.core.errors import SymcostError
from symcost.training import TrainSetup, train_memory


@pytest.fixture(scope="module")
def llama():
    return loader.build("llama-3.1-8b")


@functools.lru_cache(maxsize=None)
def _linear_weights(name: str) -> int:
    torch = pytest.importorskip("torch")
    from tests import oracle
    raw = json.loads(files("symcost.configs").joinpath(f"{name}.json").read_text())
    model = oracle.build(raw, "meta")
    n = 0
    for mod_name, mod in model.model.layers.named_modules():
        if isinstance(mod, torch.nn.Linear) and not mod_name.endswith(("gate", "router")):
            n += mod.weight.numel()
    return n


@pytest.mark.parametrize("precision,per_param", [("fp8", 2), ("mxfp8", None)])
def test_fp8_weight_copies_are_two_bytes_per_linear_weight(llama, precision, per_param):
    w = _linear_weights("llama-3.1-8b")
    tm = train_memory(llama, TrainSetup.of(seq=4096, micro_batch=1, dp=8, zero=1, framework="megatron",
                                           precision=precision))
    want = 2 * w if per_param else 2 * w + -(-2 * w // 32)
    assert tm.fp8_weights == want
    bf16 = train_memory(llama, TrainSetup.of(seq=4096, micro_batch=1, dp=8, zero=1, framework="megatron"))
    assert tm.per_gpu - bf16.per_gpu == want and bf16.fp8_weights == 0


def test_fp8_weight_copies_split_over_tp_and_none_under_torchao(llama):
    w = _linear_weights("llama-3.1-8b")
    tm = train_memory(llama, TrainSetup.of(seq=4096, micro_batch=1, dp=2, tp=4, zero=1, framework="megatron",
                                           precision="fp8"))
    assert tm.fp8_weights == 2 * w // 4  # every decoder Linear of Llama is column- or row-parallel
    tt = train_memory(llama, TrainSetup.of(seq=4096, micro_batch=1, dp=8, zero=3, framework="torchtitan",
                                           precision="fp8"))
    assert tt.fp8_weights == 0


def test_dualpipe_holds_two_stages(llama):
    base = dict(seq=4096, micro_batch=1, global_batch=16, dp=2, pp=4, zero=1)
    one = train_memory(llama, TrainSetup.of(**base))
    dual = train_memory(llama, TrainSetup.of(**base, schedule="dualpipe"))
    for r in dual.stages:
        s, mirror = one.stages[r["stage"]], one.stages[3 - r["stage"]]
        for k in ("weights", "gradients", "optimizer"):
            assert r[k] == s[k] + mirror[k]
        a, b = s["activations_per_micro_batch"], mirror["activations_per_micro_batch"]
        assert r["activations"] == -(-5 * (a + b) // 2)
    # both end ranks hold the last stage: each sees the loss peak
    assert dual.stages[0]["loss_peak"] == dual.stages[3]["loss_peak"] == one.stages[3]["loss_peak"] > 0
    with pytest.raises(SymcostError, match="dualpipe"):
        train_memory(llama, TrainSetup.of(**{**base, "pp": 3, "global_batch": 12}, schedule="dualpipe"))


@pytest.mark.parametrize("n", [4, -1])
def test_activation_offload_moves_layers_to_host(llama, n):
    base = dict(seq=4096, micro_batch=1, global_batch=8, dp=2, pp=2, zero=1)
    plain = train_memory(llama, TrainSetup.of(**base))
    off = train_memory(llama, TrainSetup.of(**base, act_offload=n))
    layer = plain.stages[1]["activations_per_micro_batch"] - train_memory(
        llama, TrainSetup.of(**base, act_offload=1)).stages[1]["activations_per_micro_batch"]
    assert layer > 0
    k = 15 if n == -1 else n  # 16 layers per stage
    for p, o in zip(plain.stages, off.stages):
        inflight = p["in_flight"]
        assert o["host_activations"] == inflight * k * layer
        assert o["activations"] + o["host_activations"] == p["activations"] + layer  # one layer in transit
        assert p["host_activations"] == 0
    assert off.per_gpu < plain.per_gpu


def test_activation_offload_of_a_hybrid_stack_keeps_its_formula():
    """Offloaded layers of a hybrid stack (Nemotron-3-Nano: Mamba, attention and MoE layers) keep sets no
    order of the layout symbols ranks: the layer in transit is their ``Max`` in the formula (Python's
    ``max`` raised on the comparison, the fuzz campaign's one traceback), and the formula at the layout is
    the figure."""
    import sympy

    from symcost.training.memory import layout_values
    m = loader.build("nemotron-3-nano-30b-a3b")
    kw = dict(seq=4096, micro_batch=1, dp=4, tp=2, ep=4, recompute="selective")
    off = train_memory(m, TrainSetup.of(**kw, act_offload=8))
    plain = train_memory(m, TrainSetup.of(**kw))
    assert off.host_activations > 0 and off.activations < plain.activations
    at = sympy.sympify(off.formula["activations"]).xreplace(layout_values(m, TrainSetup.of(**kw, act_offload=8)))
    assert at == off.activations


def test_activation_offload_refusals(llama):
    with pytest.raises(SymcostError, match="below the decoder layers"):
        train_memory(llama, TrainSetup.of(seq=4096, micro_batch=1, dp=2, act_offload=32))
    with pytest.raises(SymcostError, match="full"):
        train_memory(llama, TrainSetup.of(seq=4096, micro_batch=1, dp=2, act_offload=2, recompute="full"))


def test_cli_offload_and_fp8_lines(capsys):
    assert main(["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", "--dp", "8", "--zero", "1",
                 "--precision", "fp8", "--offload-activations", "all", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["breakdown"]["fp8_weights"] > 0 and r["host_activations_bytes_per_gpu"] > 0
    assert main(["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1",
                 "--offload-activations", "none"]) == 2
    assert "--offload-activations" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [
    ["--pp", "2", "--recompute", "full", "--recompute-method", "block", "--recompute-layers", "4"],
    ["--dp", "8", "--zero", "3"],
    ["--pp", "4", "--global-batch", "16", "--schedule", "dualpipe", "--dp", "2"],
    ["--dp", "2", "--pp", "2", "--global-batch", "8", "--offload-activations", "3", "--precision", "fp8"],
    ["--tp", "2", "--sp", "--recompute", "op"],
])
def test_total_formula_is_the_per_gpu_figure(extra, capsys):
    """train --json's formula "total" (states + gathered + fp8 copies + activations + Max(loss_peak,
    working)) evaluates to per_gpu_bytes exactly, and is a term tree: differentiable in B."""
    import sympy

    from symcost.core.exprparse import parse
    from symcost.core.notation import sym
    assert main(["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", "--json", *extra]) == 0
    r = json.loads(capsys.readouterr().out)
    v = {sym.N_dp: r["dp"], sym.N_tp: r["tp"], sym.N_cp: r["cp"], sym.N_ep: r["ep"], sym.B: 1, sym.T: 4096,
         sym.b_a: 2}
    total = parse(r["formula"]["total"])
    assert int(sympy.ceiling(total.xreplace(v))) == r["per_gpu_bytes"]
    assert "working" in r["formula"] and sympy.diff(total, sym.B) != 0


def test_search_counts_fp8_copies_as_train(capsys):
    """train --search --precision fp8 (Megatron/TE): each printed setup's bytes are train's, FP8 copies
    included."""
    base = ["llama-3.1-8b", "--seq", "4096", "--global-batch", "64", "--precision", "fp8", "--framework", "megatron"]
    assert main(["train", *base, "--search", "--gpus", "16", "--gpu", "H100", "--json"]) == 0
    best = json.loads(capsys.readouterr().out)["best"]
    assert best
    for b in best[:2]:
        args = ["--dp", str(b["dp"]), "--tp", str(b["tp"]), "--pp", str(b["pp"]), "--cp", str(b["cp"]),
                "--micro-batch", str(b["micro_batch"]), "--zero", str(b["zero"]), "--recompute", b["recompute"],
                "--virtual-stages", str(b["virtual_stages"]), "--offload", b["offload"], *(["--sp"] if b["sp"] else []),
                *(["--hsdp-shard", str(b["hsdp_shard"])] if b["hsdp_shard"] else [])]
        assert main(["train", *base, *args, "--json"]) == 0
        r = json.loads(capsys.readouterr().out)
        assert r["per_gpu_bytes"] == b["per_gpu_bytes"]
        assert r["breakdown"]["fp8_weights"] > 0 or b["zero"] == 3
