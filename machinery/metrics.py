"""Prometheus metrics for every skiff component: one registry per component.

Each component (the API server, the scheduler, the controller manager, the
batch scheduler, the agent, the runtime) builds its own `registry()` and
registers its collectors there, never in prometheus_client's global default
registry: tests start several components in one process, and each must
serve only its own series. `registry()` comes with `process_*` (CPU,
memory, open files, start time) and the Python equivalents of Go's runtime
series (`python_gc_*`, `python_info`), as Kubernetes components export
`process_*` and `go_*`.

`render` answers a scrape in the text format (version 0.0.4, what
Prometheus and `kubectl get --raw /metrics` read); `serve` publishes
`/metrics` (and `/healthz`) of a registry over plain HTTP for components
without an HTTP server of their own. The bucket tables are Kubernetes'.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
    start_http_server,
)

# Kubernetes' counters and histograms have no `_created` series; without
# this switch (the library's one, for the whole process) each would double.
disable_created_metrics()  # type: ignore[no-untyped-call]

# kube-apiserver's apiserver_request_duration_seconds and
# etcd_request_duration_seconds buckets (k8s.io/apiserver metrics.go).
REQUEST_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0,
                   5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0)  # fmt: skip
# k8s.io/component-base/metrics.ExponentialBuckets(0.001, 2, 15): scheduler attempts.
SCHEDULING_BUCKETS = tuple(0.001 * 2**i for i in range(15))
# client-go workqueue's queue and work durations: ExponentialBuckets(10e-9, 10, 10).
WORKQUEUE_BUCKETS = tuple(10e-9 * 10**i for i in range(10))
# The kubelet's pod start duration buckets (kubelet metrics.go).
POD_START_BUCKETS = (0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 30.0, 45.0, 60.0,
                     120.0, 180.0, 240.0, 300.0, 360.0, 480.0, 600.0, 900.0, 1200.0, 1800.0,
                     2700.0, 3600.0)  # fmt: skip
# The kubelet's PLEG relist buckets (the component-base default ones).
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

CONTENT_TYPE = CONTENT_TYPE_LATEST
T = TypeVar("T")


class PerProcess(Generic[T]):
    """A component's metrics for the whole process (what `python -m` of the
    component alone serves): one `make()`, made on first use; thread-safe."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._made: T | None = None
        self._lock = threading.Lock()

    def __call__(self) -> T:
        with self._lock:
            if self._made is None:
                self._made = self._make()
            return self._made


def registry() -> CollectorRegistry:
    """A component's own registry, with the process and interpreter series."""
    found = CollectorRegistry(auto_describe=True)
    ProcessCollector(registry=found)
    PlatformCollector(registry=found)
    GCCollector(registry=found)
    return found


def render(found: CollectorRegistry) -> bytes:
    """The registry's series in the Prometheus text format (CONTENT_TYPE)."""
    return generate_latest(found)


class MetricsServer:
    """`/metrics` of one registry over plain HTTP; stop() closes it."""

    def __init__(self, found: CollectorRegistry, listen: str) -> None:
        host, _, port = listen.rpartition(":")
        self._server, self._thread = start_http_server(
            int(port), host.strip("[]") or "127.0.0.1", registry=found
        )

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    def stop(self) -> None:
        server: WSGIServer = self._server
        server.shutdown()
        server.server_close()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)


def serve(found: CollectorRegistry, listen: str) -> MetricsServer:
    """Serve `found` on `listen` (HOST:PORT; port 0 picks one: `.port`)."""
    return MetricsServer(found, listen)


__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_BUCKETS",
    "POD_START_BUCKETS",
    "REQUEST_BUCKETS",
    "SCHEDULING_BUCKETS",
    "WORKQUEUE_BUCKETS",
    "MetricsServer",
    "registry",
    "render",
    "serve",
]
