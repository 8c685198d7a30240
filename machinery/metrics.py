"""Prometheus metrics for every skiff component: one registry per component.

A small metrics library of skiff's own (it replaced prometheus_client, whose
import pulled some 80 modules into every daemon, issue 27): `Counter`,
`Gauge` and `Histogram` with labels, the `*MetricFamily` values that
collectors (objects with a `collect()`) build at scrape time, a `Registry`,
the text exposition format (`render`) and a plain HTTP `/metrics` server
(`serve`). Names, label order, value formatting and escaping are the ones
prometheus_client and Kubernetes' client_golang write, so a scrape reads
the same series as before.

Each component (the API server, the scheduler, the controller manager, the
batch scheduler, the agent, the runtime) builds its own `registry()` and
registers its metrics there: tests start several components in one process,
and each must serve only its own series. `registry()` comes with `process_*`
(CPU, memory, open files, start time) and the Python equivalents of Go's
runtime series (`python_gc_*`, `python_info`), as Kubernetes components
export `process_*` and `go_*`. Counters and histograms have no `_created`
series (Kubernetes' have none). The bucket tables are Kubernetes'.
"""

from __future__ import annotations

import bisect
import gc
import math
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, Protocol, TypeVar

from machinery.serverthread import ServerThread

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

# The text format (version 0.0.4's grammar: every skiff name is a legacy
# one); the header each server sent before (prometheus_client's "latest" on
# the HTTPS endpoints, 0.0.4 on the plain `serve` one).
CONTENT_TYPE = "text/plain; version=1.0.0; charset=utf-8"
PLAIN_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
T = TypeVar("T")
Sample = tuple[str, dict[str, str], float]  # (series name, labels, value)


class Metric:
    """One family of series as a scrape shows it: name, HELP, TYPE, samples.
    A counter's name is without `_total`; its samples carry it."""

    __slots__ = ("documentation", "name", "samples", "type")

    def __init__(self, name: str, documentation: str, kind: str) -> None:
        self.name, self.documentation, self.type = name, documentation, kind
        self.samples: list[Sample] = []


class _Family(Metric):
    kind = "untyped"
    suffix = ""

    def __init__(
        self, name: str, documentation: str, value: float | None = None,
        labels: Sequence[str] = (),
    ) -> None:  # fmt: skip
        if self.suffix and name.endswith(self.suffix):
            name = name[: -len(self.suffix)]
        super().__init__(name, documentation, self.kind)
        self._labelnames = tuple(labels)
        if value is not None:
            self.add_metric([], value)

    def add_metric(self, labels: Sequence[str], value: float) -> None:
        self.samples.append(
            (self.name + self.suffix, dict(zip(self._labelnames, labels, strict=True)), value)
        )


class CounterMetricFamily(_Family):
    """A counter's values read at scrape time (a collector's)."""

    kind = "counter"
    suffix = "_total"


class GaugeMetricFamily(_Family):
    """A gauge's values read at scrape time (a collector's)."""

    kind = "gauge"


class Collector(Protocol):
    """What a registry holds: anything that yields families at scrape time."""

    def collect(self) -> Iterable[Metric]: ...


class _Value:
    """A number under a lock: what a counter and a gauge share."""

    __slots__ = ("_lock", "_value")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = 0.0

    def _add(self, amount: float) -> None:
        with self._lock:
            self._value += amount

    def get(self) -> float:
        return self._value


class CounterValue(_Value):
    __slots__ = ()

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        self._add(amount)

    def samples(self, name: str, labels: dict[str, str]) -> Iterator[Sample]:
        yield name + "_total", labels, self._value


class GaugeValue(_Value):
    __slots__ = ()

    def inc(self, amount: float = 1.0) -> None:
        self._add(amount)

    def dec(self, amount: float = 1.0) -> None:
        self._add(-amount)

    def set(self, value: float) -> None:
        with self._lock:
            self._value = float(value)

    def samples(self, name: str, labels: dict[str, str]) -> Iterator[Sample]:
        yield name, labels, self._value


