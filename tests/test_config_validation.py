"""Bad configs fail once, on one line naming the field, with exit status 2 (issues 10 and 16).

Each case starts from a family's tiny config (tests/tiny), breaks one thing and runs
``symcost params`` on the file, as a user would. The forms transformers writes that switch a
feature off (``use_sliding_window: false`` with ``sliding_window`` 0 or null) are accepted and
counted as the class counts them.
"""
import json
import time

import pytest

import symcost
from symcost.cli import main
from tests import oracle
from tests.tiny import cases

FIRST = {}
for _id, _raw, _mod in cases():
    FIRST.setdefault(_raw["model_type"], _raw)


def tiny(model_type: str, **changes) -> dict:
    raw = json.loads(json.dumps(FIRST[model_type]))
    raw.update(changes)
    return raw


def params_error(tmp_path, capsys, raw=None, text=None) -> str:
    """Run ``symcost params`` on a file; assert exit 2, no stdout, one line on stderr; return it."""
    path = tmp_path / "config.json"
    path.write_text(text if text is not None else json.dumps(raw))
    code = main(["params", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out[:200])
    assert err.count("\n") == 1 and "Traceback" not in err, err[:500]
    return err


def _layers(raw: dict) -> int:
    return raw["num_hidden_layers"]


# -- per-layer patterns and lists --------------------------------------------------------------------
def test_shortened_hybrid_override_pattern_is_refused(tmp_path, capsys):
    raw = tiny("nemotron_h")
    raw.pop("layers_block_type", None)
    raw.update(hybrid_override_pattern="M*-E", num_hidden_layers=6)
    err = params_error(tmp_path, capsys, raw)
    assert "'hybrid_override_pattern'" in err and "4 entries" in err and "num_hidden_layers=6" in err


def test_layers_block_type_length_against_num_hidden_layers(tmp_path, capsys):
    raw = tiny("nemotron_h")
    raw.pop("hybrid_override_pattern", None)
    raw.update(layers_block_type=["mamba", "attention", "moe"], num_hidden_layers=4)
    assert "'layers_block_type'" in params_error(tmp_path, capsys, raw)


@pytest.mark.parametrize("pattern", ["", []])
def test_empty_nemotron_stack_is_refused(pattern, tmp_path, capsys):
    raw = tiny("nemotron_h")
    raw.pop("hybrid_override_pattern", None)
    raw.pop("layers_block_type", None)
    raw.pop("num_hidden_layers", None)
    field = "hybrid_override_pattern" if pattern == "" else "layers_block_type"
    raw[field] = pattern
    err = params_error(tmp_path, capsys, raw)
    assert f"'{field}'" in err and "empty" in err


def test_nemotron_layer_types_is_the_list_alias(tmp_path):
    """transformers' attribute_map: layer_types is layers_block_type."""
    raw = tiny("nemotron_h")
    raw.pop("hybrid_override_pattern", None)
    stack = raw.pop("layers_block_type", None) or ["mamba", "moe", "attention", "mlp"]
    raw.pop("num_hidden_layers", None)
    raw["layer_types"] = stack
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)


@pytest.mark.parametrize("model_type,allowed", [("llama", None), ("gemma2", None), ("qwen3_next", None),
                                                ("gpt_oss", None)])
def test_layer_types_length_and_entries(model_type, allowed, tmp_path, capsys):
    raw = tiny(model_type)
    L = _layers(raw)
    kind = "linear_attention" if model_type == "qwen3_next" else "sliding_attention"
    raw["layer_types"] = [kind] * (L + 1)
    err = params_error(tmp_path, capsys, raw)
    assert "'layer_types'" in err and f"{L + 1} entries" in err
    raw["layer_types"] = [kind] * (L - 1) + ["dilated_attention"]
    err = params_error(tmp_path, capsys, raw)
    assert "'layer_types'" in err and "dilated_attention" in err


def test_unknown_nemotron_block_type(tmp_path, capsys):
    raw = tiny("nemotron_h")
    raw.pop("hybrid_override_pattern", None)
    raw.pop("num_hidden_layers", None)
    raw["layers_block_type"] = ["mamba", "attention", "conv"]
    err = params_error(tmp_path, capsys, raw)
    assert "'layers_block_type'" in err and "conv" in err


# -- experts ----------------------------------------------------------------------------------------
EXPERTS = {"mixtral": "num_local_experts", "qwen2_moe": "num_experts", "qwen3_moe": "num_experts",
           "qwen3_next": "num_experts", "deepseek_v3": "n_routed_experts", "deepseek_v2": "num_experts",
           "gpt_oss": "num_local_experts", "minimax_m2": "num_local_experts", "nemotron_h": "n_routed_experts",
           "minimax_m3": "num_local_experts", "deepseek_v4": "n_routed_experts"}


