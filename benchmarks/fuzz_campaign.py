"""A fuzz campaign over every command and option (issue 27), outside the test suite.

    nice -n 10 python benchmarks/fuzz_campaign.py [--runs 5000] [--seed 27] [--json summary.json]

Each run draws a command from the parser itself and gives each of its options (or leaves it out)
a value from its choices, a plausible value, a boundary (0, −1, 2^64, 10^21, decimal and binary
suffixes), garbage, or a hostile string (TeX primitives, Markdown/HTML, control characters);
the model is a bundled name, a Hub id typed in another case, a user spec whose every name is a
hostile string, a config with an unknown dtype, a spec with huge sizes, or a broken file. The run
goes through ``symcost.cli.main`` in this process (stdout/stderr captured) and is judged on:

- **traceback**: any exception leaving ``main``, a status other than 0/1/2, or "Traceback" printed;
- **hang**: more than ``--limit`` seconds (2) of this process's CPU time, or of wall time with
  ``--wall`` (the machine is shared, so wall time is reported beside CPU time, not judged by default);
  a run is cut at 30 s of wall time;
- **escape**: a hostile string's control sequence or tag found verbatim in a written .tex (and, for
  every hostile spec, in the sheet rendered as Markdown and parsed by markdown-it when installed);
- **inexact**: under ``--json``, a count (a key naming bytes, parameters, FLOPs, tokens, totals,
  collectives) that is not an int, or any float ≥ 2^53 outside a time/ratio key; for ``memory``,
  ``total_bytes`` ≠ the sum of its parts;
- **none**: Python's ``None`` printed in a text answer;
- **error-shape**: exit 2 with other than exactly one ``symcost: error:`` line, or with output on stdout.

It prints a summary (counts per command and outcome, the slowest runs, and every finding with
its command line) and exits 1 when any finding is left.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import random
import re
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from symcost.architectures import loader  # noqa: E402
from symcost.cli import build_parser, main  # noqa: E402

HOSTILE = [r"\end{document}", r"\def\x{1}\x", r"\makeatletter\@@end", r"\special{ps: x}",
           r"\directlua{os.exit(1)}", r"\immediate\write18{id}", r"\catcode`\@=11", r"\begin{verbatim}",
           "<script>alert(1)</script>", "<img src=x onerror=1>", "[l](http://x.invalid)", "**b** _e_ `c` |x|",
           "$x$ & % # ^ _ ~ { }", "a\nb\tc\x00", "ünï ∑ →"]
TEX_BAD = re.compile(r"\\(def\\|makeatletter|@@end|special\{|directlua|write18|immediate|catcode|"
                     r"begin\{verbatim\})")
HUGE = ["18446744073709551616", "1383272158897143899136", "99999999999999999999999999", "1" + "0" * 29]
SIZES = ["1", "2", "3", "8", "16", "4096", "8K", "128K", "1M", "2G", "0", "-1", "1.5", "x", "", " 4 ", "1_024",
         "１２", "4e3", *HUGE]
FLOATS = ["0.5", "0.4", "1", "0.9", "0", "-1", "1e9", "nan", "inf", "1e400", "x", "", "5/4", "0.0001"]
DECIMALS = ["15T", "2.7M", "1e12", "14.8T", "1000000", "3.8e24", "0", "-5", "x", "1.5", "15t", "2,664,000",
            "nanT", "1e999", *HUGE]
EXPRS = ["2*L*H_kv*D_h*T", "V*d", r"\frac{d}{2}", "2*B*T*d", "L*(4*d**2 + 3*d*d_ff + 2*d) + d + 2*V*d",
         "(d+1)**64*(V+1)**64*(L+1)**3", "(d+V+L+T+1)**16", "(d*V*L*T*B*H_q*E*k*N)**2", "T**2", "T*(T+1)/2",
         "d^2", "{d²}", "x+", "", "T*" * 40 + "T", "__import__('os')", "9**9**9", "(" * 300 + "d" + ")" * 300,
         "1/0", "ceil(T/W)*d", "Min(T, W)*d", *HOSTILE]
STRINGS = ["total", "weights", "layers", "mlp", "layers/self_attn", "nope", "", *HOSTILE]
GPUS = ["H100", "h100", "H200", "B200", "A100", "nope", "", " ", *HOSTILE[:3]]
#: the plausible part of each pool, drawn in a "clean" run (half the runs) so most of them get past the
#: parser and exercise the engine with real and extreme-but-valid sizes
CLEAN = {"size": ["1", "2", "8", "16", "4096", "8K", "128K", "1M", *HUGE[:2]], "float": ["0.5", "0.4", "1", "0.9"],
         "decimal": ["15T", "2.7M", "1e12", "14.8T", "1000000", "3.8e24", *HUGE[:2]],
         "expr": EXPRS[:11], "gpu": ["H100", "h100", "H200", "B200"], "string": ["total", "weights", "layers", "mlp"]}


def _spec(name: str, **values) -> dict:
    vals = {"d": 64, "V": 128, "L": 2, "H_q": 4, "H_kv": 2, "D_h": 16, "d_ff": 128, **values}
    return {"model_type": "symcost", "name": name, "values": vals,
            "groups": [{"name": "g" + name, "count": "L", "components": [
                {"type": "Norms", "names": ["n1" + name, "n2" + name]}, {"type": "Attention"},
                {"type": "FFN", "gated": True}]}]}


def _files(tmp: Path) -> dict[str, list[str]]:
    """Model sources written into ``tmp``: hostile specs, huge sizes, an unknown dtype, broken files."""
    out = {"hostile": [], "odd": []}
    for i, h in enumerate(HOSTILE):
        p = tmp / f"hostile{i}.json"
        p.write_text(json.dumps(_spec(h)))
        out["hostile"].append(str(p))
    for i, vals in enumerate([{"d": 2**40, "V": 2**40, "d_ff": 2**42}, {"L": 10**6}, {"H_q": 3, "H_kv": 2}]):
        p = tmp / f"huge{i}.json"
        p.write_text(json.dumps(_spec(f"huge{i}", **vals)))
        out["odd"].append(str(p))
    nem = json.loads((ROOT / "symcost/configs/nemotron-3-nano-30b-a3b.json").read_text())
    nem["mamba_ssm_cache_dtype"] = "float7"
    (tmp / "float7.json").write_text(json.dumps(nem))
    (tmp / "broken.json").write_text('{"model_type": "llama", "hidden_size": ')
    (tmp / "list.json").write_text("[1, 2]")
    (tmp / "deep.json").write_text("[" * 100000 + "]" * 100000)
    out["odd"] += [str(tmp / n) for n in ("float7.json", "broken.json", "list.json", "deep.json")]
    out["odd"] += ["OpenAI/GPT-OSS-20B", "meta-llama/Llama-3.1-8B", "nope/nope", "llama-3.1", "qwen3"]
    return out


COUNT_KEY = re.compile(r"(bytes|params|flops|tokens|total|active|collectives|count|candidates)$")
FLOAT_OK = re.compile(r"(_s$|time|seconds|ratio|mfu|hfu|frac|share|eff|intensity|util|per_s|"
                      r"concurrency|tokens_per|gib|gb$|ms$|days|hours|overlap|rate|bubble|x$|peak)")


def _inexact(node, key="", path="") -> list[str]:
    found = []
    if isinstance(node, dict):
        for k, v in node.items():
            # "x_float" is the float rendering of the exact "x" beside it (crossover's at / at_float): an
            # approximation by name, the exact value is in the payload too
            if str(k).endswith("_float") and str(k)[:-6] in node:
                continue
            found += _inexact(v, str(k), f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _inexact(v, key, f"{path}/{i}")
    elif isinstance(node, float):
        if any(FLOAT_OK.search(seg) for seg in path.split("/")[:-1]):  # under a time/ratio object
            return found
        if COUNT_KEY.search(key) and not FLOAT_OK.search(key):
            found.append(f"{path}={node!r} (a count as a float)")
        elif abs(node) >= 2**53 and not FLOAT_OK.search(key):
            found.append(f"{path}={node!r} (a float past 2^53)")
    return found


def _memory_sum(payload: dict) -> list[str]:
    parts = ("weights_per_gpu_bytes", "activation_bytes", "overhead_bytes_per_gpu")
    if payload.get("gpus") == 1 and all(isinstance(payload.get(k), int) for k in (*parts, "per_gpu_bytes")) \
            and isinstance(payload.get("cache_bytes"), int) and payload.get("tp") == 1 and payload.get("pp") == 1:
        # the engine's overhead per GPU already holds the CUDA-graph pool beside the non-torch memory
        # (serving.profile); the earlier rule added cudagraph_bytes_per_gpu a second time
        want = sum(payload[k] for k in parts) + payload["cache_bytes"]
        if want != payload["per_gpu_bytes"] and payload.get("total_bytes") != want:
            return [f"per_gpu_bytes {payload['per_gpu_bytes']} != sum of parts {want}"]
    return []


class _Timeout(Exception):
    pass


#: the sheet preamble's own lines (templates/preamble.tex.j2: its \makeatletter for the heading rule)
PREAMBLE = (ROOT / "symcost" / "documents" / "templates" / "preamble.tex.j2").read_text()


def _preamble_own(text: str, match) -> bool:
    """A control sequence on a line of the preamble template, before ``\begin{document}``: the sheet's own."""
    if match.start() > text.find(r"\begin{document}"):
        return False
    line = text[text.rfind("\n", 0, match.start()) + 1:text.find("\n", match.end())]
    return line.strip() != "" and line.strip() in PREAMBLE


