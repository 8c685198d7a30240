"""Kubernetes resource quantities ("100m", "1.5", "64Mi", "1G", "2e3").

`parse_quantity` returns an exact Fraction so "100m" CPU and "0.1" compare
equal; it raises ValueError on anything Kubernetes would refuse.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}

_RE = re.compile(r"^([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)(?:([eE][+-]?[0-9]+)|([a-zA-Z]{0,2}))$")


def parse_quantity(value: object) -> Fraction:
    """The numeric value of a quantity (int, float or string)."""
    if isinstance(value, str):
        return _parse_text(value)
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value)
    raise ValueError(f"{value!r} is not a quantity")


@lru_cache(maxsize=4096)
def _parse_text(value: str) -> Fraction:
    m = _RE.match(value.strip())
    if not m:
        raise ValueError(f"{value!r} is not a quantity (e.g. 100m, 0.5, 64Mi, 1G)")
    number = Fraction(m.group(1))
    if m.group(2):
        return number * Fraction(10) ** int(m.group(2)[1:])
    suffix = m.group(3) or ""
    if suffix not in _SUFFIXES:
        raise ValueError(f"{value!r}: unknown suffix {suffix!r}")
    return number * _SUFFIXES[suffix]


_BINARY = (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10))
_DECIMAL = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def is_binary(value: object) -> bool:
    """Whether a quantity is written with a binary suffix (64Mi): sums keep
    the format of their first term, as resource.Quantity.Add does."""
    return isinstance(value, str) and value.strip()[-2:] in {s for s, _ in _BINARY}


def format_quantity(value: Fraction, binary: bool = False) -> str:
    """The canonical form Kubernetes writes a quantity in (resource.Quantity's
    String()): binary suffixes for a whole binary value of 1Ki and more,
    else the smallest decimal exponent (a multiple of 3) that keeps it whole,
    rounded up to nano units as Kubernetes does."""
    if binary and value.denominator == 1 and abs(value) >= 1024:
        n = int(value)
        for suffix, shift in _BINARY:
            if n % (1 << shift) == 0:
                return f"{n >> shift}{suffix}"
    nanos = -((-value.numerator * 10**9) // value.denominator)  # ceiling, in nano units
    if nanos == 0:
        return "0"
    exponent = -9
    while nanos % 1000 == 0 and exponent < 18:
        nanos //= 1000
        exponent += 3
    return f"{nanos}{_DECIMAL[exponent]}"
