"""The scheduler's /metrics, with kube-scheduler's names and labels.

- `scheduler_schedule_attempts_total{result,profile}`: every scheduling
  attempt, `scheduled`, `unschedulable` or `error`;
- `scheduler_scheduling_attempt_duration_seconds{result,profile}`
  (kube-scheduler's buckets);
- `scheduler_pending_pods{queue}`: pods in the `active`, `backoff`,
  `unschedulable` and `gated` queues, read at scrape time;
- `process_*`, `python_*`.

One `SchedulerMetrics` per scheduler process (`for_process`), kept across
leadership terms; each term's Scheduler reports to it and points its queue
gauge at its own queue. Labels name a profile, never a pod.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from machinery import metrics
from machinery.metrics import Collector, Counter, GaugeMetricFamily, Histogram, Metric

QUEUES = ("active", "backoff", "unschedulable", "gated")
Lengths = Callable[[], dict[str, int]]


class SchedulerMetrics:
    def __init__(self) -> None:
        self.registry = metrics.registry()
        self.attempts = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"], registry=self.registry,
        )  # fmt: skip
        self.duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"], buckets=metrics.SCHEDULING_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.pending = _Pending()
        self.registry.register(self.pending)

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        self.attempts.labels(result, profile).inc()
        self.duration.labels(result, profile).observe(seconds)


class _Pending(Collector):
    def __init__(self) -> None:
        self.lengths: Lengths | None = None

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily("scheduler_pending_pods",
                                   "Number of pending pods, by the queue type. 'active' means "
                                   "number of pods in activeQ; 'backoff' means number of pods in "
                                   "backoffQ; 'unschedulable' means number of pods in "
                                   "unschedulablePods that the scheduler attempted to schedule "
                                   "and failed; 'gated' is the number of unschedulable pods that "
                                   "the scheduler never attempted to schedule because they are "
                                   "gated.", labels=["queue"])  # fmt: skip
        found = self.lengths() if self.lengths is not None else {}
        for queue in QUEUES:
            family.add_metric([queue], found.get(queue, 0))
        yield family


# This process's scheduler metrics (made on first use).
for_process = metrics.PerProcess(SchedulerMetrics)
