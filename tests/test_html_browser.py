"""The HTML page in a real browser: headless Chromium, driven over the DevTools protocol
(``--remote-debugging-pipe``: NUL-separated JSON on fds 3 and 4, a client in the standard library).

For a dense (llama-3.1-8b), an MLA+MoE (deepseek-v3, fp8 checkpoint) and a hybrid (Nemotron 3 Nano:
Mamba-2 + attention + MoE) model: the page loads with its inputs in the URL fragment; the numbers
it renders equal the CLI's ``--json`` for the same inputs, to the integer; an input changed through
a DOM event recomputes them (equal again) and the fragment follows; every formula is MathML laid
out natively (display ``math``, a non-empty box, no raw markup); no request leaves the file, no
script error, no CSP violation. A config ``name`` holding markup renders as text.

Chromium absent: the tests skip with the reason; ``SYMCOST_REQUIRE_CHROMIUM=1`` (``.ci/run``, which
installs Debian's ``chromium``) turns that into a failure, as ``SYMCOST_REQUIRE_TEX`` does for TeX.
"""
from __future__ import annotations

import copy
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

import pytest

from symcost.architectures import loader
from symcost.cli import main
from symcost.documents.html import SIZE_LIMIT, pp_serve_refusal, write_html
from symcost.documents.summary import Inputs, train_gpus

REQUIRE_ENV = "SYMCOST_REQUIRE_CHROMIUM"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REASON = (f"chromium is not installed (Debian: apt-get install chromium); set {REQUIRE_ENV}=1 to make this a "
          "failure, as .ci/run does")


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
            pytest.fail(REASON)
        pytest.skip(REASON)
    b = Browser()
    yield b
    b.close()


class Browser:
    """One headless Chromium and one page (a tab), spoken to over the DevTools pipe."""

    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="symcost-chromium-")
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()

        def fds():  # the child's fd 3 reads our commands, fd 4 carries its answers
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--mute-audio",
             f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=fds)  # noqa: PLW1509 (no threads start Chromium)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf, self._id, self.events = b"", 0, []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(f"{domain}.enable", session=True)

    def _read(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, session: bool = False, timeout: float = 30, **params) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read(timeout)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, timeout: float = 30) -> dict:
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            m = self._read(timeout)
            if m.get("method") == method:
                return m
            self.events.append(m)

    def open(self, url: str) -> None:
        # A URL differing from the current one only in its fragment is a same-document
        # navigation, which fires no load event: leave the page first, so every case
        # starts from a fresh load of the page with its own fragment.
        for target in ("about:blank", url):
            self.events.clear()
            self.call("Page.navigate", session=True, url=target)
            self.wait_event("Page.loadEventFired")

    def js(self, expression: str):
        r = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise AssertionError(f"page script error: {r['exceptionDetails']}")
        return r["result"].get("value")

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._w)
        os.close(self._r)
        shutil.rmtree(self.profile, ignore_errors=True)


