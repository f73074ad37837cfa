"""Every summary row (``symcost.documents.summary``) equals what the command line's ``--json`` prints for
the same inputs — the page and the sheet show the CLI's numbers, not a second computation."""
import json

import pytest

from symcost.architectures import loader
from symcost.cli import main
from symcost.documents.summary import Inputs, by_key, summary

# (model, inputs): a dense model, an MLA+MoE with an fp8 checkpoint, a hybrid (Mamba-2 + attention + MoE)
CASES = [
    ("llama-3.1-8b", Inputs(T_prefill=8192, T_decode=32768, batch=4, kv_dtype="fp8", tp=2)),
    ("deepseek-v3", Inputs(T_decode=16384, batch=2, tp=8, pp=2, dp=2, ep=16, train_ep=2, zero=1,
                           recompute="full")),
    ("nemotron-3-nano-30b-a3b", Inputs(batch=3, weights_dtype="fp8", gpu="H200")),
]


def cli(argv, capsys):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def layout(inp, train=False):
    return [x for k in ("tp", "pp", "dp", "ep")
            for x in (f"--{k}", str(train and getattr(inp, "train_" + k) or getattr(inp, k)))]


@pytest.mark.parametrize("name,inp", CASES, ids=[c[0] for c in CASES])
def test_rows_equal_cli_json(name, inp, capsys):
    rows = by_key(summary(loader.build(name), loader.read_json(name)[1], inp))
    params = cli(["params", name], capsys)
    assert (rows["params_total"].value, rows["params_active"].value) == (params["total"], params["active"])
    pre = cli(["flops", name, "--phase", "prefill", "--T", str(inp.T_prefill), "--batch", str(inp.batch)], capsys)
    dec = cli(["flops", name, "--phase", "decode", "--T", str(inp.T_decode), "--batch", str(inp.batch)], capsys)
    assert rows["prefill_flops"].value == pre["total"] and rows["decode_flops"].value == dec["total"]
    assert rows["prefill_flops"].convention == pre["convention"]
    cache = cli(["cache", name, "--T", str(inp.T_decode), "--batch", str(inp.batch), "--dtype", inp.kv_dtype],
                capsys)
    assert rows["kv_at_T"].value == cache["bytes"] and rows["kv_per_token"].value == cache["bytes_per_token"]
    serve = ["memory", name, "--T", str(inp.T_decode), "--batch", str(inp.batch), "--gpu", inp.gpu,
             "--kv-dtype", inp.kv_dtype, *layout(inp)]
    if inp.weights_dtype:
        serve += ["--weights-dtype", inp.weights_dtype]
    mem = cli(serve, capsys)
    assert rows["weights_stored"].value == mem["weights_bytes"]
    assert rows["serve_per_gpu"].value == mem["per_gpu_bytes"]
    assert rows["kv_capacity"].value == mem["kv_capacity_tokens"]
    assert rows["serve_gpus"].value == mem["gpus_needed"]
    train = cli(["train", name, "--seq", str(inp.T_prefill), "--micro-batch", str(inp.batch), *layout(inp, True),
                 "--zero", str(inp.zero), "--recompute", inp.recompute], capsys)
    assert rows["train_per_gpu"].value == train["per_gpu_bytes"]
    for key in ("params_total", "prefill_flops", "kv_at_T", "weights_stored", "serve_per_gpu", "train_per_gpu"):
        assert isinstance(rows[key].value, int), key


@pytest.mark.parametrize("name,inp", CASES[:2], ids=[c[0] for c in CASES[:2]])
def test_fewest_training_gpus_is_the_first_that_fits(name, inp, capsys):
    """``train_gpus`` = N: ``train --dp N --zero 3 --recompute full`` fits the card, N/2 does not."""
    n = by_key(summary(loader.build(name), loader.read_json(name)[1], inp))["train_gpus"].value
    base = ["train", name, "--seq", str(inp.T_prefill), "--micro-batch", str(inp.batch), "--zero", "3",
            "--recompute", "full", "--gpu", inp.gpu]
    if n is None:  # none up to the limit: the largest tried does not fit either
        from symcost.documents.summary import MAX_TRAIN_GPUS
        assert cli([*base, "--dp", str(MAX_TRAIN_GPUS)], capsys)["fits"] is False
        return
    assert cli([*base, "--dp", str(n)], capsys)["fits"] is True
    if n > 1:
        assert cli([*base, "--dp", str(n // 2)], capsys)["fits"] is False


def test_rules_of_thumb_state_their_ratio():
    rows = by_key(summary(loader.build("llama-3.1-8b"), loader.read_json("llama-3.1-8b")[1]))
    assert rows["rule_16b"].ratio == 1.0  # bf16 + bf16 + AdamW 12 bytes: exactly 16 per parameter
    assert rows["rule_2n"].value == 2 * rows["params_active"].value
    assert 1.0 < rows["rule_2n"].ratio < 1.2  # attention adds to 2N at T = 4096
