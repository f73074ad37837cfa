"""Every command-line option, declared once: one row per option (flags, type and range, default, help,
an example value, a group), from which each command's parser is built.

A command lists the rows it takes (``symcost.cli.commands.*``: ``OPTIONS``); where it needs the same
option with another default or help text, it uses the row ``.but(...)`` — the flags, the type and the
range stay those of the row. ``add`` turns a row into an argparse argument and applies the two rules
every option follows: its help ends in its default (or says it is required), and a long option with a
value and no choices shows ``N`` as its metavar.

Groups: ``common`` (every command), ``model`` (the config, context and batch), ``phase``,
``conventions`` (how FLOPs are counted), ``serve`` (the serving engine and GPU), ``parallel``
(layout sizes), ``train``, ``metric`` (the symbolic commands) and ``document`` (sheet, plot).
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, replace
from fractions import Fraction

from ..analysis.metrics import METRICS as LAYOUT_METRICS
from ..analysis.vocabulary import CHOICES as METRIC_CHOICES
from ..analysis.vocabulary import HELP as METRIC_HELP
from ..analysis.vocabulary import METRICS as METRIC_NAMES
from ..core.units import parse_count, parse_decimal

# -- types and ranges: a factory of the flag's name -> argparse type ---------------------------------
#: size suffixes, binary as context lengths are quoted (128K = 131,072; 1M = 1,048,576)
_SUFFIX = {"K": 2**10, "M": 2**20, "G": 2**30}


def parse_size(text: str) -> int:
    """``"4096"``, ``"128K"`` (131,072), ``"1M"`` (1,048,576), ``"2G"``; ``ValueError`` otherwise.

    >>> parse_size("128K"), parse_size("1M"), parse_size("4096")
    (131072, 1048576, 4096)
    """
    t = text.strip().replace("_", "")
    mult = _SUFFIX.get(t[-1:].upper(), 1)
    digits = t[:-1] if mult > 1 else t
    if not digits.isascii() or not digits.isdigit() or len(digits) > 30:
        raise ValueError(text)
    return int(digits) * mult


_MEM_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "KB": 10**3, "MB": 10**6,
              "GB": 10**9, "TB": 10**12}


def memory_size(name):
    """A memory size: bytes, or a decimal number with a unit (23.58GiB, 80GB, 512MiB; K/M/G/T alone
    are binary, as context sizes are); exact bytes (the decimal text times the unit, rounded down)."""
    def parse(text):
        t = text.strip().replace("_", "").replace(" ", "")
        i = len(t)
        while i and t[i - 1].isalpha():
            i -= 1
        num, unit = t[:i], t[i:].upper()
        try:
            value = Fraction(num) if num and len(num) <= 30 and num.replace(".", "", 1).isdigit() else None
        except (ValueError, ZeroDivisionError):
            value = None
        if value is None or unit not in _MEM_UNITS or value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be a positive size such as 23.58GiB, 80GB or a byte "
                                             f"count, got {_shown(text)!r}")
        return int(value * _MEM_UNITS[unit])
    return parse


def _shown(text: str) -> str:
    return text if len(text) <= 40 else text[:40] + "..."


def real(low=0.0, high=None, *, open_low=False):
    """A finite number in [low, high] (``open_low``: low excluded); never nan, inf or text."""
    def kind(name):
        def parse(text):
            try:
                value = float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{name} must be a number, got {_shown(text)!r}") from None
            if not math.isfinite(value) or value < low or (open_low and value == low) or \
                    (high is not None and value > high):
                where = f"{'(' if open_low else '['}{low:g}, {'∞)' if high is None else f'{high:g}]'}"
                raise argparse.ArgumentTypeError(f"{name} must be in {where}, got {text}")
            return value
        return parse
    return kind


def ratio(name):
    """A positive exact ratio: ``1.25`` or ``5/4`` (read as decimal text, never via a float)."""
    def parse(text):
        try:
            value = Fraction(text.strip())
        except (ValueError, ZeroDivisionError):
            raise argparse.ArgumentTypeError(f"{name} must be a number such as 1.25 or 5/4, "
                                             f"got {_shown(text)!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be > 0, got {text}")
        return value
    return parse


def _positive_or(name, word: str, value, what: str):
    """A positive integer, or ``word`` (returned as ``value``); ``what`` names the integer in the error."""
    def parse(text):
        if text.strip().lower() == word:
            return value
        try:
            n = int(text)
        except ValueError:
            n = 0
        if n <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be a {what} or '{word}', got {_shown(text)!r}")
        return n
    return parse


def counts(name):
    """Comma-separated non-negative integers (one per pipeline stage), as a tuple."""
    def parse(text):
        try:
            values = tuple(int(x) for x in text.split(","))
        except ValueError:
            values = ()
        if not values or min(values) < 0:
            raise argparse.ArgumentTypeError(f"{name} must be comma-separated layer counts (one per stage), "
                                             f"got {_shown(text)!r}")
        return values
    return parse


def shard(name):
    """A positive integer, or ``none`` (no hybrid sharding, given explicitly)."""
    return _positive_or(name, "none", "none", "positive integer")


def layers_or_all(name):
    """A positive integer, or ``all`` (returned as -1)."""
    return _positive_or(name, "all", -1, "positive number of layers")


def positive(name):
    """A positive integer, with the size suffixes of ``parse_size``."""
    def parse(text):
        try:
            value = parse_size(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a positive integer (suffixes K, M, G "
                                             f"= 2^10, 2^20, 2^30), got {_shown(text)!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be positive, got {value}")
        return value
    return parse


def decimal_count(name):
    """A positive whole number with decimal suffixes (``15T`` = 15·10^12, ``2.7M``; ``units.parse_count``)."""
    def parse(text):
        try:
            value = parse_count(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a positive whole number such as 15T or 2.7M "
                                             f"(decimal suffixes K, M, B, T = 10^3, 10^6, 10^9, 10^12; at most 10^60), "
                                             f"got {_shown(text)!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be positive, got {text}")
        return value
    return parse


def decimal_real(name):
    """A positive finite figure with decimal suffixes (``2.7M`` GPU-hours, ``3.8e24`` FLOPs), as a float:
    a time or a rate, where floats are allowed (``units.parse_decimal`` reads the text exactly)."""
    def parse(text):
        try:
            value = parse_decimal(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a positive number such as 2.7M or 3.8e24 "
                                             f"(decimal suffixes K, M, B, T = 10^3, 10^6, 10^9, 10^12; at most 10^60), "
                                             f"got {_shown(text)!r}") from None
        if value <= 0 or not math.isfinite(float(value)):
            raise argparse.ArgumentTypeError(f"{name} must be a positive finite number, got {text}")
        return float(value)
    return parse


def gpu_name(name):
    """A GPU's name as the catalogue spells it (non-empty; the command looks it up)."""
    def parse(text):
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{name} must name a GPU (`symcost gpus` lists them), got an empty string")
        return text.strip()
    return parse