# -- the CLI's numbers for the page's inputs ---------------------------------------------------------
def cli(argv, capsys, refused: bool = False):
    """The command's --json; with ``refused``, a refusal (exit 2) as {"error": its message}."""
    rc = main([*argv, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 or (refused and rc == 2 and "error" in out), argv
    return out


class Refused(str):
    """A row the CLI refuses for these inputs (its message): the page shows no number and says why."""


def expected(name: str, s: dict, capsys) -> dict:
    """Each summary row's value from the CLI's --json for inputs ``s`` (the page's names)."""
    T, B = str(s["T"]), str(s["B"])
    lay = [x for k in ("tp", "pp", "dp", "ep") for x in (f"--{k}", str(s[k]))]
    w = [] if s["w"] == "ckpt" else ["--weights-dtype", s["w"]]
    p = cli(["params", name], capsys)
    mem = cli(["memory", name, "--T", T, "--batch", B, "--gpu", s["gpu"], "--kv-dtype", s["kv"], *w, *lay], capsys,
              refused=True)
    if s["pp"] > 1 and "error" not in mem:  # memory costs vLLM's stages one by one; the page says it does not
        mem = {"error": pp_serve_refusal(s["pp"])}
    cache = cli(["cache", name, "--T", T, "--batch", B, "--dtype", s["kv"]], capsys)
    out = {"params_total": p["total"], "params_active": p["active"],
           "prefill_flops": cli(["flops", name, "--phase", "prefill", "--T", T, "--batch", B], capsys)["total"],
           "decode_flops": cli(["flops", name, "--phase", "decode", "--T", T, "--batch", B], capsys)["total"],
           "kv_at_T": cache["bytes"], "kv_per_token": cache["bytes_per_token"],
           **({k: Refused(mem["error"]) for k in ("serve_per_gpu", "kv_capacity")} if "error" in mem else
              {"weights_stored": mem["weights_bytes"], "serve_per_gpu": mem["per_gpu_bytes"],
               "kv_capacity": mem["kv_capacity_tokens"], "serve_gpus": mem["gpus_needed"]})}
    train = cli(["train", name, "--seq", T, "--micro-batch", B, *lay], capsys, refused=True)
    out["train_per_gpu"] = Refused(train["error"]) if "error" in train else train["per_gpu_bytes"]
    # the fewest GPUs to train: the sheet's search (train --dp N --zero 3 --recompute full fitting the card)
    out["train_gpus"] = train_gpus(loader.build(name), Inputs(T_prefill=s["T"], batch=s["B"], gpu=s["gpu"]))[0]
    # the 6N rule's ratio: train's flops_per_step per token against 6 × active parameters
    if "error" not in train:
        tokens = s["T"] * s["B"] * s["dp"]
        out["ratio:rule_6n"] = f"{train['flops_per_step'] / tokens / (6 * p['active']):.4f}"
    return out


def rendered(b: Browser) -> dict:
    return b.js("Object.fromEntries([...document.querySelectorAll('table.summary tr[data-key]')]"
                ".map(tr => [tr.dataset.key, tr.querySelector('td.v').dataset.value]))")


def check_numbers(b: Browser, name: str, s: dict, capsys) -> None:
    """Every summary row equals the CLI's figure; where the CLI's KV capacity is 0 (nothing left for the KV
    cache) or no TP serves, the page says "does not fit" with the reason instead of a number."""
    got, want = rendered(b), expected(name, s, capsys)
    reasons = b.js("Object.fromEntries([...document.querySelectorAll('table.summary tr[data-key]')]"
                   ".map(tr => [tr.dataset.key, tr.querySelector('td.h').textContent]))")
    ratios = b.js("Object.fromEntries([...document.querySelectorAll('table.summary tr.rule')]"
                  ".map(tr => [tr.dataset.key, tr.querySelector('.ratio')?.textContent]))")
    for key, value in want.items():
        if key.startswith("ratio:"):
            assert ratios[key[len("ratio:"):]] == value, (key, ratios, value)
            continue
        shown = got[key]
        if isinstance(value, Refused):
            assert shown == "" and value in reasons[key], (key, shown, reasons[key], value)
            continue
        if key in ("kv_capacity", "serve_gpus", "train_gpus") and value in (0, None):
            assert shown == "" and reasons[key].startswith("does not fit: "), (key, shown, reasons[key])
            continue
        assert (shown or None) == (None if value is None else str(value)), (key, shown, value)


def check_formulas(b: Browser) -> None:
    r = b.js("""(() => { const out = {n: 0, bad: []};
      for (const m of document.querySelectorAll('math')) {
        if (m.closest('[hidden]')) continue;
        out.n += 1;
        const box = m.getBoundingClientRect(), d = getComputedStyle(m).display;
        if (m.namespaceURI !== 'http://www.w3.org/1998/Math/MathML' || !/math/.test(d) || !(box.width > 0)
            || !(box.height > 0) || /[<>]|&[a-zA-Z]+;/.test(m.textContent) || m.querySelector('merror'))
          out.bad.push(m.outerHTML.slice(0, 120) + ' display=' + d);
      }
      return out; })()""")
    assert r["n"] > 10 and r["bad"] == [], r


def check_quiet(b: Browser, url: str) -> None:
    """No request but the page itself; no exception; no console error or CSP report."""
    reqs = [e["params"]["request"]["url"] for e in b.events if e.get("method") == "Network.requestWillBeSent"]
    assert all(u.split("#")[0] == url.split("#")[0] for u in reqs), reqs
    errs = [e for e in b.events if e.get("method") in ("Runtime.exceptionThrown", "Page.javascriptDialogOpening")]
    errs += [e for e in b.events if e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"]
    errs += [e for e in b.events if e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error"]
    assert errs == [], errs


def set_input(b: Browser, ident: str, value) -> None:
    """Change an input as a reader does: set its value, dispatch ``change`` (bubbling)."""
    b.js(f"(() => {{ const e = document.getElementById({json.dumps(ident)}); e.value = {json.dumps(str(value))};"
         "e.dispatchEvent(new Event('change', {bubbles: true})); })()")


# (model, inputs in the fragment, inputs changed through DOM events afterwards)
CASES = [
    ("llama-3.1-8b", {"T": 131072, "B": 8, "kv": "fp8", "w": "ckpt", "gpu": "H100", "tp": 2, "pp": 1, "dp": 1,
                      "ep": 1}, {"in-T": ("64K", "T", 65536), "in-kv": ("bf16", "kv", "bf16"),
                                 "in-tp": ("4", "tp", 4)}),
    ("deepseek-v3", {"T": 32768, "B": 4, "kv": "bf16", "w": "ckpt", "gpu": "H200", "tp": 8, "pp": 1, "dp": 8,
                     "ep": 8}, {"in-B": ("16", "B", 16), "in-w": ("int4", "w", "int4"),
                                "in-T": ("100000", "T", 100000)}),
    ("nemotron-3-nano-30b-a3b", {"T": 8192, "B": 2, "kv": "fp8", "w": "fp8", "gpu": "H100", "tp": 1, "pp": 2,
                                 "dp": 1, "ep": 1}, {"in-T": ("128K", "T", 131072), "in-gpu": ("B200", "gpu", "B200")}),
    # an A100 (the engine's 2048-token step and 256-sequence sampler): the weights alone exceed one card, so
    # the page says "does not fit" (the CLI's capacity 0) until the layout spreads them
    ("deepseek-v3", {"T": 4096, "B": 1, "kv": "fp8", "w": "ckpt", "gpu": "A100-80GB", "tp": 1, "pp": 1, "dp": 1,
                     "ep": 1}, {"in-gpu": ("H200", "gpu", "H200"), "in-tp": ("8", "tp", 8), "in-ep": ("8", "ep", 8),
                                "in-dp": ("4", "dp", 4)}),
    # a batch no tensor-parallel size of a T4 holds: the fewest GPUs to serve "does not fit" too
    ("deepseek-v3", {"T": 163840, "B": 4096, "kv": "bf16", "w": "int4", "gpu": "T4", "tp": 1, "pp": 1, "dp": 1,
                     "ep": 1}, {}),
    # MXFP4 experts: whole under expert parallelism (the kernel pads all of I), sliced over TP without it
    ("gpt-oss-20b", {"T": 8192, "B": 2, "kv": "bf16", "w": "ckpt", "gpu": "H100", "tp": 4, "pp": 1, "dp": 1,
                     "ep": 4}, {"in-ep": ("1", "ep", 1)}),
    ("qwen3-next-80b-a3b-thinking", {"T": 65536, "B": 1, "kv": "bf16", "w": "ckpt", "gpu": "H100", "tp": 4, "pp": 1,
                                     "dp": 1, "ep": 1}, {"in-kv": ("fp8", "kv", "fp8"), "in-dp": ("2", "dp", 2)}),
]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = {}
    d = tmp_path_factory.mktemp("pages")
    for name in dict.fromkeys(c[0] for c in CASES):
        path = d / f"{name}.html"
        size, _ = write_html(loader.build(name), loader.read_json(name)[1], path)
        out[name] = (path, size)
    return out


def _fragment(s: dict) -> str:
    return "#" + "&".join(f"{k}={v}" for k, v in s.items())


@pytest.mark.parametrize("name, start, moves", CASES, ids=[f"{c[0]}-{c[1]['gpu']}" for c in CASES])
def test_page_numbers_equal_the_cli_and_follow_the_inputs(browser, pages, capsys, name, start, moves):
    path, size = pages[name]
    assert size < SIZE_LIMIT
    url = path.as_uri() + _fragment(start)
    browser.open(url)
    assert browser.js("document.body.dataset.rendered") == "1"
    assert browser.js("document.getElementById('in-T').value") == str(start["T"])
    check_numbers(browser, name, start, capsys)
    check_formulas(browser)
    s = dict(start)
    for ident, (typed, key, value) in moves.items():
        set_input(browser, ident, typed)
        s[key] = value
    assert browser.js("document.body.dataset.rendered") == str(1 + len(moves))
    check_numbers(browser, name, s, capsys)
    frag = dict(x.split("=") for x in browser.js("location.hash").lstrip("#").split("&"))
    assert all(frag[k] == str(v) for k, v in s.items() if k in frag) and frag["T"] == str(s["T"])
    check_quiet(browser, url)


def test_derivation_and_plot_follow_the_inputs(browser, pages, capsys):
    """The per-component values equal ``flops --json``'s breakdown; the plot marks exact crossovers."""
    path, _ = pages["llama-3.1-8b"]
    browser.open(path.as_uri() + "#T=4096&B=2")
    parts = browser.js("Object.fromEntries([...document.querySelectorAll("
                       "'table.comp[data-section=prefill] tr[data-fn]')].map(tr => "
                       "[tr.querySelector('code').textContent, tr.querySelector('td.v').dataset.value]))")
    want = cli(["flops", "llama-3.1-8b", "--phase", "prefill", "--T", "4096", "--batch", "2"], capsys)["breakdown"]
    assert {k: int(v) for k, v in parts.items()} == {k: v for k, v in want.items() if v}
    marks = browser.js("[...document.querySelectorAll('#plot circle.crossover')].map(c => c.dataset.T)")
    assert marks, "the attention and MLP FLOPs of a prefill cross once in T"
    # the crossover is exact: the attention and MLP terms (the library's own) change order between T - 1 and T
    from symcost import Phase
    from symcost.core.terms import exact
    m = loader.build("llama-3.1-8b")
    terms = m.flops(Phase(kind="prefill")).depth(2)

    def diff(t):
        vals = m.values_with(T=t, B=2)
        return exact(terms["layers/self_attn"], vals) - exact(terms["layers/mlp"], vals)
    T = int(marks[0])
    assert diff(T - 1) < 0 <= diff(T)
    check_quiet(browser, path.as_uri())


def test_hostile_name_renders_as_text(browser, tmp_path):
    nasty = "<img src=x onerror=alert(1)><script>alert(2)</script>\"'&amp;</title>"
    _, raw = loader.read_json("llama-3.1-8b")
    model = loader.build(loader.load_config(copy.deepcopy(raw), name=nasty))
    model.notes.append("note " + nasty)
    path = tmp_path / "nasty.html"
    write_html(model, raw, path, Inputs())
    text = path.read_text()
    assert "<img" not in text and "<script>alert" not in text
    browser.open(path.as_uri())
    assert browser.js("document.querySelector('h1 .model').textContent") == nasty
    assert browser.js("document.querySelectorAll('img').length") == 0
    assert browser.js("document.title").startswith(nasty)
    check_quiet(browser, path.as_uri())


def test_bad_fragment_is_ignored_and_said(browser, pages):
    path, _ = pages["llama-3.1-8b"]
    browser.open(path.as_uri() + "#T=12Q&B=0&gpu=<b>x</b>&kv=fp8")
    assert browser.js("document.getElementById('in-kv').value") == "fp8"
    assert browser.js("document.getElementById('in-T').value") == "4096"
    msg = browser.js("document.getElementById('input-error').textContent")
    assert "T=12Q" in msg and "B=0" in msg and browser.js("document.querySelectorAll('b').length") == 0


def test_slider_and_formula_view(browser, pages):
    """The log slider sets T = round(2^x); the formula view puts the inputs into the formula (no input
    symbol left) and ends in the row's exact value."""
    path, _ = pages["deepseek-v3"]
    browser.open(path.as_uri() + "#T=4096&B=2&tp=8&ep=8&dp=8&gpu=H200&row=serve_per_gpu")
    b = browser.js
    b("(() => { const r = document.getElementById('in-T-range'); r.value = '15';"
      "r.dispatchEvent(new Event('input', {bubbles: true})); })()")
    assert b("document.getElementById('in-T').value") == "32768" and "T=32768" in b("location.hash")
    fv = "document.querySelector('.fv[data-key=serve_per_gpu]')"
    assert b(f"{fv}.hidden") is False
    assert b(f"{fv}.querySelectorAll('.subst [data-sym]').length") == 0
    assert b(f"{fv}.querySelectorAll('.plugged [data-sym]').length") > 0
    shown = b(f"{fv}.querySelector('.fv-value').textContent").replace(",", "")
    assert shown == b("document.querySelector('tr[data-key=serve_per_gpu] td.v').dataset.value")
    set_input(browser, "in-row", "prefill_flops")
    assert b("document.querySelector('.fv[data-key=prefill_flops]').hidden") is False
    assert "row=prefill_flops" in b("location.hash")
