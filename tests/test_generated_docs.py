"""What readers get from the generated documents (issue 15): no machine paths, clean pages."""
import re
import subprocess

import pytest

from tests.generated import rendered
from tests.tex import need_tex

# on one xdist worker: the documents are rendered once per worker (tests/generated.py)
pytestmark = pytest.mark.xdist_group("generated")

DOCS = rendered()
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|tmp|home|root|usr|opt|var|mnt)/")


def test_no_generated_file_holds_a_machine_path():
    bad = sorted(path for path, text in DOCS.items() if MACHINE_PATH.search(text))
    assert not bad, bad


#: what a document prints where it lacks a glyph: a code point, the replacement character
PLACEHOLDER = re.compile(r"\[U\+[0-9A-Fa-f]{4,6}\]|\ufffd")
#: what a PDF prints where a reference is undefined
UNDEFINED_REF = re.compile(r"\?\?")


def test_no_glyph_placeholder_in_any_generated_file():
    bad = {path: PLACEHOLDER.search(text).group() for path, text in DOCS.items()
           if path.endswith((".tex", ".md")) and PLACEHOLDER.search(text)}
    assert not bad, bad


def test_every_unicode_symbol_of_the_docstrings_has_latex():
    from symcost.core.latex import texescape
    for ch in ["x̂", *"⊗⊙Λµ₀₁₂₄₆ΨΦ∂÷±≡∉⋅∗‖⁻⁰¹∞αβγδεηθλμπστ"]:
        assert "[U+" not in texescape(ch), ch


def test_no_raw_markup_leaks_into_latex():
    for path, text in DOCS.items():
        if path.endswith(".tex"):
            assert "**" not in text, path  # Markdown bold left in a LaTeX page


def test_mechanism_sheets_drop_doctests_and_test_files():
    for path, text in DOCS.items():
        if path.startswith("formulas/") and path.endswith(".md"):
            assert ">>>" not in text and "tests/" not in text, path
            assert not re.search(r"(?<!`)``(?!`)", text), path  # RST literal quotes


def test_mla_sheet_shows_absorbed_decode_next_to_expanded():
    text = DOCS["formulas/mla.md"]
    assert "### Decode FLOPs, expanded (as transformers runs it)" in text
    assert "### Decode FLOPs, absorbed (as vLLM and SGLang run it)" in text


@pytest.mark.parametrize("path", sorted(p for p in DOCS if p.endswith(".tex")))
def test_generated_tex_compiles_without_overfull_boxes(tmp_path, path):
    need_tex()
    (tmp_path / "doc.tex").write_text(DOCS[path], encoding="utf-8")
    cmd = ["pdflatex", "-no-shell-escape", "-halt-on-error", "-interaction=nonstopmode", "doc.tex"]
    for _ in range(2):  # longtable widths settle on the second pass
        proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout[-2000:]
    log = (tmp_path / "doc.log").read_text(errors="replace")
    text = subprocess.run(["pdftotext", "doc.pdf", "-"], cwd=tmp_path, capture_output=True, text=True).stdout
    for pattern in (PLACEHOLDER, UNDEFINED_REF):
        assert not pattern.search(text), f"{path}: {pattern.search(text).group()} in the PDF text"
    overfull = re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)
    assert not overfull, f"{path}: {len(overfull)} overfull boxes ({', '.join(overfull[:5])} pt)"


# -- one truth with the CLI (issue 25): every sheet figure is what the command line prints --------------------
import json  # noqa: E402

import sympy  # noqa: E402

import symcost  # noqa: E402
from symcost.cli import main  # noqa: E402
from symcost.core.notation import TABLE  # noqa: E402
from symcost.documents.generate import CONTEXTS  # noqa: E402
from symcost.training.sheet import PAGE_LATEX  # noqa: E402

NOTATION = {sympy.Symbol(e.name) for e in TABLE}
#: the largest coefficient a training formula may hold (bytes per element x tensors of one kind)
STRUCTURAL = 128


def _cli(argv, capsys):
    assert main([*argv, "--json"]) == 0, argv
    return json.loads(capsys.readouterr().out)


def _row(ctx, start):
    rows = [r for r in ctx["summary"]["rows"] if r["label"].startswith(start)]
    assert len(rows) == 1, (start, [r["label"] for r in ctx["summary"]["rows"]])
    return rows[0]