def layer_counts(name):
    """Comma-separated non-negative integers (``--pipeline-layout 4,4,4,1``)."""
    def parse(text):
        try:
            values = [int(x) for x in text.split(",")]
        except ValueError:
            values = []
        if not values or min(values) < 0:
            raise argparse.ArgumentTypeError(f"{name} must be comma-separated layer counts such as 4,4,4,1, "
                                             f"got {_shown(text)!r}")
        return values
    return parse


def integer(name):
    """Python's ``int`` (any sign; a command checks the range it needs)."""
    return int


#: the most GPUs a job or a deployment may name (the largest clusters hold ~10^5): every layout search
#: and every GPU count answers within a moment up to here
MAX_GPUS = 2**20
#: the most GPU counts one ``deploy --gpus MIN-MAX`` range may hold, and its largest end (each count is
#: a full layout search: 64 counts up to 2^16 answer in about a second of CPU)
MAX_GPU_RANGE = 64
MAX_GPU_RANGE_END = 2**16


def gpu_counts(text: str) -> list[int]:
    """``deploy --gpus``: ``N`` or ``MIN-MAX``, positive, at most ``MAX_GPUS`` (a range: at most
    ``MAX_GPU_RANGE`` counts, ending by ``MAX_GPU_RANGE_END``); [] when the text is neither."""
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            ok = 0 < lo <= hi <= MAX_GPU_RANGE_END and hi - lo < MAX_GPU_RANGE
            return list(range(lo, hi + 1)) if ok else []
        return [int(text)] if 0 < int(text) <= MAX_GPUS else []
    except ValueError:
        return []


def gpu_total(name):
    """A positive GPU count up to ``MAX_GPUS`` (suffixes K, M = 2^10, 2^20)."""
    base = positive(name)

    def parse(text):
        value = base(text)
        if value > MAX_GPUS:
            raise argparse.ArgumentTypeError(f"{name} must be at most {MAX_GPUS:,} GPUs, got {value:,}")
        return value
    return parse


# -- the row -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Option:
    """One option: ``kind`` is a factory of the flag's name returning the argparse type (its range
    included); ``example`` a value a user would give (``tests/test_cli_options.py`` parses it)."""

    flags: tuple[str, ...]
    group: str
    help: str = ""
    kind: object = None
    default: object = None
    choices: tuple | None = None
    required: bool = False
    action: object = None  # "store_true", "append", argparse.BooleanOptionalAction
    metavar: str | None = None
    dest: str | None = None
    nargs: str | None = None
    example: str | None = None

    def but(self, **changes) -> "Option":
        """The same option (flags, type, range) with another default, help, requirement..."""
        return replace(self, **changes)

    @property
    def flag(self) -> str:
        return max(self.flags, key=len)


@dataclass(frozen=True)
class Section:
    """Options shown under their own heading in ``--help``."""

    title: str
    options: tuple


def _unset(default) -> bool:
    """No default worth stating: None, a store_true's False, argparse's SUPPRESS (0 is a value)."""
    return default is None or default is False or default == argparse.SUPPRESS


def add(parser, row: Option) -> None:
    """``row`` as an argument of ``parser`` (a parser or an argument group)."""
    kw = {"help": row.help}
    if row.default is not None:  # argparse's own: None, or False for a store_true
        kw["default"] = row.default
    if row.required:
        kw["required"] = True
    if row.action is not None:
        kw["action"] = row.action
    if row.kind is not None:
        kw["type"] = row.kind(row.flag)
    if row.choices is not None:
        kw["choices"] = list(row.choices)
    for key in ("metavar", "dest", "nargs"):
        if getattr(row, key) is not None:
            kw[key] = getattr(row, key)
    a = parser.add_argument(*row.flags, **kw)
    if not a.option_strings:
        return
    if a.metavar is None and a.choices is None and a.nargs is None and a.type is not None \
            and len(a.dest) > 6:  # --max-batched-tokens N, not MAX_BATCHED_TOKENS
        a.metavar = "X" if a.type is float else "N"
    text = a.help or ""
    if a.required and "required" not in text:
        text += " (required)"
    elif not _unset(a.default) and "default" not in text and f"{a.default})" not in text:
        text += f" (default {a.default})"
    a.help = text.strip()


def build(parser, rows) -> None:
    """Every row (or ``Section`` of rows) of a command, in order."""
    for row in rows:
        if isinstance(row, Section):
            group = parser.add_argument_group(row.title)
            for r in row.options:
                add(group, r)
        else:
            add(parser, row)


# -- the table ---------------------------------------------------------------------------------
DTYPES = ("bf16", "fp16", "fp32", "fp8")
DTYPES_W = ("bf16", "fp16", "fp32", "fp8", "int4", "fp4")
TRAIN_DTYPES = ("bf16", "fp16", "fp32")

#: what `check`, `scale`, `export`, `crossover` and `plot` take: one table (``analysis.vocabulary``)
METRICS = METRIC_NAMES
METRICS_HELP = METRIC_HELP
METRICS_LAYOUT = tuple(LAYOUT_METRICS)
WRT_CHOICES = ("T", "E", "B", "N_dp", "N_tp", "N_pp", "N_ep", "N_cp", "dp", "tp", "pp", "ep", "cp")
IMAGES_HELP = ("N images per sequence at the config's default image size (vision models): the context "
               "becomes T = T_text + N x tokens per image, --T being T_text (JSON: T, T_text, vision_tokens)")
SWEEPS = "; --search sweeps it unless given"

