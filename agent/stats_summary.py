"""The kubelet's Summary API shape (`GET /stats/summary`) of the agent's stats.

`summary(stats)` turns the agent's StatsResponse (agent/server.py) into the
JSON the kubelet serves: `node` {nodeName, cpu, memory} and `pods`, each
with podRef {name, namespace, uid}, containers, cpu and memory; times are
RFC 3339, CPU in nanocores and core-nanoseconds, memory in bytes. Pure
conversion: it reads nothing itself.
"""

from __future__ import annotations

from typing import Any

from machinery import rfc3339
from proto.agent.v1 import agent_pb2 as pb


def _time(usage: pb.Usage) -> str:
    return rfc3339.format_nano(usage.timestamp_nanos)


def _cpu(usage: pb.Usage) -> dict[str, Any]:
    return {
        "time": _time(usage),
        "usageNanoCores": usage.cpu_usage_nano_cores,
        "usageCoreNanoSeconds": usage.cpu_usage_core_nano_seconds,
    }


def _memory(usage: pb.Usage, available: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {
        "time": _time(usage),
        "usageBytes": usage.memory_usage_bytes,
        "workingSetBytes": usage.memory_working_set_bytes,
        "rssBytes": usage.memory_rss_bytes,
    }
    if available:
        out["availableBytes"] = available
    return out


def summary(stats: pb.StatsResponse) -> dict[str, Any]:
    node = stats.node
    return {
        "node": {
            "nodeName": node.node_name,
            "cpu": _cpu(node.usage),
            "memory": _memory(node.usage, node.memory_available_bytes),
        },
        "pods": [
            {
                "podRef": {"name": p.pod, "namespace": p.namespace, "uid": p.uid},
                "cpu": _cpu(p.usage),
                "memory": _memory(p.usage),
                "containers": [
                    {"name": c.name, "cpu": _cpu(c.usage), "memory": _memory(c.usage)}
                    for c in p.containers
                ],
            }
            for p in stats.pods
        ],
    }