@pytest.mark.parametrize("model_type", sorted(EXPERTS))
def test_more_experts_per_token_than_experts(model_type, tmp_path, capsys):
    raw = tiny(model_type)
    E = raw[EXPERTS[model_type]]
    raw["num_experts_per_tok"] = E + 1
    if "first_k_dense_replace" in raw:
        raw["first_k_dense_replace"] = 0  # MoE layers present, so the router is checked
    assert "'num_experts_per_tok'" in params_error(tmp_path, capsys, raw)


def test_mixtral_k_9_of_8_is_refused(capsys):
    """Issue 16: Mixtral with k = 9 gave 52.3 G active parameters against 46.7 G total."""
    code = main(["params", str(_bundled_with("mixtral-8x7b-v0.1", num_experts_per_tok=9))])
    _, err = capsys.readouterr()
    assert code == 2 and "'num_experts_per_tok'" in err and err.count("\n") == 1


def _bundled_with(name, **changes):
    import tempfile

    from symcost.architectures import loader
    _, raw = loader.read_json(name)
    raw.update(changes)
    path = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(raw, path)
    path.close()
    return path.name


@pytest.mark.parametrize("model_type", ["deepseek_v3", "deepseek_v2", "kimi_k2"])
def test_first_k_dense_replace_beyond_the_layers(model_type, tmp_path, capsys):
    raw = tiny(model_type)
    raw["first_k_dense_replace"] = _layers(raw) + 5
    assert "'first_k_dense_replace'" in params_error(tmp_path, capsys, raw)


def test_first_k_dense_replace_class_default_on_a_shallow_stack_is_accepted():
    """transformers writes its default (3) whatever the depth; then every layer is dense."""
    raw = tiny("deepseek_v3", num_hidden_layers=2)
    raw.pop("first_k_dense_replace")
    serialised = oracle.hf_config(raw).to_dict()
    assert serialised["first_k_dense_replace"] == 3
    m = symcost.build(serialised)
    assert m.params().total_at(m.values) == oracle.params(raw)


# -- integers ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [True, False, 4.5, 64.0, "64", [64], None])
def test_integer_fields_refuse_other_types(value, tmp_path, capsys):
    raw = tiny("llama", hidden_size=value)
    err = params_error(tmp_path, capsys, raw)
    assert "'hidden_size'" in err


@pytest.mark.parametrize("model_type", sorted(FIRST))
def test_a_billion_layers_is_refused_at_once(model_type, tmp_path, capsys):
    raw = tiny(model_type)
    node = raw.get("text_config", raw)
    keys = [k for k in ("num_hidden_layers", "n_layer") if k in node] or ["num_hidden_layers"]
    for k in keys:
        node[k] = 10**9
    start = time.process_time()
    err = params_error(tmp_path, capsys, raw)
    assert time.process_time() - start < 2, "a 10^9-layer list was built"
    assert any(k in err for k in keys), err


def test_sizes_beyond_int64_are_refused(tmp_path, capsys):
    assert "'vocab_size'" in params_error(tmp_path, capsys, tiny("llama", vocab_size=2**64))
    with pytest.raises(symcost.SymcostError, match="'vocab_size'.*bits"):  # too long even to print
        symcost.build(tiny("llama", vocab_size=10**20_000))


def test_json_integer_past_the_digit_limit(tmp_path, capsys):
    text = json.dumps(tiny("llama")).replace('"vocab_size": ', '"vocab_size": ' + "9" * 5000 + ", \"x\": ")
    assert "invalid JSON" in params_error(tmp_path, capsys, text=text)


