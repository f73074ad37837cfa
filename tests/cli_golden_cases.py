"""The fixed command lines whose output is pinned in tests/data/cli_golden.json (issue 21).

Every INTERFACE.md command and the README's examples, in text and JSON form. The stored outputs were
generated from the code *before* the upper floors were rebuilt; a later change that alters an answer
regenerates them on purpose (``python -m tests.cli_golden_cases --write``) and says why in its commit.
"""
import contextlib
import io
import json
import os
import re
import sys
from pathlib import Path

GOLDEN = Path(__file__).parent / "data" / "cli_golden.json"

CASES: list[list[str]] = [
    ["models"], ["models", "--json"], ["--version"], ["gpus"], ["gpus", "--json"],
    ["params", "llama-3.1-8b"], ["params", "llama-3.1-8b", "--json"], ["params", "deepseek-v3", "--json"],
    ["params", "qwen3-vl-30b-a3b-instruct"], ["params", "nemotron-h-56b-base-8k", "--json"],
    ["flops", "llama-3.1-8b", "--phase", "prefill", "--T", "4096"],
    ["flops", "llama-3.1-8b", "--phase", "decode", "--T", "1000", "--json"],
    ["flops", "deepseek-v3", "--phase", "decode", "--T", "32K", "--batch", "8", "--mla", "absorb", "--json"],
    ["flops", "deepseek-v3", "--phase", "decode", "--T", "32K", "--mla", "expand"],
    ["flops", "gemma-2-9b-it", "--phase", "prefill", "--T", "8192", "--attention", "causal", "--logits", "last"],
    ["flops", "qwen3-vl-8b-instruct", "--phase", "prefill", "--T", "2048", "--images", "2", "--json"],
    ["flops", "qwen3-next-80b-a3b-thinking", "--phase", "prefill", "--T", "4096", "--elementwise"],
    ["cache", "llama-3.1-8b", "--T", "1000", "--batch", "2", "--json"],
    ["cache", "qwen3-next-80b-a3b-thinking", "--T", "128K"],
    ["cache", "deepseek-v3", "--T", "32K", "--dtype", "fp8", "--layout", "vllm", "--json"],
    ["cache", "gemma-2-9b-it", "--T", "16K", "--batch", "4"],
    ["check", "llama-2-7b", "--metric", "params", "--expr", "L*(4*d**2 + 3*d*d_ff + 2*d) + d + V*d"],
    ["check", "llama-3.1-8b", "--metric", "params", "--expr", "L*(4*d**2 + 3*d*d_ff + 2*d) + d + 2*V*d"],
    ["check", "llama-3.1-8b", "--metric", "cache", "--expr", "2*B*T*L*H_kv*D_h", "--json"],
    ["check", "llama-3.1-8b", "--metric", "params", "--expr", "2d^2+3dm", "--map", "m=d_ff", "--strict"],
    ["scale", "llama-3.1-8b", "--metric", "flops", "--wrt", "T", "--json"],
    ["scale", "mixtral-8x7b-v0.1", "--metric", "params", "--wrt", "E"],
    ["scale", "gemma-2-9b-it", "--metric", "cache", "--wrt", "T"],
    ["export", "llama-3.1-8b", "--metric", "cache", "--to", "python"],
    ["export", "llama-3.1-8b", "--metric", "flops", "--phase", "prefill", "--to", "numpy"],
    ["export", "qwen3-8b", "--metric", "params", "--to", "c", "--keep", "d,L"],
    ["export", "llama-3.1-8b", "--metric", "cache", "--to", "json"],
    ["crossover", "llama-3.1-8b", "--metric", "flops", "--a", "layers/self_attn", "--b", "layers/mlp"],
    ["memory", "llama-3.1-8b", "--T", "8192", "--batch", "16", "--gpu", "H100"],
    ["memory", "llama-3.1-8b", "--T", "8192", "--batch", "16", "--json"],
    ["memory", "deepseek-v3", "--T", "32K", "--batch", "8", "--gpu", "H200", "--tp", "8", "--json"],
    ["memory", "gpt-oss-20b", "--T", "16K", "--batch", "4", "--gpu", "H100", "--kv-dtype", "fp8"],
    ["memory", "qwen3-30b-a3b", "--T", "4096", "--batch", "32", "--gpu", "A100", "--tp", "2", "--ep", "2", "--json"],
    ["deploy", "llama-3.1-70b", "--gpu", "H100", "--gpus", "8", "--T", "8192", "--batch", "8"],
    ["deploy", "qwen3-30b-a3b", "--gpu", "H100", "--gpus", "1-8", "--T", "4096", "--json"],
    ["roofline", "llama-3.1-8b", "--phase", "decode", "--T", "4096", "--batch", "1", "--gpu", "H100"],
    ["roofline", "deepseek-v3", "--phase", "prefill", "--T", "8192", "--batch", "1", "--gpu", "H200", "--tp", "8", "--json"],
    ["roofline", "mixtral-8x7b-v0.1", "--phase", "decode", "--T", "2048", "--batch", "64", "--gpu", "A100", "--tp", "2"],
    ["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1"],
    ["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "2", "--dp", "8", "--zero", "3", "--json"],
    ["train", "llama-3.1-70b", "--seq", "8192", "--micro-batch", "1", "--global-batch", "512", "--tp", "8",
     "--pp", "4", "--dp", "2", "--sp", "--recompute", "selective", "--virtual-stages", "2", "--gpu", "H100", "--json"],
    ["train", "deepseek-v3", "--seq", "4096", "--micro-batch", "1", "--global-batch", "1024", "--tp", "2",
     "--pp", "8", "--dp", "64", "--ep", "64", "--zero", "1", "--recompute", "full", "--gpu", "H100"],
    ["train", "mixtral-8x7b-v0.1", "--seq", "4096", "--micro-batch", "1", "--dp", "8", "--ep", "8",
     "--capacity-factor", "1.25", "--json"],
    ["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", "--dp", "4", "--zero", "2",
     "--offload", "optimizer", "--json"],
    ["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", "--pp", "2", "--recompute", "full",
     "--recompute-method", "block", "--recompute-layers", "4", "--json"],
    ["train", "llama-3.1-70b", "--seq", "4096", "--micro-batch", "1", "--search", "--gpus", "64", "--global-batch", "256", "--gpu", "H100"],
    ["train", "qwen3-30b-a3b", "--seq", "4096", "--micro-batch", "1", "--search", "--gpus", "16", "--global-batch", "128", "--gpu", "H100", "--json"],
    ["comm", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", "--dp", "8", "--json"],
    ["comm", "nemotron-3-nano-30b-a3b", "--seq", "4096", "--micro-batch", "1", "--tp", "4", "--pp", "2",
     "--dp", "2", "--global-batch", "64"],
    ["comm", "deepseek-v3", "--seq", "4096", "--micro-batch", "1", "--tp", "2", "--pp", "8", "--dp", "64",
     "--ep", "64", "--global-batch", "1024", "--gpu", "H100", "--overlap", "0.5", "--json"],
    ["comm", "llama-3.1-8b", "--seq", "8192", "--micro-batch", "1", "--cp", "2", "--dp", "4", "--hsdp-shard", "2",
     "--zero", "3", "--gpu", "H100"],
    ["budget", "llama-3.1-70b", "--tokens", "15000000000000", "--gpus", "1024", "--gpu", "H100", "--mfu", "0.4"],
    ["budget", "deepseek-v3", "--tokens", "14800000000000", "--gpus", "2048", "--gpu", "H800", "--gpu-hours",
     "2664000", "--json"],
    ["presets", "llama-3.1-8b", "--seq", "8192"],
    ["presets", "deepseek-v3", "--seq", "4096", "--json"],
    ["params", "does-not-exist.json"], ["params", "does-not-exist.json", "--json"],
    ["flops", "llama-3.1-8b", "--phase", "prefil", "--T", "10"],
    ["memory", "llama-3.1-8b", "--T", "10", "--batch", "1", "--gpu", "NoSuchCard"],
    ["train", "gpt2", "--seq", "1024", "--micro-batch", "1", "--tp", "3"],
    ["check", "llama-3.1-8b", "--metric", "params", "--expr", "__import__('os')"],
    ["params", "--help"], ["flops", "--help"], ["memory", "--help"], ["train", "--help"], ["check", "--help"],
    ["sheet", "--help"],
]


_TIMINGS = [(re.compile(r"evaluated in [0-9.]+ s \([0-9.]+ s CPU\)"), "evaluated in <t> s (<t> s CPU)"),
            (re.compile(r'"(seconds|cpu_seconds)": [0-9.e-]+'), r'"\1": <t>')]


def stable(text: str) -> str:
    """The output with wall-clock timings (the search reports its own) masked: all else is compared."""
    for pattern, repl in _TIMINGS:
        text = pattern.sub(repl, text)
    return text


def run_case(argv: list[str]) -> dict:
    """Run one command line in-process (fixed terminal width) and return its exit code and streams."""
    from symcost.cli import main
    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:  # --help / --version exit through argparse
                code = e.code if isinstance(e.code, int) else 0
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return {"argv": argv, "code": code, "stdout": stable(out.getvalue()), "stderr": stable(err.getvalue())}


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.cli_golden_cases --write")
    GOLDEN.write_text(json.dumps([run_case(a) for a in CASES], indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(CASES)} cases to {GOLDEN}")
