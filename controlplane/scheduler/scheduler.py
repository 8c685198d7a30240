"""The scheduler: informer events in, one pod at a time through its profile, binds out.

`Scheduler` wires the queue, the cache, the profiles (one `Framework` per
schedulerName, built by profile.py with this scheduler's `Handle`), the
waiting pods (waiting.py) and a `ClusterWriter`. Event handlers (events.py:
`on_pod_*`, `on_node_*`, `on_pod_group`) only update the cache and the queue.
`schedule_one()` is kube-scheduler's scheduleOne: pop, filter+score against
the cache (assumed pods included), assume, Reserve, Permit, then the binding
cycle (PreBind, Bind, PostBind) on the executor. A pod that fits nowhere gets
PostFilter (preemption), an explanation (`0/5 nodes are available: ...`) and
goes back to the queue; a failed bind forgets the assumption and requeues.
Permit "wait" parks the pod until a plugin allows it or its timeout passes
(`tick()` checks deadlines; `run()` sleeps on the queue until the next one).

This module never talks to the API server itself; the writer does.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controlplane.scheduler import explain
from controlplane.scheduler.binder import BindError, ClusterWriter, Executor, InlineExecutor
from controlplane.scheduler.cache import CPU_COL, MEM_COL, Cache
from controlplane.scheduler.config import SchedulerConfig
from controlplane.scheduler.events import EventHandlers
from controlplane.scheduler.framework import FitError, Framework
from controlplane.scheduler.groups import PodGroups
from controlplane.scheduler.handle import CacheHandle, Slots
from controlplane.scheduler.metrics import SchedulerMetrics
from controlplane.scheduler.names import DEFAULT_BINDER
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.profile import build_profiles
from controlplane.scheduler.queue import QueuedPodInfo, SchedulingQueue
from controlplane.scheduler.registry import REGISTRY, Factory
from controlplane.scheduler.types import (
    POD_DELETE,
    Clock,
    ClusterEvent,
    Code,
    CycleState,
    RealClock,
    Status,
)
from controlplane.scheduler.volume_state import VolumeState
from controlplane.scheduler.waiting import WaitingPod, WaitingPods

log = logging.getLogger("skiff.scheduler")
SCORES_ANNOTATION = explain.SCORES_ANNOTATION


def breakdown_json(breakdown: dict[str, Any]) -> str:
    """The compact JSON of a decision's per-plugin scores kept in the pod annotation.

    {"chosen": {"node", "total", "plugins": {name: [score, weight]}}, "runnerUp": ..., "feasibleNodes"}.
    Written by hand (names are DNS names and plugin identifiers): json.dumps
    cost more than the rest of the bind on the in-process path.
    """
    parts = []
    for label, entry in zip(("chosen", "runnerUp"), breakdown.get("nodes") or (), strict=False):
        plugins = ",".join(
            f'"{name}":[{v["score"]},{v["weight"]}]' for name, v in sorted(entry["plugins"].items())
        )
        parts.append(
            f'"{label}":{{"node":{json.dumps(entry["node"])},"plugins":{{{plugins}}},"total":{entry["total"]}}}'
        )
    parts.append(f'"feasibleNodes":{int(breakdown.get("feasible", 0))}')
    return "{" + ",".join(parts) + "}"


Obj = dict[str, Any]


@dataclass
class Decision:
    """The last scheduling decision for a pod: explanation or score breakdown."""

    node: str = ""
    message: str = ""
    breakdown: dict[str, Any] = field(default_factory=dict)
    nominated: str = ""


_Binding = tuple[Framework, CycleState, QueuedPodInfo, str]


class _BindLoop:
    """Binding cycles queued by the scheduling loop and bound in batches.

    A few threads take everything queued (up to `max_batch`) and hand it to
    `Scheduler._bind_batch`, one `bind_many` call per batch: while some
    batches are in flight the next pods queue up (a group commit), so a busy
    scheduler sends few calls and an idle one sends each pod at once. Queueing
    costs the scheduling loop an append, not a thread hand-off per pod.
    """

    def __init__(self, scheduler: Scheduler, threads: int, max_batch: int = 256) -> None:
        self.scheduler = scheduler
        self.max_batch = max_batch
        self.cond = threading.Condition()
        self.pending: deque[_Binding] = deque()
        self.closed = False
        self.threads = [
            threading.Thread(target=self._run, name=f"bind-batch-{i}", daemon=True)
            for i in range(threads)
        ]
        for t in self.threads:
            t.start()

    def submit(self, item: _Binding) -> None:
        with self.cond:
            self.pending.append(item)
            self.cond.notify()

    def _run(self) -> None:
        while True:
            with self.cond:
                while not self.pending and not self.closed:
                    self.cond.wait()
                if not self.pending:
                    return
                n = min(len(self.pending), self.max_batch)
                batch = [self.pending.popleft() for _ in range(n)]
            self.scheduler._bind_batch(batch)

    def close(self, timeout: float = 30.0) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        for t in self.threads:
            if t is not threading.current_thread():
                t.join(timeout)


class Scheduler:
    TICK_INTERVAL = 0.01  # seconds between ticks while pods keep coming (see run)

    def __init__(
        self,
        config: SchedulerConfig,
        writer: ClusterWriter,
        clock: Clock | None = None,
        cache: Cache | None = None,
        executor: Executor | None = None,
        registry: Mapping[str, Factory] = REGISTRY,
        seed: int = 0,
        priority_classes: dict[str, int] | None = None,
        bind_batch_threads: int = 0,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self.clock = clock or RealClock()
        self.metrics = metrics
        self.writer = writer
        self.cache = cache or Cache(self.clock)
        self.executor = executor or InlineExecutor()
        self.priority_classes = priority_classes or {}
        self.score_annotation = config.score_annotation
        self.groups = PodGroups()
        # Claims, volumes and classes for the volume plugins (fed by events.py).
        self.volumes = VolumeState()
        self.plugin_handle = SchedulerHandle(self)
        self.profiles = build_profiles(config, self.plugin_handle, registry, seed=seed)
        if not self.profiles:
            raise ValueError("at least one profile is needed")
        first = next(iter(self.profiles.values()))
        sorter = first.queue_sort
        events: dict[str, list[ClusterEvent]] = {}
        for fw in self.profiles.values():
            events.update(fw.events())
        self.queue = SchedulingQueue(
            sorter.sort_key if sorter else (lambda p, added: (-p.priority, p.created or added)),
            self.clock,
            initial_backoff=config.initial_backoff,
            max_backoff=config.max_backoff,
            plugin_events=events,
            drf_share=self.dominant_share if config.queue_order == "DRF" else None,
        )
        self.waiting = WaitingPods(
            self.cache,
            self.queue,
            lambda w: self._start_binding(w.framework, w.state, w.qp, w.node),
            lambda key, message: self._record(key, Decision(message=message)),
        )
        self.events = EventHandlers(
            self.cache,
            self.queue,
            self.groups,
            self.volumes,
            self.waiting,
            self.pod_info,
            lambda p: p.scheduler_name in self.profiles,
        )
        self.pending_pods = self.events.pending_pods
        self.reported = self.events.reported
        self.on_pod_add = self.events.on_pod_add
        self.on_pod_update = self.events.on_pod_update
        self.on_pod_delete = self.events.on_pod_delete
        self.on_node_add = self.events.on_node_add
        self.on_node_update = self.events.on_node_update
        self.on_node_delete = self.events.on_node_delete
        self.on_pod_group = self.events.on_pod_group
        self.on_storage = self.events.on_storage
        self.decisions: OrderedDict[str, Decision] = OrderedDict()
        self.max_decisions = 10000
        self._stats_lock = threading.Lock()
        self.stats = {"scheduled": 0, "unschedulable": 0, "bind_failures": 0, "preemptions": 0}
        # Profiles whose binding cycle may be only DefaultBinder's write: with a
        # writer that binds many pods per call, their binds go in batches. A
        # PreBind plugin that can say it has nothing to do for a pod (its
        # pre-flight SKIPs, as VolumeBinding's for a pod without claims to
        # bind) keeps only the pods it has work for out of the batches.
        self._batchable = {
            name
            for name, fw in self.profiles.items()
            if fw.pre_binds_skippable() and [b.name for b in fw.binders] == [DEFAULT_BINDER]
        }
        self._bind_loop: _BindLoop | None = None
        if bind_batch_threads > 0:
            self._bind_loop = _BindLoop(self, bind_batch_threads)
        self._attempt_failed = False
        if metrics is not None:
            metrics.pending.lengths = self.queue.lengths

    def pod_info(self, pod: Obj) -> PodInfo:
        return PodInfo.of(pod, self.priority_classes)

    def handle(self, kind: str, type_: str, obj: Obj) -> None:
        """Dispatch one watch event (kind, ADDED/MODIFIED/DELETED, object)."""
        self.events.handle(kind, type_, obj)

    # ---- DRF bookkeeping -------------------------------------------------------

    def dominant_share(self, namespace: str) -> float:
        """The namespace's largest share of the cluster's cpu or memory."""
        u = self.cache.ns_usage.get(namespace)
        if u is None:
            return 0.0
        valid = self.cache.valid[: self.cache.n]
        total = self.cache.alloc[: self.cache.n][valid][:, [CPU_COL, MEM_COL]].sum(axis=0)
        return float(max(u[i] / total[i] if total[i] else 0.0 for i in range(2)))

    # ---- the scheduling cycle ------------------------------------------------

    def schedule_one(self, block: bool = False, timeout: float | None = None) -> bool:
        """Schedule the next pod; False when the queue had nothing ready.

        A plugin or writer that raises does not stop the scheduler: the error
        is logged, any assumption undone, and the pod retried after backoff.
        """
        qp = self.queue.pop(block=block, timeout=timeout)
        if qp is None:
            return False
        start = time.perf_counter()
        self._attempt_failed = False
        try:
            self._schedule(qp)
            if self.metrics is not None:
                result = "unschedulable" if self._attempt_failed else "scheduled"
                self.metrics.attempt(result, qp.info.scheduler_name, time.perf_counter() - start)
        except Exception:
            if self.metrics is not None:
                self.metrics.attempt("error", qp.info.scheduler_name, time.perf_counter() - start)
            log.exception("scheduling %s failed", qp.key, extra={"pod": qp.key})
            if self.cache.is_assumed(qp.key) and self.waiting.get(qp.key) is None:
                self.cache.forget_pod(qp.key)
            self._record(qp.key, Decision(message="internal error while scheduling; retrying"))
            self.queue.add_backoff(qp)
        return True

    def _schedule(self, qp: QueuedPodInfo) -> bool:
        pod = qp.info
        if pod.key not in self.pending_pods or self.cache.node_of(pod.key) is not None:
            return True  # deleted or already placed meanwhile
        fw = self.profiles[pod.scheduler_name]
        state = CycleState()
        with self.cache.lock:
            try:
                result = fw.schedule(state, pod, self.cache)
            except FitError as err:
                self._fit_failure(fw, state, qp, err)
                return True
            self.cache.assume_pod(pod, result.node)
        self._record(pod.key, Decision(node=result.node, breakdown=result.breakdown))
        st = fw.run_reserve(state, pod, result.node)
        if not st.ok:
            self.cache.forget_pod(pod.key)
            self._failed(qp, st, {st.plugin})
            return True
        st, timeout_s = fw.run_permit(state, pod, result.node)
        if st.code == Code.WAIT:
            self.waiting.add(
                WaitingPod(qp, fw, state, result.node, self.clock.monotonic() + timeout_s)
            )
            return True
        if not st.ok:
            fw.run_unreserve(state, pod, result.node)
            self.cache.forget_pod(pod.key)
            self._failed(qp, st, {st.plugin})
            return True
        self._start_binding(fw, state, qp, result.node)
        return True

    def _start_binding(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, node: str
    ) -> None:
        loop = self._bind_loop
        if (
            loop is not None
            and qp.info.scheduler_name in self._batchable
            and callable(getattr(self.writer, "bind_many", None))
            and not fw.pre_bind_has_work(state, qp.info, node)
        ):
            loop.submit((fw, state, qp, node))
        else:
            self.executor.submit(lambda: self._binding_cycle(fw, state, qp, node))

    def shutdown_binds(self) -> None:
        """Finish the binds queued for batching and stop their threads."""
        if self._bind_loop is not None:
            self._bind_loop.close()

    def _count(self, what: str) -> None:
        with self._stats_lock:  # binding cycles run on several threads
            self.stats[what] += 1

    def _record(self, key: str, d: Decision) -> None:
        with self._stats_lock:
            self.decisions[key] = d
            self.decisions.move_to_end(key)
            if len(self.decisions) > self.max_decisions:
                self.decisions.popitem(last=False)

    def _fit_failure(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, err: FitError
    ) -> None:
        pod = qp.info
        self._attempt_failed = True
        message = str(err)
        nominated = ""
        if fw.post_filters:
            st, nominated = fw.run_post_filter(state, pod, err.diagnosis)
            if st.ok and nominated:
                self._count("preemptions")
                message += f" preemption: nominated node {nominated}."
                pod.nominated_node = nominated
            elif st.reasons:
                message += " preemption: " + st.message()
        self._count("unschedulable")
        self._record(pod.key, Decision(message=message, nominated=nominated))
        # Write the condition and Event only when the explanation changed, so a
        # pod retried on every cluster event does not flood the API server.
        if self.reported.get(pod.key) != message:
            try:
                self.writer.report_unschedulable(pod.pod, message)
                self.reported[pod.key] = message
            except Exception:
                log.exception("reporting unschedulable pod %s", pod.key)
        plugins = set(err.diagnosis.unschedulable_plugins)
        self.queue.add_unschedulable(qp, plugins, message)

    def _failed(self, qp: QueuedPodInfo, st: Status, plugins: set[str]) -> None:
        self._attempt_failed = True
        message = st.message() or "scheduling failed"
        self._record(qp.key, Decision(message=message))
        if st.code == Code.ERROR:
            self.queue.add_backoff(qp)
        else:
            self.queue.add_unschedulable(qp, plugins, message)

    def _binding_cycle(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, node: str
    ) -> None:
        pod = qp.info
        try:
            st = fw.run_pre_bind(state, pod, node)
            if st.ok:
                st = fw.run_bind(state, pod, node)
        except Exception as e:  # a plugin bug must not lose the pod
            log.exception("binding %s failed", pod.key, extra={"pod": pod.key})
            st = Status(Code.ERROR, (f"bind raised {e!r}",))
        if not st.ok:
            self._bind_failed(fw, state, qp, node, st)
            return
        self.cache.finish_binding(pod.key)
        self._count("scheduled")
        fw.run_post_bind(state, pod, node)

    def _bind_failed(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, node: str, st: Status
    ) -> None:
        self._count("bind_failures")
        fw.run_unreserve(state, qp.info, node)
        self.cache.forget_pod(qp.key)
        self._failed(qp, Status(Code.ERROR, st.reasons, st.plugin), set())
        # Its place is free again: others may fit now.
        self.queue.move_on_event(POD_DELETE)

    def _bind_batch(self, batch: list[_Binding]) -> None:
        """The binding cycles of DefaultBinder-only profiles (no PreBind work), with
        every bind of the batch written in one `bind_many` call: what
        `_binding_cycle` does per pod, without a thread hand-off and an API call
        for each."""
        try:
            results: list[Exception | None] = self.writer.bind_many(  # type: ignore[attr-defined]
                [(qp.info.pod, node, self._score_annotations(qp.info)) for _, _, qp, node in batch]
            )
            if len(results) != len(batch):
                raise BindError(f"{len(results)} results for {len(batch)} binds")
        except Exception as e:  # a writer bug must not lose the pods
            log.exception("binding %d pods failed", len(batch))
            results = [e] * len(batch)
        bound = [item for item, err in zip(batch, results, strict=True) if err is None]
        self.cache.finish_binding_many([qp.key for _, _, qp, _ in bound])
        for (fw, state, qp, node), err in zip(batch, results, strict=True):
            try:
                if err is not None:
                    self._bind_failed(
                        fw, state, qp, node, Status(Code.ERROR, (str(err),), DEFAULT_BINDER)
                    )
                else:
                    self._count("scheduled")
                    fw.run_post_bind(state, qp.info, node)
            except Exception:
                log.exception("after binding %s", qp.key, extra={"pod": qp.key})

    def _score_annotations(self, pod: PodInfo) -> dict[str, str] | None:
        d = self.decisions.get(pod.key) if self.score_annotation else None
        if d is not None and d.breakdown:
            return {SCORES_ANNOTATION: breakdown_json(d.breakdown)}
        return None

    def bind_with_writer(self, pod: PodInfo, node: str) -> Status:
        """What the DefaultBinder plugin does: one write through the ClusterWriter.

        The bind also records the score breakdown of the decision in the pod's
        `scheduler.skiff.dev/scores` annotation, so `skiffctl` can show it.
        """
        try:
            self.writer.bind(pod.pod, node, self._score_annotations(pod))
        except BindError as e:
            return Status(Code.ERROR, (str(e),))
        return Status()

    def tick(self) -> float | None:
        """Time-driven work: permit timeouts, assumed-pod expiry. Returns the next deadline."""
        now = self.clock.monotonic()
        waiting = self.waiting.expire(now)
        for key in self.cache.cleanup_expired():
            p = self.pending_pods.get(key)
            if p is not None:
                self.queue.add(p)
        deadlines = [d for d in (waiting, self.queue.next_deadline()) if d is not None]
        return min(deadlines) if deadlines else None

    def run(self, stop: threading.Event) -> None:
        """Schedule until `stop` is set; sleeps on the queue between pods.

        While pods keep coming, the time-driven work (`tick`) runs every
        TICK_INTERVAL or when its deadline is due, not before every pod.
        """
        next_tick = deadline = None
        while not stop.is_set():
            now = self.clock.monotonic()
            if next_tick is None or now >= next_tick or (deadline is not None and now >= deadline):
                deadline = self.tick()
                next_tick = now + self.TICK_INTERVAL
            timeout = 1.0 if deadline is None else max(min(deadline - now, 1.0), 0.001)
            if not self.schedule_one(block=True, timeout=timeout):
                next_tick = None  # idle: look at the deadlines before sleeping again

    def schedule_pending(self, limit: int | None = None) -> int:
        """Schedule every ready pod now (tests, benchmark); returns how many were tried."""
        n = 0
        while limit is None or n < limit:
            self.tick()
            if not self.schedule_one(block=False):
                break
            n += 1
        return n

    def explain(self, key: str) -> Decision | None:
        return self.decisions.get(key)


def from_config(
    config: SchedulerConfig,
    writer: ClusterWriter,
    clock: Clock | None = None,
    executor: Executor | None = None,
    seed: int = 0,
    registry: Mapping[str, Factory] = REGISTRY,
    bind_batch_threads: int = 0,
    metrics: SchedulerMetrics | None = None,
) -> Scheduler:
    """A scheduler built from a validated configuration (see config.py)."""
    return Scheduler(
        config,
        writer,
        metrics=metrics,
        clock=clock,
        executor=executor,
        registry=registry,
        seed=seed,
        bind_batch_threads=bind_batch_threads,
    )


class SchedulerHandle(CacheHandle):
    """The `Handle` (handle.py) the scheduler gives its plugins: narrow views of its parts."""

    def __init__(self, scheduler: Scheduler) -> None:
        # (pending_pods is made after the profiles, which need this handle)
        super().__init__(
            scheduler.cache, scheduler.volumes, lambda key: scheduler.pending_pods.get(key)
        )
        self._s = scheduler

    def pod_group(self, key: str) -> Obj | None:
        return self._s.groups.get(key)

    def group_members(self, key: str) -> Collection[str]:
        return self._s.groups.members_of(key)

    def is_waiting(self, key: str) -> bool:
        return self._s.waiting.get(key) is not None

    def allow(self, key: str) -> None:
        self._s.waiting.allow(key)

    def reject(self, key: str, message: str) -> None:
        self._s.waiting.reject(key, message)

    def activate(self, keys: Iterable[str]) -> None:
        for key in keys:
            self._s.queue.activate(key)

    def run_pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        return self._s.profiles[pod.scheduler_name].run_pre_filter(state, pod, self._s.cache)

    def run_filters(self, state: CycleState, pod: PodInfo, slots: Slots) -> Slots:
        fw = self._s.profiles[pod.scheduler_name]
        return fw.run_filters(state, pod, self._s.cache, slots, None)

    def nominate(self, pod: PodInfo, node: str) -> None:
        self._s.writer.set_nominated_node(pod.pod, node)
        self._s.cache.add_nominated(pod, node)

    def clear_nomination(self, pod: PodInfo) -> None:
        self._s.cache.remove_nominated(pod.key)
        self._s.writer.set_nominated_node(pod.pod, "")

    def evict(self, pod: PodInfo) -> None:
        self._s.writer.evict(pod.pod, pod.grace_seconds)

    def bind(self, pod: PodInfo, node: str) -> Status:
        return self._s.bind_with_writer(pod, node)
