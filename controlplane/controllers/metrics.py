"""The controller manager's /metrics: client-go's workqueue series per queue.

`workqueue_depth`, `workqueue_adds_total`, `workqueue_queue_duration_seconds`,
`workqueue_work_duration_seconds` and `workqueue_retries_total`, each with
`name` = the controller's queue name (`replicaset`, `deployment`...), as
kube-controller-manager exports them; `leader_election_master_status{name}`;
and `process_*`/`python_*`. One `ManagerMetrics` per manager, its registry
its own. Labels name a controller, never an object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from machinery import metrics
from machinery.metrics import Collector, Counter, GaugeMetricFamily, Histogram, Metric

Depths = Callable[[], dict[str, int]]


class _Observer:
    """One queue's children of the workqueue series (client-go's provider)."""

    def __init__(self, owner: ManagerMetrics, name: str) -> None:
        self._adds = owner.adds.labels(name)
        self._queue = owner.queue_duration.labels(name)
        self._work = owner.work_duration.labels(name)
        self._retries = owner.retries.labels(name)

    def added(self) -> None:
        self._adds.inc()

    def queued(self, seconds: float) -> None:
        self._queue.observe(seconds)

    def worked(self, seconds: float) -> None:
        self._work.observe(seconds)

    def retried(self) -> None:
        self._retries.inc()


class ManagerMetrics:
    def __init__(self, depths: Depths, leader: Callable[[], bool]) -> None:
        self.registry = metrics.registry()
        r = self.registry
        self.adds = Counter("workqueue_adds_total", "Total number of adds handled by workqueue",
                            ["name"], registry=r)  # fmt: skip
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            ["name"], buckets=metrics.WORKQUEUE_BUCKETS, registry=r,
        )  # fmt: skip
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            ["name"], buckets=metrics.WORKQUEUE_BUCKETS, registry=r,
        )  # fmt: skip
        self.retries = Counter("workqueue_retries_total",
                               "Total number of retries handled by workqueue", ["name"],
                               registry=r)  # fmt: skip
        r.register(_State(depths, leader))

    def observer(self, name: str) -> _Observer:
        return _Observer(self, name)


class _State(Collector):
    def __init__(self, depths: Depths, leader: Callable[[], bool]) -> None:
        self.depths = depths
        self.leader = leader

    def collect(self) -> Iterable[Metric]:
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue",
                                  labels=["name"])  # fmt: skip
        for name, n in sorted(self.depths().items()):
            depth.add_metric([name], n)
        yield depth
        master = GaugeMetricFamily("leader_election_master_status",
                                   "Gauge of if the reporting system is master of the relevant "
                                   "lease, 0 indicates backup, 1 indicates master. 'name' is the "
                                   "string used to identify the lease.", labels=["name"])  # fmt: skip
        master.add_metric(["kube-controller-manager"], 1 if self.leader() else 0)
        yield master
