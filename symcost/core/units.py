"""Byte sizes of dtypes and human-readable units (GiB = 2^30 and GB = 10^9, always labelled)."""
from __future__ import annotations

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