def _alarm(signum, frame):
    raise _Timeout()


def _commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sp for name, sp in sub.choices.items()}


def _value(rng: random.Random, cmd: str, action, out_dir: Path, clean: bool = False) -> str:
    flag = max(action.option_strings, key=len)
    if clean and flag != "--output":
        if action.choices is not None:
            return rng.choice([str(c) for c in action.choices])
        kind = ("expr" if flag == "--expr" else "gpu" if flag == "--gpu" else "string" if flag in ("--a", "--b")
                else "decimal" if flag in ("--tokens", "--gpu-hours", "--flops") else None)
        if flag == "--gpus":
            return rng.choice(["1", "2", "8", "16", "1-8"])
        if flag in ("--map", "--vs", "--keep", "--hsdp-shard", "--recompute-modules", "--recompute-layers"):
            clean = False
        elif kind is None and (action.type is float or any(w in getattr(action.type, "__qualname__", "")
                                                           for w in ("real", "ratio"))):
            return rng.choice(CLEAN["float"])
        else:
            return rng.choice(CLEAN[kind or "size"])
    if flag == "--output":
        ext = {"sheet": [".tex", ".tex", ".tex", ".md", ".txt"], "plot": [".png", ".pdf", ".svg", ".txt"]}
        return str(out_dir / f"o{rng.randrange(10**6)}{rng.choice(ext.get(cmd, ['.tex']))}")
    if action.choices is not None:
        pool = [str(c) for c in action.choices]
        return rng.choice(pool) if rng.random() < 0.85 else rng.choice(["bogus", "", "PREFILL", *HOSTILE[:2]])
    if flag in ("--expr",):
        return rng.choice(EXPRS)
    if flag == "--map":
        return rng.choice(["m=d_ff", "c=2", "=", "d_ff=m", "x", "m=__import__('os')", "m=(d+1)**64"])
    if flag in ("--gpu",):
        return rng.choice(GPUS)
    if flag in ("--a", "--b"):
        return rng.choice(STRINGS)
    if flag == "--vs":
        return rng.choice(["gpt2", "llama-3.1-8b", "nope", ""])
    if flag == "--keep":
        return rng.choice(["d,L", "T", "nope", ",", ""])
    if flag in ("--tokens", "--gpu-hours", "--flops"):
        return rng.choice(DECIMALS)
    if flag == "--gpus":
        return rng.choice(["1", "2", "8", "16", "1-8", "8-4", "0", "x", "3", "4-16", "1-64", *HUGE[:1]])
    if action.type is float or "real" in getattr(action.type, "__qualname__", "") or \
            "ratio" in getattr(action.type, "__qualname__", ""):
        return rng.choice(FLOATS)
    return rng.choice(SIZES)


