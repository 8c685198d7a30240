"""The batch scheduler's /metrics, with Volcano's names (pkg/scheduler/metrics).

- `volcano_e2e_scheduling_latency_milliseconds`: each session, from its
  snapshot to its binds and status writes (Volcano's buckets, 5 ms doubling);
- `volcano_schedule_attempts_total{result}`: tasks placed (`scheduled`) and
  tasks a session found pending and left so (`unschedulable`), sessions that
  failed (`error`);
- `volcano_pod_preemption_victims`: the victims the last session evicted;
  `volcano_total_preemption_attempts`: sessions that evicted any;
- `volcano_unschedule_job_counts` is not kept (skiff's sessions do not count
  jobs left unscheduled apart from their tasks);
- `process_*`, `python_*`.

One `BatchMetrics` per batch-scheduler process (`for_process`); labels
never name a job or a pod.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from machinery import metrics
from machinery.metrics import Counter, Gauge, Histogram

if TYPE_CHECKING:  # the scheduler (and NumPy) loads with the first pod (wake.py)
    from controlplane.scheduler.batch.scheduler import SessionStats

E2E_BUCKETS = tuple(5.0 * 2**i for i in range(10))  # Volcano's ExponentialBuckets(5, 2, 10)


class BatchMetrics:
    def __init__(self) -> None:
        self.registry = metrics.registry()
        r = self.registry
        self.e2e = Histogram("volcano_e2e_scheduling_latency_milliseconds",
                             "E2e scheduling latency in milliseconds (scheduling algorithm + "
                             "binding)", buckets=E2E_BUCKETS, registry=r)  # fmt: skip
        self.attempts = Counter("volcano_schedule_attempts_total",
                                "Number of attempts to schedule pods, by the result. "
                                "'unschedulable' means a pod could not be scheduled, while "
                                "'error' means an internal scheduler problem.",
                                ["result"], registry=r)  # fmt: skip
        self.victims = Gauge("volcano_pod_preemption_victims",
                             "Number of selected preemption victims", registry=r)  # fmt: skip
        self.preemptions = Counter("volcano_total_preemption_attempts",
                                   "Total preemption attempts in the cluster till now",
                                   registry=r)  # fmt: skip
        for result in ("scheduled", "unschedulable", "error"):
            self.attempts.labels(result)

    def session(self, stats: SessionStats | None) -> None:
        if stats is None:
            self.attempts.labels("error").inc()
            return
        self.e2e.observe(stats.seconds * 1000)
        if stats.bound:
            self.attempts.labels("scheduled").inc(stats.bound)
        left = stats.pending - stats.bound
        if left > 0:
            self.attempts.labels("unschedulable").inc(left)
        self.victims.set(stats.evicted)
        if stats.evicted:
            self.preemptions.inc()


# This process's batch scheduler metrics (made on first use).
for_process = metrics.PerProcess(BatchMetrics)
