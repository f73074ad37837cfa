"""Sweep benchmark: 10^6 context lengths through a compiled prefill-FLOPs formula.

The formula is Llama-3.1-8B's prefill FLOPs (batch 1) with the config's values substituted,
compiled once by ``symcost.analysis.symbolic.symbolic.lambdify_by_name`` (NumPy, arguments bound by name).
Target: under 0.1 s for the sweep. Run: ``python benchmarks/sweep.py [MODEL]``.
"""
from __future__ import annotations

import sys
import time

import numpy as np
from symcost.analysis.symbolic.symbolic import lambdify_by_name

import symcost
from symcost.core.conventions import Phase
from symcost.core.notation import sym

N = 10**6


def main(model: str = "llama-3.1-8b") -> float:
    m = symcost.build(model)
    t0 = time.perf_counter()
    expr = m.flops(Phase(kind="prefill")).total.xreplace({**m.values, sym.B: 1})
    src, f = lambdify_by_name(expr)
    compile_s = time.perf_counter() - t0
    T = np.arange(1, N + 1, dtype=np.float64)
    f(T=T[:10])  # warm up
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        out = f(T=T)
        best = min(best, time.perf_counter() - t0)
    check = m.flops(Phase(kind="prefill")).total_at(m.values_with(T=N, B=1))
    assert abs(out[-1] - check) <= 1e-9 * check, (out[-1], check)
    print(f"{model}: formula compiled in {compile_s * 1e3:.1f} ms:\n{src}")
    print(f"sweep of {N:,} values of T: {best * 1e3:.2f} ms (best of 5); "
          f"f(T={N:,}) = {out[-1]:.6e} (exact {check:,})")
    return best


if __name__ == "__main__":
    elapsed = main(*sys.argv[1:])
    sys.exit(0 if elapsed < 0.1 else 1)