# common
JSON = Option(("--json",), "common", "print one JSON object", action="store_true")
VERBOSE = Option(("--verbose",), "common", "also list every config field symcost does not read (a warning)",
                 action="store_true")

# model: the config, the context, the batch
MODEL = Option(("model",), "model", "config.json path, its directory, or a bundled name", example="llama-3.1-8b")
MODELS = MODEL.but(nargs="+", help="config.json paths, directories, or bundled names")
T = Option(("--T",), "model", "tokens: prompt length (prefill) or cached context (decode); suffixes K, M = "
           "2^10, 2^20", kind=positive, example="128K")
BATCH = Option(("--batch",), "model", "sequences B in the batch", kind=positive, default=1, example="8")
SEQ = Option(("--seq",), "model", "sequence length in tokens; suffixes K, M = 2^10, 2^20", kind=positive,
             example="8K")
IMAGES = Option(("--images",), "model", IMAGES_HELP, kind=integer, default=0, metavar="N", example="2")
ELEMENTWISE = Option(("--elementwise",), "model", "also report elementwise FLOPs (norms, activations, softmax, "
                     "RoPE, residual adds) as a separate group under symcost.core.elementwise's convention",
                     action="store_true")
DTYPE = Option(("--dtype",), "model", "element dtype of the cache (bytes per element: bf16/fp16 2, fp32 4, "
               "fp8 1)", choices=DTYPES, default="bf16", example="fp8")
LAYOUT = Option(("--layout",), "model", "hf: the tensors transformers' cache holds; vllm: paged blocks",
                choices=("hf", "vllm"), default="hf", example="vllm")

# phase and the counting conventions (``conventions.Phase``)
PHASE = Option(("--phase",), "phase", "prefill: T new tokens, context T; decode: 1 new token after T cached",
               choices=("prefill", "decode"), example="decode")
ATTENTION = Option(("--attention",), "conventions", "full: every (query, key) in the buffer, as eager attention "
                   "computes; causal: only the pairs the masks keep (default full)", choices=("full", "causal"),
                   default="full", example="causal")
LOGITS = Option(("--logits",), "conventions", "LM head on every new position or only the last (default all)",
                choices=("all", "last"), default="all", example="last")
MLA = Option(("--mla",), "conventions", "MLA form: auto = expanded for prefill, absorbed for decode (vLLM/SGLang's "
             "MLA backends); expand = re-expand the cached latents every pass (transformers); absorb = "
             "up-projections folded into query and output (default auto)", choices=("auto", "expand", "absorb"),
             default="auto", example="absorb")
IMPL = Option(("--impl",), "conventions", "chunked scans: minimal counts what the math needs; reference what the "
              "transformers torch path computes, padding included (default minimal)",
              choices=("minimal", "reference"), default="minimal", example="reference")
CONVENTIONS = (ATTENTION, LOGITS, MLA, IMPL)

# serve: the engine, its memory accounting, the GPU
GPU = Option(("--gpu",), "serve", "GPU from the catalogue (`symcost gpus` lists them)", kind=gpu_name, example="H100")
SERVE_GPU = GPU.but(help="GPU from the catalogue (symcost gpus)")
WEIGHTS_DTYPE = Option(("--weights-dtype",), "serve", "cost every weight in this dtype, no scales (default: the "
                       "checkpoint's quantization_config, scales included)", choices=DTYPES_W, example="fp8")
EXPERTS_DTYPE = Option(("--experts-dtype",), "serve", "routed experts' dtype when it differs", choices=DTYPES_W,
                       example="int4")
QUANT_FALLBACK = Option(("--quant-fallback",), "serve", "an unknown quantization method falls back to the base "
                        "dtype (default: error)", action="store_true")
KV_DTYPE = Option(("--kv-dtype",), "serve", "KV-cache element dtype (bytes per element: bf16/fp16 2, fp32 4, "
                  "fp8 1)", choices=DTYPES, default="bf16", example="fp8")
#: ``sheet``'s cache dtype: ``--kv-dtype`` as ``memory`` spells it, ``--dtype`` the sheet's older spelling
SHEET_KV_DTYPE = KV_DTYPE.but(flags=("--kv-dtype", "--dtype"), help="KV-cache element dtype of the cache and serving "
                              "sections, as memory --kv-dtype (default bf16; --dtype is the older spelling)")
MEM_UTIL = Option(("--mem-util", "--gpu-memory-utilization"), "serve", "vLLM's gpu_memory_utilization (0.9; "
                  "SGLang: mem_fraction_static): the budget M_gpu = usable memory x this",
                  kind=real(open_low=True, high=1.0), default=0.9, example="0.95")
MAX_BATCHED_TOKENS = Option(("--max-batched-tokens", "--max-num-batched-tokens"), "serve", "tokens per "
                            "chunked-prefill step M (vLLM's max_num_batched_tokens, 8192)", kind=positive, default=8192, example="16K")
OVERHEAD_GIB = Option(("--overhead-gib",), "serve", "allowance for non-torch memory per GPU (CUDA context, NCCL, "
                      "cuBLAS), GiB", kind=real(), default=1.0, example="1.5")
CUDAGRAPH_GIB = Option(("--cudagraph-gib",), "serve", "CUDA-graph memory per GPU subtracted before the KV cache, "
                       "GiB, replacing the modelled term (default: vLLM >= 0.21's profile_cudagraph_memory "
                       "estimate, activation_terms cudagraph/*; 0 before, when graphs are captured after sizing)",
                       kind=real(), default=None, example="0.5")
BLOCK_SIZE = Option(("--block-size",), "serve", "KV block tokens (default vLLM's: 16, 64 for MLA, raised for "
                    "hybrids)", kind=positive, example="64")
COMPUTE_DTYPE = Option(("--compute-dtype",), "serve", "dtype of the tensor-core peak (default: from the "
                       "checkpoint: fp8/fp4/bf16)", choices=("bf16", "fp8", "fp4"), example="fp8")
COMPUTE_EFF = Option(("--compute-eff",), "serve", "fraction of the dense peak reached",
                     kind=real(open_low=True, high=1.0), default=1.0, example="0.7")
BW_EFF = Option(("--bw-eff",), "serve", "fraction of the HBM bandwidth reached",
                kind=real(open_low=True, high=1.0), default=1.0, example="0.8")
