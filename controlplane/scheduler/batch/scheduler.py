"""The batch scheduler's loop: a session whenever something changed, its decisions written.

`BatchScheduler` puts the parts together, each with one job:

- the cache (cache.py): informer events in, under one lock, kept as the
  sessions need them (the nodes and placed pods as arrays, the groups,
  queues and pending pods, the per-group snapshots);
- the session driver (driver.py): a session over the snapshot, the
  configuration's plugins and actions as the registry has them
  (registry.py, builtin.py), the room held for preemptors between sessions;
- the binder (binder.py): the session's binds (batched, written off the
  session's thread in the component; one by one after PreBind for pods
  with claims to bind) and evictions;
- the status writer (status.py): the PodGroups' and Queues' status, when it
  changed, computed again only for groups that changed;
- this loop: `run_session()` is one round of the three, `run()` repeats it.

Filters and scores are the default scheduler's plugins, built by their
factories into one Framework (nodeplugins.py) with a `NodeHandle` over the
cache: filter and score plugins need nothing else (no Permit stage, no
nominator). The tasks of one template are judged on every node once per
session, then only where a node changed (placement.py). A placement runs
Reserve; its cycle state goes with the bind to PreBind. Binds whose
informer event never comes expire after the cache's TTL, as the default
scheduler's do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from controlplane.scheduler.batch.binder import Binder, BindWriter
from controlplane.scheduler.batch.builtin import REGISTRY
from controlplane.scheduler.batch.cache import BatchCache
from controlplane.scheduler.batch.conf import Conf
from controlplane.scheduler.batch.driver import SessionDriver
from controlplane.scheduler.batch.registry import Registry
from controlplane.scheduler.batch.status import StatusReporter, StatusWriter
from controlplane.scheduler.handle import CacheHandle
from machinery.clock import Clock, RealClock

log = logging.getLogger("skiff.scheduler.batch")


class BatchWriter(BindWriter, StatusWriter, Protocol):
    """Where the batch scheduler writes: binds, evictions and status."""


@dataclass
class SessionStats:
    seconds: float = 0.0
    jobs: int = 0
    pending: int = 0  # pods pending when the session began
    bound: int = 0
    evicted: int = 0
    enqueued: int = 0
    cpu_seconds: float = 0.0  # of the session's thread (what the machine's load does not stretch)
    cut_short: bool = False  # its actions ran out of time: work is left for the next one


class BatchScheduler:
    def __init__(
        self,
        conf: Conf,
        writer: BatchWriter,
        clock: Clock | None = None,
        registry: Registry = REGISTRY,
        # Seconds the actions may place pods for; the binds and status writes
        # after them take about as long again, within the 1 s a session may last.
        session_budget: float = 0.25,
        status_writers: int = 0,
        volume_binders: int = 0,
        background_binds: bool = False,
    ) -> None:
        conf = registry.check(conf)
        self.clock = clock or RealClock()
        self.status = StatusReporter(writer, self.clock, status_writers)
        self.cache = BatchCache(self.clock, self.status)
        cache = self.cache
        handle = CacheHandle(cache.cluster, cache.volumes, cache.pending.get)
        self.framework = registry.framework(conf, handle)
        self.driver = SessionDriver(conf, registry, cache, self.framework, self.clock,
                                    session_budget)  # fmt: skip
        self.binder = Binder(writer, cache, self.framework, volume_binders, background_binds)
        self.stats: list[SessionStats] = []
        # Told each session's figures, or None when one failed (/metrics).
        self.on_session: Callable[[SessionStats | None], None] | None = None

    def run_session(self) -> SessionStats:
        try:
            stats = self._session()
        except Exception:
            if self.on_session is not None:
                self.on_session(None)
            raise
        if self.on_session is not None:
            self.on_session(stats)
        return stats

    def _session(self) -> SessionStats:
        start, cpu_start = self.clock.monotonic(), time.thread_time()
        cache = self.cache
        with cache.lock:
            ssn, pending = self.driver.run(self.status.wanted())
        out = ssn.outcome
        self.binder.bind(out.binds, out.bind_states)
        self.binder.evict(out.evictions)
        with cache.lock:  # against handlers unsettling a group while it is settled here
            self.status.report(ssn, cache.queues, cache.phase_counts)
        stats = SessionStats(
            self.clock.monotonic() - start,
            len(ssn.jobs),
            pending,
            len(out.binds),
            len(out.evictions),
            len(out.enqueued),
            time.thread_time() - cpu_start,
            ssn.out_of_time(),
        )
        self.stats.append(stats)
        if len(self.stats) > 10_000:
            del self.stats[:5_000]
        return stats

    def close(self) -> None:
        self.status.close()
        self.binder.close()

    def run(self, stop: threading.Event, period: float = 1.0, min_gap: float = 0.2) -> None:
        """A session when something changed, at least every `period` (Volcano's
        schedulePeriod is 1 s).

        Between two sessions at least `min_gap`, and at least half the CPU time
        the last session took (not its wall time: that includes the waits for
        the CPU and for the API server): while events keep coming (they do, a few per pod)
        each session gathers more pods, its fixed cost (the snapshot's queues,
        the plugins' set-up, each task template judged on every node) is paid
        a few times a second rather than at every event, and the API server
        and controllers that share the process (and its GIL) keep the rest. A
        session cut short by its budget is followed at once (`backlog_gap`):
        pods are waiting.
        """
        backlog_gap = 0.02
        dirty = self.cache.dirty
        while not stop.is_set():
            dirty.wait(period)
            if stop.is_set():
                return
            dirty.clear()
            gap = min_gap
            try:
                st = self.run_session()
                gap = backlog_gap if st.cut_short else max(min_gap, st.cpu_seconds / 2)
                if st.cut_short:
                    dirty.set()
            except Exception:
                log.exception("batch scheduling session failed")
            stop.wait(gap)
