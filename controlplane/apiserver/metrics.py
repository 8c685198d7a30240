"""The API server's /metrics: kube-apiserver's series, names and labels.

- `apiserver_request_total{verb,group,version,resource,subresource,scope,component,code}`
  and `apiserver_request_duration_seconds` (kube-apiserver's buckets) for
  every REST and gRPC request; verbs as kube-apiserver reports them (LIST,
  GET, WATCH, POST, PUT, PATCH, DELETE, CONNECT), scope `cluster`,
  `namespace` or `resource`, component `apiserver`. Labels name the kind,
  never an object or a namespace, and a request for a path that names no
  kind is counted with empty resource labels: the number of series is
  bounded by the kinds, whatever the number of objects or callers.
- `apiserver_current_inflight_requests{request_kind}` (`readOnly`,
  `mutating`) and `apiserver_flowcontrol_current_executing_requests` /
  `apiserver_flowcontrol_rejected_requests_total{priority_level,flow_schema,reason}`
  from API Priority and Fairness (flowcontrol.py): the priority levels and
  flow schemas are the stored PriorityLevelConfigurations and FlowSchemas;
  `apiserver_flowcontrol_{nominal,lower,upper,current}_limit_seats{priority_level}`
  and `apiserver_flowcontrol_seat_fair_frac`: each Limited level's seats as
  borrowing between the levels sets them (apf_borrowing.py).
- `apiserver_longrunning_requests` (open watches, per resource) and
  `apiserver_registered_watchers{group,version,kind}` (the watch cache's).
- `apiserver_storage_objects{resource}`: stored objects per resource,
  counted at most once a minute (as kube-apiserver does), on a scrape.
- `etcd_request_duration_seconds{operation,type}` from storage/timed.py.
- `skiff_certificate_expiration_timestamp_seconds{certificate}`: when each
  certificate under the data dir's pki/ expires (unix seconds), re-read on
  every scrape, so a rotation shows at once (alert on `... - time() < 30 * 86400`).
- `process_*` and `python_*` (machinery/metrics.py).

`ApiServerMetrics.registry` is this server's own; the REST front door serves
it on `/metrics` to callers allowed `get` on that non-resource URL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator

from controlplane.api.kinds import UnknownKind, all_kinds, by_kind
from controlplane.api.kinds.info import KindInfo
from controlplane.apiserver.flowcontrol import FlowControl, LevelLimits
from controlplane.storage.interface import Store
from machinery import metrics
from machinery.metrics import (
    Collector,
    Counter,
    CounterMetricFamily,
    CounterValue,
    Gauge,
    GaugeMetricFamily,
    Histogram,
    HistogramValue,
    Metric,
)

COMPONENT = "apiserver"
LABELS = ("verb", "group", "version", "resource", "subresource", "scope", "component")
# gRPC method -> (verb, subresource), kube-apiserver's verbs.
RPC_VERBS = {
    "Create": ("POST", ""), "CreateMany": ("POST", ""), "Get": ("GET", ""),
    "List": ("LIST", ""), "ListStream": ("LIST", ""), "Update": ("PUT", ""),
    "Patch": ("PATCH", ""), "Delete": ("DELETE", ""), "Watch": ("WATCH", ""),
    "GetScale": ("GET", "scale"), "UpdateScale": ("PUT", "scale"), "Bind": ("POST", "binding"),
}  # fmt: skip
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
COUNT_EVERY = 60.0  # seconds between counts of the stored objects
# kube-apiserver's gauges of a priority level's seats (name, help, which figure)
SEAT_LIMITS: tuple[tuple[str, str, Callable[[LevelLimits], int]], ...] = (
    ("apiserver_flowcontrol_nominal_limit_seats",
     "Nominal number of execution seats configured for each priority level",
     lambda s: s.nominal),
    ("apiserver_flowcontrol_lower_limit_seats",
     "Configured lower bound on number of execution seats available to each priority level",
     lambda s: s.lower),
    ("apiserver_flowcontrol_upper_limit_seats",
     "Configured upper bound on number of execution seats available to each priority level",
     lambda s: s.upper),
    ("apiserver_flowcontrol_current_limit_seats",
     "current derived number of execution seats available to each priority level",
     lambda s: s.current),
)  # fmt: skip

Labels = tuple[str, str, str, str, str, str, str]


def scope(info: KindInfo | None, namespace: str, name: str) -> str:
    if info is None:
        return ""
    if name:
        return "resource"
    return "namespace" if namespace and info.namespaced else "cluster"


def rest_verb(method: str, named: bool, watch: bool, subresource: str) -> str:
    """kube-apiserver's verb label of an HTTP request."""
    if watch:
        return "WATCH"
    if method == "GET" and not named and not subresource:
        return "LIST"
    if subresource in ("exec", "attach", "portforward", "proxy") or (
        subresource == "log" and method == "GET"
    ):
        return "CONNECT"
    return method