DEPLOY_GPUS = Option(("--gpus",), "serve", "N, or MIN-MAX for every N in the range (N at most 2^20; a range at most "
                     "64 counts, up to 2^16; default: the smallest power of two that fits)", example="8-16")
def count_or_all(name):
    """A positive integer, or ``all``."""
    inner = positive(name)

    def parse(text):
        if text.strip().lower() == "all":
            return 0
        try:
            return inner(text)
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"{name} must be a positive integer or 'all', got {_shown(text)!r}") from None
    return parse


TOP = Option(("--top",), "serve", "print the best N layouts, N >= 1, or 'all' (default 10; the rest are counted "
             "as hidden)", kind=count_or_all, default=10, example="all")
IDEAL = Option(("--ideal",), "serve", "the pure roofline bound: every kernel at the dense peak and the full HBM "
               "and link bandwidth, no kernel floors or collective latencies (eta = 1, t_0 = alpha = 0; default: "
               "the calibrated kernel model of symcost.hardware.kernels)", action="store_true")
CONCURRENCY = Option(("--concurrency",), "serve", "closed-loop workload: total requests in flight, spread over the "
                     "data-parallel replicas (batch per replica = ceil(N / dp); instead of --batch); with --osl, "
                     "TTFT and TPOT are the chunked-prefill schedule's steady state (symcost.serving.workload)",
                     kind=positive, example="64")
REQUEST_RATE = Option(("--request-rate",), "serve", "open-loop workload: Poisson arrivals at R requests/s in all, "
                      "spread over the data-parallel replicas; TTFT = residual step + M/D/1 prefill queue + own "
                      "prefill, TPOT = decode step / (1 - rho), the requests in flight by Little's law "
                      "(symcost.serving.workload; needs --osl; instead of --concurrency)", kind=real(open_low=True),
                      metavar="R", example="4")
ISL = Option(("--isl",), "serve", "input tokens per request (default: --T); without --osl TTFT is the prefill of one "
             "prompt of ISL tokens, with it the TTFT under load (the step in flight + the group's prefill step)",
             kind=positive, example="1024")
OSL = Option(("--osl",), "serve", "output tokens per request: the KV holds ISL + OSL tokens per request, decode steps "
             "are taken at context ISL + OSL/2, and TTFT/TPOT are under load: the batch per replica's closed loop "
             "(or --request-rate's open loop) of symcost.serving.workload (default 0: --T is the context, one "
             "prompt's prefill and one decode step)", kind=positive, example="1024")
MAX_TTFT = Option(("--max-ttft",), "serve", "SLA: time to first token at most S seconds (a layout filter; under "
                  "load, with --osl, it also bounds the solved batch)",
                  kind=real(open_low=True), metavar="S", example="0.5")
MAX_TPOT = Option(("--max-tpot",), "serve", "SLA: time per output token at most S seconds; the batch per replica is "
                  "solved for: the largest meeting it that the KV holds", kind=real(open_low=True), metavar="S",
                  example="0.02")
DISAGG = Option(("--disagg",), "serve", "also plan disaggregated serving: x prefill and y decode instances (xPyD, "
                "up to 8 each) of the layouts evaluated, the prompt's KV moved once over NVLink inside the NVLink "
                "domain or the scale-out link across it, the pool ratio matched to ISL/OSL; printed beside the "
                "best aggregated layout (needs --isl and --osl)", action="store_true")
ACCEPT_RATE = Option(("--accept-rate",), "serve", "speculative decoding with the model's own MTP draft (DeepSeek/GLM "
                     "MTP layers): the acceptance rate a_acc of a draft token; TPOT = (verify step of B·(1+n_d) "
                     "rows + n_d draft passes) / Σ a^i (default: no speculation)", kind=real(high=1.0),
                     metavar="R", example="0.7")
SORT = Option(("--sort",), "serve", "rank layouts meeting the SLA by tokens/s per GPU (throughput), TTFT, TPOT "
              "or GPU count (default throughput)", choices=("throughput", "ttft", "tpot", "gpus"),
              default="throughput", example="tpot")

def pin(row: "Option", what: str) -> "Option":
    """``deploy``'s form of a layout size: given, it pins the dimension; else it is swept."""
    return row.but(default=None, metavar="N", help=f"pin {what} (default: every value is tried)")


ENGINE = Option(("--engine",), "serve", "whose start-up accounting: vllm (V1: budget - weights - profiled "
                "peak - non-torch) or sglang (mem_fraction_static pool, activations outside it)",
                choices=("vllm", "sglang"), default="vllm", example="sglang")
#: ``roofline``, ``deploy``: the engine whose scheduler times the load (and, vllm or sglang, whose memory)
ENGINE_LOAD = ENGINE.but(help="whose scheduler times TTFT/TPOT under a closed loop (--osl; "
                         "symcost.serving.workload) and whose start-up memory accounting: vllm (V1: decode rows "
                         "first, prompts chunked into M), sglang (prefill-only steps whenever prompts wait, no mixed "
                         "chunk: M is --max-prefill-tokens; SGLang's memory pool) or trtllm (TensorRT-LLM without "
                         "chunked context: whole prompts in arrival order, M is max_num_tokens; the schedule only, "
                         "its memory is accounted as vLLM's)", choices=("vllm", "sglang", "trtllm"),
                         example="trtllm")
VLLM_VERSION = Option(("--vllm-version",), "serve", "vLLM release modelled (X.Y or X.Y.Z): < 0.8 = the V0 "
                      "engine's profile and defaults (the activation terms' M and S); < 0.6.5 adds the CUDA context "
                      "to non-torch memory; >= 0.11.1 loads MXFP4 experts for Triton on Hopper (Marlin before); "
                      ">= 0.21 subtracts the CUDA-graph estimate before the KV cache (Model Runner V2: >= 0.29); "
                      ">= 0.22 runs Model Runner V2 where vLLM defaults to it (--model-runner)",
                      default="0.33", metavar="X.Y", example="0.10")  # the default: profile.DEFAULT_VLLM
