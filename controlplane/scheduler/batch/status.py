"""The status writer: what the batch scheduler reports of PodGroups and Queues.

A PodGroup's status is its phase (Volcano's: Pending, Inqueue, Running,
Unknown, Completed), its member pods' counts by phase, and the gang's
Unschedulable condition while it is not ready (`group_status`), with a
Warning Unschedulable Event when that message is new (`group_events`).
After each session the scheduler hands the session to
`StatusReporter.report`: its active jobs and those `wanted()` (stale or
due; the cache says which became stale, as a `GroupListener`). A
PodGroup's status is written only when it changed, and a change of its pod
counts alone at most once per COUNTS_PERIOD; a status that
needs no computing (the same job signature, within its period) is *settled*:
not wanted, nor computed again, until the scheduler says the group is
`stale` or its period ends. Each queue's counts of jobs by phase are kept
up to date as its jobs' phases are computed, not counted again over every
job. Writes go off the session's thread, a few at a time and one per
object: a newer status waits for the next session.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from controlplane.client.errors import NotFound
from controlplane.scheduler.batch.info import NOT_ENOUGH_RESOURCES, JobInfo
from controlplane.scheduler.batch.queuestatus import queue_status
from controlplane.scheduler.batch.session import Session
from machinery import rfc3339
from machinery.clock import Clock

log = logging.getLogger(__name__)
Obj = dict[str, Any]

COUNTS = ("running", "succeeded", "failed")
COUNTS_PERIOD = 10.0  # seconds between status writes that only move its pod counts


class StatusWriter(Protocol):
    def write_status(self, kind: str, obj: Obj, status: Obj) -> None:
        """Replace the status fields given (a merge patch of the status subresource)."""
        ...

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """Record a core/v1 Event about `obj` (best effort: never raises)."""
        ...


def group_events(last: Obj | None, status: Obj) -> list[tuple[str, str, str]]:
    """The Events a PodGroup status written after `last` brings (Volcano's
    RecordJobStatusEvent): Warning Unschedulable with the gang's message when
    that message is new and the group waits (Pending, Inqueue, Unknown).
    (Volcano's Normal Scheduled on a running group is not written: one more
    write per gang, that nothing reads.)"""
    out = []
    cond = {c["type"]: c for c in status.get("conditions") or ()}
    before = {c["type"]: c for c in (last or {}).get("conditions") or ()}
    gang = cond.get("Unschedulable")
    waiting = status["phase"] in ("Pending", "Inqueue", "Unknown")
    if (
        waiting
        and gang is not None
        and gang["message"] != (before.get("Unschedulable") or {}).get("message")
    ):
        out.append(("Warning", "Unschedulable", str(gang["message"])))
    return out


@dataclass
class _Reported:
    pod_groups: dict[str, Obj] = field(default_factory=dict)
    queues: dict[str, Obj] = field(default_factory=dict)


class StatusReporter:
    def __init__(self, writer: StatusWriter, clock: Clock, workers: int = 0) -> None:
        self.writer = writer
        self.clock = clock
        # Per group, the phase of the last status computed, until when it needs
        # no computing again (for ever when it equals the one written; the end
        # of the counts period when only its pod counts moved) unless the group
        # or its pods change meanwhile, and what else of its job it depends on.
        self._settled: dict[str, tuple[str, float, tuple[Any, ...]]] = {}
        # Every group is settled or unsettled (wanted at the next report).
        self._unsettled: set[str] = set()
        self._until: list[tuple[float, str]] = []  # settled for a period: when it ends
        # Per group its queue and phase as last computed; per queue its jobs by phase.
        self._phase: dict[str, tuple[str, str]] = {}
        self._per_queue: dict[str, dict[str, int]] = {}
        self._reported = _Reported()
        self._count_written: dict[str, float] = {}
        self._status_lock = threading.Lock()
        self._status_inflight: set[tuple[str, str]] = set()
        self._failed: list[str] = []  # groups whose write failed (written by the pool)
        # None: written inline (tests); the component writes from a small pool.
        self._status_pool: ThreadPoolExecutor | None = (
            ThreadPoolExecutor(workers, thread_name_prefix="volcano-status") if workers else None
        )

    def stale(self, group: str) -> None:
        """The group or its pods changed: compute its status again."""
        self._settled.pop(group, None)
        self._unsettled.add(group)

    def all_stale(self) -> None:
        self._unsettled.update(self._settled)
        self._settled.clear()

    def forget(self, group: str) -> None:
        """The group is gone."""
        self._settled.pop(group, None)
        self._unsettled.discard(group)
        self._reported.pod_groups.pop(group, None)
        self._count_written.pop(group, None)
        self._set_phase(group, None)

    def counts_moved(self, group: str) -> None:
        """Only a member pod's phase moved (its status written, nothing the
        cache counts): the group's counts are due by the end of their period,
        not computed again at once."""
        settled = self._settled.get(group)
        if settled is None:
            return  # computed at the next report anyway
        until = min(settled[1], self._count_written.get(group, 0.0) + COUNTS_PERIOD)
        if until != settled[1]:
            self._settled[group] = (settled[0], until, settled[2])
            heapq.heappush(self._until, (until, group))

    def wanted(self) -> set[str]:
        """The groups whose status must be computed at the next report: stale,
        or settled for a period that has ended, or whose write failed."""
        with self._status_lock:
            failed, self._failed = self._failed, []
        for key in failed:
            self.stale(key)
        now = self.clock.monotonic()
        while self._until and self._until[0][0] <= now:
            _, key = heapq.heappop(self._until)
            settled = self._settled.get(key)
            if settled is not None and settled[1] <= now:
                self.stale(key)
        return set(self._unsettled)

    def _set_phase(self, group: str, queue_phase: tuple[str, str] | None) -> None:
        old = self._phase.pop(group, None)
        if old is not None:
            self._per_queue[old[0]][old[1]] -= 1
        if queue_phase is not None:
            self._phase[group] = queue_phase
            counts = self._per_queue.setdefault(queue_phase[0], {})
            counts[queue_phase[1]] = counts.get(queue_phase[1], 0) + 1

    def _settle(self, group: str, phase: str, until: float, sig: tuple[Any, ...]) -> None:
        self._settled[group] = (phase, until, sig)
        self._unsettled.discard(group)
        if until != float("inf"):
            heapq.heappush(self._until, (until, group))

    def close(self) -> None:
        if self._status_pool is not None:
            self._status_pool.shutdown(wait=True, cancel_futures=True)

    def _now(self) -> str:
        return rfc3339.format_datetime(self.clock.utcnow())

    def group_status(self, job: JobInfo, ready: bool, counts: Mapping[str, int]) -> Obj:
        """The PodGroup status of a job after a session (`ready`: the session's
        plugins say so) with its member pods' `counts` by phase.

        The phase is Volcano's (framework's jobStatus): Unknown while some of
        its pods run but the gang is unschedulable (a member gone and not
        placed again); Running once minMember pods are placed or finished,
        Completed when all of those finished (succeeded or failed); else
        Inqueue if enqueued, Pending. The condition is gang's: Unschedulable
        with why while the gang is not ready, Scheduled once it is."""
        unschedulable = bool(job.unschedulable) and not ready
        done = job.done + job.failed
        scheduled = len(job.placed) + done
        if counts["running"] and unschedulable:
            phase = "Unknown"
        elif scheduled >= job.min_member and scheduled:
            phase = "Completed" if scheduled == done else "Running"
        else:
            phase = "Inqueue" if job.phase == "Inqueue" else "Pending"
        status: Obj = {"phase": phase, **counts}
        if unschedulable:
            status["conditions"] = [{
                "type": "Unschedulable", "status": "True",
                "reason": job.unschedulable_reason or NOT_ENOUGH_RESOURCES,
                "message": job.unschedulable, "transitionID": "",
            }]  # fmt: skip
        elif phase == "Running":
            status["conditions"] = [{
                "type": "Scheduled", "status": "True", "reason": "tasks in gang are ready to be scheduled",
                "message": "", "transitionID": "",
            }]  # fmt: skip
        return status

    def report(
        self,
        ssn: Session,
        queue_objects: Mapping[str, Obj],
        phase_counts: Callable[[str], Mapping[str, int]],
    ) -> None:
        """Write what changed of each job's PodGroup status and of each queue's,
        under the scheduler's lock (`phase_counts`: a group's member pods by phase).
        The session's jobs hold at least the groups `wanted()` (a group that
        is not there and has no queue any more stays wanted)."""
        now = self.clock.monotonic()
        for job in ssn.jobs.values():
            settled = self._settled.get(job.key)
            sig = (job.phase, job.unschedulable, len(job.placed), bool(job.pending))
            if settled is not None and now < settled[1] and sig == settled[2]:
                continue
            status = self.group_status(job, ssn.job_ready(job), phase_counts(job.key))
            phase = status["phase"].lower()
            self._set_phase(job.key, (job.queue, phase))
            last = self._reported.pod_groups.get(job.key)
            if last == status:
                self._settle(job.key, phase, float("inf"), sig)
                continue
            self.stale(job.key)
            if (
                last is not None
                and {k: v for k, v in last.items() if k not in COUNTS}
                == {k: v for k, v in status.items() if k not in COUNTS}
                and now - self._count_written.get(job.key, 0.0) < COUNTS_PERIOD
            ):
                # Only the pod counts moved: at most one such write per period.
                until = self._count_written.get(job.key, 0.0) + COUNTS_PERIOD
                self._settle(job.key, phase, until, sig)
                continue
            self._count_written[job.key] = now
            old = job.group.get("status") or {}
            stamped = dict(status)
            if "conditions" in status:
                prev = {c.get("type"): c for c in old.get("conditions") or ()}
                conds = []
                for c in status["conditions"]:
                    p = prev.get(c["type"])
                    same = p is not None and p.get("message") == c["message"]
                    conds.append(
                        {
                            **c,
                            "lastTransitionTime": p.get("lastTransitionTime")
                            if same and p
                            else self._now(),
                        }
                    )
                stamped["conditions"] = conds
            if self._submit_status("PodGroup", job.key, job.group, stamped, status):
                # Written (or being written): nothing to compute until its echo
                # or a change makes it stale, or the write fails.
                self._settle(job.key, phase, float("inf"), sig)
        for name, q in ssn.queues.items():
            status = queue_status(self._per_queue.get(name, {}), q.allocated)
            if self._reported.queues.get(name) == status:
                continue
            self._submit_status("Queue", name, queue_objects[name], status, status)

    def _submit_status(self, kind: str, key: str, obj: Obj, stamped: Obj, status: Obj) -> bool:
        """Write a status off the session's thread (a few writes in flight, one per
        object at a time: a newer status waits for the next session; False)."""
        reported = self._reported.pod_groups if kind == "PodGroup" else self._reported.queues
        with self._status_lock:
            if (kind, key) in self._status_inflight:
                return False
            self._status_inflight.add((kind, key))

        def write() -> None:
            try:
                self.writer.write_status(kind, obj, stamped)
                last = reported.get(key)
                reported[key] = status
                if kind == "PodGroup":
                    for type_, reason, message in group_events(last, status):
                        self.writer.event(obj, type_, reason, message)
            except NotFound:
                pass  # deleted meanwhile; its DELETED event follows
            except Exception:
                log.exception("status of %s %s", kind, key)
                if kind == "PodGroup":
                    with self._status_lock:
                        self._failed.append(key)  # computed and written again
            finally:
                with self._status_lock:
                    self._status_inflight.discard((kind, key))

        if self._status_pool is None:
            write()
        else:
            self._status_pool.submit(write)
        return True
