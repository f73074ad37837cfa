"""The HTML page without a browser: self-contained, a strict CSP that names exactly its own scripts and
style, escaped config strings, the size limit, and the command's bad inputs (exit 2, one line, nothing
written). Its generation time against ``sheet`` is measured by benchmarks/html_bench.py; the browser tests
are test_html_browser.py."""
import base64
import hashlib
import html
import json
import re

import pytest

from symcost.architectures import loader
from symcost.cli import main
from symcost.documents.html import SIZE_LIMIT, render_html


@pytest.fixture(scope="module")
def deepseek():
    return render_html(loader.build("deepseek-v3"), loader.read_json("deepseek-v3")[1])


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_self_contained_under_the_size_limit_with_a_strict_csp(deepseek):
    assert len(deepseek.encode()) < SIZE_LIMIT
    csp = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', deepseek)[1])
    assert csp.startswith("default-src 'none';") and "unsafe" not in csp and "http" not in csp
    scripts = re.findall(r"<script>(.*?)</script>", deepseek, re.S)
    styles = re.findall(r"<style>(.*?)</style>", deepseek, re.S)
    assert len(scripts) == 2 and len(styles) == 1
    allowed = re.search(r"script-src ([^;]+);", csp)[1].split()
    assert sorted(allowed) == sorted(_sha(s) for s in scripts)  # nothing else may run
    assert re.search(r"style-src ([^;]+);", csp)[1] == _sha(styles[0])
    for bad in ("http://", "https://", "<link", "<iframe", "@import", "src="):
        page = deepseek.replace("http://www.w3.org/1998/Math/MathML", "").replace("http://www.w3.org/2000/svg", "")
        assert bad not in page, bad
    for code in scripts:  # the page evaluates the exported functions; it never compiles text
        assert "eval(" not in code and "Function(" not in code and "innerHTML" not in code


def test_data_block_is_json_and_formulas_are_functions(deepseek):
    data = json.loads(re.search(r'<script type="application/json" id="symcost-data">(.*?)</script>', deepseek,
                                re.S)[1])
    assert data["model"] == "deepseek-v3" and data["T_max"] == 163840
    functions = re.findall(r"<script>(.*?)</script>", deepseek, re.S)[0]
    keys = set(re.findall(r'^"([^"]+)": function', functions, re.M))
    # the rows page.js computes itself from other formulas (a dtype's variant, the serving slots, a search)
    needed = {r["fn"] for r in data["rows"] if r["fn"]} - {"kv_per_token", "kv_at_T", "weights_stored",
                                                           "serve_gpus", "train_per_gpu", "train_gpus", "rule_2n",
                                                           "rule_6n", "rule_12ld2", "rule_16b"}
    assert needed <= keys
    assert {"serve_per_gpu", "kv_available", "kv_capacity", "serve_max_batch", "serve/kv_cache", "train_per_gpu|pp=4",
            "train_fsdp_per_gpu", "train_flops"} <= keys
    # every serving combination names a formula of the page for each slot
    assert len(data["serve_slots"]) == len(data["choices"]["w"]) * 3 * (1 + max(c["e"] for c in data["cards"].values()))
    assert all(len(v) == len(data["serve_slot_names"]) and set(v) <= keys for v in data["serve_slots"].values())


def test_hostile_strings_are_escaped():
    import copy
    nasty = "</script><script>alert(1)</script><b onmouseover=x>&"
    _, raw = loader.read_json("llama-3.1-8b")
    m = loader.build(loader.load_config(copy.deepcopy(raw), name=nasty))
    m.notes.append(nasty)
    page = render_html(m, raw)
    assert nasty not in page and "<b onmouseover" not in page and page.count("</script>") == 3
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page  # the title, the heading, the note: as text
    assert "\\u003c/script\\u003e" in page  # and in the JSON data block