MODEL_RUNNER = Option(("--model-runner",), "serve", "vLLM's GPU model runner (VLLM_USE_V2_MODEL_RUNNER): v1 or v2 "
                      "(Model Runner V2: its dummy sampler, its sampler state before the KV cache, its CUDA-graph "
                      "estimate); default: the release's choice for the model (V2 for dense models from 0.25, all "
                      "from 0.29)", choices=("v1", "v2"), example="v1")
MAX_NUM_SEQS = Option(("--max-num-seqs",), "serve", "vLLM's max_num_seqs S: the sampler terms of the profile "
                      "(default: 1024 on >= 70 GiB non-A100 GPUs, else 256)", kind=positive, example="256")
KV_CACHE_MEMORY = Option(("--kv-cache-memory", "--kv-cache-memory-bytes"), "serve", "KV cache size per GPU "
                         "(vLLM's --kv-cache-memory-bytes): skips the profile, kv_available = this",
                         kind=memory_size, example="20GiB")
GPU_MEMORY = Option(("--gpu-memory",), "serve", "total memory the driver reports for a card outside the "
                    "catalogue (23.58GiB): replaces --gpu's usable memory (peaks from --gpu, else unknown)",
                    kind=memory_size, example="23.58GiB")
MOE_BACKEND = Option(("--moe-backend",), "serve", "MXFP4 expert kernel whose padding the loaded weights "
                     "carry (default: flashinfer on B200/B300/GB200/GB300, triton on Hopper, marlin else)",
                     choices=("marlin", "triton", "flashinfer"), example="marlin")

# parallel: layout sizes
DP = Option(("--dp",), "parallel", "data-parallel replicas", kind=positive, default=1, example="8")
TP = Option(("--tp",), "parallel", "tensor-parallel size (GPUs a layer's heads and FFN are split over)",
            kind=positive, default=1, example="8")
PP = Option(("--pp",), "parallel", "pipeline-parallel stages (layers split in order)", kind=positive, default=1,
            example="4")
PP_LAYER_PARTITION = Option(("--pp-layer-partition",), "parallel", "decoder layers of each pipeline stage, "
                            "comma-separated (vLLM's VLLM_PP_LAYER_PARTITION; default: vLLM's even split, the "
                            "remainder on the middle stages): each stage's weights, pages and KV blocks",
                            kind=counts, example="16,32")
EP = Option(("--ep",), "parallel", "expert-parallel size (GPUs the routed experts are split over)", kind=positive,
            default=1, example="8")
CP = Option(("--cp",), "parallel", "context-parallel size (sequence split over GPUs, ring attention)",
            kind=positive, default=1, example="2")

# train
MICRO_BATCH = Option(("--micro-batch",), "train", "sequences per micro-batch on one data-parallel rank",
                     kind=positive, example="1")
GLOBAL_BATCH = Option(("--global-batch",), "train", "sequences per optimizer step over all ranks (default: "
                      "micro-batch x dp)", kind=positive, example="512")
SP = Option(("--sp",), "train", "sequence parallelism (needs --tp > 1; default off)",
            action=argparse.BooleanOptionalAction)
ZERO = Option(("--zero",), "train", "ZeRO stage (3 = FSDP full shard; 1 + --grad-dtype fp32 = Megatron's "
              "distributed optimizer; default 0)", kind=integer, choices=(0, 1, 2, 3), example="1")
RECOMPUTE = Option(("--recompute",), "train", "activation recomputation: selective = Megatron's (the attention "
                   "core); full = every layer's input only; op = torchtitan's op-level selective checkpointing "
                   "(the layer input, every second matmul's output, the attention output: the activations line; "
                   "default none)", choices=("none", "selective", "full", "op"), example="selective")
RECOMPUTE_METHOD = Option(("--recompute-method",), "train", "with --recompute full, Megatron's --recompute-method: "
                          "uniform — groups of --recompute-layers consecutive layers per checkpoint; block — only "
                          "the first --recompute-layers layers of each model chunk are recomputed, the rest keep "
                          "their activations; every — every --recompute-layers-th layer is recomputed (torchtitan's "
                          "selective layer AC) (default uniform)", choices=("uniform", "block", "every"), default="uniform",
                          example="block")
RECOMPUTE_LAYERS = Option(("--recompute-layers",), "train", "Megatron's --recompute-num-layers: layers per "
                          "checkpoint (uniform) or recomputed layers per model chunk (block) (default 1)",
                          kind=positive, default=1, metavar="N", example="2")
OPTIMIZER = Option(("--optimizer",), "train", "optimizer state bytes per parameter, fp32 master copy included: "
                   "adamw 12 (two fp32 moments), sgd 8 (momentum), adam8bit 6 + 1/256 (two int8 moments, fp32 "
                   "block scales)", choices=("adamw", "sgd", "adam8bit"), default="adamw", example="adam8bit")
GRAD_DTYPE = Option(("--grad-dtype",), "train", "gradient bytes b_g of the gradients line (default: the "
                    "--framework's, bf16 without one)", choices=TRAIN_DTYPES, example="fp32")
FRAMEWORK = Option(("--framework",), "train", "memory conventions of one engine (training/framework.py): bytes per "
                   "parameter of weights/gradients/optimizer, the gathered unit and its prefetch, "
                   "reshard-after-forward, the loss's logits; megatron 18 B/param (fp32 grads), deepspeed its "
                   "estimators', fsdp2/torchtitan/hf 16 B/param (one fp32 shard); explicit options override "
                   "(default: symcost's, bf16 weights and gradients)",
                   choices=("megatron", "deepspeed", "fsdp2", "torchtitan", "hf"), example="fsdp2")
HEADROOM_GIB = Option(("--headroom-gib",), "train", "GiB per GPU kept free for the CUDA context, NCCL buffers and "
                      "allocator fragmentation: fits = per GPU <= the driver-reported memory minus this (default "
                      "2: vLLM's logged non-torch memory, 0.35-1.38 GiB in tests/data/vllm_startup.json, plus "
                      "fragmentation)", kind=real(), default=2.0, example="4")
LOSS_CHUNKS = Option(("--loss-chunks",), "train", "cross-entropy over N chunks of the tokens (Liger's fused linear "
                     "cross-entropy, chunked CE): divides the loss_peak line by N (default 1)", kind=positive,
                     default=1, metavar="N", example="8")