#: the layout flags a clean run on a bundled model draws from the model's divisors (``_layout``)
LAYOUT_FLAGS = ("--tp", "--pp", "--dp", "--ep", "--cp", "--etp")
_MODELS: dict = {}


def _divisors(n: int, cap: int) -> list[int]:
    return [k for k in range(1, min(n, cap) + 1) if n % k == 0]


def _layout(rng: random.Random, name: str) -> dict[str, str]:
    """A layout the model divides into (random sizes rarely do, so ``comm``/``train`` would mostly refuse):
    N_tp from the divisors of the heads (H_q, and H_kv split or replicated), N_ep from those of E with
    N_dp a multiple of it, N_pp up to L, N_cp 1 or 2. Checked with the engine's own rules
    (``Layout.check``); a draw that fails them is redrawn, and after 8 failures the layout is 1s."""
    from symcost.core.notation import sym
    from symcost.model.parallel import Layout
    if name not in _MODELS:
        try:
            _MODELS[name] = loader.build(name)
        except Exception:  # noqa: BLE001 - a model that does not build has no layout to draw
            _MODELS[name] = None
    m = _MODELS[name]
    if m is None:
        return {}
    v = {k: int(x) for k, x in m.values.items() if getattr(x, "is_Integer", False)}
    for _ in range(8):
        tp = rng.choice(_divisors(v.get(sym.H_q, 1), 16))
        ep = rng.choice(_divisors(v[sym.E], 64)) if sym.E in v and rng.random() < 0.7 else 1
        cp = rng.choice([1, 1, 1, 2])
        dp = ep * rng.choice([1, 1, 2]) if ep > 1 else rng.choice([1, 2, 4, 8])
        pp = rng.choice([p for p in (1, 1, 2, 4, 8) if p <= m.n_layers()])
        try:
            Layout(dp=dp, tp=tp, pp=pp, ep=ep, cp=cp).check(m)
        except Exception:  # noqa: BLE001 - the engine refused this draw: draw again
            continue
        return {"--tp": str(tp), "--pp": str(pp), "--dp": str(dp), "--ep": str(ep), "--cp": str(cp),
                "--etp": str(tp)}
    return {f: "1" for f in LAYOUT_FLAGS}


