"""The batch scheduler: informer events in, a session per period, binds and status out.

`BatchScheduler` keeps the default scheduler's `Cache` (nodes and placed
pods as arrays), the PodGroups and Queues, and the pending pods whose
`schedulerName` is `volcano`. `run_session()` snapshots jobs and queues
(snapshot.py: kept between sessions, rebuilt per group only where something
changed; the session gets the jobs it may act on), opens the
plugins of the configuration tier by tier, runs its actions in order, then
writes what the session decided: binds (batched; one by one after PreBind
for pods with claims to bind), evictions, and the PodGroups' and Queues'
status (phase, Unschedulable condition with the reason, counts) when it
changed, computed again only for groups that changed.

Filters and scores are the default scheduler's plugins, built by their
factories with this scheduler's `Handle` into one Framework: `predicates`
brings every filter, the volume plugins included (without it only
NodeResourcesFit and NodeUnschedulable), `nodeorder` the default scores with
their default weights, `binpack` its own score with weight `binpack.weight`.
The tasks of one template are judged on every node once per session, then
only where a node changed (placement.py). A placement runs Reserve; its cycle
state goes with the bind to PreBind. Binds whose informer event never comes
expire after the cache's TTL, as the default scheduler's do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from controlplane.api import volcano
from controlplane.client.errors import Conflict, NotFound
from controlplane.scheduler import names
from controlplane.scheduler.batch import actions, binpack, plugins
from controlplane.scheduler.batch.conf import Conf
from controlplane.scheduler.batch.session import JobInfo, Session, Tier
from controlplane.scheduler.batch.snapshot import Snapshots
from controlplane.scheduler.batch.status import StatusReporter, StatusWriter
from controlplane.scheduler.cache import Cache, finished
from controlplane.scheduler.events import changed_for_cache
from controlplane.scheduler.framework import Framework, ProfilePlugin
from controlplane.scheduler.handle import CacheHandle, Slots
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.registry import REGISTRY, Factory
from controlplane.scheduler.types import CycleState, Status, error
from controlplane.scheduler.volume_state import KINDS as STORAGE_KINDS
from controlplane.scheduler.volume_state import VolumeState
from machinery.clock import Clock, RealClock

log = logging.getLogger("skiff.scheduler.batch")
Obj = dict[str, Any]

FILTERS = (
    names.NODE_UNSCHEDULABLE, names.NODE_NAME, names.TAINT_TOLERATION, names.NODE_AFFINITY,
    names.NODE_PORTS, names.NODE_RESOURCES_FIT, names.NODE_CONDITIONS,
    names.VOLUME_RESTRICTIONS, names.NODE_VOLUME_LIMITS, names.VOLUME_BINDING, names.VOLUME_ZONE,
    names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY,
)  # fmt: skip
SCORES = (names.BALANCED_ALLOCATION, names.IMAGE_LOCALITY)


class BatchWriter(StatusWriter, Protocol):
    def bind_many(
        self, items: list[tuple[Obj, str, dict[str, str] | None]]
    ) -> list[Exception | None]: ...

    def evict(self, pod: Obj, grace_seconds: int) -> None: ...


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


@dataclass
class _Hold:
    victims: dict[str, str]  # pod key -> uid
    placements: list[tuple[str, str]]  # (task key, node)


def _bound_as_assumed(before: Obj, after: Obj) -> bool:
    """Whether `after` is `before` bound to a node, with nothing else the cache counts changed."""
    spec = dict(after.get("spec") or {})
    spec.pop("nodeName", None)
    return not changed_for_cache(before, {**after, "spec": spec})


def _gone(err: Exception | str) -> bool:
    """Whether a bind failed because the pod is gone (NotFound) or is not the
    pod that was scheduled (a Conflict without retry advice: replaced by
    another of the same name, being deleted, or bound already; its event
    will tell): nothing to retry. A Conflict the server says to retry (too
    many concurrent writers) is not."""
    e: BaseException | None = err if isinstance(err, BaseException) else None
    for _ in range(8):
        if e is None:
            return False
        if isinstance(e, NotFound) or (isinstance(e, Conflict) and not e.retry_after):
            return True
        e = e.__cause__
    return False


def _state(queue: Obj) -> Any:
    return (queue.get("status") or {}).get("state")


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class BatchHandle(CacheHandle):
    """The Handle the batch scheduler's filter and score plugins get."""

    def __init__(self, s: BatchScheduler) -> None:
        super().__init__(s.cache, s.volumes, s.pending.get)
        self._s = s

    def pod_group(self, key: str) -> Obj | None:
        return self._s.groups.get(key)

    def group_members(self, key: str) -> Collection[str]:
        return self._s.members.get(key, set())

    def is_waiting(self, key: str) -> bool:
        return False

    def allow(self, key: str) -> None: ...

    def reject(self, key: str, message: str) -> None: ...

    def activate(self, keys: Iterable[str]) -> None: ...

    def run_pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        return self._s.framework.run_pre_filter(state, pod, self._s.cache)

    def run_filters(self, state: CycleState, pod: PodInfo, slots: Slots) -> Slots:
        return self._s.framework.run_filters(state, pod, self._s.cache, slots, None)

    def nominate(self, pod: PodInfo, node: str) -> None: ...

    def clear_nomination(self, pod: PodInfo) -> None: ...

    def evict(self, pod: PodInfo) -> None:
        self._s.writer.evict(pod.pod, pod.grace_seconds)

    def bind(self, pod: PodInfo, node: str) -> Status:
        errs = self._s.writer.bind_many([(pod.pod, node, None)])
        return error(str(errs[0])) if errs[0] is not None else Status()


