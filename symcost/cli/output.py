"""What a command prints: plain-text tables, one JSON object with ``--json``, and the warnings of the
call (returned by ``warnings`` and carried by the ``Output`` of that call — nothing kept between calls).
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from ..architectures import fields, loader
from ..architectures.limits import context_warnings
from ..core.errors import SymcostError
from ..core.terms import Terms, exact
from ..core.units import human_count


@dataclass(frozen=True)
class Output:
    """Where one command's answer goes: ``json`` from ``--json``; ``warnings`` printed on success only."""

    json: bool = False
    warnings: tuple[str, ...] = ()

    def emit(self, payload: dict, text: str) -> None:
        """The answer (``payload`` with --json, else ``text``), then the warnings on stderr."""
        if self.json:
            print(json.dumps({**payload, "warnings": list(self.warnings)} if self.warnings else payload))
        else:
            print(text)
        for w in self.warnings:
            print(f"symcost: warning: {w}", file=sys.stderr)

    def write(self, text: str) -> None:
        """Text as it is (``export``: the code is the answer), no warnings."""
        print(text)


def error(message: str, as_json: bool) -> None:
    """A refused command: one line on stderr (and ``{"error": ...}`` on stdout with --json)."""
    message = message.replace("\n", " ")
    if as_json:
        print(json.dumps({"error": message}))
    print(f"symcost: error: {message}", file=sys.stderr)


def breakdown(terms: Terms, values: dict, level: int = 2) -> dict[str, int]:
    """The exact value of every term ``level`` deep."""
    return {k: exact(v, values) for k, v in terms.depth(level).items()}


def table(rows: list[tuple[str, str, int]], total: int, fmt=human_count) -> str:
    """A plain-text table: name, formula, exact value, share of the total."""
    width = max((len(r[0]) for r in rows), default=4)
    lines = []
    for name, formula, value in rows:
        share = f"{100 * value / total:6.2f}%" if total else "      -"
        lines.append(f"  {name:<{width}}  {value:>22,}  {fmt(value):>12}  {share}  {formula}")
    return "\n".join(lines)


# -- warnings ------------------------------------------------------------------------------------
def warnings(args) -> list[str]:
    """Everything the command line should warn about before a command runs."""
    return (_source_warnings(args) + _context_warnings(args) + _field_warnings(args) + _dtype_warnings(args)
            + _quant_name_warnings(args))


def _quant_name_warnings(args) -> list[str]:
    """A name that says FP8/FP4/INT4/AWQ/GPTQ over a config that states no quantisation (serving
    commands, where the weights' bytes matter; none when --weights-dtype says the dtype)."""
    model = getattr(args, "model", None)
    if not isinstance(model, str) or getattr(args, "weights_dtype", None) or not hasattr(args, "kv_dtype"):
        return []
    try:
        name, raw = loader.read_json(model)
    except SymcostError:
        return []
    from ..serving.quant import name_says_quantized  # lazy: the serving layer, serving commands only
    w = name_says_quantized(model if "/" in model or model.endswith(".json") else name, raw)
    return [w] if w else []


def _source_warnings(args) -> list[str]:
    """A Hub id that names both a cache entry and a bundled config: which one is used."""
    models = getattr(args, "model", None)
    notes = (loader.resolution_note(m) for m in (models if isinstance(models, list) else [models]))
    return [n for n in notes if n]


def _context_warnings(args) -> list[str]:
    """A context beyond what the config supports (``symcost.architectures.limits``), from the raw config only."""
    model = getattr(args, "model", None)
    T = max((v for v in (getattr(args, a, None) for a in ("T", "seq", "T_prefill", "T_decode"))
             if isinstance(v, int)), default=None)
    if not isinstance(model, str) or T is None:
        return []
    try:
        _, raw = loader.read_json(model)
    except SymcostError:
        return []  # the command reports the problem itself
    return context_warnings(raw, T)


def _field_warnings(args) -> list[str]:
    """Config fields the model's adapter does not read (``symcost.architectures.fields``): those switched on
    and not classed cost-neutral always; with ``--verbose``, every one."""
    models = getattr(args, "model", None)
    out = []
    for source in models if isinstance(models, list) else [models]:
        if not isinstance(source, str):
            continue
        try:
            adapter = loader.load_config(source)
        except SymcostError:
            return []  # the command reports the problem itself
        cls, raw = type(adapter), loader.loaded(source)[1]
        name = adapter.name or source
        flagged = fields.flagged(cls, raw)
        if flagged:
            out.append(f"{name}: config fields symcost does not read, which may change the architecture "
                       f"(the counts follow {cls.reference or 'the adapter'} without them): "
                       + ", ".join(flagged[:12]) + (f" and {len(flagged) - 12} more" if len(flagged) > 12 else ""))
        if getattr(args, "verbose", False):
            every = fields.unread(cls, raw)
            out.append(f"{name}: {len(every)} config fields not read (cost-neutral or unknown): "
                       + (", ".join(every) if every else "none"))
    return out


def _dtype_warnings(args) -> list[str]:
    """A quantized checkpoint costed at another dtype (``--weights-dtype`` / ``--experts-dtype``)."""
    override = [(o, getattr(args, a, None)) for o, a in (("--weights-dtype", "weights_dtype"),
                                                          ("--experts-dtype", "experts_dtype"))]
    override = [(o, v) for o, v in override if v]
    hit = loader.loaded(args.model) if override and isinstance(getattr(args, "model", None), str) else None
    if hit is None:
        return []
    from ..serving.quant import quant_config  # lazy: the serving layer, for a dtype override only
    q, _ = quant_config(hit[1])
    if q is None:
        return []
    method = q.get("quant_method", "quantized")
    return [f"{hit[0].name or args.model}: the checkpoint is {method} (quantization_config); weights costed "
            f"as {' and '.join(f'{v} ({o})' for o, v in override)} instead"]