def labels(verb: str, info: KindInfo | None, version: str, subresource: str, where: str) -> Labels:
    if info is None:
        return (verb, "", "", "", "", "", COMPONENT)
    return (verb, info.group, version or info.version, info.plural, subresource, where, COMPONENT)


class ApiServerMetrics:
    """See the module docstring. Thread-safe."""

    def __init__(self, flow: FlowControl, store: Store | None = None,
                 watchers: Callable[[], dict[str, int]] | None = None) -> None:  # fmt: skip
        self.registry = metrics.registry()
        r = self.registry
        self.requests = Counter(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, dry run value, group, "
            "version, resource, scope, component, and HTTP response code.",
            [*LABELS, "code"], registry=r,
        )  # fmt: skip
        self.duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, "
            "version, resource, subresource, scope and component.",
            LABELS, buckets=metrics.REQUEST_BUCKETS, registry=r,
        )  # fmt: skip
        self.longrunning = Gauge(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, "
            "version, resource, scope and component.",
            LABELS, registry=r,
        )  # fmt: skip
        self.storage = Histogram(
            "etcd_request_duration_seconds",
            "Etcd request latency in seconds for each operation and object type.",
            ["operation", "type"], buckets=metrics.REQUEST_BUCKETS, registry=r,
        )  # fmt: skip
        self._children: dict[Labels, tuple[HistogramValue, dict[int, CounterValue]]] = {}
        self._storage_children: dict[tuple[str, str], HistogramValue] = {}
        self._rpc_keys: dict[tuple[str, str, bool], Labels | None] = {}
        self._lock = threading.Lock()
        self.state = _State(flow, store, watchers)  # its store and watchers may come later
        r.register(self.state)

    def certificates(self, expirations: Callable[[], dict[str, float]]) -> None:
        """Export `expirations()` (certificate file -> notAfter, unix seconds)."""
        self.registry.register(_Certificates(expirations))

    def request(self, key: Labels, code: int, seconds: float) -> None:
        """One request answered with `code` after `seconds`."""
        found = self._children.get(key)
        if found is None:
            with self._lock:
                found = self._children.setdefault(key, (self.duration.labels(*key), {}))
        histogram, counters = found
        counter = counters.get(code)
        if counter is None:
            with self._lock:
                counter = counters.setdefault(code, self.requests.labels(*key, str(code)))
        counter.inc()
        if key[0] != "WATCH":  # a watch's duration is its life, not its latency
            histogram.observe(seconds)

    def rpc_labels(self, method: str, kind: str, namespace: str) -> Labels | None:
        """The labels of a gRPC call (None: a method that is not a resource request)."""
        key = (method, kind, bool(namespace))
        found = self._rpc_keys.get(key)
        if found is not None or key in self._rpc_keys:
            return found
        verb_sub = RPC_VERBS.get(method)
        info: KindInfo | None = None
        if verb_sub is not None:
            try:
                info = by_kind(kind)
            except UnknownKind:
                info = None
        if verb_sub is None:
            found = None
        else:
            verb, sub = verb_sub
            named = verb in ("GET", "PUT", "PATCH", "DELETE") or bool(sub)
            where = scope(info, namespace, "x" if named else "")
            found = labels(verb, info, "", sub, where)
        if info is not None or verb_sub is None:  # unknown kinds are not remembered
            with self._lock:
                self._rpc_keys[key] = found
        return found

    def watch(self, key: Labels) -> Callable[[], None]:
        """Count an open watch; returns the function that ends it (once)."""
        gauge = self.longrunning.labels(*key)
        gauge.inc()
        done = threading.Event()

        def end() -> None:
            if not done.is_set():
                done.set()
                gauge.dec()

        return end

    def observe_storage(self, operation: str, resource: str, seconds: float) -> None:
        child = self._storage_children.get((operation, resource))
        if child is None:
            with self._lock:
                child = self._storage_children.setdefault(
                    (operation, resource), self.storage.labels(operation, resource)
                )
        child.observe(seconds)


