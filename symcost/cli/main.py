"""The entry points (``main``, ``run``) and the parser, assembled from the command modules.

``COMMANDS`` lists every command in the order ``--help`` shows them, with the module that runs it
(``symcost.cli.commands.<module>``), its one-line help and one real example. ``build_parser(only=name)``
imports and builds only that command (what ``main`` does: a command's run never pays for the others'
options or libraries).
"""
from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import sys

from ..architectures import loader
from ..core.errors import SymcostError
from . import options, startup
from .output import Output, error, warnings

#: command -> (module in symcost.cli.commands, help, example), in --help order
COMMANDS = {
    "models": ("model", "list the bundled reference configs", "symcost models --json"),
    "params": ("model", "total and active parameters, per component", "symcost params deepseek-v3"),
    "flops": ("model", "forward FLOPs of a prefill or a decode step",
              "symcost flops llama-3.1-8b --phase decode --T 128K --batch 8"),
    "cache": ("model", "KV cache and recurrent state held after T tokens",
              "symcost cache qwen3-next-80b-a3b-thinking --T 1M --layout vllm"),
    "memory": ("serve", "serving memory per GPU as vLLM accounts for it: weights, activations, overhead, KV "
               "capacity and max concurrency", "symcost memory deepseek-v3 --T 32K --batch 16 --gpu H200 --tp 8"),
    "check": ("symbolic", "compare a hand-derived expression with the engine's",
              "symcost check llama-2-7b --metric params --expr 'L(4d^2 + 3d d_ff + 2d) + d + 2Vd' --strict"),
    "export": ("symbolic", "a metric as standalone code (Python, NumPy, C) or LaTeX/SymPy/JSON",
               "symcost export llama-3.1-8b --metric flops --phase prefill --to python"),
    "scale": ("symbolic", "derivative, leading term and big-O in T or E",
              "symcost scale gemma-2-9b-it --metric cache_bytes --wrt T"),
    "crossover": ("symbolic", "the T where one term overtakes another (or another model), and their ratio",
                  "symcost crossover llama-3.1-8b --metric cache --a total --b weights"),
    "sheet": ("documents", "write a LaTeX derivation (formula, numbers, exact result)",
              "symcost sheet deepseek-v3 -o deepseek-v3.tex --pdf"),
    "html": ("documents", "write one self-contained HTML page: summary, derivation, inputs the reader moves",
             "symcost html deepseek-v3 -o deepseek-v3.html --gpu H200 --tp 8"),
    "plot": ("documents", "cost vs T on log-log axes, one model or several (needs matplotlib)",
             "symcost plot llama-3.1-8b qwen3-next-80b-a3b-thinking --metric cache_bytes -o cache.png"),
    "train": ("train", "training memory per GPU and FLOPs per step",
              "symcost train llama-3.1-8b --seq 8K --micro-batch 1 --dp 8 --zero 1"),
    "comm": ("train", "communication bytes per step and step time",
             "symcost comm llama-3.1-70b --seq 8K --micro-batch 1 --dp 4 --tp 8 --gpu H100"),
    "budget": ("train", "wall time, tokens/s and GPU-hours to train N tokens",
               "symcost budget deepseek-v3 --tokens 14800000000000 --gpus 2048 --gpu H800 --gpu-hours 2664000"),
    "roofline": ("serve", "roofline of a prefill or decode step on a parallel layout: time, TTFT, TPOT, tokens/s",
                 "symcost roofline deepseek-v3 --phase decode --T 32K --batch 64 --gpu H200 --tp 8"),
    "deploy": ("serve", "every valid TP x EP x PP x DP layout on N GPUs: fit, KV capacity, concurrency, TTFT, "
               "TPOT, tokens/s per GPU, sorted", "symcost deploy deepseek-v3 --gpu H200 --gpus 8-16 --T 32K --top 5"),
    "gpus": ("serve", "the GPU catalogue: usable memory, bandwidth, dense peaks per dtype", "symcost gpus"),
    "presets": ("train", "training FLOPs per step under every published convention, side by side",
                "symcost presets llama-3.1-8b --seq 8K"),
}
#: one real example per command, shown at the end of its --help
EXAMPLES = {name: example for name, (_, _, example) in COMMANDS.items()}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print usage + exit 2; keep it to one line
        where = self.prog.removeprefix("symcost").strip()  # main() prints the one "symcost:" prefix
        hint = self._did_you_mean(message)
        message += f" (did you mean {hint}?)" if hint else ""
        raise SymcostError(f"{where}: {message}" if where else message)

    def _did_you_mean(self, message: str) -> str | None:
        """The closest known option to an unrecognised one, or the closest choice to an invalid one."""
        bad = re.match(r"argument .*: invalid choice: '(.*)' \(choose from (.*)\)$", message)
        if bad:
            words, known = [bad[1]], re.findall(r"'([^']*)'", bad[2])
        elif message.startswith("unrecognized arguments:"):
            parsers = [self] + [sp for a in self._actions if isinstance(a, argparse._SubParsersAction)
                                for sp in a.choices.values()]  # the top level reports for commands
            known = sorted({o for p in parsers for a in p._actions for o in a.option_strings
                            if o.startswith("--")})
            words = [arg.split("=")[0] for arg in message.split(":", 1)[1].split()]
        else:
            return None
        for word in words:
            close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
            if close:
                return close[0]
        return None


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """The example epilog kept as written; help text beside options up to 30 columns wide."""

    def __init__(self, prog):
        super().__init__(prog, max_help_position=30)