#: a clean comm/train run: the sizes a training run has (micro-batch and sequence always given, since
#: train without --search needs them), and the options whose sizes must agree with the layout or the
#: layers left to the dirty runs
TRAINING_CLEAN = {"--micro-batch": ["1", "2", "4", "8"], "--seq": ["1K", "4K", "8K", "32K", "128K"]}
TRAINING_DIRTY_ONLY = ("--first-stage-layers", "--last-stage-layers", "--hsdp-shard", "--gpus", "--global-batch",
                       "--recompute-layers", "--search", "--reshard-after-forward", "--recompute-modules",
                       "--recompute-method", "--offload", "--fp8-all-gather", "--fp4-all-gather", "--virtual-stages",
                       "--pipeline-layout", "--capacity-factor", "--schedule", "--hide")


#: runs per command relative to the others (the sweeping ones cost more, so they are drawn less)
WEIGHT = {"deploy": 0.5, "plot": 0.3, "sheet": 0.6, "models": 0.1, "gpus": 0.1}
#: options whose large values make a legitimate, long sweep (a search over 2^64 GPUs is refused, but
#: 4096 GPUs is a real, slower search): kept small here
SMALL = {"--gpus": ["1", "2", "8", "16", "1-8", "8-4", "0", "x", "3", *HUGE[:1]], "--top": ["0", "3", "-1", "x"]}