COMPILED_LOSS = Option(("--compiled-loss",), "train", "the cross-entropy compiled with torch.compile (torchtitan's "
                       "training.compile since 2025-04 compiles the loss): Inductor saves the bf16 logits and writes "
                       "their bf16 gradient, no fp32 copy of the logits (the loss_peak and activations lines)",
                       action="store_true")
RECOMPUTE_MODULES = Option(("--recompute-modules",), "train", "with --recompute selective, Megatron's "
                           "--recompute-modules, comma-separated: core_attn (the default: the attention core), mlp "
                           "(a dense FFN from its input), moe (an MoE block from its input), layernorm (the two "
                           "pre-norms, their outputs discarded), moe_act (the experts' activation), mla_up_proj (MLA's up projections and RoPE): the "
                           "activations line",
                           metavar="M,M", example="core_attn,mlp")
VOCAB_PAD = Option(("--vocab-pad",), "train", "pad the vocabulary V up to a multiple of N x tp (Megatron's "
                   "--make-vocab-size-divisible-by N): every term with V (embedding, head, logits, loss_peak) "
                   "uses the padded size (default: the config's V)", kind=positive, metavar="N", example="128")
RESHARD = Option(("--reshard-after-forward",), "train", "FSDP/ZeRO-3 reshard_after_forward: off keeps every unit "
                 "unsharded from forward to backward (the gathered line); default: on, off under --pp > 1 "
                 "with --framework torchtitan", choices=("default", "on", "off"), default="default", example="off")
OFFLOAD_ACTIVATIONS = Option(("--offload-activations",), "train", "activation offload to the host (Megatron's "
                             "--cpu-offloading --cpu-offloading-num-layers N): the saved activations of the first N "
                             "layers of each stage leave the GPU (the activations line keeps the other layers and "
                             "one layer in transit; host_activations the rest); all = every layer but the last",
                             kind=layers_or_all, metavar="N|all", example="all")
MTP = Option(("--mtp",), "train", "multi-token-prediction modules trained (Megatron's --mtp-num-layers) on the last "
             "stage: their states, saved activations, loss peak and FLOPs; auto = the config's count "
             "(num_nextn_predict_layers), 0 = none (default auto)", kind=None, default="auto", metavar="auto|0|N",
             example="0")
ACT_DTYPE = Option(("--act-dtype",), "train", choices=TRAIN_DTYPES, default="bf16", example="fp32")
ATTENTION_KERNEL = Option(("--attention-kernel",), "train", choices=("flash", "eager"), default="flash",
                          example="eager")
ATTENTION_IMPL = Option(("--attention-impl",), "train", "the attention kernels' speed class for the step time: "
                        "fused = cuDNN fused attention / FlashAttention-3 (Transformer Engine in Megatron; PyTorch "
                        "SDPA on Hopper and Blackwell from 2.9), fa2 = FlashAttention-2 (PyTorch SDPA's default on "
                        "Hopper before 2.9, the flash-attn 2 package); the saved activations are --attention-kernel's "
                        "(default fused)", choices=("fused", "fa2"), default="fused", example="fa2")
SEARCH = Option(("--search",), "train", "sweep every valid setup on --gpus GPUs and print the five fastest that "
                "fit: layout dp×tp×pp×cp and ep, micro-batch, ZeRO, recompute, sequence parallelism on/off, "
                "virtual stages, HSDP shard groups, CPU offload; --zero, --recompute, --sp/--no-sp, "
                "--virtual-stages, --hsdp-shard and --offload, when given, pin their dimension (--no-sp, "
                "--virtual-stages 1, --hsdp-shard none, --offload none pin them off); --capacity-factor is "
                "costed in every candidate, not swept; --micro-batch and --dp/--tp/--pp/--ep/--cp are ignored",
                action="store_true")
GPUS = Option(("--gpus",), "train", "GPUs in the job (at most 2^20)", kind=gpu_total, example="64")
ACTIVATIONS = Option(("--activations",), "train", "engine: each component's saved tensors; korthikanti: the 2022 "
                     "dense-GPT closed form", choices=("engine", "korthikanti"), default="engine",
                     example="korthikanti")
SCAN = Option(("--scan",), "train", "what Mamba/DeltaNet/short-conv layers save: fused — the CUDA kernels a GPU "
              "run dispatches to (mamba_ssm, fla, causal-conv1d); reference — transformers' torch path (chunked "
              "scans), as the tests measure it", choices=("fused", "reference"), default="fused",
              example="reference")
MFU = Option(("--mfu",), "train", "override: compute at this model FLOPs utilisation of the BF16 peak (with "
             "--overlap; default: each kernel class at its measured efficiency, the framework's overlap)",
             kind=real(open_low=True, high=1.0), example="0.5")
OVERLAP = Option(("--overlap",), "train", "one share of every collective's time hidden behind compute, in place of "
                 "the framework's per-dimension overlap (default: with --mfu 0, without it the framework's rules; "
                 "--hide overrides one dimension; not with --search unless --mfu is given)", kind=real(high=1.0),
                 example="0.5")
PEAK_DTYPE = Option(("--peak-dtype",), "train", "the dense peak the budget's MFU is of: bf16, or fp8 (FP8 "
                    "training's GEMM peak) (default bf16)", choices=("bf16", "fp8"), default="bf16", example="fp8")
FLOPS_CONVENTION = Option(("--flops-convention",), "train", "how the budget's FLOPs per token are counted: exact "
                          "(3 x forward, causal pairs), 6nd, torchtitan (6N + attention) or megatron "
                          "(num_floating_point_operations) (default exact)",
                          choices=("exact", "6nd", "torchtitan", "megatron"), default="exact", example="6nd")
PRECISION = Option(("--precision",), "train", "GEMM precision of the step time: bf16, fp8 (per-tensor scaling) "
                   "or mxfp8 (Blackwell MX blocks): GEMMs at the FP8 peak and the fp8 row of the GEMM "
                   "calibration; attention, norms and the LM head stay bf16 (default bf16)",
                   choices=("bf16", "fp8", "mxfp8"), default="bf16", example="fp8")
SCHEDULE = Option(("--schedule",), "train", "pipeline schedule of the bubble term: 1f1b (p-1)(F+B), interleaved "
                  "(p-1)(F+B)/v, zb-h1 (p-1)(F+B-2W), dualpipe (p/2-1)(F&B+B-3W) (default: interleaved with "
                  "--virtual-stages > 1, else 1f1b)", choices=("1f1b", "interleaved", "zb-h1", "dualpipe"),
                  example="zb-h1")
