"""Container requests/limits -> CRI LinuxContainerResources, as the kubelet maps them.

cpu request -> cpu_shares (milli * 1024 / 1000, at least 2); cpu limit ->
cpu_quota over a 100 ms period (at least 1 ms); memory limit ->
memory_limit_in_bytes; oom_score_adj from the pod's QoS class and the memory
request relative to the node's capacity. Pure functions, no CRI calls.
"""

from __future__ import annotations

import math
from typing import Any

from controlplane.api.qos import QOSClass
from controlplane.api.quantity import parse_quantity
from proto.runtime.v1 import api_pb2

CPU_PERIOD_US = 100_000
MIN_SHARES = 2
MAX_SHARES = 262_144
MIN_QUOTA_US = 1_000
GUARANTEED_OOM_SCORE_ADJ = -997
BEST_EFFORT_OOM_SCORE_ADJ = 1000


def milli_cpu(value: Any) -> int:
    return math.ceil(parse_quantity(value) * 1000)


def cpu_shares(request_milli: int) -> int:
    if request_milli <= 0:
        return MIN_SHARES
    return max(MIN_SHARES, min(MAX_SHARES, request_milli * 1024 // 1000))


def cpu_quota(limit_milli: int, period_us: int = CPU_PERIOD_US) -> int:
    return max(MIN_QUOTA_US, limit_milli * period_us // 1000)


def oom_score_adj(qos: QOSClass, memory_request: int, memory_capacity: int) -> int:
    if qos is QOSClass.GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos is QOSClass.BEST_EFFORT:
        return BEST_EFFORT_OOM_SCORE_ADJ
    if memory_capacity <= 0:
        return 999
    adj = 1000 - (1000 * memory_request) // memory_capacity
    # Burstable stays strictly between Guaranteed and BestEffort.
    return max(3, min(999, adj))


def container_resources(
    container: dict[str, Any], qos: QOSClass, memory_capacity: int
) -> api_pb2.LinuxContainerResources:
    res = container.get("resources") or {}
    requests = dict(res.get("requests") or {})
    limits = res.get("limits") or {}
    for name, value in limits.items():
        requests.setdefault(name, value)
    out = api_pb2.LinuxContainerResources(cpu_period=CPU_PERIOD_US)
    out.cpu_shares = cpu_shares(milli_cpu(requests["cpu"])) if "cpu" in requests else MIN_SHARES
    if "cpu" in limits:
        out.cpu_quota = cpu_quota(milli_cpu(limits["cpu"]))
    if "memory" in limits:
        out.memory_limit_in_bytes = math.ceil(parse_quantity(limits["memory"]))
    mem_request = math.ceil(parse_quantity(requests["memory"])) if "memory" in requests else 0
    out.oom_score_adj = oom_score_adj(qos, mem_request, memory_capacity)
    return out