class HistogramValue:
    __slots__ = ("_bounds", "_counts", "_lock", "_sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds
        self._lock = threading.Lock()
        self._counts = [0.0] * len(bounds)
        self._sum = 0.0

    def observe(self, amount: float) -> None:
        i = bisect.bisect_left(self._bounds, amount)  # the first bound >= amount
        with self._lock:
            self._sum += amount
            if i < len(self._counts):
                self._counts[i] += 1

    def samples(self, name: str, labels: dict[str, str]) -> Iterator[Sample]:
        with self._lock:
            counts, total = list(self._counts), self._sum
        seen = 0.0
        for bound, n in zip(self._bounds, counts, strict=True):
            seen += n
            yield name + "_bucket", {**labels, "le": go_float(bound)}, seen
        yield name + "_count", labels, seen
        if self._bounds[0] >= 0:
            yield name + "_sum", labels, total


V = TypeVar("V", CounterValue, GaugeValue, HistogramValue)


class _Metric(Generic[V]):
    """A named metric with label names and one value per label values."""

    kind = ""

    def __init__(self, name: str, documentation: str, labelnames: Iterable[str] = (),
                 registry: Registry | None = None) -> None:  # fmt: skip
        self.name, self.documentation = name, documentation
        self._labelnames = tuple(labelnames)
        self._lock = threading.Lock()
        self._values: dict[tuple[str, ...], V] = {}
        if not self._labelnames:
            self._values[()] = self._new()
        if registry is not None:
            registry.register(self)

    def _new(self) -> V:
        raise NotImplementedError

    def labels(self, *values: object) -> V:
        """The value of one label set (made at 0 on first use)."""
        if not self._labelnames:
            raise ValueError(f"No label names were set when constructing {self.name}")
        if len(values) != len(self._labelnames):
            raise ValueError("Incorrect label count")
        key = tuple(str(v) for v in values)
        found = self._values.get(key)
        if found is None:
            with self._lock:
                found = self._values.setdefault(key, self._new())
        return found

    def _only(self) -> V:
        if self._labelnames:
            raise ValueError(f"{self.name} has labels: call .labels() first")
        return self._values[()]

    def collect(self) -> list[Metric]:
        family = Metric(self.name, self.documentation, self.kind)
        with self._lock:
            values = list(self._values.items())
        for key, value in values:
            family.samples.extend(
                value.samples(self.name, dict(zip(self._labelnames, key, strict=True)))
            )
        return [family]


class Counter(_Metric[CounterValue]):
    """A count that only goes up; `name` may end in `_total` (it is served so)."""

    kind = "counter"

    def __init__(self, name: str, documentation: str, labelnames: Iterable[str] = (),
                 registry: Registry | None = None) -> None:  # fmt: skip
        super().__init__(name.removesuffix("_total"), documentation, labelnames, registry)

    def _new(self) -> CounterValue:
        return CounterValue()

    def inc(self, amount: float = 1.0) -> None:
        self._only().inc(amount)


class Gauge(_Metric[GaugeValue]):
    kind = "gauge"

    def _new(self) -> GaugeValue:
        return GaugeValue()

    def inc(self, amount: float = 1.0) -> None:
        self._only().inc(amount)

    def dec(self, amount: float = 1.0) -> None:
        self._only().dec(amount)

    def set(self, value: float) -> None:
        self._only().set(value)


class Histogram(_Metric[HistogramValue]):
    """Observations counted in cumulative buckets (`+Inf` added), with their sum."""

    kind = "histogram"

    def __init__(self, name: str, documentation: str, labelnames: Iterable[str] = (),
                 registry: Registry | None = None,
                 buckets: Sequence[float] = DEFAULT_BUCKETS) -> None:  # fmt: skip
        bounds = [float(b) for b in buckets]
        if bounds != sorted(bounds):
            raise ValueError("Buckets not in sorted order")
        if not bounds or bounds[-1] != math.inf:
            bounds.append(math.inf)
        if len(bounds) < 2:
            raise ValueError("Must have at least two buckets")
        if "le" in labelnames:
            raise ValueError("Reserved label metric name: le")
        self._bounds = tuple(bounds)
        super().__init__(name, documentation, labelnames, registry)

    def _new(self) -> HistogramValue:
        return HistogramValue(self._bounds)

    def observe(self, amount: float) -> None:
        self._only().observe(amount)


class Registry:
    """A component's collectors, scraped in the order they were registered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._collectors: list[Collector] = []
        self._names: set[str] = set()

    def register(self, collector: Collector) -> None:
        """Add `collector`; a second metric of the same name is an error."""
        with self._lock:
            if isinstance(collector, _Metric):
                if collector.name in self._names:
                    raise ValueError(f"Duplicated timeseries in Registry: {collector.name}")
                self._names.add(collector.name)
            self._collectors.append(collector)

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            collectors = list(self._collectors)
        for collector in collectors:
            yield from collector.collect()


def go_float(value: float) -> str:
    """A sample value or bucket bound as Go's strconv writes it (and Prometheus reads)."""
    d = float(value)
    if d == math.inf:
        return "+Inf"
    if d == -math.inf:
        return "-Inf"
    if math.isnan(d):
        return "NaN"
    s = repr(d)
    dot = s.find(".")
    if d > 0 and dot > 6:  # Go's %g has an exponent from 1e6 on, Python's repr from 1e16
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return s


def _label_value(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def render(found: Registry) -> bytes:
    """The registry's series in the Prometheus text format (CONTENT_TYPE)."""
    out: list[str] = []
    for family in found.collect():
        name = family.name + "_total" if family.type == "counter" else family.name
        text = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {name} {text}\n# TYPE {name} {family.type}\n")
        for series, labels, value in family.samples:
            if labels:
                pairs = ",".join(f'{k}="{_label_value(v)}"' for k, v in sorted(labels.items()))
                out.append(f"{series}{{{pairs}}} {go_float(value)}\n")
            else:
                out.append(f"{series} {go_float(value)}\n")
    return "".join(out).encode()


class _Process:
    """process_*: this process's CPU, memory, start time and file descriptors (/proc)."""

    def __init__(self) -> None:
        self._ticks = float(os.sysconf("SC_CLK_TCK"))
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._boot = 0.0
        try:
            with open("/proc/stat", "rb") as stat:
                for line in stat:
                    if line.startswith(b"btime "):
                        self._boot = float(line.split()[1])
        except OSError:
            pass

    def collect(self) -> list[Metric]:
        if not self._boot:
            return []
        found: list[Metric] = []
        try:
            with open("/proc/self/stat", "rb") as f:
                parts = f.read().split(b")")[-1].split()
            found += [
                GaugeMetricFamily("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                                  float(parts[20])),
                GaugeMetricFamily("process_resident_memory_bytes", "Resident memory size in bytes.",
                                  float(parts[21]) * self._page),
                GaugeMetricFamily("process_start_time_seconds",
                                  "Start time of the process since unix epoch in seconds.",
                                  float(parts[19]) / self._ticks + self._boot),
                CounterMetricFamily("process_cpu_seconds_total",
                                    "Total user and system CPU time spent in seconds.",
                                    (float(parts[11]) + float(parts[12])) / self._ticks),
            ]  # fmt: skip
        except OSError:
            pass
        try:
            limit = math.nan
            with open("/proc/self/limits", "rb") as f:
                for line in f:
                    if line.startswith(b"Max open file"):
                        limit = float(line.split()[3])
                        break
            fds = len(os.listdir("/proc/self/fd"))
            found += [
                GaugeMetricFamily("process_open_fds", "Number of open file descriptors.", fds),
                GaugeMetricFamily("process_max_fds", "Maximum number of open file descriptors.",
                                  limit),
            ]  # fmt: skip
        except OSError:
            pass
        return found


class _Python:
    """python_info and python_gc_*: the interpreter's (Go's go_* counterparts)."""

    def __init__(self) -> None:
        version = sys.version.split()[0]
        major, minor, patch = [*version.split("."), "", ""][:3]
        implementation = {"cpython": "CPython", "pypy": "PyPy"}.get(
            sys.implementation.name, sys.implementation.name
        )
        info = GaugeMetricFamily("python_info", "Python platform information",
                                 labels=["version", "implementation", "major", "minor",
                                         "patchlevel"])  # fmt: skip
        info.add_metric([version, implementation, major, minor, patch], 1)
        self._info = info

    def collect(self) -> list[Metric]:
        families = [
            CounterMetricFamily("python_gc_objects_collected", "Objects collected during gc",
                                labels=["generation"]),
            CounterMetricFamily("python_gc_objects_uncollectable",
                                "Uncollectable objects found during GC", labels=["generation"]),
            CounterMetricFamily("python_gc_collections",
                                "Number of times this generation was collected",
                                labels=["generation"]),
        ]  # fmt: skip
        for generation, stats in enumerate(gc.get_stats()):
            for family, key in zip(
                families, ("collected", "uncollectable", "collections"), strict=True
            ):
                family.add_metric([str(generation)], stats[key])
        return [self._info, *families]


def registry() -> Registry:
    """A component's own registry, with the process and interpreter series."""
    found = Registry()
    found.register(_Process())
    found.register(_Python())
    return found


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


class MetricsServer(ServerThread):
    """`/metrics` of one registry over plain HTTP (any path but /favicon.ico,
    as before); stop() closes it. Its modules load only when one is served."""

    def __init__(self, found: Registry, listen: str) -> None:
        import socket
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body, headers = b"", [("Content-Length", "0")]
                if self.path.split("?")[0] != "/favicon.ico":
                    body = render(found)
                    headers = [("Content-Type", PLAIN_CONTENT_TYPE)]
                    if _accepts_gzip(self.headers.get("Accept-Encoding", "")):
                        import gzip

                        body = gzip.compress(body)
                        headers.append(("Content-Encoding", "gzip"))
                    headers.append(("Content-Length", str(len(body))))
                self._reply(200, headers, body)

            def do_OPTIONS(self) -> None:
                self._reply(200, [("Allow", "OPTIONS,GET"), ("Content-Length", "0")], b"")

            def refuse(self) -> None:
                body = f"# HTTP 405 Method Not Allowed: {self.command}; use OPTIONS or GET\n"
                self._reply(405, [("Allow", "OPTIONS,GET"),
                                  ("Content-Length", str(len(body)))], body.encode())  # fmt: skip

            do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = refuse

            def _reply(self, code: int, headers: list[tuple[str, str]], body: bytes) -> None:
                self.send_response(code)
                for key, value in headers:
                    self.send_header(key, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        host, _, port = listen.rpartition(":")
        host = host.strip("[]") or "127.0.0.1"
        family, _, _, _, address = socket.getaddrinfo(
            host, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]

        class Server(ThreadingHTTPServer):
            address_family = family

        super().__init__(Server((str(address[0]), int(port)), Handler), "metrics-http")


def _accepts_gzip(header: str) -> bool:
    return any(part.split(";")[0].strip().lower() == "gzip" for part in header.split(","))


def serve(found: Registry, listen: str) -> MetricsServer:
    """Serve `found` on `listen` (HOST:PORT; port 0 picks one: `.port`)."""
    return MetricsServer(found, listen)


__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_BUCKETS",
    "POD_START_BUCKETS",
    "REQUEST_BUCKETS",
    "SCHEDULING_BUCKETS",
    "WORKQUEUE_BUCKETS",
    "Collector",
    "Counter",
    "CounterMetricFamily",
    "CounterValue",
    "Gauge",
    "GaugeMetricFamily",
    "GaugeValue",
    "Histogram",
    "HistogramValue",
    "Metric",
    "MetricsServer",
    "Registry",
    "registry",
    "render",
    "serve",
]