HIDE = Option(("--hide",), "train", "override the framework's overlap of one dimension: DIM=on hides it behind "
              "its compute window, DIM=off exposes it (dp, dp_replicate, tp, pp, ep, cp, host; repeatable)",
              action="append", metavar="DIM=on|off", example="ep=on")
FP8_ALL_GATHER = Option(("--fp8-all-gather",), "train", "with --precision fp8/mxfp8 and --zero 3: the FSDP "
                        "parameter all-gathers move FP8 weights, 1 byte each (torchao's "
                        "enable_fsdp_float8_all_gather): the dp term's gather bytes halve", action="store_true")
CUDA_GRAPHS = Option(("--cuda-graphs",), "train", "CUDA-graph scopes the run captures, comma-separated: none, attn, "
                     "moe_router, moe_preprocess, mlp, full_iteration (Megatron's cuda_graph_scope); each "
                     "rank's micro-batch is at least its host's kernel-issue time, a captured scope one launch "
                     "(default none: eager, Megatron's and torchtitan's default)", metavar="SCOPES",
                     example="moe_router,moe_preprocess")
ETP = Option(("--etp",), "parallel", "expert-tensor-parallel size (Megatron's --expert-tensor-parallel-size): "
             "experts over ep x etp ranks folded across tp x dp x cp (default: = --tp)", kind=positive,
             example="1")
FIRST_STAGE_LAYERS = Option(("--first-stage-layers",), "train", "decoder layers of the first pipeline stage "
                            "(Megatron's --decoder-first-pipeline-num-layers; the other stages split the rest)",
                            kind=integer, metavar="N", example="7")
LAST_STAGE_LAYERS = Option(("--last-stage-layers",), "train", "decoder layers of the last pipeline stage "
                           "(--decoder-last-pipeline-num-layers)", kind=integer, metavar="N", example="7")
ACCOUNT_EMBEDDING = Option(("--account-embedding",), "train", "the embedding takes one layer slot of the "
                           "pipeline split (--account-for-embedding-in-pipeline-split)", action="store_true")
ACCOUNT_LOSS = Option(("--account-loss",), "train", "the loss takes one layer slot of the pipeline split "
                      "(--account-for-loss-in-pipeline-split)", action="store_true")
PIPELINE_LAYOUT = Option(("--pipeline-layout",), "train", "decoder layers of each model chunk, pp x v entries in "
                         "chunk order (Megatron's --pipeline-model-parallel-layout, counted)", kind=layer_counts,
                         metavar="N,N,...", example="4,4,4,1")
IB_GBS = Option(("--ib-gbs",), "train", "scale-out GB/s per GPU", kind=real(open_low=True), default=50.0,
                example="25")
GPUS_PER_NODE = Option(("--gpus-per-node",), "train", kind=positive, default=8, example="4")
ALPHA_US = Option(("--alpha-us",), "train", "latency per collective, µs", kind=real(), default=10.0, example="5")
VIRTUAL_STAGES = Option(("--virtual-stages",), "train", "interleaved 1F1B: model chunks per pipeline stage "
                        "(activations of the schedule's peak, p2p per chunk, bubble (p-1)/(v*m+p-1); default 1)",
                        kind=positive, example="2")
OFFLOAD = Option(("--offload",), "train", "CPU offload: optimizer (ZeRO-Offload: optimizer state and gradients on "
                 "the host, needs --zero >= 1) or params (also the weight shard, needs --zero 3; default none)",
                 choices=("none", "optimizer", "params"), example="optimizer")
HSDP_SHARD = Option(("--hsdp-shard",), "train", "hybrid sharding: ZeRO groups of N data-parallel ranks (x cp), "
                    "replicated over dp/N groups (default none: shard over all of dp)", kind=shard,
                    metavar="N|none", example="8")
CAPACITY_FACTOR = Option(("--capacity-factor",), "train", "MoE expert capacity factor, padded to capacity "
                         "(Megatron's --moe-expert-capacity-factor): E*ceil(X*k*tokens/E) expert rows (default: "
                         "dropless, k*tokens)", kind=ratio, metavar="X", example="5/4")
PCIE_GBS = Option(("--pcie-gbs",), "train", "host link GB/s per GPU and direction, for --offload (PCIe 5.0 x16)",
                  kind=real(open_low=True), default=63.0, example="32")
TOKENS = Option(("--tokens",), "train", "training tokens in all; decimal suffixes as budgets are quoted: "
                "K, M, B, T = 10^3, 10^6, 10^9, 10^12 (15T = 15,000,000,000,000)", kind=decimal_count,
                example="14.8T")
GPU_HOURS = Option(("--gpu-hours",), "train", "a published budget in GPU-hours, decimal suffixes (2.7M = "
                   "2,700,000): report the MFU it implies", kind=decimal_real, example="2.788M")
FLOPS = Option(("--flops",), "train", "a published FLOPs figure instead of the engine's (3.8e24; decimal "
               "suffixes; a count, kept exact)", kind=decimal_count, example="3.8e24")

# metric: the symbolic commands (check, export, scale, crossover)
METRIC = Option(("--metric",), "metric", METRICS_HELP, choices=METRIC_CHOICES, required=True, metavar="METRIC",
                example="params")
EXPR = Option(("--expr",), "metric", "plain text (H_kv*D_h, ^ for powers) or LaTeX", required=True,
              example="2*B*T*L*H_kv*D_h")
STRICT = Option(("--strict", "--exit-code"), "metric", "exit with status 1 when the expressions are NOT EQUAL "
                "(default: 0 either way)", action="store_true", dest="strict")
MAP = Option(("--map",), "metric", "rename your symbols into the notation, e.g. --map m=d_ff --map c=2",
             action="append", metavar="NAME=EXPR", example="m=d_ff")
TO = Option(("--to",), "metric", "python: exact int arithmetic; numpy: vectorised, float64 by default (dtype=object "
            "for exact); c: double; latex; sympy: code rebuilding the expression; json; js: an ES module, exact "
            "BigInt (default python)", choices=("python", "numpy", "c", "latex", "sympy", "json", "js"), default="python", example="numpy")
