"""End-to-end CLI speed against `python -c "import sympy"` (a benchmark, not a test).

    python benchmarks/bench_cli.py [MODEL]

Prints the best-of-N wall time of importing SymPy, of `symcost params MODEL`, of
`symcost flops MODEL --phase decode --T 1048576`, of `symcost cache` and of the transformers
meta-device parameter count (if transformers is installed), and the ratios to the SymPy import.
"""
from __future__ import annotations

import subprocess
import sys
import time

REPEAT = 5


def best(cmd: list[str]) -> float:
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return min(times)


def largest_bundled() -> str:
    from symcost import loader
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
    base = best([py, "-c", "import sympy"])
    print(f"model: {model}")
    print(f"python -c 'import sympy'        {base:7.3f} s")
    for label, args in (("params", ["params", model, "--json"]),
                        ("flops decode T=2^20", ["flops", model, "--phase", "decode", "--T", "1048576", "--json"]),
                        ("flops prefill T=8192", ["flops", model, "--phase", "prefill", "--T", "8192", "--json"]),
                        ("cache T=2^20", ["cache", model, "--T", "1048576", "--json"])):
        t = best([py, "-m", "symcost", *args])
        print(f"symcost {label:<24}{t:7.3f} s   {t / base:5.2f}x import sympy")
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
        t = best([py, "-c", code])
        print(f"transformers meta-device count    {t:7.3f} s   {t / base:5.2f}x import sympy")
    except subprocess.CalledProcessError:
        print("transformers meta-device count: not available for this model")


if __name__ == "__main__":
    main()
