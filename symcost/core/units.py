"""Byte sizes of dtypes and human-readable units (GiB = 2^30 and GB = 10^9, always labelled)."""
from __future__ import annotations

import re
from fractions import Fraction

from .errors import SymcostError

#: bytes per element; fp4/int4 are half a byte (packed), kept exact as a Fraction
DTYPE_BYTES: dict[str, Fraction] = {
    "fp32": Fraction(4), "bf16": Fraction(2), "fp16": Fraction(2), "fp8": Fraction(1),
    "int8": Fraction(1), "int4": Fraction(1, 2), "fp4": Fraction(1, 2),
}
ALIASES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float8": "fp8"}


def dtype_bytes(name: str, field: str = "--dtype") -> Fraction:
    key = ALIASES.get(name, name)
    if key not in DTYPE_BYTES:
        raise SymcostError(f"{field}: unknown dtype {name!r} (choose from {', '.join(DTYPE_BYTES)})")
    return DTYPE_BYTES[key]


def human_bytes(n: int) -> str:
    return f"{n / 2**30:,.2f} GiB ({n / 1e9:,.2f} GB)"


def human_count(n: int) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:,.2f} {unit}"
    return str(n)


#: decimal suffixes, as token budgets and GPU-hours are quoted (15T tokens = 15·10^12, 2.7M GPU-hours);
#: context lengths keep the binary K/M of ``cli.options.parse_size`` (128K = 131,072)
DECIMAL_SUFFIX = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12, "P": 10**15}
#: the largest figure read (10^60: past any token count, GPU-hour budget or FLOPs ever quoted, and far
#: inside float64, which times and rates computed from it use)
MAX_DECIMAL = 10**60
_DECIMAL = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d{1,3}))?([KMBGTP]?)")


def parse_decimal(text: str) -> Fraction:
    """A decimal figure as people write it, exactly: ``"15T"`` = 15·10^12, ``"2.7M"`` = 2,700,000,
    ``"3.8e24"``, ``"14_800_000"``, ``"14,800,000"``; suffixes K M B/G T P are powers of 10^3, in
    either case (``15t`` = ``15T``). ``ValueError`` for anything else (signs,
    ``nan``, ``inf``, words, more than 64 characters, past ``MAX_DECIMAL``).

    >>> parse_decimal("15T"), parse_decimal("2.7M"), parse_decimal("1.5e3")
    (Fraction(15000000000000, 1), Fraction(2700000, 1), Fraction(1500, 1))
    """
    t = str(text).strip().replace("_", "").replace(",", "")
    m = _DECIMAL.fullmatch(t.upper()) if len(t) <= 64 else None
    if m is None:
        raise ValueError(text)
    value = Fraction(m.group(1)) * DECIMAL_SUFFIX.get(m.group(3), 1)
    if m.group(2):
        value *= Fraction(10) ** int(m.group(2))
    if value > MAX_DECIMAL:
        raise ValueError(text)
    return value


def parse_count(text: str) -> int:
    """``parse_decimal`` that must be a whole number (a token count): ``"15T"`` → 15,000,000,000,000;
    ``"1.5"`` is refused (``ValueError``)."""
    value = parse_decimal(text)
    if value.denominator != 1:
        raise ValueError(text)
    return int(value)
