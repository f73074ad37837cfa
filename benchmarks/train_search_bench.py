"""Benchmark: ``symcost train --search`` over every valid layout of DeepSeek-V3 on 2,048 H800s.

    python benchmarks/train_search_bench.py

Prints the candidate count, the wall time of the whole command (model build, formula
compilation, NumPy evaluation) and the best five candidates. The issue's bar: >= 10^4 candidates
in under 2 s end to end. The sweep covers layout, micro-batch, ZeRO, recompute, sequence
parallelism, HSDP shard groups, CPU offload and interleaved stages (DeepSeek-V3's 61 layers
admit no interleaving: 61 is prime).
"""
import json
import resource
import subprocess
import sys
import time

ARGS = [sys.executable, "-m", "symcost", "train", "deepseek-v3", "--seq", "4096", "--micro-batch", "1",
        "--global-batch", "15360", "--search", "--gpus", "2048", "--gpu", "H800", "--json"]

if __name__ == "__main__":
    t0 = time.perf_counter()
    out = subprocess.run(ARGS, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = json.loads(out)
    print(f"{r['candidates']:,} candidates, {r['fitting']:,} fit; search {r['seconds']:.2f} s wall, "
          f"{r['cpu_seconds']:.2f} s CPU; command end to end {wall:.2f} s wall, "
          f"{ru.ru_utime + ru.ru_stime:.2f} s CPU (interpreter start and imports included; CPU time is "
          f"what to compare on a shared machine)")
    for b in r["best"]:
        print(" ", {k: b[k] for k in ("dp", "tp", "pp", "ep", "cp", "virtual_stages", "micro_batch", "zero",
                                      "hsdp_shard", "offload", "recompute", "sp")},
              f"{b['step_time_s']:.3f} s/step, {b['per_gpu_bytes'] / 2**30:.1f} GiB/GPU")
