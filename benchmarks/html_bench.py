"""HTML page benchmark: ``symcost html MODEL`` against ``symcost sheet MODEL`` (no --pdf), each in a
fresh child process, the least CPU time of ``--runs`` (default 3) runs, run in turn so both see the
same load.

    python benchmarks/html_bench.py [--runs N] [MODEL ...]

Issue 26's bar: the page costs at most 1.5x the LaTeX sheet of the same model (its figures included).
Measured here rather than in a timed test: in one test process whichever runs second finds the
other's per-model caches warm, so the ratio there says more about the order than about the page.
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
from pathlib import Path


def _cpu(argv: list[str]) -> float:
    """User + system CPU seconds of one child running ``python -m symcost *argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "symcost", *argv], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=["deepseek-v3", "llama-3.1-8b"])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for name in args.models:
            sheet, page = [], []
            for _ in range(args.runs):
                sheet.append(_cpu(["sheet", name, "-o", str(Path(d) / "s.tex")]))
                page.append(_cpu(["html", name, "-o", str(Path(d) / "p.html")]))
            s, p = min(sheet), min(page)
            print(f"{name}: sheet {s:.2f} s CPU, html {p:.2f} s CPU, ratio {p / s:.2f} (bar 1.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