class _State(Collector):
    """The series read from the server's state at scrape time."""

    def __init__(self, flow: FlowControl, store: Store | None,
                 watchers: Callable[[], dict[str, int]] | None) -> None:  # fmt: skip
        self.flow = flow
        self.store = store
        self.watchers = watchers
        self._counts: dict[str, int] = {}
        self._counted = -COUNT_EVERY
        self._lock = threading.Lock()

    def collect(self) -> Iterable[Metric]:
        running, rejected = self.flow.snapshot()
        current = GaugeMetricFamily(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per "
            "request kind in last second.", labels=["request_kind"],
        )  # fmt: skip
        for kind, mutating in (("readOnly", False), ("mutating", True)):
            current.add_metric([kind], sum(n for (_, _, m), n in running.items() if m == mutating))
        yield current
        executing = GaugeMetricFamily(
            "apiserver_flowcontrol_current_executing_requests",
            "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution "
            "stage in the API Priority and Fairness subsystem",
            labels=["priority_level", "flow_schema"],
        )  # fmt: skip
        by_flow: dict[tuple[str, str], int] = {}
        for (level, schema, _), n in running.items():
            by_flow[(level, schema)] = by_flow.get((level, schema), 0) + n
        for (level, schema), n in sorted(by_flow.items()):
            executing.add_metric([level, schema], n)
        yield executing
        refused = CounterMetricFamily(
            "apiserver_flowcontrol_rejected_requests_total",
            "Number of requests rejected by API Priority and Fairness subsystem",
            labels=["priority_level", "flow_schema", "reason"],
        )
        for (level, schema, reason), n in sorted(rejected.items()):
            refused.add_metric([level, schema, reason], n)
        yield refused
        yield from self._seat_limits()
        yield from self._watchers()
        yield from self._objects()

    def _seat_limits(self) -> Iterator[Metric]:
        """Each Limited level's seats as borrowing sets them (apf_borrowing)."""
        limits = self.flow.level_limits()
        for name, helptext, pick in SEAT_LIMITS:
            family = GaugeMetricFamily(name, helptext, labels=["priority_level"])
            for level, seats in sorted(limits.items()):
                family.add_metric([level], pick(seats))
            yield family
        yield GaugeMetricFamily(
            "apiserver_flowcontrol_seat_fair_frac",
            "Fair fraction of server's concurrency to allocate to each priority level that can "
            "use it", value=self.flow.fair_fraction,
        )  # fmt: skip

    def _watchers(self) -> Iterator[Metric]:
        if self.watchers is None:
            return
        family = GaugeMetricFamily(
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resources",
            labels=["group", "version", "kind"],
        )
        by_storage = {info.storage_name: info for info in all_kinds()}
        for storage_name, n in sorted(self.watchers().items()):
            info = by_storage.get(storage_name)
            if info is not None:
                family.add_metric([info.group, info.version, info.kind], n)
        yield family

    def _objects(self) -> Iterator[Metric]:
        if self.store is None:
            return
        with self._lock:
            if time.monotonic() - self._counted >= COUNT_EVERY:
                self._counts = _count(self.store)
                self._counted = time.monotonic()
            counts = dict(self._counts)
        family = GaugeMetricFamily(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind.",
            labels=["resource"],
        )
        for resource, n in sorted(counts.items()):
            family.add_metric([resource], n)
        yield family


def _count(store: Store) -> dict[str, int]:
    """Stored objects per resource (`plural.group`, as kube-apiserver names them)."""
    counts: dict[str, int] = {}
    for info in all_kinds():
        if info.create_only or info.read_only:
            continue
        n = 0
        for page in store.scan(f"/registry/{info.storage_name}/", 2000):
            n += len(page.items)
        counts[info.resource] = n
    return counts


class _Certificates(Collector):
    def __init__(self, expirations: Callable[[], dict[str, float]]) -> None:
        self.expirations = expirations

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            "skiff_certificate_expiration_timestamp_seconds",
            "When each certificate of the control plane's pki/ expires, in unix seconds.",
            labels=["certificate"],
        )
        for name, when in sorted(self.expirations().items()):
            family.add_metric([name], when)
        yield family
