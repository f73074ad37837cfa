"""CLI details a newcomer meets first (issues 14 and 16): exit codes, suffixes, one-prefix errors."""
import json
import subprocess
import sys

from symcost.cli import main


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_check_strict_exits_1_on_not_equal(capsys):
    wrong = ["check", "llama-2-7b", "--metric", "params", "--expr", "L*(4*d**2 + 3*d*d_ff + 2*d) + d + V*d"]
    assert run(wrong, capsys)[0] == 0  # the contract: 0 without --strict
    assert run(wrong + ["--strict"], capsys)[0] == 1
    assert run(wrong + ["--exit-code"], capsys)[0] == 1
    right = ["check", "llama-2-7b", "--metric", "params", "--strict", "--expr",
             "L*(4*d**2 + 3*d*d_ff + 2*d) + d + 2*V*d"]
    assert run(right, capsys)[0] == 0


def test_cache_bytes_formula_of_the_sheet_is_equal(capsys):
    """The sheet prints the cache as 2 B D_h H_kv L T b_kv: in bytes it is the engine's formula."""
    code, out, _ = run(["check", "llama-3.1-8b", "--metric", "cache_bytes", "--json", "--strict",
                        "--expr", "2 B D_{h} H_{kv} L T b_{kv}"], capsys)
    data = json.loads(out)
    assert code == 0 and data["equal"] and data["unit"].startswith("cache bytes")
    # elements are not bytes: the same expression is wrong by the factor b_kv = 2 under --metric cache
    code, out, _ = run(["check", "llama-3.1-8b", "--metric", "cache", "--json", "--strict",
                        "--expr", "2 B D_h H_kv L T b_kv"], capsys)
    assert code == 1 and not json.loads(out)["equal"]


def test_hybrid_state_bytes_use_b_state(capsys):
    expr = ("2*B*D_h*H_kv*L_full*T*b_kv + B*D_lk*D_lv*H_lv*L_lin*b_state"
            " + B*K_c*L_lin*b_kv*(2*D_lk*H_lk + D_lv*H_lv)")
    code, out, _ = run(["check", "qwen3-next-80b-a3b-thinking", "--metric", "cache_bytes", "--json",
                        "--strict", "--expr", expr], capsys)
    assert code == 0 and json.loads(out)["equal"]


def test_size_suffixes(capsys):
    _, out, _ = run(["cache", "llama-3.1-8b", "--T", "128K", "--json"], capsys)
    assert json.loads(out)["T"] == 131072
    _, out, _ = run(["cache", "llama-3.1-8b", "--T", "1M", "--json"], capsys)
    assert json.loads(out)["T"] == 1048576


def test_errors_have_one_prefix(capsys):
    code, _, err = run(["cache", "llama-3.1-8b", "--T", "12x"], capsys)
    assert code == 2 and err.count("symcost") == 1 and err.startswith("symcost: error: cache: ")
    assert len(err.strip().splitlines()) == 1


