"""Kubernetes resource quantities ("100m", "1.5", "64Mi", "1G", "2e3").

`parse_quantity` returns an exact Fraction so "100m" CPU and "0.1" compare
equal; it raises ValueError on anything Kubernetes would refuse.

`parse_nanos` gives the same value as an int of nano units, rounded up as
resource.ParseQuantity rounds every quantity (to 1n), so sums and
comparisons on a hot path (quota admission) are integer arithmetic with
Kubernetes' own precision; `format_nanos` writes one back.
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


_NANO = 10**9


def parse_nanos(value: object) -> int:
    """A quantity in nano units (an int), rounded up to 1n as Kubernetes does."""
    if isinstance(value, str):
        return _nanos_of_text(value)
    if isinstance(value, float):  # as written (0.1 is 100000000n, not its binary value)
        return _nanos_of_text(repr(value))
    exact = parse_quantity(value)
    return -((-exact.numerator * _NANO) // exact.denominator)


@lru_cache(maxsize=4096)
def _nanos_of_text(value: str) -> int:
    exact = _parse_text(value)
    return -((-exact.numerator * _NANO) // exact.denominator)


_BINARY = (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10))
_BINARY_SUFFIXES = frozenset(s for s, _ in _BINARY)
_DECIMAL = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def is_binary(value: object) -> bool:
    """Whether a quantity is written with a binary suffix (64Mi): sums keep
    the format of their first term, as resource.Quantity.Add does."""
    return isinstance(value, str) and value.strip()[-2:] in _BINARY_SUFFIXES


def format_quantity(value: Fraction, binary: bool = False) -> str:
    """The canonical form Kubernetes writes a quantity in (resource.Quantity's
    String()): binary suffixes for a whole binary value of 1Ki and more,
    else the smallest decimal exponent (a multiple of 3) that keeps it whole,
    rounded up to nano units as Kubernetes does."""
    return format_nanos(-((-value.numerator * _NANO) // value.denominator), binary)


def format_nanos(nanos: int, binary: bool = False) -> str:
    """format_quantity of a value in nano units."""
    if binary and nanos % _NANO == 0 and abs(nanos) >= 1024 * _NANO:
        n = nanos // _NANO
        for suffix, shift in _BINARY:
            if n % (1 << shift) == 0:
                return f"{n >> shift}{suffix}"
    if nanos == 0:
        return "0"
    exponent = -9
    if nanos % _NANO == 0:  # whole units (most quantities): one step to them
        nanos //= _NANO
        exponent = 0
    while nanos % 1000 == 0 and exponent < 18:
        nanos //= 1000
        exponent += 3
    return f"{nanos}{_DECIMAL[exponent]}"
