"""Config fields symcost does not read: listed with --verbose, a warning when switched on.

``symcost.architectures.fields`` lists a config's keys that its adapter does not declare (nor know as unused by
the reference class), minus those read elsewhere (positions, quantization); a listed key that is
switched on and not classed cost-neutral (symcost/data/unread_fields.json) is a warning.
"""
import json

import pytest

import symcost
from symcost.architectures import fields, loader
from symcost.cli import main
from symcost.core.conventions import Phase
from tests.tiny import cases

TINY = cases()


def _run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _llama(tmp_path, **extra):
    raw = {**loader.read_json("llama-3.1-8b")[1], **extra}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    return str(path)


def test_an_unknown_switched_on_field_is_one_warning_line(tmp_path, capsys):
    path = _llama(tmp_path, use_output_gate=True, gate_rank=64)
    rc, out, err = _run(capsys, "params", path)
    assert rc == 0 and out
    lines = [line for line in err.splitlines() if line.startswith("symcost: warning:")]
    assert len(lines) == 1 and "use_output_gate, gate_rank" in lines[0]
    assert "LlamaForCausalLM" in lines[0]
    rc, out, err = _run(capsys, "params", path, "--json")
    assert any("use_output_gate" in w for w in json.loads(out)["warnings"])


@pytest.mark.parametrize("value", [False, 0, None, "", []])
def test_a_switched_off_field_is_no_warning(tmp_path, capsys, value):
    rc, out, err = _run(capsys, "params", _llama(tmp_path, use_output_gate=value))
    assert rc == 0 and "warning" not in err


def test_cost_neutral_fields_are_listed_only_with_verbose(tmp_path, capsys):
    path = _llama(tmp_path, ffn_dropout=0.1, pad_token_id=7, layer_norm_eps=1e-5)
    rc, out, err = _run(capsys, "params", path)
    assert rc == 0 and "warning" not in err
    rc, out, err = _run(capsys, "params", path, "--verbose")
    listed = err.split("not read (cost-neutral or unknown): ")[1]
    for key in ("ffn_dropout", "pad_token_id", "layer_norm_eps", "bos_token_id"):
        assert key in listed
    for key in ("hidden_size", "num_key_value_heads", "max_position_embeddings", "rope_theta"):
        assert key not in listed.split(", ")  # read by the adapter or by symcost.architectures.limits


def test_nested_sub_config_fields_are_dotted():
    raw = {**loader.read_json("kimi-k2.5")[1]}
    raw["vision_config"] = {**raw["vision_config"], "use_extra_tower": True}
    a = loader.load_config(dict(raw))
    assert "vision_config.use_extra_tower" in fields.flagged(type(a), raw)


def _written(case):
    """The config as transformers writes it back (``to_dict``: every class default spelled out),
    for the first tiny config of each model type."""
    from tests import oracle
    from tests.test_config_forms import _supported_type
    return _supported_type(oracle.hf_config(case[1]).to_dict(), case[1]["model_type"])


FIRST = [c for i, c in enumerate(TINY) if c[1]["model_type"] not in {d[1]["model_type"] for d in TINY[:i]}]
FORMS = [pytest.param(c[1], id=c[0]) for c in TINY] + \
    [pytest.param(c, id=f"{c[0]}-to_dict") for c in FIRST]


@pytest.mark.parametrize("raw", FORMS)
def test_a_listed_field_is_truly_not_read(raw):
    """Changing every field the listing calls unread (integers, booleans, strings) leaves the
    parameter count and the prefill FLOPs unchanged: the listing never hides a field the adapter
    reads (a before-validator that reads a raw key it does not declare would fail here). Tiny
    configs as the oracle builds them, and as transformers writes them back."""
    if isinstance(raw, tuple):
        raw = _written(raw)
    a = loader.load_config(dict(raw))
    listed = [k for k in fields.unread(type(a), raw) if "." not in k]

    def bump(v):
        if isinstance(v, bool):
            return not v
        if isinstance(v, int):
            return v + 1
        if isinstance(v, str):
            return v + "_x"
        return v
    changed = {**raw, **{k: bump(raw[k]) for k in listed}}
    m0, m1 = symcost.build(dict(raw)), symcost.build(changed)
    ph = Phase(kind="prefill", attention="causal")
    assert m1.params().total_at(m1.values) == m0.params().total_at(m0.values)
    assert m1.flops(ph).total_at(m1.values, T=16, B=1) == m0.flops(ph).total_at(m0.values, T=16, B=1)


#: the bundled configs whose files hold switched-on fields no adapter reads, and why each is left
#: a warning: MiniMax-M2.5's MTP modules (transformers' MiniMaxM2 builds none), MiniMax M3's per-layer
#: ``sparse_disable_index_value`` (the reference class reads no such switch)
BUNDLED_WARNINGS = {"minimax-m2.5-nvfp4": ["mtp_transformer_layers", "use_mtp"],
                    "minimax-m3": ["sparse_attention_config.sparse_disable_index_value"]}


@pytest.mark.parametrize("name", loader.bundled_names())
def test_bundled_configs_warn_only_where_stated(name):
    _, raw = loader.read_json(name)
    a = loader.load_config(name)
    assert sorted(fields.flagged(type(a), raw)) == BUNDLED_WARNINGS.get(name, [])


def test_a_quantized_checkpoint_costed_at_another_dtype_warns(capsys):
    rc, out, err = _run(capsys, "memory", "deepseek-v3", "--T", "4096", "--batch", "1", "--weights-dtype", "bf16")
    assert rc == 0 and "the checkpoint is fp8 (quantization_config); weights costed as bf16 (--weights-dtype)" in err
    rc, out, err = _run(capsys, "memory", "deepseek-v3", "--T", "4096", "--batch", "1", "--json",
                        "--experts-dtype", "fp4")
    assert any("fp4 (--experts-dtype)" in w for w in json.loads(out)["warnings"])
    rc, out, err = _run(capsys, "memory", "llama-3.1-8b", "--T", "4096", "--batch", "1", "--weights-dtype", "fp8")
    assert rc == 0 and "warning" not in err  # an unquantized checkpoint: the option is the question asked
    rc, out, err = _run(capsys, "memory", "deepseek-v3", "--T", "4096", "--batch", "1")
    assert rc == 0 and "warning" not in err