def campaign(runs: int, seed: int, limit: float, use_wall: bool, clean_share: float = 0.5) -> dict:
    rng = random.Random(seed)
    cmds = _commands()
    names = list(cmds)
    weights = [WEIGHT.get(n, 1.0) for n in names]
    tmp = Path(tempfile.mkdtemp(prefix="symcost-campaign-"))
    files = _files(tmp)
    bundled = loader.bundled_names()
    stats = collections.Counter()
    per_cmd = collections.defaultdict(collections.Counter)
    refusals = collections.defaultdict(collections.Counter)
    findings = []
    slowest = []
    signal.signal(signal.SIGALRM, _alarm)
    for i in range(runs):
        cmd = rng.choices(names, weights)[0]
        sp = cmds[cmd]
        argv = [cmd]
        positional = [a for a in sp._actions if not a.option_strings and a.dest != "help"]
        clean = rng.random() < clean_share
        roll = rng.random()
        model_pool = (files["hostile"] if roll < 0.15 else files["odd"] if roll < 0.25 and not clean else bundled)
        for a in positional:
            n = rng.choice([1, 1, 1, 2]) if a.nargs == "+" else 1
            argv += [rng.choice(model_pool) for _ in range(n)]
        # a clean run on one bundled model takes a layout the model divides into, so comm/train answer
        layout = _layout(rng, argv[1]) if clean and len(argv) == 2 and argv[1] in bundled else {}
        for a in sp._actions:
            if not a.option_strings or a.dest in ("help", "version"):
                continue
            flag = max(a.option_strings, key=len)
            trained = clean and cmd in ("comm", "train") and bool(layout)
            if trained and flag in TRAINING_DIRTY_ONLY:
                continue
            if not (a.required or (trained and (flag in TRAINING_CLEAN or flag in layout))
                    or rng.random() < (0.12 if trained else 0.25 if clean else 0.35)):
                continue
            if a.nargs == 0 or isinstance(a, (argparse._StoreTrueAction, argparse._StoreFalseAction,
                                              argparse.BooleanOptionalAction)):
                argv.append(rng.choice(a.option_strings))
                continue
            value = layout[flag] if flag in layout else \
                rng.choice(TRAINING_CLEAN[flag]) if trained and flag in TRAINING_CLEAN else \
                rng.choice(SMALL[flag]) if flag in SMALL and cmd in ("deploy", "train") else \
                _value(rng, cmd, a, tmp, clean)
            argv += [flag, value] if not value.startswith("-") or rng.random() < 0.5 else [f"{flag}={value}"]
        if rng.random() < 0.4:
            argv.append("--json")
        out, err = io.StringIO(), io.StringIO()
        t0, c0 = time.perf_counter(), time.process_time()
        rc, crash = None, None
        signal.setitimer(signal.ITIMER_REAL, 30)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(argv)
        except _Timeout:
            crash = "cut at 30 s"
        except SystemExit as e:  # --help, --version
            rc = e.code if isinstance(e.code, int) else 0
        except BaseException:  # noqa: BLE001 - every escape is a finding
            crash = traceback.format_exc(limit=6)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        stdout, stderr = out.getvalue(), err.getvalue()
        line = " ".join(repr(a) if (not a or any(c in a for c in " \\\n$`'\"<>|&;")) else a for a in argv)
        problems = []
        if crash is not None:
            problems.append(("hang" if crash == "cut at 30 s" else "traceback", crash))
        elif rc not in (0, 1, 2, None):
            problems.append(("traceback", f"exit status {rc}"))
        if "Traceback (most recent call last)" in stdout + stderr:
            problems.append(("traceback", stderr[-800:]))
        if (wall if use_wall else cpu) > limit:
            problems.append(("hang", f"{cpu:.2f} s CPU, {wall:.2f} s wall"))
        if rc == 2 and crash is None:
            errors = [ln for ln in stderr.splitlines() if ln.startswith("symcost: error:")]
            others = [ln for ln in stderr.splitlines() if ln and not ln.startswith("symcost: ")]
            if "--json" not in argv and (len(errors) != 1 or others or stdout.strip()):
                problems.append(("error-shape", stderr[-400:] + stdout[-200:]))
        if rc == 0 and "--json" in argv and stdout.strip():
            try:
                payload = json.loads(stdout)
            except ValueError:
                problems.append(("traceback", "--json printed no JSON: " + stdout[:200]))
            else:
                bad = _inexact(payload) + (_memory_sum(payload) if cmd == "memory" else [])
                if bad:
                    problems.append(("inexact", "; ".join(bad[:4])))
        if rc == 0 and "--json" not in argv and re.search(r"\bNone\b", stdout):
            problems.append(("none", next(ln for ln in stdout.splitlines() if re.search(r"\bNone\b", ln))))
        if cmd == "sheet" and rc == 0:
            target = next((argv[k + 1] for k, a in enumerate(argv) if a in ("-o", "--output")), None)
            for tex in [target] if target and target.endswith(".tex") else []:
                text = Path(tex).read_text(errors="replace") if Path(tex).is_file() else ""
                bad = [m_ for m_ in TEX_BAD.finditer(text) if not _preamble_own(text, m_)]
                if bad or text.count(r"\end{document}") > 1:
                    problems.append(("escape", f"{tex}: {bad[:1]}"))
                if re.search(r"\bNone\b", text):
                    problems.append(("none", f"{tex}: " + next(ln for ln in text.splitlines() if re.search(r"\bNone\b", ln))))
                Path(tex).unlink(missing_ok=True)
        outcome = "exit 0" if rc in (0, None) and crash is None else f"exit {rc}" if crash is None else "crash"
        if rc == 2 and crash is None:  # what refused it, by its option or field (digits folded), per command
            why = next((ln for ln in stderr.splitlines() if ln.startswith("symcost: error:")), "")
            refusals[cmd][re.sub(r"-?\d[\d,._]*", "N", why[15:])[:70]] += 1
        stats[outcome] += 1
        per_cmd[cmd][outcome] += 1
        for kind, detail in problems:
            stats[kind] += 1
            findings.append({"kind": kind, "command": line, "detail": detail[:600]})
        slowest.append((cpu, wall, line[:160]))
        slowest = sorted(slowest, reverse=True)[:8]
        if (i + 1) % 500 == 0:
            print(f"... {i + 1} runs, findings so far: {len(findings)}", file=sys.stderr, flush=True)
    stats.update(_markdown_escapes(files["hostile"]))
    if stats.get("escape-md"):
        findings.append({"kind": "escape", "command": "render_sheet_md(hostile specs)", "detail": "see escape-md"})
    return {"runs": runs, "seed": seed, "clean_share": clean_share, "limit_s": limit, "judged_on": "wall" if use_wall else "cpu",
            "outcomes": {k: stats[k] for k in ("exit 0", "exit 1", "exit 2", "crash")},
            "tracebacks": stats["traceback"], "hangs": stats["hang"], "escapes": stats["escape"] + stats["escape-md"],
            "inexact_integers": stats["inexact"], "printed_none": stats["none"], "error_shape": stats["error-shape"],
            "markdown_specs_checked": stats["md-checked"],
            "per_command": {c: dict(v) for c, v in sorted(per_cmd.items())},
            "refusals": {c: dict(v.most_common(6)) for c, v in sorted(refusals.items())},
            "slowest": [{"cpu_s": round(c, 3), "wall_s": round(w, 3), "command": ln} for c, w, ln in slowest],
            "findings": findings}