KEEP = Option(("--keep",), "metric", "comma-separated notation symbols left as arguments instead of the config's "
              "values, e.g. --keep d,L (default: only T, B and other inputs stay free)", default="",
              metavar="SYMS", example="d,L")
WRT = Option(("--wrt",), "metric", "T, E, B, or a parallel size N_dp, N_tp, N_pp, N_ep, N_cp (aliases dp, tp, pp, "
             "ep, cp)", choices=WRT_CHOICES, required=True, example="T")
A = Option(("--a",), "metric", "term path prefix (layers/self_attn, several joined by +) or 'total'", required=True,
           example="layers/self_attn")
B = Option(("--b",), "metric", "the other side: a term path prefix, 'total', or 'weights' (weight bytes)",
           default="total", example="weights")
VS = Option(("--vs",), "metric", "compare --a with another model's total instead", example="qwen3-8b")

# document: sheet and plot
OUTPUT = Option(("-o", "--output"), "document", "the .tex file to write", required=True, example="sheet.tex")
PDF = Option(("--pdf",), "document", "also build the PDF (latexmk or pdflatex)", action="store_true")
HTML = Option(("--html",), "document", "also write the self-contained HTML page (the .tex path with .html): the "
              "summary and the derivation, inputs live (symcost html)", action="store_true")
HTML_OUTPUT = OUTPUT.but(help="the .html file to write", example="deepseek-v3.html")
T_PREFILL = Option(("--T-prefill",), "document", "prompt tokens of the prefill section", kind=positive,
                   default=4096, dest="T_prefill", example="8K")
T_DECODE = Option(("--T-decode",), "document", "cached context of the decode section", kind=positive,
                  default=4096, dest="T_decode", example="32K")
T_MIN = Option(("--T-min",), "document", "smallest T on the x axis", kind=positive, default=2**8, dest="T_min",
               example="1K")
T_MAX = Option(("--T-max",), "document", "largest T on the x axis", kind=positive, default=2**21, dest="T_max",
               example="1M")
PLOT_METRIC = METRIC.but(group="document", example="cache_bytes")


def bind(row: Option, what: str) -> Option:
    """A layout size of the serving and training metrics: given, it binds ``what``; else a symbol."""
    return row.but(default=None, metavar="N", help=f"bind {what} (default: a symbol)")


def metric_section(dtypes: bool = True) -> Section:
    """What the serving and training metrics (``symcost.analysis.metrics``) take; a layout size not given
    stays a symbol N_*."""
    return Section("serving and training metrics (" + ", ".join(METRICS_LAYOUT) + ")", (
        bind(TP, "N_tp"), bind(PP, "N_pp"), bind(DP, "N_dp"), bind(CP, "N_cp"),
        bind(EP, "").but(help="serving: vLLM's expert-parallel group N_tp·N_ep; training: N_ep (default: a symbol)"),
        GPU.but(help="bind M_gpu, F_gpu, BW_hbm, BW_link (default: symbols)"),
        *((WEIGHTS_DTYPE.but(help="cost every weight in this dtype (default: the checkpoint's "
                                  "quantization_config)"), KV_DTYPE) if dtypes else ()),
        MEM_UTIL.but(help="vLLM's gpu_memory_utilization"),
        MAX_BATCHED_TOKENS.but(help="M, tokens per chunked-prefill step"),
        OVERHEAD_GIB.but(default=None, help="non-torch memory per GPU, GiB (default: modelled, as memory does)"),
        ZERO.but(choices=None, default=0, metavar="N", help="train_memory: ZeRO stage 0-3"),
        RECOMPUTE.but(default="none", help="train_memory: activation recomputation"),
        IDEAL.but(help="ttft/tpot: the pure roofline bound (eta = 1, kernel floors and alpha 0); default: the "
                       "calibrated kernels roofline uses, Piecewise in the step's regime with --gpu, symbols "
                       "without")))


def swept(row: Option) -> Option:
    """``train``'s form of an option ``--search`` sweeps: the help says so."""
    return row.but(help=row.help[:-1] + SWEEPS + ")")


#: the serving options of memory, roofline and deploy (``serving.plan.ServeSetup``)
SERVE = (SERVE_GPU, WEIGHTS_DTYPE, EXPERTS_DTYPE, QUANT_FALLBACK, KV_DTYPE, MEM_UTIL, MAX_BATCHED_TOKENS,
         OVERHEAD_GIB, CUDAGRAPH_GIB, BLOCK_SIZE, TP, PP, DP, EP, MLA)
#: ``memory``, ``deploy``, ``roofline``: the engine's own defaults for M and the non-torch memory (modelled)
SERVE_MODELLED = tuple(
    o.but(default=None, help="tokens per chunked-prefill step M (vLLM's max_num_batched_tokens; default: the "
                             "engine's for the GPU, 16384, 8192 or 2048): the forward terms of the profile")
    if o is MAX_BATCHED_TOKENS else
    o.but(default=None, help="non-torch memory per GPU, GiB (default: modelled, engine_memory.json)")
    if o is OVERHEAD_GIB else o for o in SERVE)
#: ``memory``: the modelled defaults and the engine's options
MEMORY_SERVE = tuple(
    o.but(default=None, help="the budget's fraction of the usable memory (vLLM's gpu_memory_utilization, default 0.9; "
                             "SGLang's mem_fraction_static, default by TP size: 0.88 at 1 ... 0.79 at 16+)")
    if o is MEM_UTIL else o for o in SERVE_MODELLED) + (ENGINE, VLLM_VERSION, MODEL_RUNNER, MAX_NUM_SEQS, KV_CACHE_MEMORY,
                                                          GPU_MEMORY, MOE_BACKEND, PP_LAYER_PARTITION)
#: the phase and conventions of the symbolic commands (a metric of FLOPs)
SYMBOLIC_PHASE = (PHASE.but(default=None, help="with --metric flops: prefill (a prompt of T tokens, the default) "
                               "or decode (one step at context T)"), *CONVENTIONS)


def table() -> dict[str, Option]:
    """Every row of this module by its name (for tests and documentation)."""
    return {k: v for k, v in globals().items() if isinstance(v, Option)}
