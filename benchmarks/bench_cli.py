"""End-to-end CLI speed against `python -c "import sympy"` (a benchmark, not a test).

    python benchmarks/bench_cli.py [MODEL]

Prints the best-of-N wall time of importing SymPy, of `symcost params MODEL`, of
`symcost flops MODEL --phase decode --T 1048576`, of `symcost cache` and of the transformers
meta-device parameter count (if transformers is installed), and the ratios to the SymPy import,
in wall time and in CPU time (user + system of the child: steadier on a loaded machine).

Both sides run from compiled bytecode, as an installed package does: symcost's modules are
compiled first and ``PYTHONDONTWRITEBYTECODE`` is dropped from the children's environment (with
it set, an editable install recompiles every symcost module on every run, ~0.1 s, while SymPy's
bytecode was written by pip).
"""
from __future__ import annotations

import compileall
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPEAT = 5


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def best(cmd: list[str]) -> tuple[float, float]:
    """(best wall time, best CPU time) over REPEAT runs."""
    walls, cpus = [], []
    for _ in range(REPEAT):
        c0, t0 = _children_cpu(), time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=ENV)
        walls.append(time.perf_counter() - t0)
        cpus.append(_children_cpu() - c0)
    return min(walls), min(cpus)


def largest_bundled() -> str:
    from symcost.architectures import loader
    best_name, best_n = None, -1
    for name in loader.bundled_names():
        try:
            m = loader.build(name)
        except Exception:
            continue
        n = m.params().total_at(m.values)
        if n > best_n:
            best_name, best_n = name, n
    return best_name


def main() -> None:
    model = sys.argv[1] if len(sys.argv) > 1 else largest_bundled()
    py = sys.executable
    import symcost
    compileall.compile_dir(Path(symcost.__file__).parent, quiet=1)
    base, base_cpu = best([py, "-c", "import sympy"])
    print(f"model: {model}   (wall s, ratio | CPU s, ratio)")
    print(f"python -c 'import sympy'        {base:7.3f} s         | {base_cpu:6.3f} s")
    for label, args in (("params", ["params", model, "--json"]),
                        ("flops decode T=2^20", ["flops", model, "--phase", "decode", "--T", "1048576", "--json"]),
                        ("flops prefill T=8192", ["flops", model, "--phase", "prefill", "--T", "8192", "--json"]),
                        ("cache T=2^20", ["cache", model, "--T", "1048576", "--json"])):
        t, c = best([py, "-m", "symcost", *args])
        print(f"symcost {label:<24}{t:7.3f} s {t / base:5.2f}x | {c:6.3f} s {c / base_cpu:5.2f}x import sympy")
    code = ("import torch, warnings; warnings.filterwarnings('ignore')\n"
            "import transformers as tf\n"
            "from symcost import loader\n"
            f"_, raw = loader.read_json({model!r}); mt = raw.pop('model_type')\n"
            "cfg = tf.AutoConfig.for_model(mt, **raw)\n"
            "cls = tf.AutoModelForCausalLM if type(cfg) in tf.AutoModelForCausalLM._model_mapping "
            "else tf.AutoModelForImageTextToText\n"
            "with torch.device('meta'):\n"
            "    m = cls.from_config(cfg)\n"
            "print(sum(p.numel() for p in m.parameters()))\n")
    try:
        t, c = best([py, "-c", code])
        print(f"transformers meta-device count  {t:7.3f} s {t / base:5.2f}x | {c:6.3f} s {c / base_cpu:5.2f}x")
    except subprocess.CalledProcessError:
        print("transformers meta-device count: not available for this model")


if __name__ == "__main__":
    main()