def test_json_nested_too_deeply(tmp_path, capsys):
    raw = tiny("llama")
    text = json.dumps(raw)[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert "nested too deeply" in params_error(tmp_path, capsys, text=text)


@pytest.mark.parametrize("field", ["hidden_size", "layer_types"])
def test_deep_nesting_in_an_already_parsed_dict(field):
    """The Python API (a dict) is guarded too: one SymcostError naming the field, no RecursionError."""
    deep = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(symcost.SymcostError, match=f"field '{field}"):
        symcost.build(tiny("llama", **{field: deep}))


def test_infinity_and_nan_literals(tmp_path, capsys):
    """Python's json (and transformers) write Infinity/NaN; in a float field symcost ignores they are fine,
    in an integer field they are named."""
    raw = tiny("llama")
    text = json.dumps({**raw, "rope_theta": float("inf"), "initializer_range": float("nan")})
    assert "Infinity" in text and "NaN" in text
    path = tmp_path / "ok.json"
    path.write_text(text)
    assert main(["params", str(path)]) == 0
    capsys.readouterr()
    text = json.dumps({**raw, "intermediate_size": float("inf")})
    assert "'intermediate_size'" in params_error(tmp_path, capsys, text=text)


@pytest.mark.parametrize("where", ["model_type", "hidden_size", "layer_types", "name_of_a_list_entry"])
def test_error_lines_do_not_quote_huge_values_whole(where, tmp_path, capsys):
    big = "x" * 10_000_000
    raw = tiny("llama")
    if where == "layer_types":
        raw["layer_types"] = [big] * _layers(raw)
    elif where == "name_of_a_list_entry":
        raw = tiny("nemotron_h")
        raw.pop("hybrid_override_pattern", None)
        raw.pop("num_hidden_layers", None)
        raw["layers_block_type"] = ["mamba", big]
    else:
        raw[where] = big
    err = params_error(tmp_path, capsys, raw)
    assert len(err) < 1000


# -- features switched off by a flag ---------------------------------------------------------------------
@pytest.mark.parametrize("model_type", ["qwen2", "qwen3", "qwen2_moe", "qwen3_moe"])
@pytest.mark.parametrize("window", [0, None, -1])
def test_use_sliding_window_false_leaves_the_window_unvalidated(model_type, window):
    raw = tiny(model_type, use_sliding_window=False, sliding_window=window)
    raw.pop("layer_types", None)
    m = symcost.build(dict(raw))
    assert sym_W_absent(m)
    assert m.params().total_at(m.values) == oracle.params(raw)


def sym_W_absent(m) -> bool:
    from symcost.core.notation import sym
    return sym.W not in m.values


@pytest.mark.parametrize("model_type", ["qwen2", "qwen2_moe"])
def test_use_sliding_window_true_with_a_zero_window_is_named(model_type, tmp_path, capsys):
    raw = tiny(model_type, use_sliding_window=True, sliding_window=0)
    # qwen2: layers from max_window_layers on slide; qwen2_moe: the even layers below it
    raw["max_window_layers"] = 0 if model_type == "qwen2" else _layers(raw)
    raw.pop("layer_types", None)
    assert "'sliding_window'" in params_error(tmp_path, capsys, raw)


@pytest.mark.parametrize("window", [0, None])
def test_gemma_window_unused_by_all_full_layers(window):
    raw = tiny("gemma2", sliding_window=window)
    raw["layer_types"] = ["full_attention"] * _layers(raw)
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params({**raw, "sliding_window": 4096})


# -- nested text_config ------------------------------------------------------------------------------------
@pytest.mark.parametrize("model_type", ["gemma3", "kimi_k25"])
@pytest.mark.parametrize("own_type", [True, False])
def test_text_config_with_or_without_its_model_type(model_type, own_type):
    raw = tiny(model_type)
    text = raw["text_config"]
    if own_type:
        text["model_type"] = {"gemma3": "gemma3_text", "kimi_k25": "kimi_k2"}[model_type]
    else:
        text.pop("model_type", None)
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)


@pytest.mark.parametrize("field", ["text_config", "vision_config"])
def test_null_sub_config_is_the_class_default(field):
    """transformers reads ``"vision_config": null`` as the default sub-config; so does symcost."""
    raw = tiny("gemma3")
    raw[field] = None
    if field == "text_config":
        raw["mm_tokens_per_image"] = 4
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)


# -- aliases, per adapter ------------------------------------------------------------------------------------
@pytest.mark.parametrize("model_type,canonical,alias", [
    ("mixtral", "num_local_experts", "num_experts"), ("qwen3_moe", "num_experts", "num_local_experts"),
    ("gpt_oss", "num_local_experts", "num_experts"), ("minimax_m2", "num_local_experts", "num_experts"),
    ("minimax_m3", "num_local_experts", "num_experts"), ("nemotron_h", "n_routed_experts", "num_local_experts"),
    ("deepseek_v3", "n_routed_experts", "num_local_experts"), ("deepseek_v2", "num_experts", "n_routed_experts"),
    ("gpt2", "n_embd", "hidden_size"), ("gpt2", "n_layer", "num_hidden_layers")])
def test_attribute_alias(model_type, canonical, alias):
    """The names a family's config class maps to one attribute (its ``attribute_map``) are read alike."""
    raw = tiny(model_type)
    raw[alias] = raw.pop(canonical)
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)


def test_qwen2_moe_does_not_read_num_local_experts():
    """Qwen2MoeConfig has no attribute_map: a num_local_experts key is not its expert count."""
    raw = tiny("qwen2_moe", num_local_experts=2)
    m = symcost.build(dict(raw))
    assert m.params().total_at(m.values) == oracle.params(raw)