@pytest.mark.parametrize("argv, words", [
    (["html", "llama-3.1-8b", "-o", "x.tex"], "ending in .html"),
    (["html", "llama-3.1-8b", "-o", "x.html", "--tp", "3"], "--tp"),
    (["html", "llama-3.1-8b", "-o", "x.html", "--ep", "8"], "no routed experts"),
    (["html", "llama-3.1-8b", "-o", "x.html", "--weights-dtype", "fp16"], "--weights-dtype"),
    (["html", "nope-model", "-o", "x.html"], "nope-model"),
])
def test_bad_input_exits_2_and_writes_nothing(tmp_path, monkeypatch, capsys, argv, words):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_html_command_and_sheet_html(tmp_path, capsys):
    assert main(["html", "gpt2", "-o", str(tmp_path / "g.html"), "--T", "1K", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["html"].endswith("g.html") and (tmp_path / "g.html").stat().st_size > 10_000
    page = (tmp_path / "g.html").read_text()
    assert '"T_max":1024' in page and '"T":1024' in page  # GPT-2's learned positions cap the slider
    assert main(["sheet", "gpt2", "-o", str(tmp_path / "s.tex"), "--html", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["html"] == str(tmp_path / "s.html")
    assert (tmp_path / "s.html").is_file() and (tmp_path / "s.tex").is_file()


# -- the page's formulas against the library's own numbers (no browser needed) --------------------------------
def _at(expr, values) -> int:
    import sympy
    return int(sympy.sympify(expr).xreplace(values).doit())


@pytest.mark.parametrize("name", ["qwen3-next-80b-a3b-thinking", "gpt-oss-20b", "deepseek-v3"])
def test_engine_parts_compose_as_engine_formulas(name):
    """The page builds each (card class, weights dtype, KV dtype) from parts computed once
    (``_EngineParts``); each part equals ``engine_formulas`` of that very combination (a hybrid's pages;
    MXFP4 experts padded by the class's kernel)."""
    from symcost.core.notation import sym
    from symcost.documents.html import KV_DTYPES, _engine_classes, _EngineParts
    from symcost.serving.plan import ServeSetup, engine_formulas
    m, raw = loader.build(name), loader.read_json(name)[1]
    classes, _ = _engine_classes(m, raw)
    assert len(classes) >= 3  # the step size, the sampler, NVLink (and the MXFP4 kernel) tell cards apart
    ws = ["ckpt", "bf16", "int4"]  # the FP8 checkpoint's input-quantisation scratch, none in bf16 or int4
    parts = _EngineParts(m, raw, classes, ws, 4096)
    vals = {**m.values, sym.T: 65536, sym.B: 3, sym.N_tp: 2, sym.N_pp: 1, sym.N_dp: 1, sym.N_ep: 1, sym.N_cp: 1,
            sym.x_ep: 0, sym.M_gpu: 80 * 2**30}
    for ei, (gpu, _) in enumerate(classes):
        for j, w in enumerate(ws):  # every class with every weights dtype, the KV dtypes in turn
            kv = KV_DTYPES[(ei + j) % len(KV_DTYPES)]
            got, m_got = parts(ei, w, kv)
            want, m_want = engine_formulas(m, raw, ServeSetup(gpu=gpu, kv_dtype=kv,
                                                              weights_dtype=None if w == "ckpt" else w), T=4096,
                                         lazy=True, sweep=True)
            v = {**vals, sym.M: m_want}
            assert m_got == m_want
            for a, b in ((got.weights.total, want.weights.total), (got.activation, want.activation),
                         (got.overhead, want.overhead), (got.kv.need, want.kv.need),
                         (got.kv.block_bytes, want.kv.block_bytes), (got.num_blocks, want.num_blocks),
                         (got.kv_tokens, want.kv_tokens)):
                assert _at(a, v) == _at(b, v), (gpu.name, w, kv)


TRAIN_GRID = [(1, 1, 1, 4096, 1), (2, 4, 1, 32768, 2), (4, 8, 8, 8192, 4), (1, 16, 16, 1000, 3)]


@pytest.mark.parametrize("name", ["deepseek-v3", "nemotron-3-nano-30b-a3b"])
def test_train_formula_equals_train_memory(name):
    """``train_per_gpu_formula`` (the page's training row: gathered unit, loss peak, backward and EP
    dispatch buffers, per pipeline size) equals ``train_memory``'s per-GPU bytes at every layout and
    input tried, EP > 1 included; and the FSDP setup the fewest-GPUs search uses (ZeRO-3, full
    recompute) at every N."""
    from symcost.core.notation import sym
    from symcost.documents.html import train_per_gpu_formula
    from symcost.documents.summary import Inputs, train_setup
    from symcost.training import train_memory
    m = loader.build(name)
    common = {sym.N_cp: 1, sym.b_a: 2}
    for pp in (1, 2):
        f = train_per_gpu_formula(m, train_setup(Inputs(), dp=1, tp=1, pp=pp, ep=1))
        for tp, dp, ep, T, B in TRAIN_GRID:
            tm = train_memory(m, train_setup(Inputs(T_prefill=T, batch=B), dp=dp, tp=tp, pp=pp, ep=ep))
            at = {sym.T: T, sym.B: B, sym.N_tp: tp, sym.N_dp: dp, sym.N_ep: ep, sym.N_pp: pp, **common}
            assert _at(f, at) == tm.per_gpu, (pp, tp, dp, ep, T, B)
    f = train_per_gpu_formula(m, train_setup(Inputs(), dp=1, tp=1, pp=1, ep=1, zero=3, recompute="full"))
    for dp, T, B in ((1, 4096, 1), (256, 131072, 2), (4096, 100, 7)):
        tm = train_memory(m, train_setup(Inputs(T_prefill=T, batch=B), dp=dp, tp=1, pp=1, ep=1, zero=3,
                                         recompute="full"))
        at = {sym.T: T, sym.B: B, sym.N_tp: 1, sym.N_dp: dp, sym.N_ep: 1, sym.N_pp: 1, **common}
        assert _at(f, at) == tm.per_gpu, (dp, T, B)
