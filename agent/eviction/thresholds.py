"""Eviction thresholds and their flags, with the kubelet's syntax and defaults.

`--eviction-hard` and `--eviction-soft` take `signal<quantity` or
`signal<percent%` items separated by commas (`memory.available<100Mi,
nodefs.available<10%`); `--eviction-soft-grace-period` and
`--eviction-minimum-reclaim` take `signal=value` items (a Go duration such
as `1m30s`, a quantity or a percentage). The kubelet's Linux defaults for
`--eviction-hard` are `memory.available<100Mi, nodefs.available<10%,
imagefs.available<15%, nodefs.inodesFree<5%`; as the kubelet documents, they
apply only when the flag is not given at all (give it and the signals it
does not name have no hard threshold). Every soft threshold needs a grace
period. Bad input raises ThresholdError naming the flag and the item.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from controlplane.api.quantity import parse_quantity

MEMORY_AVAILABLE = "memory.available"
ALLOCATABLE_MEMORY_AVAILABLE = "allocatableMemory.available"
NODEFS_AVAILABLE = "nodefs.available"
NODEFS_INODES_FREE = "nodefs.inodesFree"
IMAGEFS_AVAILABLE = "imagefs.available"
IMAGEFS_INODES_FREE = "imagefs.inodesFree"
PID_AVAILABLE = "pid.available"

SIGNALS = (
    MEMORY_AVAILABLE,
    ALLOCATABLE_MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    PID_AVAILABLE,
)

DEFAULT_HARD = (
    "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,nodefs.inodesFree<5%"
)
DEFAULT_PRESSURE_TRANSITION = 300.0  # --eviction-pressure-transition-period 5m0s

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ThresholdError(ValueError):
    pass


@dataclass(frozen=True)
class Value:
    """A quantity (bytes, inodes, pids) or a fraction of the capacity."""

    quantity: int | None = None
    percentage: float | None = None

    def of(self, capacity: int) -> int:
        """The value for a signal whose capacity is `capacity`."""
        if self.quantity is not None:
            return self.quantity
        return int(capacity * (self.percentage or 0.0))

    def __str__(self) -> str:
        if self.quantity is not None:
            return str(self.quantity)
        return f"{(self.percentage or 0.0) * 100:g}%"


@dataclass(frozen=True)
class Threshold:
    signal: str
    value: Value
    grace_period: float = 0.0  # seconds; 0 for a hard threshold
    min_reclaim: Value | None = None

    @property
    def hard(self) -> bool:
        return self.grace_period == 0.0

    def describe(self) -> str:
        return f"{self.signal}<{self.value}"


def parse_duration(text: str) -> float:
    """A Go duration (`1m30s`, `90s`, `5m0s`, `1.5h`) in seconds."""
    text = text.strip()
    if text == "0":
        return 0.0
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(f"{text!r} is not a duration (e.g. 30s, 1m30s, 5m)")
    return total


def _value(flag: str, item: str, text: str) -> Value:
    text = text.strip()
    if text.endswith("%"):
        try:
            pct = float(text[:-1])
        except ValueError:
            raise ThresholdError(f"{flag}: {item!r}: {text!r} is not a percentage") from None
        if not 0.0 < pct <= 100.0:
            raise ThresholdError(f"{flag}: {item!r}: a percentage must be in (0%, 100%]")
        return Value(percentage=pct / 100.0)
    try:
        q = parse_quantity(text)
    except ValueError:
        raise ThresholdError(
            f"{flag}: {item!r}: {text!r} is not a quantity or a percentage (e.g. 100Mi, 10%)"
        ) from None
    if q < 0:
        raise ThresholdError(f"{flag}: {item!r}: must not be negative")
    return Value(quantity=int(q))


def _signal(flag: str, item: str, name: str) -> str:
    name = name.strip()
    if name not in SIGNALS:
        raise ThresholdError(
            f"{flag}: {item!r}: unknown signal {name!r} (one of {', '.join(SIGNALS)})"
        )
    return name


def parse_thresholds(flag: str, text: str) -> dict[str, Value]:
    """`signal<value,...` as --eviction-hard and --eviction-soft take it."""
    out: dict[str, Value] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, value = item.partition("<")
        if not sep:
            raise ThresholdError(f"{flag}: {item!r}: want signal<value (only < is supported)")
        signal = _signal(flag, item, name)
        if signal in out:
            raise ThresholdError(f"{flag}: {item!r}: {signal} given twice")
        out[signal] = _value(flag, item, value)
    return out


def parse_pairs(flag: str, text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep:
            raise ThresholdError(f"{flag}: {item!r}: want signal=value")
        out[_signal(flag, item, name)] = value.strip()
    return out


@dataclass(frozen=True)
class EvictionConfig:
    thresholds: tuple[Threshold, ...]
    pressure_transition_period: float = DEFAULT_PRESSURE_TRANSITION
    max_pod_grace_period: int = 0  # for soft evictions; 0 = the pod's own, as the kubelet

    def hard(self, signal: str) -> Threshold | None:
        return next((t for t in self.thresholds if t.signal == signal and t.hard), None)


def parse_config(
    hard: str | None = None,
    soft: str = "",
    soft_grace: str = "",
    minimum_reclaim: str = "",
    pressure_transition: str = "5m0s",
    max_pod_grace_period: int = 0,
) -> EvictionConfig:
    """The kubelet's flags into thresholds; ThresholdError naming the flag."""
    hard_values = parse_thresholds("--eviction-hard", DEFAULT_HARD if hard is None else hard)
    soft_values = parse_thresholds("--eviction-soft", soft)
    graces: dict[str, float] = {}
    for signal, text in parse_pairs("--eviction-soft-grace-period", soft_grace).items():
        try:
            graces[signal] = parse_duration(text)
        except ValueError as err:
            raise ThresholdError(f"--eviction-soft-grace-period: {signal}: {err}") from None
        if graces[signal] <= 0:
            raise ThresholdError(f"--eviction-soft-grace-period: {signal}: must be positive")
        if signal not in soft_values:
            raise ThresholdError(
                f"--eviction-soft-grace-period: {signal} has no --eviction-soft threshold"
            )
    reclaim = {
        s: _value("--eviction-minimum-reclaim", f"{s}={v}", v)
        for s, v in parse_pairs("--eviction-minimum-reclaim", minimum_reclaim).items()
    }
    try:
        transition = parse_duration(pressure_transition)
    except ValueError as err:
        raise ThresholdError(f"--eviction-pressure-transition-period: {err}") from None
    thresholds = [Threshold(s, v, 0.0, reclaim.get(s)) for s, v in hard_values.items()]
    for signal, value in soft_values.items():
        if signal not in graces:
            raise ThresholdError(
                f"--eviction-soft: {signal}<{value}: needs a grace period in --eviction-soft-grace-period"
            )
        thresholds.append(Threshold(signal, value, graces[signal], reclaim.get(signal)))
    return EvictionConfig(tuple(thresholds), transition, max_pod_grace_period)


def describe(values: Mapping[str, Value]) -> str:
    return ",".join(f"{s}<{v}" for s, v in values.items())
