"""Exact parsing of Kubernetes resource quantities, and a pod's resource request.

`parse_quantity("500m")` returns a `Fraction`; `milli_value` and `value` turn it
into the integers the scheduler keeps (CPU in millicores, everything else in
whole units, rounded up as Kubernetes' `MilliValue()`/`Value()` do).
`pod_requests` computes what a pod asks for the way kube-scheduler counts it:
the sum over containers, at least the largest init container (restartable
"sidecar" init containers add up with the containers), plus pod overhead.

This module is pure: no I/O, no cluster state. Parsing itself is the shared
`controlplane.api.quantity` parser; this module adds the scheduler's units.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from controlplane.api.quantity import parse_quantity as _api_parse_quantity
from machinery.podresources import pod_total

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# kube-scheduler's defaults for pods that request nothing (used only to score).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Fraction:
    """The exact value of a quantity such as "500m", "1Gi", "2", "1e3", "128974848".

    Delegates to the API's shared parser (controlplane.api.quantity), so the
    scheduler and the API server agree on every quantity.
    """
    try:
        return _api_parse_quantity(text)
    except ValueError as e:
        raise QuantityError(str(e)) from e


def value(text: str | int | float) -> int:
    """Whole units, rounded up (Kubernetes `Quantity.Value()`)."""
    return math.ceil(parse_quantity(text))


def milli_value(text: str | int | float) -> int:
    """Thousandths, rounded up (Kubernetes `Quantity.MilliValue()`)."""
    return math.ceil(parse_quantity(text) * 1000)


@functools.lru_cache(maxsize=4096)
def amount(resource: str, text: str | int | float) -> int:
    """The integer the scheduler keeps for `resource`: millicores for cpu, units otherwise."""
    return milli_value(text) if resource == CPU else value(text)


def resource_list(raw: dict[str, Any] | None) -> dict[str, int]:
    """A `{"cpu": "500m", "memory": "1Gi"}` map turned into integers."""
    if not raw:
        return {}
    return {name: amount(name, q) for name, q in raw.items()}


def _requests(container: Mapping[str, Any]) -> dict[str, int]:
    return resource_list((container.get("resources") or {}).get("requests"))


def pod_requests(pod: dict[str, Any]) -> dict[str, int]:
    """What the pod asks for, as kube-scheduler computes it (without the pod
    count; see machinery/podresources.py), resources it asks none of left out."""
    spec = pod.get("spec") or {}
    total = pod_total(spec, _requests, resource_list(spec.get("overhead")))
    return {k: v for k, v in total.items() if v}


def non_zero_cpu_memory(requests: dict[str, int]) -> tuple[int, int]:
    """CPU and memory for scoring: a pod that asks for none counts as the defaults."""
    return (
        requests.get(CPU) or DEFAULT_MILLI_CPU_REQUEST,
        requests.get(MEMORY) or DEFAULT_MEMORY_REQUEST,
    )
