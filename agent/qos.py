"""Pod QoS classes, computed as the kubelet does.

Guaranteed: every container (init containers included) sets cpu and memory
limits, and requests equal limits where given. BestEffort: no container sets
any cpu or memory request or limit. Everything else is Burstable. The class
picks the pod's cgroup parent and the containers' oom_score_adj.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from controlplane.api.quantity import parse_quantity

COMPUTE = ("cpu", "memory")


class QOSClass(StrEnum):
    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


def _containers(pod: dict[str, Any]) -> Iterable[dict[str, Any]]:
    spec = pod.get("spec") or {}
    yield from spec.get("initContainers") or []
    yield from spec.get("containers") or []


def qos_class(pod: dict[str, Any]) -> QOSClass:
    any_set = False
    guaranteed = True
    for c in _containers(pod):
        res = c.get("resources") or {}
        requests = {k: v for k, v in (res.get("requests") or {}).items() if k in COMPUTE}
        limits = {k: v for k, v in (res.get("limits") or {}).items() if k in COMPUTE}
        # A limit without a request implies request == limit (API defaulting).
        for name, value in limits.items():
            requests.setdefault(name, value)
        if requests or limits:
            any_set = True
        if set(limits) != set(COMPUTE):
            guaranteed = False
            continue
        for name in COMPUTE:
            if parse_quantity(requests[name]) != parse_quantity(limits[name]):
                guaranteed = False
    if not any_set:
        return QOSClass.BEST_EFFORT
    return QOSClass.GUARANTEED if guaranteed else QOSClass.BURSTABLE
