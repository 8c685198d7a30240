"""The agent's metrics endpoints, as the kubelet serves them.

- `/metrics`: the kubelet's own series: `kubelet_node_name{node}`,
  `kubelet_running_pods`, `kubelet_running_containers{container_state}`
  (counted from the runtime at scrape time), `kubelet_pleg_relist_duration_seconds`,
  `kubelet_pleg_last_seen_seconds`, `kubelet_pod_start_duration_seconds`,
  `kubelet_certificate_manager_server_ttl_seconds` (the serving
  certificate's, read at each scrape: serving_certificate.py renews it) and
  `process_*`/`python_*`.
- `/metrics/cadvisor`: container series under cAdvisor's names
  (`container_cpu_usage_seconds_total`, `container_memory_working_set_bytes`,
  `container_memory_usage_bytes`, `container_memory_rss`,
  `container_fs_usage_bytes`) with the `container`, `pod`, `namespace` and
  `id` labels, from CRI stats.
- `/metrics/resource`: the kubelet's resource endpoint: `node_cpu_usage_seconds_total`,
  `node_memory_working_set_bytes`, `container_cpu_usage_seconds_total`,
  `container_memory_working_set_bytes`, `pod_cpu_usage_seconds_total`,
  `pod_memory_working_set_bytes` and `scrape_error`.
- `/metrics/probes`: `prober_probe_total{probe_type,result,container,pod,namespace,pod_uid}`.

Each endpoint has its own registry (the kubelet's are separate too); the
agent endpoint (stream_proxy.py) serves them to the API server and to
callers allowed `nodes/metrics` (webhook_auth.py). Series per pod exist
here, on the node, as the kubelet's do: a node holds a bounded number of
pods, and a pod's series go when the pod goes.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from machinery import metrics, x509read
from machinery.metrics import (
    Collector,
    CounterMetricFamily,
    GaugeMetricFamily,
    Histogram,
    Metric,
    Registry,
)
from proto.agent.v1 import agent_pb2 as pb
from proto.runtime.v1 import api_pb2 as cri

Page = Callable[[], tuple[str, bytes]]
PodOf = Callable[[str], tuple[str, str] | None]  # uid -> (namespace, name)
_STATES = {cri.CONTAINER_CREATED: "created", cri.CONTAINER_RUNNING: "running",
           cri.CONTAINER_EXITED: "exited", cri.CONTAINER_UNKNOWN: "unknown"}  # fmt: skip
_PROBE_TYPES = {"livenessProbe": "Liveness", "readinessProbe": "Readiness",
                "startupProbe": "Startup"}  # fmt: skip


class Runtime(Collector):
    """kubelet_running_pods and kubelet_running_containers, read at scrape time."""

    def __init__(self, sandboxes: Callable[[], list[Any]], containers: Callable[[], list[Any]]):
        self.sandboxes = sandboxes
        self.containers = containers

    def collect(self) -> Iterable[Metric]:
        pods = GaugeMetricFamily("kubelet_running_pods",
                                 "Number of pods that have a running pod sandbox")  # fmt: skip
        running = [s for s in self.sandboxes() if s.state == cri.SANDBOX_READY]
        pods.add_metric([], len(running))
        yield pods
        family = GaugeMetricFamily("kubelet_running_containers",
                                   "Number of containers currently running",
                                   labels=["container_state"])  # fmt: skip
        counts = dict.fromkeys(_STATES.values(), 0)
        for c in self.containers():
            state = _STATES.get(c.state, "unknown")
            counts[state] += 1
        for state, n in counts.items():
            family.add_metric([state], n)
        yield family


def _usage_families(stats: pb.StatsResponse, cadvisor: bool) -> Iterable[Metric]:
    """Container series (and, for /metrics/resource, pod and node series)."""
    cpu = CounterMetricFamily("container_cpu_usage_seconds",
                              "Cumulative cpu time consumed by the container in core-seconds",
                              labels=["container", "pod", "namespace"] + (["id"] if cadvisor else []))  # fmt: skip
    mem = GaugeMetricFamily("container_memory_working_set_bytes",
                            "Current working set of the container in bytes",
                            labels=["container", "pod", "namespace"] + (["id"] if cadvisor else []))  # fmt: skip
    usage = GaugeMetricFamily("container_memory_usage_bytes",
                              "Current memory usage in bytes, including all memory regardless "
                              "of when it was accessed", labels=["container", "pod", "namespace", "id"])  # fmt: skip
    rss = GaugeMetricFamily("container_memory_rss", "Size of RSS in bytes.",
                            labels=["container", "pod", "namespace", "id"])  # fmt: skip
    fs = GaugeMetricFamily("container_fs_usage_bytes",
                           "Number of bytes that are consumed by the container on this filesystem.",
                           labels=["container", "pod", "namespace", "id"])  # fmt: skip
    pod_cpu = CounterMetricFamily("pod_cpu_usage_seconds",
                                  "Cumulative cpu time consumed by the pod in core-seconds",
                                  labels=["pod", "namespace"])  # fmt: skip
    pod_mem = GaugeMetricFamily("pod_memory_working_set_bytes",
                                "Current working set of the pod in bytes",
                                labels=["pod", "namespace"])  # fmt: skip
    for p in stats.pods:
        for c in p.containers:
            labels = [c.name, p.pod, p.namespace]
            full = [*labels, c.container_id]
            seconds = c.usage.cpu_usage_core_nano_seconds / 1e9
            cpu.add_metric(full if cadvisor else labels, seconds)
            mem.add_metric(full if cadvisor else labels, c.usage.memory_working_set_bytes)
            usage.add_metric(full, c.usage.memory_usage_bytes)
            rss.add_metric(full, c.usage.memory_rss_bytes)
            fs.add_metric(full, c.writable_layer_bytes)
        pod_cpu.add_metric([p.pod, p.namespace], p.usage.cpu_usage_core_nano_seconds / 1e9)
        pod_mem.add_metric([p.pod, p.namespace], p.usage.memory_working_set_bytes)
    yield cpu
    yield mem
    if cadvisor:
        yield from (usage, rss, fs)
        return
    yield pod_cpu
    yield pod_mem
    node_cpu = CounterMetricFamily("node_cpu_usage_seconds",
                                   "Cumulative cpu time consumed by the node in core-seconds")  # fmt: skip
    node_cpu.add_metric([], stats.node.usage.cpu_usage_core_nano_seconds / 1e9)
    yield node_cpu
    node_mem = GaugeMetricFamily("node_memory_working_set_bytes",
                                 "Current working set of the node in bytes")  # fmt: skip
    node_mem.add_metric([], stats.node.usage.memory_working_set_bytes)
    yield node_mem


class Usage(Collector):
    """cAdvisor's container series, or the kubelet's resource endpoint."""

    def __init__(self, stats: Callable[[], pb.StatsResponse], cadvisor: bool) -> None:
        self.stats = stats
        self.cadvisor = cadvisor

    def collect(self) -> Iterable[Metric]:
        try:
            found = self.stats()
        except Exception:
            found = None
        if not self.cadvisor:
            error = GaugeMetricFamily("scrape_error",
                                      "1 if there was an error while getting container metrics, "
                                      "0 otherwise")  # fmt: skip
            error.add_metric([], 0 if found is not None else 1)
            yield error
        if found is not None:
            yield from _usage_families(found, self.cadvisor)


class Probes(Collector):
    """prober_probe_total: every probe run, by type, result and container."""

    def __init__(self, pod_of: PodOf) -> None:
        self.pod_of = pod_of
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, str, str], int] = {}

    def observe(self, uid: str, container: str, kind: str, ok: bool) -> None:
        key = (_PROBE_TYPES.get(kind, kind), "successful" if ok else "failed", container, uid)
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1

    def forget(self, uid: str) -> None:
        with self._lock:
            for key in [k for k in self._counts if k[3] == uid]:
                del self._counts[key]

    def collect(self) -> Iterable[Metric]:
        family = CounterMetricFamily("prober_probe", "Cumulative number of a liveness, readiness "
                                     "or startup probe for a container by result.",
                                     labels=["probe_type", "result", "container", "pod",
                                             "namespace", "pod_uid"])  # fmt: skip
        with self._lock:
            counts = dict(self._counts)
        for (kind, result, container, uid), n in sorted(counts.items()):
            where = self.pod_of(uid) or ("", "")
            family.add_metric([kind, result, container, where[1], where[0], uid], n)
        yield family


class AgentMetrics:
    """The agent's four registries and the hooks that feed them."""

    def __init__(
        self,
        node: str,
        sandboxes: Callable[[], list[Any]],
        containers: Callable[[], list[Any]],
        stats: Callable[[], pb.StatsResponse],
        pod_of: PodOf,
        serving_cert: Callable[[], bytes] | None = None,
    ) -> None:
        """`serving_cert` reads the endpoint's serving certificate (PEM)."""
        self.registry = metrics.registry()
        r = self.registry
        name = GaugeMetricFamily("kubelet_node_name", "The node's name. The count is always 1.",
                                 labels=["node"])  # fmt: skip
        name.add_metric([node], 1)
        r.register(_Fixed([name]))
        r.register(Runtime(sandboxes, containers))
        self.relist = Histogram("kubelet_pleg_relist_duration_seconds",
                                "Duration in seconds for relisting pods in PLEG.",
                                buckets=metrics.DEFAULT_BUCKETS, registry=r)  # fmt: skip
        self.pod_start = Histogram("kubelet_pod_start_duration_seconds",
                                   "Duration in seconds from kubelet seeing a pod for the first "
                                   "time to the pod starting to run",
                                   buckets=metrics.POD_START_BUCKETS, registry=r)  # fmt: skip
        self._last_relist = time.time()
        r.register(_Callback("kubelet_pleg_last_seen_seconds",
                             "Timestamp in seconds when PLEG was last seen active.",
                             lambda: self._last_relist))  # fmt: skip
        if serving_cert is not None:
            r.register(_Callback("kubelet_certificate_manager_server_ttl_seconds",
                                 "Gauge of the shortest TTL (time-to-live) of the Kubelet's "
                                 "serving certificate. The value is in seconds until certificate "
                                 "expiry (negative if already expired). If serving certificate "
                                 "is invalid or unused, the value will be +INF.",
                                 lambda: certificate_ttl(serving_cert)))  # fmt: skip
        self.cadvisor = Registry()
        self.cadvisor.register(Usage(stats, cadvisor=True))
        self.resource = Registry()
        self.resource.register(Usage(stats, cadvisor=False))
        self.probes = Probes(pod_of)
        self.probe_registry = Registry()
        self.probe_registry.register(self.probes)

    def relisted(self, seconds: float) -> None:
        self.relist.observe(seconds)
        self._last_relist = time.time()

    def pages(self) -> Mapping[str, Page]:
        """The endpoint's paths and what answers each."""
        return {
            "/metrics": _page(self.registry),
            "/metrics/cadvisor": _page(self.cadvisor),
            "/metrics/resource": _page(self.resource),
            "/metrics/probes": _page(self.probe_registry),
        }


def certificate_ttl(read: Callable[[], bytes]) -> float:
    """Seconds until the certificate `read` returns expires; +Inf when unreadable."""
    try:
        expiry = x509read.not_after(read())
    except (OSError, ValueError):
        return math.inf
    return expiry.timestamp() - time.time()


def _page(found: Registry) -> Page:
    return lambda: (metrics.CONTENT_TYPE, metrics.render(found))


class _Fixed(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return list(self.families)


class _Callback(Collector):
    def __init__(self, name: str, documentation: str, value: Callable[[], float]) -> None:
        self.name, self.documentation, self.value = name, documentation, value

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(self.name, self.documentation)
        family.add_metric([], self.value())
        yield family
