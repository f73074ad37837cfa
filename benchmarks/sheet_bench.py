"""Sheet benchmark: ``symcost sheet MODEL -o x.tex`` end to end, and where its time goes.

    python benchmarks/sheet_bench.py [--runs N] [--against CHECKOUT] [MODEL ...]

For each model (default: deepseek-v3, llama-3.1-8b, qwen3-next-80b-a3b-thinking) runs the command
``runs`` times (default 3) in a child process and prints the least CPU time (user, and user + sys,
of the child: what ``/usr/bin/time -f %U`` and the fuzz campaign's 2 s limit judge), then, in this
process, the CPU seconds of the phases: imports, building the model, the sheet's content
(``report.sheet_context``: the sections, page 1's summary, the training search and derivations),
the figures (``plot.sheet_plots``, matplotlib's import included) and the rendering. On a shared
machine CPU time is the figure to compare; wall time includes waiting for a core. CPU time still
grows when the other core is busy (shared caches), so ``--against CHECKOUT`` (another checkout of
symcost, e.g. the main branch) runs its sheet in turn with this one's, run for run, and prints both:
the two are measured under the same load.
Target (issue 27): deepseek-v3 under 3 s CPU, the others under 2 s.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("deepseek-v3", "llama-3.1-8b", "qwen3-next-80b-a3b-thinking")


def child_cpu(model: str, out: Path, root: Path = ROOT) -> tuple[float, float]:
    """(user, user + sys) CPU seconds of one ``symcost sheet`` child of the checkout ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "symcost", "sheet", model, "-o", str(out)], check=True,
                   capture_output=True, cwd=root, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user = after.ru_utime - before.ru_utime
    return user, user + after.ru_stime - before.ru_stime


def phases(model: str, tmp: Path) -> dict[str, float]:
    """CPU seconds of the sheet's phases in this process (the first sheet of the process, as the CLI runs)."""
    sys.path.insert(0, str(ROOT))
    c = [time.process_time()]
    from symcost.architectures import loader
    from symcost.documents import report
    c.append(time.process_time())
    m, raw = loader.build(model), loader.read_json(model)[1]
    c.append(time.process_time())
    ctx = report.sheet_context(m, raw=raw)
    c.append(time.process_time())
    from symcost.documents.plot import sheet_plots
    sheet_plots(m, tmp / "fig", prefill_phase=report.sheet_phases(None, None, None)[0],
                decode_phase=report.sheet_phases(None, None, None)[1])
    c.append(time.process_time())
    report.render_sheet(m, context=ctx, plots={"files": {}, "missing": ""})
    c.append(time.process_time())
    names = ("imports", "build", "sheet_context", "figures", "render")
    return {n: b - a for n, a, b in zip(names, c, c[1:])}


def main(argv: list[str]) -> None:
    runs, against = 3, None
    if argv[:1] == ["--runs"]:
        runs, argv = int(argv[1]), argv[2:]
    if argv[:1] == ["--against"]:
        against, argv = Path(argv[1]).resolve(), argv[2:]
    if argv[:1] == ["--phases"]:  # one model's phases, in a fresh process (called by main below)
        with tempfile.TemporaryDirectory() as tmp:
            ph = phases(argv[1], Path(tmp))
        print("  phases (CPU s): " + ", ".join(f"{k} {v:.2f}" for k, v in ph.items()))
        return
    with tempfile.TemporaryDirectory() as tmp:
        for model in argv or MODELS:
            cpu, other = [], []
            for _ in range(runs):
                cpu.append(child_cpu(model, Path(tmp) / "x.tex"))
                if against is not None:
                    other.append(child_cpu(model, Path(tmp) / "y.tex", against))
            for label, c in (("this checkout", cpu), (f"{against}", other)):
                if c:
                    print(f"{model}: sheet {min(u for u, _ in c):.2f} s user, {min(t for _, t in c):.2f} s user+sys "
                          f"(least of {runs}; all user: {', '.join(f'{u:.2f}' for u, _ in c)}) [{label}]", flush=True)
            if against is None:
                subprocess.run([sys.executable, __file__, "--phases", model], check=True, cwd=ROOT)


if __name__ == "__main__":
    main(sys.argv[1:])