def test_version():
    out = subprocess.run([sys.executable, "-m", "symcost", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("symcost ")


def test_broken_pipe_is_quiet():
    p = subprocess.run(f"{sys.executable} -m symcost params deepseek-v3 --json | head -c 1",
                       shell=True, capture_output=True, text=True)
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr


def test_scale_never_prints_heaviside(capsys):
    from symcost import parse
    code, out, _ = run(["scale", "gemma-2-9b-it", "--metric", "cache", "--wrt", "T", "--json"], capsys)
    data = json.loads(out)
    for key in ("derivative", "derivative_symbolic"):
        assert "Heaviside" not in data[key] and data[key].startswith("Piecewise(")
        parse(data[key])  # reads back


def test_non_ascii_digits_are_refused_at_once(capsys):
    """'²', '③' are str.isdigit(); the LaTeX lexer used to loop forever on them (issue 16)."""
    import time
    for expr in ["{d²}", "d^²", "③d", "{d}³"]:
        t0 = time.process_time()
        code, _, err = run(["check", "llama-2-7b", "--metric", "params", "--expr", expr], capsys)
        assert code == 2 and "not allowed" in err and time.process_time() - t0 < 0.5, expr


def test_context_beyond_the_config_warns(capsys):
    code, out, err = run(["cache", "qwen3-30b-a3b", "--T", "128K", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["warnings"] == [
        "T=131,072 exceeds the 40,960 positions the config supports "
        "(max_position_embeddings=40960, no RoPE scaling)"]
    assert err.strip().splitlines() == ["symcost: warning: " + data["warnings"][0]]
    code, out, err = run(["flops", "llama-3.1-8b", "--phase", "decode", "--T", "200000"], capsys)
    assert code == 0 and "exceeds the 131,072 positions" in err and "llama3 RoPE scaling" in err
    # within the YaRN-extended context of DeepSeek-V3 (40 x 4,096): no warning
    code, out, err = run(["cache", "deepseek-v3", "--T", "163840", "--json"], capsys)
    assert "warnings" not in json.loads(out) and err == ""


def _subparsers():
    import argparse

    from symcost.cli import build_parser
    p = build_parser()
    return next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_every_option_has_help_with_its_default():
    import argparse
    for name, sp in _subparsers().items():
        for a in sp._actions:
            if isinstance(a, argparse._HelpAction) or not a.option_strings:
                continue
            where = f"{name} {'/'.join(a.option_strings)}"
            assert a.help and len(a.help) > 10, where
            if not (a.default is None or a.default is False or a.default == argparse.SUPPRESS):
                assert "default" in a.help or f"{a.default})" in a.help, where  # 0 is one (--zero 0)


def test_every_command_shows_an_example_that_parses():
    import shlex

    from symcost.cli import EXAMPLES, build_parser
    subs = _subparsers()
    assert set(subs) <= set(EXAMPLES), set(subs) - set(EXAMPLES)
    for name, example in EXAMPLES.items():
        assert name in subs, name
        assert example in subs[name].format_help(), name
        build_parser().parse_args(shlex.split(example)[1:])  # real options, valid values


def test_misspelled_option_suggests(capsys):
    code, _, err = run(["flops", "llama-3.1-8b", "--phase", "decode", "--T", "5", "--bacth", "2"], capsys)
    assert code == 2 and "did you mean --batch?" in err


def test_deploy_without_numpy_is_one_clear_line():
    """NumPy is a core dependency; where it is missing anyway, exit 2 and the install hint."""
    code = ("import sys; sys.modules['numpy'] = None; from symcost.cli import main; "
            "sys.exit(main(['deploy', 'llama-3.1-8b', '--gpu', 'H100', '--gpus', '1', '--T', '4096']))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [
        "symcost: error: searching layouts evaluates them with NumPy, which is not installed: "
        "pip install numpy (a dependency of symcost)"]


def test_crossover_layers_prefix_spans_layer_groups(capsys):
    """`--a layers/self_attn` (the help's example) works on a dense+MoE stack: every *layers group."""
    code, out, _ = run(["crossover", "deepseek-v3", "--metric", "flops", "--a", "layers/self_attn",
                        "--b", "layers/mlp", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["first_integer"] == 5152


def test_crossover_in_cache_bytes_against_another_model(capsys):
    code, out, _ = run(["crossover", "llama-3.1-8b", "--metric", "cache_bytes", "--a", "total",
                        "--vs", "qwen3-8b", "--json"], capsys)
    assert code == 0 and json.loads(out)["ratio"] == "8/9"  # 32 vs 36 layers, same KV width


def test_unsupported_model_type_names_the_closest_families(capsys, tmp_path):
    from symcost.architectures import loader
    raw = dict(loader.read_json("deepseek-v3")[1], model_type="my_deepseek_fork")
    p = tmp_path / "config.json"
    p.write_text(json.dumps(raw))
    code, _, err = run(["params", str(p)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "closest by config fields: deepseek_v2, deepseek_v3, kimi_k2" in err
    assert "Adding an architecture" in err


def test_roofline_of_a_million_sequence_batch_prints_its_formula(capsys):
    """The touched-expert fraction 1 − (1 − k/E)^B at B = 2^20 has no printable exact value
    (600,000 digits): the power stays unevaluated (``core.powers.RatioPow``), so the formula
    prints it as written, B substituted (found by tests/test_option_fuzz.py)."""
    import json
    assert main(["roofline", "mixtral-8x7b-v0.1", "--phase", "decode", "--T", "5", "--batch", "1M",
                 "--gpu", "H100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "(3/4)**1048576" in out["formula"]["bytes"] and "B" not in out["formula"]["bytes"]
    assert isinstance(out["bytes"], int) and out["tpot_s"] > 0
