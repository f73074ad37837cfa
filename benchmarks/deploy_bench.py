"""Deploy benchmark: every TP×EP×PP×DP layout of 8–64 GPUs for DeepSeek-V3, end to end.

    python benchmarks/deploy_bench.py [MODEL] [GPU]

Runs ``python -m symcost deploy MODEL --gpu GPU --gpus 8-64 --isl 4096 --osl 1024 --max-ttft 2
--max-tpot 0.05 --json`` — every layout of 8 to 64 GPUs with the calibrated latency model and the SLA
solve (the largest batch per replica meeting TPOT <= 50 ms, by bisection) — best of 3, wall and CPU
time of the child process (on a shared machine the wall time includes waiting for a core); the same
without ``--gpus`` (the smallest power-of-two count that fits); and, in process, the phases (CPU
seconds): imports, building and compiling the formulas once, then evaluating all layouts as arrays.
Target (issue 23): within 1 s end to end on 2 cores.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's symcost

MODEL = sys.argv[1] if len(sys.argv) > 1 else "deepseek-v3"
GPU = sys.argv[2] if len(sys.argv) > 2 else "H200"
ROOT = Path(__file__).resolve().parent.parent
CMD = [sys.executable, "-m", "symcost", "deploy", MODEL, "--gpu", GPU, "--gpus", "8-64",
       "--isl", "4096", "--osl", "1024", "--max-ttft", "2", "--max-tpot", "0.05", "--json"]


SMALLEST = [a for a in CMD if a not in ("--gpus", "8-64")]


def child_run(cmd=CMD):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(out)["count"]


def main():
    runs = [child_run() for _ in range(3)]
    wall, cpu, count = min(runs)
    print(f"end to end: {count} layouts in {wall:.2f} s wall, {cpu:.2f} s CPU (best of 3; CPU min "
          f"{min(r[1] for r in runs):.2f} s)")
    runs = [child_run(SMALLEST) for _ in range(3)]
    print(f"without --gpus (smallest fitting count): {min(runs)[0]:.2f} s wall, "
          f"{min(r[1] for r in runs):.2f} s CPU (best of 3)")
    c0 = time.process_time()
    from symcost.architectures import loader
    from symcost.hardware.gpus import gpu
    from symcost.serving.deploy import Workload, compile_model, evaluate, layouts
    from symcost.serving.plan import Layout, ServeSetup
    from symcost.serving.roofline import CalibratedLatency
    c1 = time.process_time()
    m, raw = loader.build(MODEL), loader.read_json(MODEL)[1]
    g = gpu(GPU)
    comp = compile_model(m, raw, gpu=g)
    setup = ServeSetup(layout=Layout(), gpu=g)
    lat = CalibratedLatency(m, comp.ck, setup, weights=comp.weights)
    lat.compiled("prefill"), lat.compiled("decode")
    c2 = time.process_time()
    lays = [lay for n in range(8, 65) for lay in layouts(m, n)]
    c3 = time.process_time()
    work = Workload(isl=4096, osl=1024, max_ttft=2.0, max_tpot=0.05)
    rows = evaluate(comp, lays, gpu=g, T=work.context, batch=1, latency=lat, work=work)
    c4 = time.process_time()
    print(f"in process (CPU s): imports {c1 - c0:.3f}, build + compile {c2 - c1:.3f}, enumerate {len(lays)} "
          f"layouts {c3 - c2:.3f}, evaluate {c4 - c3:.3f} ({len(rows)} rows); {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    print("target <= 1 s end to end:", "met" if wall <= 1 else f"NOT met on wall time ({wall:.2f} s)"
          + (f"; CPU time {cpu:.2f} s" if wall > 1 else ""))


if __name__ == "__main__":
    main()