@pytest.mark.parametrize("name", sorted(CONTEXTS))
def test_sheet_figures_equal_the_cli_json(name, capsys):
    """Page 1, the serving section and the training sections against ``params``, ``flops``, ``cache``,
    ``memory``, ``train --search``, ``train`` and ``comm`` with the options the sheet prints."""
    ctx = CONTEXTS[name]
    T1, T2, B, gpu = str(ctx["T_prefill"]), str(ctx["T_decode"]), str(ctx["batch"]), ctx["gpu"]
    params = _cli(["params", name], capsys)
    assert _row(ctx, "parameters, total")["value"] == params["total"] == ctx["sections"][0]["total"]
    assert _row(ctx, "parameters, active")["value"] == params["active"]
    pre = _cli(["flops", name, "--phase", "prefill", "--T", T1, "--batch", B], capsys)
    dec = _cli(["flops", name, "--phase", "decode", "--T", T2, "--batch", B], capsys)
    assert _row(ctx, "prefill FLOPs")["value"] == pre["total"] == ctx["sections"][1]["total"]
    assert _row(ctx, "decode FLOPs")["value"] == dec["total"] == ctx["sections"][2]["total"]
    cache = _cli(["cache", name, "--T", T2, "--batch", B, "--dtype", ctx["dtype"]], capsys)
    assert _row(ctx, "cache at T")["value"] == cache["bytes"] == ctx["memory"]["cache"]
    assert _row(ctx, "cache per token")["value"] == cache["bytes_per_token"]
    serve = ["memory", name, "--T", T2, "--batch", B, "--gpu", gpu, "--kv-dtype", ctx["dtype"]]
    mem = _cli(serve, capsys)
    assert _row(ctx, "weights as stored")["value"] == mem["weights_bytes"]
    n = _row(ctx, f"fewest {gpu} to serve")["value"]
    assert n == mem["gpus_needed"]
    if n:
        on_n = _cli([*serve, "--tp", str(n)], capsys)
        assert _row(ctx, "serving memory per GPU")["value"] == on_n["per_gpu_bytes"]
        assert _row(ctx, "KV capacity")["value"] == on_n["kv_capacity_tokens"]
    tr = ctx["training"]
    if tr["error"]:
        return
    found = _cli(tr["search_argv"][:1] + tr["search_argv"][1:], capsys)
    best = found["best"][0]
    assert best["per_gpu_bytes"] == tr["memory"]["total"] == _row(ctx, "training memory per GPU")["value"]
    assert tr["gpus"] == _row(ctx, f"fewest {gpu} to train, any layout")["value"]
    train = _cli(tr["train_argv"], capsys)
    assert train["per_gpu_bytes"] == tr["memory"]["total"]
    assert {r["name"]: r["value"] for r in tr["memory"]["states"]} == {
        k: train["breakdown"][k] for k in ("weights", "gradients", "optimizer", "activations", "gathered", "loss_peak")
        if k in ("weights", "gradients", "optimizer", "activations") or train["breakdown"].get(k)}
    assert train["fits"] is None or train["fits"]
    cm = _cli(tr["comm_argv"], capsys)
    assert {r["name"]: r["value"] for r in tr["comm"]} == {k: v for k, v in cm["bytes_per_step"].items() if v}
    assert {r["name"]: r["collectives"] for r in tr["comm"]} == {
        k: cm["collectives_per_step"][k] for k, v in cm["bytes_per_step"].items() if v}


def _own_width(name: str, x) -> bool:
    """A structural multiple (≤ STRUCTURAL) of a width a heterogeneous family's adapter states as a
    number in its own group (nemotron-nas: each block's d_ff from its ffn_mult; only the commonest is
    the notation's d_ff) — a config value, but the group's own, not one substituted for a symbol."""
    widths = {int(f) for g in symcost.build(name).groups for c in g.components
              for f in (getattr(c, "d_ff", None),) if isinstance(f, sympy.Integer)}
    return x.is_Integer and any(int(x) % w == 0 and int(x) // w <= STRUCTURAL for w in widths)


def _numbers(expr):
    return {a for a in sympy.sympify(expr).atoms(sympy.Number)}


@pytest.mark.parametrize("name", sorted(n for n in CONTEXTS if not CONTEXTS[n]["training"]["error"]))
def test_training_formulas_hold_no_bare_config_constant(name):
    """Each training/communication formula the sheet derives is in notation symbols and quantities the
    page defines (with their values): no number but structural ones — bytes per element times tensors
    saved (Korthikanti's 34 and 5 are of this kind: here e.g. 68·B·T for seventeen fp32 scalars per
    token), the 2 of an all-reduce, the 3 passes of a ring — at most ``STRUCTURAL`` (a config value
    substituted, d = 4096 or 167,936 = 41·d, is far above) — and it reproduces the library's figure."""
    tr = CONTEXTS[name]["training"]
    allowed = NOTATION | set(PAGE_LATEX)
    for key, (expr, values, figure) in {**tr["checks"], **tr["comm_checks"]}.items():
        expr = sympy.sympify(expr)
        names = {sympy.Symbol(s.name) for s in expr.free_symbols}
        assert names <= {sympy.Symbol(s.name) for s in allowed}, (key, names - {sympy.Symbol(s.name) for s in allowed})
        big = [x for x in _numbers(expr) if (abs(sympy.numer(x)) > STRUCTURAL or abs(sympy.denom(x)) > 16)
               and not _own_width(name, x)]
        assert not big, (name, key, big)
        assert int(sympy.ceiling(expr.xreplace(values))) == figure, (name, key)
    assert set(tr["comm_checks"]) == {r["name"] for r in tr["comm"]}, name  # every dimension derived


def test_mechanism_sheets_open_with_prose_and_formulas_no_field_dumps():
    """A mechanism sheet: the lead paragraph, then the formulas; no constructor-field lists, no
    typewriter docstring layout before the formulas."""
    for path, text in DOCS.items():
        if not path.startswith("formulas/") or path.endswith("overview.md"):
            continue
        assert "Default fields" not in text and "= `False`" not in text, path
        if path.endswith(".md"):
            body = text.split("\n## ", 1)[0]
            assert "```" not in body, path  # no docstring layout block ahead of the formulas