def _markdown_escapes(specs: list[str]) -> collections.Counter:
    """Each hostile spec's sheet as Markdown, rendered with raw HTML on: no tag or link of its own."""
    import symcost
    from symcost.documents.report import render_sheet_md
    c = collections.Counter()
    try:
        import markdown_it
    except ImportError:
        return c
    own = {"p", "h1", "h2", "h3", "h4", "table", "thead", "tbody", "tr", "th", "td", "code", "strong", "em", "ul",
           "li", "ol", "pre", "hr", "br"}
    for path in specs:
        html = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(
            render_sheet_md(symcost.build(path)))
        tags = {m.group(1).lower() for m in re.finditer(r"</?([a-zA-Z][a-zA-Z0-9]*)", html)}
        c["md-checked"] += 1
        if tags - own:
            c["escape-md"] += 1
    return c


def main_() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--limit", type=float, default=2.0, help="seconds a run may take (default 2)")
    ap.add_argument("--wall", action="store_true", help="judge hangs on wall time instead of CPU time")
    ap.add_argument("--clean", type=float, default=0.5,
                    help="share of runs drawing only plausible values (default 0.5; 0.9 exercises the answers)")
    ap.add_argument("--json", help="also write the summary to this file")
    a = ap.parse_args()
    t0 = time.perf_counter()
    summary = campaign(a.runs, a.seed, a.limit, a.wall, a.clean)
    summary["elapsed_s"] = round(time.perf_counter() - t0, 1)
    text = json.dumps(summary, indent=1, ensure_ascii=False)
    if a.json:
        Path(a.json).write_text(text + "\n")
    head = {k: v for k, v in summary.items() if k not in ("findings", "per_command", "refusals")}
    print(json.dumps(head, indent=1, ensure_ascii=False))
    for f in summary["findings"][:60]:
        print(f"[{f['kind']}] symcost {f['command']}\n    {f['detail'][:300]!r}")
    return 1 if summary["findings"] else 0


if __name__ == "__main__":
    sys.exit(main_())
