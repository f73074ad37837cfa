"""The command-line contract (shared INTERFACE.md): JSON shapes, exit codes, one-line errors."""
import json
import subprocess
import sys

import pytest

from symcost.cli import main


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_models_json(capsys):
    code, out, _ = run(["models", "--json"], capsys)
    data = json.loads(out)
    assert code == 0
    names = {m["name"]: m for m in data["models"]}
    assert names["llama-3.1-8b"]["model_type"] == "llama"


def test_params_json_llama3_8b(capsys):
    code, out, _ = run(["params", "llama-3.1-8b", "--json"], capsys)
    data = json.loads(out)
    assert code == 0
    assert data["total"] == 8_030_261_248 and data["active"] == data["total"]
    assert sum(data["breakdown"].values()) == data["total"]
    assert set(data["formula"]) == {"total", "active"}


def test_params_llama2_7b(capsys):
    _, out, _ = run(["params", "llama-2-7b", "--json"], capsys)
    assert json.loads(out)["total"] == 6_738_415_616


def test_flops_and_cache_json(capsys):
    code, out, _ = run(["flops", "llama-3.1-8b", "--phase", "decode", "--T", "1000", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["T"] == 1000 and data["batch"] == 1
    assert sum(data["breakdown"].values()) == data["total"]
    code, out, _ = run(["cache", "llama-3.1-8b", "--T", "1000", "--batch", "2", "--json"], capsys)
    data = json.loads(out)
    # 2 (K,V) · B · T · L · H_kv · D_h · 2 bytes
    assert data["bytes"] == 2 * 2 * 1000 * 32 * 8 * 128 * 2


def _bad_configs(tmp_path):
    base = json.loads(open("symcost/configs/llama-3.1-8b.json").read())
    cases = {}

    def write(name, content):
        p = tmp_path / f"{name}.json"
        p.write_text(content if isinstance(content, str) else json.dumps(content))
        cases[name] = str(p)

    write("invalid_json", "{ not json")
    write("not_object", "[1, 2]")
    write("missing_field", {k: v for k, v in base.items() if k != "hidden_size"})
    write("zero_size", {**base, "hidden_size": 0})
    write("negative_size", {**base, "intermediate_size": -5})
    write("heads_not_divisible", {**base, "num_key_value_heads": 7})
    write("unknown_model_type", {**base, "model_type": "not_a_model"})
    write("no_model_type", {k: v for k, v in base.items() if k != "model_type"})
    cases["missing_file"] = str(tmp_path / "absent.json")
    return cases


EXPECT_IN_MESSAGE = {
    "invalid_json": "invalid JSON", "not_object": "JSON object", "missing_field": "hidden_size",
    "zero_size": "hidden_size", "negative_size": "intermediate_size",
    "heads_not_divisible": "num_key_value_heads", "unknown_model_type": "model_type",
    "no_model_type": "model_type", "missing_file": "absent.json",
}


@pytest.mark.parametrize("case", sorted(EXPECT_IN_MESSAGE))
def test_bad_input_one_line_exit_2(case, tmp_path, capsys):
    path = _bad_configs(tmp_path)[case]
    code, out, err = run(["params", path], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert EXPECT_IN_MESSAGE[case] in err
    code, out, err = run(["params", path, "--json"], capsys)
    assert code == 2 and EXPECT_IN_MESSAGE[case] in json.loads(out)["error"]


@pytest.mark.parametrize("argv", [
    ["flops", "llama-3.1-8b", "--T", "10"],  # --phase missing
    ["flops", "llama-3.1-8b", "--phase", "prefill", "--T", "-3"],
    ["cache", "llama-3.1-8b", "--T", "10", "--dtype", "fp7"],
    ["nonsense"],
])
def test_bad_options_exit_2(argv, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1


def test_python_dash_m_matches_console_script():
    a = subprocess.run([sys.executable, "-m", "symcost", "params", "llama-2-7b", "--json"],
                       capture_output=True, text=True)
    b = subprocess.run(["symcost", "params", "llama-2-7b", "--json"], capture_output=True, text=True)
    assert a.returncode == b.returncode and a.stdout == b.stdout


def test_check_llama2_tied_head_mistake(capsys):
    """Seed 002's tied-embedding derivation of Llama-2-7B misses exactly V·d: the untied head."""
    code, out, _ = run(["check", "llama-2-7b", "--metric", "params", "--json",
                        "--expr", "L*(4*d**2 + 3*d*d_ff + 2*d) + d + V*d"], capsys)
    data = json.loads(out)
    assert code == 0 and data["equal"] is False
    assert data["difference"] == "V*d" and data["difference_value"] == 32000 * 4096
    assert data["explained_by"] == ["lm_head"]


def test_check_seed_formula_with_map(capsys):
    code, out, _ = run(["check", "llama-3.1-8b", "--metric", "params", "--json",
                        "--expr", "L(2d^2+2d d_kv+3dm+2d)+d+cVd",
                        "--map", "d_kv=H_kv*D_h", "--map", "m=d_ff", "--map", "c=2"], capsys)
    assert code == 0 and json.loads(out)["equal"] is True


def test_check_latex_forgetting_norms(capsys):
    code, out, _ = run(["check", "llama-3.1-8b", "--metric", "params", "--json", "--expr",
                        r"L\left(2d^2 + 2 d H_{kv} D_{h} + 3 d d_{ff}\right) + d + 2 V d"], capsys)
    data = json.loads(out)
    assert data["equal"] is False and data["explained_by"] == ["layers/norms"]


def test_check_refuses_code(capsys):
    code, out, err = run(["check", "llama-3.1-8b", "--metric", "params", "--expr",
                          "__import__('os').system('true')"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1


def test_scale_one_more_expert(capsys):
    code, out, _ = run(["scale", "mixtral-8x7b-v0.1", "--metric", "params", "--wrt", "E", "--json"], capsys)
    data = json.loads(out)
    assert data["derivative"] == "5637275648" and data["derivative_symbolic"] == "L*d*(3*d_ff + 1)"
    assert data["degree"] == 1 and data["big_o"] == "O(E)"


@pytest.mark.parametrize("phase,degree", [("prefill", 2), ("decode", 1)])
def test_scale_prefill_quadratic_decode_linear(phase, degree, capsys):
    code, out, _ = run(["scale", "llama-3.1-8b", "--metric", "flops", "--wrt", "T", "--phase", phase,
                        "--json"], capsys)
    assert code == 0 and json.loads(out)["degree"] == degree


def test_formula_strings_parse_back(capsys):
    """INTERFACE: formula strings parse back with symcost's own parser to the same expression."""
    import symcost
    from symcost.core.exprparse import parse
    m = symcost.build("deepseek-v3")
    code, out, _ = run(["params", "deepseek-v3", "--json"], capsys)
    data = json.loads(out)
    import sympy
    assert sympy.expand(parse(data["formula"]["total"]) - m.params().total) == 0


@pytest.mark.parametrize("name", ["llama-3.1-8b", "gemma-2-9b-it", "deepseek-v4-flash",
                                  "minimax-m3", "nemotron-3-ultra-550b-a55b", "qwen3-next-80b-a3b-thinking"])
def test_every_formula_string_parses_back_to_itself(name, capsys):
    """INTERFACE: formula strings are SymPy str() that symcost's parser reads back identically."""
    from symcost.core.exprparse import parse
    cases = [(["params", name], ("formula", "total")), (["params", name], ("formula", "active")),
             (["flops", name, "--phase", "prefill", "--T", "100", "--attention", "causal"], ("formula",)),
             (["flops", name, "--phase", "decode", "--T", "100"], ("formula",)),
             (["flops", name, "--phase", "prefill", "--T", "100"], ("symbolic",)),
             (["cache", name, "--T", "100"], ("formula",)),
             (["cache", name, "--T", "100", "--layout", "vllm"], ("formula",))]
    for argv, path in cases:
        _, out, _ = run(argv + ["--json"], capsys)
        text = json.loads(out)
        for key in path:
            text = text[key]
        assert str(parse(text)) == text, (argv, path)


def test_crossover_attention_overtakes_projections(capsys):
    code, out, _ = run(["crossover", "llama-3.1-8b", "--metric", "flops", "--phase", "prefill", "--json",
                        "--a", "layers/self_attn/scores+layers/self_attn/values",
                        "--b", "layers/self_attn/q_proj+layers/self_attn/k_proj+layers/self_attn/v_proj"
                               "+layers/self_attn/o_proj+layers/mlp"], capsys)
    data = json.loads(out)
    # 4·L·H_q·D_h·T² = 2·T·(weights of attention projections and MLP): T = 26,624 exactly
    assert code == 0 and data["first_integer"] == 26_624 and data["at"] == "26624"


def test_crossover_cache_vs_weights_and_never(capsys):
    _, out, _ = run(["crossover", "llama-3.1-8b", "--metric", "cache", "--a", "total", "--b", "weights",
                     "--json"], capsys)
    data = json.loads(out)
    # 131,072 bytes per token against 16,060,522,496 bytes of bf16 weights
    assert data["first_integer"] == -(-16_060_522_496 // 131_072)
    _, out, _ = run(["crossover", "llama-3.1-8b", "--metric", "flops", "--phase", "decode", "--a", "total",
                     "--vs", "qwen3-8b", "--json"], capsys)
    assert json.loads(out)["never"] is True


@pytest.mark.parametrize("argv", [["flops", "gpt2", "--phase", "prefill", "--T", "1025"],
                                  ["flops", "gpt2", "--phase", "decode", "--T", "1024"],
                                  ["cache", "gpt2", "--T", "2000"]])
def test_T_beyond_learned_positions_is_refused(argv, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and "1024 learned positions" in err and err.count("\n") == 1


def test_T_at_learned_positions_is_accepted(capsys):
    assert run(["flops", "gpt2", "--phase", "prefill", "--T", "1024", "--json"], capsys)[0] == 0


@pytest.mark.parametrize("raw,field", [({"model_type": "mamba2", "vocab_size": 100}, "hidden_size"),
                                       ({"model_type": "nemotron_h", "hidden_size": 64}, "vocab_size")])
def test_structural_fields_are_required_not_defaulted(raw, field, tmp_path, capsys):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(raw))
    code, out, err = run(["params", str(p)], capsys)
    assert code == 2 and field in err and err.count("\n") == 1


def test_sheet_without_numpy_or_matplotlib(tmp_path):
    """The README's install has neither: `sheet` must still write the derivation (plots are optional),
    and `plot` must refuse in one line. Found when the command modules imported plot at the top."""
    code = ("import sys; sys.modules['numpy'] = None; sys.modules['matplotlib'] = None\n"
            "from symcost.cli import main\n"
            f"rc = main(['sheet', 'llama-3.1-8b', '-o', {str(tmp_path / 's.tex')!r}])\n"
            f"rc2 = main(['plot', 'llama-3.1-8b', '--metric', 'cache_bytes', '-o', {str(tmp_path / 'p.png')!r}])\n"
            "print(rc, rc2)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split()[-2:] == ["0", "2"], r.stdout + r.stderr
    assert (tmp_path / "s.tex").exists() and "Traceback" not in r.stderr