class _Version(argparse._VersionAction):
    """``--version``, reading the installed version only when asked (importlib.metadata: ms)."""

    def __call__(self, parser, namespace, values, option_string=None):
        self.version = f"symcost {_version()}"
        super().__call__(parser, namespace, values, option_string)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # lazy: only for --version
    try:
        return version("symcost")
    except PackageNotFoundError:
        return "0+unknown"


def _module(name: str):
    """The module of command ``name``, imported when a parser for it is built (its libraries with it)."""
    return importlib.import_module(f"{__package__}.commands.{COMMANDS[name][0]}")


def build_parser(only: str | None = None, *, bare: bool = False) -> argparse.ArgumentParser:
    """The whole command line; with ``only`` (the command argv names) just that command's options,
    falling back to the whole parser when ``only`` names no command (its error lists them).
    ``bare``: every command listed, none built — all that a command line naming no command uses
    (``--help``, ``--version``, the error that a command is missing or unknown)."""
    if only is not None and only not in COMMANDS:
        only = None
    p = _Parser(prog="symcost", description="Closed-form cost formulas for LLMs from a config.json.")
    p.add_argument("--version", action=_Version, version="symcost", help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (_, help_, example) in COMMANDS.items():
        if only is not None and name != only:
            continue
        if bare:
            sub.add_parser(name, help=help_, description=help_)
            continue
        module = _module(name)
        sp = sub.add_parser(name, help=help_, description=help_, epilog=f"example:\n  {example}",
                            formatter_class=_Formatter)
        options.build(sp, (options.JSON, options.VERBOSE, *module.OPTIONS[name]))
        sp.set_defaults(fn=getattr(module, f"cmd_{name}"))
    return p


def _parser_for(argv: list[str]) -> argparse.ArgumentParser:
    """The parser a command line needs: its command's alone when it starts with one, only the list
    of commands when it names none (``symcost --version``), else the whole parser."""
    if argv and argv[0] in COMMANDS:
        return build_parser(only=argv[0])
    return build_parser(bare=not any(arg in COMMANDS for arg in argv))


def run() -> None:
    """The console entry (``symcost``, ``python -m symcost``): ``main()``, then exit. The objects
    the command built are frozen first (``startup.quick_exit``) so the interpreter's final
    collections skip them."""
    rc = main()
    startup.quick_exit()
    sys.exit(rc)


def main(argv: list[str] | None = None) -> int:
    startup.defer_sympy_tensor()
    startup.no_pydantic_plugins()
    argv = list(sys.argv[1:] if argv is None else argv)
    want_json = "--json" in argv
    try:
        args = _parser_for(argv).parse_args(argv)
        with loader.caching():
            rc = args.fn(args, Output(args.json, tuple(warnings(args))))
    except BrokenPipeError:  # `symcost ... | head`: the reader left; not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except SymcostError as e:
        error(str(e), want_json)
        return 2
    return rc or 0