def build_framework(
    conf: Conf, handle: BatchHandle, registry: Mapping[str, Factory] = REGISTRY
) -> Framework:
    predicates = conf.plugin("predicates") is not None
    nodeorder = conf.plugin("nodeorder") is not None
    weights = dict(names.DEFAULT_PLUGINS)
    chosen = FILTERS if predicates else (names.NODE_UNSCHEDULABLE, names.NODE_RESOURCES_FIT)
    plugin_list = [
        ProfilePlugin(registry[n]({}, handle), weights.get(n, 1) if nodeorder else 0)
        for n in chosen
    ]
    if nodeorder:
        plugin_list += [ProfilePlugin(registry[n]({}, handle), weights.get(n, 1)) for n in SCORES]
    bp = conf.plugin("binpack")
    if bp is not None:
        weight = int(bp.arguments.get("binpack.weight", 1))
        plugin_list.append(ProfilePlugin(binpack.new(dict(bp.arguments)), weight))
    return Framework(volcano.SCHEDULER_NAME, plugin_list, record_breakdown=False)


class BatchScheduler:
    def __init__(
        self,
        conf: Conf,
        writer: BatchWriter,
        clock: Clock | None = None,
        registry: Mapping[str, Factory] = REGISTRY,
        # Seconds the actions may place pods for; the binds and status writes
        # after them take about as long again, within the 1 s a session may last.
        session_budget: float = 0.25,
        status_writers: int = 0,
        volume_binders: int = 0,
    ) -> None:
        self.conf = conf
        self.writer = writer
        self.clock = clock or RealClock()
        self.cache = Cache(self.clock)
        self.volumes = VolumeState()
        self.lock = self.cache.lock
        self.groups: dict[str, Obj] = {}
        self.members: dict[str, set[str]] = {}
        self.queues: dict[str, Obj] = {}
        self.pending: dict[str, PodInfo] = {}
        # Pods that ran to Succeeded or Failed: out of the cache (their room is
        # free, as kube-scheduler's informer drops them), kept for the counts.
        self.finished: dict[str, Obj] = {}
        self.priority_classes: dict[str, int] = {}
        self.snapshots = Snapshots(
            self.cache, self.groups, self.members, self.queues, self.pending, self.priority_classes
        )
        self.handle = BatchHandle(self)
        self.framework = build_framework(conf, self.handle, registry)
        self.session_budget = session_budget
        # Per job, the victims evicted for it (by UID: a Volcano Job re-creates
        # them under the same names) and where its tasks go once they are gone;
        # meanwhile it does not preempt again and that room is held for it.
        self.evicted_for: dict[str, _Hold] = {}
        self.status = StatusReporter(writer, self.clock, status_writers)
        # Binds whose PreBind has work (claims to bind or provision, then a wait
        # for the PV controller) go one by one from this pool; None: inline.
        self._volume_pool: ThreadPoolExecutor | None = (
            ThreadPoolExecutor(volume_binders, thread_name_prefix="volcano-volumes")
            if volume_binders
            else None
        )
        self.dirty = threading.Event()
        self.stats: list[SessionStats] = []

    # ---- informer handlers ---------------------------------------------------------

    def _mine(self, p: PodInfo) -> bool:
        return p.scheduler_name == volcano.SCHEDULER_NAME

    def on_pod(self, pod: Obj, deleted: bool = False) -> None:
        """Track a pod; a session follows unless the event changes nothing a
        session could act on (a running pod's status write, a bind confirmed)."""
        meta = pod.get("metadata") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        with self.lock:
            if deleted:
                self.finished.pop(key, None)
            elif node and finished(pod):
                self._finish(key, pod)
                return
            placed = self.cache.nodes.get(node) if node and not deleted else None
            old = placed.pods.get(key) if placed is not None else None
            if (
                old is not None
                and not self.cache.is_assumed(key)
                and not changed_for_cache(old.pod, pod)
                and self.cache.refresh_pod(key, pod)
            ):
                # A status write of a placed pod: nothing it counts changed (the
                # snapshot's job keeps the pod as it was parsed: the same facts),
                # but its phase counts in its group's status (by the counts' period).
                if old.pod_group:
                    self.status.counts_moved(old.pod_group)
                return
            if old is not None and self.cache.is_assumed(key) and _bound_as_assumed(old.pod, pod):
                # Our own bind coming back: the pod as parsed, on the node we chose.
                nominated = (pod.get("status") or {}).get("nominatedNodeName") or ""
                self.cache.confirm_pod(
                    old.with_changes(pod=pod, node_name=str(node), nominated_node=nominated)
                )
                self._changed(old.pod_group)
                return
            p = PodInfo.of(pod, self.priority_classes)
            if old is not None and old.pod_group != p.pod_group:
                self._changed(old.pod_group)
            self._changed(p.pod_group)
            if p.pod_group:
                if deleted:
                    self.members.get(p.pod_group, set()).discard(p.key)
                else:
                    self.members.setdefault(p.pod_group, set()).add(p.key)
            if deleted:
                self.pending.pop(p.key, None)
                self.cache.remove_pod(p.key)
            elif p.node_name:
                self.pending.pop(p.key, None)
                assumed = self.cache.assumed_info(p.key)
                if assumed is not None and self.cache.node_of(p.key) == p.node_name:
                    self.cache.confirm_pod(p)  # our own bind, counted already
                    return
                if assumed is not None or self.cache.node_of(p.key) != p.node_name:
                    self.cache.add_pod(p)
                else:
                    self.cache.update_pod(p)
            elif self._mine(p) and not (pod.get("metadata") or {}).get("deletionTimestamp"):
                if not self.cache.is_assumed(p.key):
                    self.pending[p.key] = p
            else:
                self.pending.pop(p.key, None)
        self.dirty.set()

    def _finish(self, key: str, pod: Obj) -> None:
        """A bound pod ran to its end: its room is free, its group counts it."""
        p = self.pending.pop(key, None)
        known = self.cache.node_of(key)
        info = self.cache.nodes.get(known) if known is not None else None
        old = info.pods.get(key) if info is not None else None
        self.cache.remove_pod(key)
        self.finished[key] = pod
        group = (old or p or PodInfo.of(pod, self.priority_classes)).pod_group
        if group:
            self.members.setdefault(group, set()).add(key)
        self._changed(group)
        self.dirty.set()

    def _changed(self, group: str) -> None:
        """Something about this group's pods changed: its snapshot and status are stale."""
        if group:
            self.snapshots.invalidate(group)
            self.status.stale(group)

    def on_node(self, node: Obj, deleted: bool = False) -> None:
        with self.lock:
            name = node["metadata"]["name"]
            if deleted or name not in self.cache.nodes:
                # Pods placed on it are lost, or orphans find their node.
                self.snapshots.invalidate_all()
                self.status.all_stale()
            if deleted:
                self.cache.remove_node(name)
            else:
                self.cache.add_node(node)
        self.dirty.set()

    def on_pod_group(self, group: Obj, deleted: bool = False) -> None:
        with self.lock:
            key = _key(group)
            self.status.stale(key)
            old = self.groups.get(key)
            self.snapshots.group_changed(key)
            if old is not None and not deleted and old.get("spec") == group.get("spec"):
                self.groups[key] = group  # a status write (ours, mostly): no session for it
                return
            if deleted:
                self.groups.pop(key, None)
                self.snapshots.forget(key)
                self.status.forget(key)
            else:
                self.groups[key] = group
        self.dirty.set()

    def on_queue(self, queue: Obj, deleted: bool = False) -> None:
        with self.lock:
            name = queue["metadata"]["name"]
            old = self.queues.get(name)
            if deleted:
                self.queues.pop(name, None)
            else:
                self.queues[name] = queue
                if old is not None and (old.get("spec"), _state(old)) == (
                    queue.get("spec"),
                    _state(queue),
                ):
                    return  # only its counts moved (our own status write)
        self.dirty.set()

    def on_priority_class(self, pc: Obj, deleted: bool = False) -> None:
        name = pc["metadata"]["name"]
        with self.lock:
            if deleted:
                self.priority_classes.pop(name, None)
            else:
                self.priority_classes[name] = int(pc.get("value", 0))
            self.snapshots.invalidate_all()

    def on_storage(self, kind: str, type_: str, obj: Obj) -> None:
        """A claim, volume or class (for the volume plugins; wakes PreBind's waits)."""
        self.volumes.on_event(kind, type_, obj)
        self.dirty.set()

    def handle_event(self, kind: str, type_: str, obj: Obj) -> None:
        deleted = type_ == "DELETED"
        if kind in STORAGE_KINDS:
            self.on_storage(kind, type_, obj)
            return
        {
            "Pod": self.on_pod,
            "Node": self.on_node,
            "PodGroup": self.on_pod_group,
            "Queue": self.on_queue,
            "PriorityClass": self.on_priority_class,
        }[kind](obj, deleted)

    # ---- the session -----------------------------------------------------------------

    def run_session(self) -> SessionStats:
        start, cpu_start = self.clock.monotonic(), time.thread_time()
        with self.lock:
            self._expire_assumed()
            jobs, queues, total = self.snapshots.take(self.status.wanted())
            pending = sum(len(j.pending) for j in jobs.values())
            ssn = Session(
                self.cache, self.framework, jobs, queues, total,
                deadline=self.clock.monotonic() + self.session_budget, clock=self.clock.monotonic,
                more=self.snapshots.more,
            )  # fmt: skip
            for tier_conf in self.conf.tiers:
                tier = Tier()
                ssn.tiers.append(tier)
                for opt in tier_conf:
                    plugins.PLUGINS[opt.name](ssn, tier, opt)
            self._hold_room(ssn)
            waiting = set(self.evicted_for)
            enabled = set(self.conf.actions)
            for name in self.conf.actions:
                if name == "enqueue":
                    actions.enqueue(ssn, enabled)
                elif name == "allocate":
                    actions.allocate(ssn, enabled)
                elif name == "backfill":
                    actions.backfill(ssn, enabled)
                elif name == "preempt":
                    actions.preempt(ssn, enabled, waiting)
                elif name == "reclaim":
                    actions.reclaim(ssn, enabled, waiting)
            binds = list(ssn.binds)
            for p, _node in binds:
                self.pending.pop(p.key, None)
            for job, stmt in reversed(ssn.pipelined):
                self.evicted_for[job.key] = _Hold(
                    {v.key: v.uid for _j, v, _n in stmt.evicted},
                    [(t.key, n) for _j, t, n in stmt.placed],
                )
                stmt.discard()
            for key in ssn.touched:
                self._changed(key)
        self._write_binds(binds, ssn.bind_states)
        for victim in ssn.evictions:
            try:
                self.writer.evict(victim.pod, victim.grace_seconds)
            except Exception:
                log.exception("evicting %s", victim.key)
        with self.lock:  # against handlers unsettling a group while it is settled here
            self.status.report(jobs, queues, self.queues, lambda job: self._group_status(job, ssn))
        stats = SessionStats(
            self.clock.monotonic() - start,
            len(jobs),
            pending,
            len(binds),
            len(ssn.evictions),
            len(ssn.enqueued),
            time.thread_time() - cpu_start,
            ssn.out_of_time(),
        )
        self.stats.append(stats)
        if len(self.stats) > 10_000:
            del self.stats[:5_000]
        return stats

    def _expire_assumed(self) -> None:
        """Binds that finished but never showed up in the informer within the
        cache's TTL (kube-scheduler's 15 minutes): their room is freed and
        the pods are pending again, as the default scheduler does; a pod that
        was bound after all refuses the next bind and its event comes."""
        for p in self.cache.expire_assumed():
            log.warning("bind of %s never confirmed by the informer: pending again", p.key)
            self._changed(p.pod_group)
            self._requeue(p, "bind never confirmed")

    def _placed(self, key: str, uid: str) -> PodInfo | None:
        """The pod placed under `key` when it is still the one with `uid`."""
        node = self.cache.node_of(key)
        info = self.cache.nodes.get(node) if node is not None else None
        p = info.pods.get(key) if info is not None else None
        return p if p is not None and p.uid == uid else None

    def _hold_room(self, ssn: Session) -> None:
        """Room freed for a preemptor is its own: while some of its victims still
        terminate its tasks are placed there for the session (pipelined, not
        bound); once all are gone they are bound there. A hold that no longer
        fits is dropped (the job may preempt again)."""
        for key, hold in list(self.evicted_for.items()):
            job = ssn.all_jobs().get(key)
            if job is None:
                del self.evicted_for[key]
                continue
            left = [p for k, uid in hold.victims.items() if (p := self._placed(k, uid)) is not None]
            stmt = actions.pipeline(ssn, job, left, hold.placements)
            if stmt is None:
                del self.evicted_for[key]
            elif left:
                ssn.pipelined.append((job, stmt))
            else:
                stmt.commit()
                del self.evicted_for[key]

    def _write_binds(
        self, all_binds: list[tuple[PodInfo, str]], states: Mapping[str, CycleState]
    ) -> None:
        binds = []
        for p, node in all_binds:
            state = states.get(p.key)
            if state is not None and self.framework.pre_bind_has_work(state, p, node):
                if self._volume_pool is None:
                    self._bind_with_volumes(p, node, state)
                else:
                    self._volume_pool.submit(self._bind_with_volumes, p, node, state)
            else:
                binds.append((p, node))
        if not binds:
            return
        try:
            results = self.writer.bind_many([(p.pod, node, None) for p, node in binds])
        except Exception as e:
            log.exception("binding %d pods failed", len(binds))
            results = [e] * len(binds)
        with self.lock:
            done = []
            for (p, _node), err in zip(binds, results, strict=True):
                if err is None:
                    done.append(p.key)
                else:
                    log.warning("bind of %s failed: %s", p.key, err)
                    self.cache.forget_pod(p.key)
                    self._requeue(p, err)
                    self._changed(p.pod_group)
            self.cache.finish_binding_many(done)

    def _requeue(self, p: PodInfo, err: Exception | str) -> None:
        """A pod whose bind failed is pending again, unless it is gone: deleted
        (NotFound), replaced by a pod of another UID or being deleted (the UID
        precondition or the deletion refused the bind), or its DELETED event
        came meanwhile (it is no member of its group any more)."""
        if _gone(err) or (p.pod_group and p.key not in self.members.get(p.pod_group, ())):
            return
        now = self.pending.get(p.key)
        if now is None or now.uid == p.uid:
            self.pending[p.key] = p

    def _bind_with_volumes(self, p: PodInfo, node: str, state: CycleState) -> None:
        """PreBind (bind or provision the pod's claims, wait for the PV controller), then bind."""
        err: Exception | str | None
        try:
            st = self.framework.run_pre_bind(state, p, node)
            err = "; ".join(st.reasons) or "PreBind failed" if not st.ok else None
            if err is None:
                err = self.writer.bind_many([(p.pod, node, None)])[0]
        except Exception as e:
            log.exception("binding %s with its volumes", p.key)
            err = e
        with self.lock:
            if err is None:
                self.cache.finish_binding(p.key)
            else:
                log.warning("bind of %s failed: %s", p.key, err)
                self.framework.run_unreserve(state, p, node)
                self.cache.forget_pod(p.key)
                self._requeue(p, err)
                self._changed(p.pod_group)
        self.dirty.set()

    # ---- status --------------------------------------------------------------------

    def _group_status(self, job: JobInfo, ssn: Session) -> Obj:
        counts = {"running": 0, "succeeded": 0, "failed": 0}
        for pk in self.members.get(job.key, ()):
            node = self.cache.node_of(pk)
            info = self.cache.nodes.get(node) if node else None
            p = info.pods.get(pk) if info is not None else None
            obj = p.pod if p is not None else self.finished.get(pk)
            phase = ((obj.get("status") or {}).get("phase") if obj is not None else None) or ""
            if phase.lower() in counts:
                counts[phase.lower()] += 1
        phase = job.phase
        if ssn.job_ready(job) and job.placed:
            phase = "Running"  # a placed gang runs, whatever was written before
        if counts["succeeded"] >= job.min_member > 0 and not job.pending:
            phase = "Completed"
        status: Obj = {"phase": phase, **counts}
        if job.unschedulable and phase != "Running":
            status["conditions"] = [{
                "type": "Unschedulable", "status": "True",
                "reason": "NotEnoughResources" if "tasks in gang" in job.unschedulable
                else "NotEnoughTasks",
                "message": job.unschedulable, "transitionID": "",
            }]  # fmt: skip
        elif phase == "Running":
            status["conditions"] = [{
                "type": "Scheduled", "status": "True", "reason": "tasks in gang are ready to be scheduled",
                "message": "", "transitionID": "",
            }]  # fmt: skip
        return status

    # ---- loop ---------------------------------------------------------------------------

    def close(self) -> None:
        self.status.close()
        if self._volume_pool is not None:
            self._volume_pool.shutdown(wait=True, cancel_futures=True)

    def run(self, stop: threading.Event, period: float = 1.0, min_gap: float = 0.2) -> None:
        """A session when something changed, at least every `period` (Volcano's
        schedulePeriod is 1 s).

        Between two sessions at least `min_gap`, and at least half the CPU time
        the last session took (not its wall time: that includes the bind call,
        the API server's time): while events keep coming (they do, a few per pod)
        each session gathers more pods, its fixed cost (the snapshot's queues,
        the plugins' set-up, each task template judged on every node) is paid
        a few times a second rather than at every event, and the API server
        and controllers that share the process (and its GIL) keep the rest. A session cut short by
        its budget is followed at once (`backlog_gap`): pods are waiting.
        """
        backlog_gap = 0.02
        while not stop.is_set():
            self.dirty.wait(period)
            if stop.is_set():
                return
            self.dirty.clear()
            gap = min_gap
            try:
                st = self.run_session()
                gap = backlog_gap if st.cut_short else max(min_gap, st.cpu_seconds / 2)
                if st.cut_short:
                    self.dirty.set()
            except Exception:
                log.exception("batch scheduling session failed")
            stop.wait(gap)
