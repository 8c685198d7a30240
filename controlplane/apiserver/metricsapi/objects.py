"""NodeMetrics and PodMetrics objects from the collector's samples.

As metrics-server computes them: CPU is the increase of the cumulative
core-nanoseconds between the two newest samples divided by the time
between them (in nanocores, `123456n`), the window is that time, the
timestamp the newer sample's; memory is the newer sample's working set
(`Ki` when whole kibibytes, as resource.Quantity writes bytes). An object
with one sample only (just appeared) has no metrics yet, and neither has a
pod whose counters went backwards (a container restarted).
"""

from __future__ import annotations

from typing import Any

from controlplane.api.kinds.metrics._usage import API_VERSION
from controlplane.apiserver.metricsapi.collector import Pair, Sample
from machinery import rfc3339


def memory_quantity(value: int) -> str:
    if value and value % (1 << 20) == 0:
        return f"{value >> 20}Mi"
    if value and value % 1024 == 0:
        return f"{value >> 10}Ki"
    return str(value)


def _rate(old_ns: int, new_ns: int, old: Sample, new: Sample) -> int | None:
    elapsed = new.time_ns - old.time_ns
    if elapsed <= 0 or new_ns < old_ns:
        return None
    return (new_ns - old_ns) * 1_000_000_000 // elapsed


def _window(old: Sample, new: Sample) -> str:
    seconds = (new.time_ns - old.time_ns) / 1e9
    return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"


def _usage(cpu_nanocores: int, memory: int) -> dict[str, str]:
    return {"cpu": f"{cpu_nanocores}n", "memory": memory_quantity(memory)}


def _meta(name: str, labels: dict[str, str] | None, namespace: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": rfc3339.now()}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    return meta


def node_metrics(name: str, pair: Pair, labels: dict[str, str] | None) -> dict[str, Any] | None:
    old, new = pair.old, pair.new
    if old is None or new is None:
        return None
    cpu = _rate(old.cpu_ns, new.cpu_ns, old, new)
    if cpu is None:
        return None
    return {
        "kind": "NodeMetrics", "apiVersion": API_VERSION,
        "metadata": _meta(name, labels),
        "timestamp": rfc3339.format_nano(new.time_ns).split(".")[0] + "Z",
        "window": _window(old, new),
        "usage": _usage(cpu, new.memory),
    }  # fmt: skip


def pod_metrics(
    namespace: str, name: str, pair: Pair, labels: dict[str, str] | None
) -> dict[str, Any] | None:
    old, new = pair.old, pair.new
    if old is None or new is None:
        return None
    before = {c[0]: c for c in old.containers}
    containers = []
    for cname, cpu_ns, memory in new.containers:
        prior = before.get(cname)
        cpu = _rate(prior[1], cpu_ns, old, new) if prior is not None else None
        if cpu is None:
            return None  # restarted or new: no rate over this window
        containers.append({"name": cname, "usage": _usage(cpu, memory)})
    return {
        "kind": "PodMetrics", "apiVersion": API_VERSION,
        "metadata": _meta(name, labels, namespace),
        "timestamp": rfc3339.format_nano(new.time_ns).split(".")[0] + "Z",
        "window": _window(old, new),
        "containers": containers,
    }  # fmt: skip
