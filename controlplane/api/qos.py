"""Pod QoS classes, computed as the kubelet does (GetPodQOS), in one place
for every part: admission writes status.qosClass with it, the scheduler
treats BestEffort pods by it under MemoryPressure, the agent picks the
pod's cgroup parent, its containers' oom_score_adj and its eviction rank.

Guaranteed: every container (init containers included) sets cpu and memory
limits, and requests equal limits where given. BestEffort: no container sets
any cpu or memory request or limit. Everything else is Burstable. Only cpu
and memory count: a pod asking only for ephemeral-storage or an extended
resource is BestEffort, as in Kubernetes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from controlplane.api.quantity import parse_quantity

COMPUTE = ("cpu", "memory")


class QOSClass(StrEnum):
    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


def _containers(pod: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    yield from spec.get("initContainers") or []
    yield from spec.get("containers") or []


def qos_class(pod: Mapping[str, Any]) -> QOSClass:
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
            try:
                if parse_quantity(requests[name]) != parse_quantity(limits[name]):
                    guaranteed = False
            except ValueError:  # validation refuses it; never Guaranteed by accident
                guaranteed = False
    if not any_set:
        return QOSClass.BEST_EFFORT
    return QOSClass.GUARANTEED if guaranteed else QOSClass.BURSTABLE
