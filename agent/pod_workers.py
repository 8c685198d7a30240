"""Pod workers: every source of work enqueues a pod UID; workers pop UIDs
from one rate-limited queue (a UID is handled by one worker at a time) and
run `sync_pod(uid)`: terminate and clean up pods that are deleted or gone,
otherwise carry out SyncPod (pod_sync.PodSyncer), keep the probes in line
and write the status. Static pods (their manifests and mirror pods) feed
the same queue.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.admission import Rejection, admit
from agent.allocation import Allocations
from agent.pleg import Pleg
from agent.pod_actions import is_sidecar
from agent.pod_cgroups import remove_pod_cgroup
from agent.pod_events import PodEvents, image_pull_events
from agent.pod_status import PodObservation, compute_pod_status
from agent.pod_sync import PodSyncer
from agent.probes import ProbeManager, ProbeTarget
from agent.runtime_view import PodRecord, RuntimeView
from agent.static_pods import MirrorPods, StaticPodSource, is_static, mirror_of
from agent.status_manager import StatusManager
from agent.volumes import refresh_volumes, teardown_volumes
from controlplane.client import errors
from controlplane.client.informer import SharedInformer
from controlplane.client.interface import Object
from controlplane.client.workqueue import RateLimitingQueue, work
from machinery.clock import Clock
from proto.runtime.v1 import api_pb2 as cri

log = logging.getLogger("skiff.agent")

UID_INDEX = "uid"
MIRROR_INDEX = "mirror"  # static pod UID -> its mirror pods in the API


def _volumes(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((pod.get("spec") or {}).get("volumes") or [])


def _downward_only(volume: Mapping[str, Any]) -> bool:
    """A volume made only of the pod's own fields (no API lookups)."""
    if "downwardAPI" in volume:
        return True
    sources = (volume.get("projected") or {}).get("sources") or []
    return bool(sources) and all(set(s) == {"downwardAPI"} for s in sources)


def _probed_specs(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if is_sidecar(c)]
    return [*sidecars, *(spec.get("containers") or [])]


@dataclass(eq=False, kw_only=True)
class PodWorkers:
    queue: RateLimitingQueue[str]
    pods: SharedInformer
    view: RuntimeView
    pleg: Pleg
    syncer: PodSyncer
    probes: ProbeManager
    status: StatusManager
    clock: Clock
    root: Path
    cgroup_root: str
    node_address: str
    runtime_name: Callable[[], str]
    static: StaticPodSource | None = None
    mirrors: MirrorPods | None = None
    # this node's Node object, for admission
    node: Callable[[], Mapping[str, Any] | None] = lambda: None
    events: PodEvents | None = None  # image pull failures as the kubelet's events
    # uid -> last pod object, for deleted pods
    _last_seen: dict[str, Object] = field(default_factory=dict, init=False)
    _admitted: set[str] = field(default_factory=set, init=False)
    # uid -> (reason, message, grace): pods stopped for good (rejected at
    # admission, evicted) and whoever waits for their containers to go.
    _failed: dict[str, tuple[str, str, int]] = field(default_factory=dict, init=False)
    _failed_done: dict[str, threading.Event] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    # What each pod's containers are granted (in-place resize).
    allocations: Allocations = field(default_factory=Allocations, init=False)

    # static pods
    def poll_static(self) -> None:
        """Re-read the manifest directory when due; enqueue every static pod (their resync)."""
        assert self.static is not None
        changes = self.static.poll()
        if changes is None:
            return
        for pod in changes.removed:
            self._last_seen[pod["metadata"]["uid"]] = pod
        for pod in [*changes.removed, *self.static.list()]:
            self.queue.add(pod["metadata"]["uid"])

    def _sync_mirror(self, pod: Object) -> bool:
        """Keep the static pod's mirror in the API; True if its status may go there
        (by name). Retried by the static resync, not sooner, while the API is away."""
        assert self.mirrors is not None
        try:
            state = self.mirrors.ensure(pod)
        except errors.ApiError as err:
            log.warning("pod=%s/%s mirror pod not synced: %s",
                        pod["metadata"]["namespace"], pod["metadata"]["name"], err)  # fmt: skip
            return False
        if state == "created":
            self.status.forget(pod["metadata"]["uid"])
        return state != "blocked"

    def _drop_mirrors(self, uid: str) -> None:
        """Static pod `uid` is gone: so are its mirrors."""
        if self.mirrors is None:
            return
        try:
            self.mirrors.delete_orphans(uid, self.pods.store.by_index(MIRROR_INDEX, uid))
        except errors.ApiError as err:
            log.warning("uid=%s orphaned mirror pod not deleted: %s", uid, err)

    # pod events
    def on_pod(self, pod: Object) -> None:
        if mirror_of(pod):  # a mirror stands for its static pod
            self.queue.add(mirror_of(pod))
            return
        uid = pod["metadata"].get("uid")
        if uid:
            self._last_seen[uid] = pod
            self.queue.add(uid)

    def on_pod_delete(self, pod: Object) -> None:
        """A deleted pod is synced as any other event's (its worker finds it gone)."""
        self.on_pod(pod)

    def resync(self) -> None:
        for pod in self.pods.store.list():
            self.queue.add(mirror_of(pod) or pod["metadata"]["uid"])

    # pods stopped for good
    def fail(self, uid: str, reason: str, message: str, grace: int = 0) -> threading.Event:
        """Stop pod `uid` for good: its containers are killed (after `grace`
        seconds) by its worker and it ends Failed with `reason` and `message`
        (an eviction). The event is set once its containers are gone."""
        with self._lock:
            done = self._failed_done.setdefault(uid, threading.Event())
            self._failed.setdefault(uid, (reason, message, grace))
        self.queue.add(uid)
        return done

    def failed(self) -> set[str]:
        with self._lock:
            return set(self._failed)

    def admitted_pods(self) -> list[Object]:
        """The active pods this node runs: admitted, not failed, not finished."""
        with self._lock:
            admitted, failed = set(self._admitted), set(self._failed)
        out: list[Object] = []
        pods = list(self.pods.store.list()) + (self.static.list() if self.static else [])
        for p in pods:
            uid = p["metadata"].get("uid")
            phase = (p.get("status") or {}).get("phase")
            active = phase not in ("Succeeded", "Failed") and not mirror_of(p)
            if uid in admitted and uid not in failed and active:
                out.append(p)
        return out

    def _admit(self, pod: Object, rec: PodRecord | None) -> Rejection | None:
        """Node admission, once per pod: a pod the runtime already holds, or
        that already ran, is admitted as it is (an agent restart)."""
        uid = pod["metadata"]["uid"]
        with self._lock:
            if uid in self._admitted:
                return None
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        node = self.node()
        rejection = None
        if rec is None and phase == "Pending" and node is not None:
            rejection = admit(pod, node, self._others(uid))
        with self._lock:
            if rejection is None:
                self._admitted.add(uid)
            else:
                self._failed.setdefault(uid, (rejection.reason, rejection.message, 0))
        return rejection

    def _finish_failed(self, pod: Object, rec: PodRecord | None) -> None:
        uid = pod["metadata"]["uid"]
        with self._lock:
            reason, message, grace = self._failed[uid]
        if rec is not None:
            self.syncer.kill_pod(pod, rec, grace)
            rec = self.view.relist(uid).get(uid)
        obs = PodObservation(
            containers=tuple(rec.containers) if rec else (), runtime_name=self.runtime_name()
        )
        status = compute_pod_status(pod, obs, self.clock.now(), self.node_address)
        status.update(phase="Failed", reason=reason, message=message)
        self.status.set_status(pod, status)
        self.probes.remove_pod(uid)
        if rec is None or not any(c.state == "running" for c in rec.containers):
            teardown_volumes(self.root, uid, keep_pod_dir=True)  # the disk it held comes back
        with self._lock:
            done = self._failed_done.pop(uid, None)
        if done is not None:
            done.set()

    # workers
    def run(self) -> None:
        work(self.queue, self.sync_pod, self._sync_failed)

    def _sync_failed(self, uid: str, err: Exception) -> None:
        log.exception("uid=%s sync failed; will retry", uid)
        self.queue.add_rate_limited(uid)

    def _pod(self, uid: str) -> Object | None:
        static = self.static.get(uid) if self.static is not None else None
        if static is not None:
            return static
        found = [p for p in self.pods.store.by_index(UID_INDEX, uid) if not mirror_of(p)]
        return found[0] if found else None

    def sync_pod(self, uid: str) -> None:
        pod = self._pod(uid)
        rec = self.view.relist(uid).get(uid)
        if pod is None:
            gone = self._last_seen.pop(uid, None)
            if gone is not None and rec is not None and is_static(gone):  # graceful, as kubelet
                grace = (gone.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
                self.syncer.kill_pod(gone, rec, int(grace))
                rec = self.view.relist(uid).get(uid)
            self._cleanup(uid, gone, rec)
            self._drop_mirrors(uid)
            return
        md = pod["metadata"]
        if md.get("deletionTimestamp"):
            self._terminate(pod, rec)
            return
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") and (
            rec is None or not any(c.state == "running" for c in rec.containers)
        ):
            with self._lock:  # already finished: nothing left to stop
                done = self._failed_done.pop(uid, None)
            # Its volumes go now, not when the pod is deleted (the kubelet's
            # default): an evicted pod's emptyDir frees the disk it filled.
            teardown_volumes(self.root, uid, keep_pod_dir=True)
            if done is not None:
                done.set()
            return
        if uid in self._failed or self._admit(pod, rec) is not None:
            self._finish_failed(pod, rec)
            return
        _, started_before, liveness_failed = self.probes.results(uid, self._running_specs(pod, rec))
        allocated, pending = self.allocations.sync(pod, self.node(), lambda: self._others(uid))
        result = self.syncer.sync(allocated, rec, liveness_failed, started_before)
        if self.events is not None:
            image_pull_events(self.events, pod, result.waiting)
        if rec is not None and any(_downward_only(v) for v in _volumes(pod)):
            # The pod's own labels and annotations changed (a watch event):
            # its downwardAPI files follow now, not at the next sync period.
            try:
                refresh_volumes(self.root, pod, self.syncer.d.volumes, _downward_only)
            except OSError as err:
                log.warning("uid=%s downwardAPI volume refresh failed: %s", uid, err)
        a = result.actions
        acted = a is None or bool(
            a.kill_pod
            or a.create_sandbox
            or a.containers_to_start
            or a.containers_to_kill
            or a.init_containers_to_start
            or a.ephemeral_to_start
        )
        if acted or rec is None:  # the runtime changed: look again before reporting
            rec = self.view.relist(uid).get(uid) or PodRecord(uid)
        self._sync_probes(pod, rec, result.pod_ips)
        running = self._running_specs(pod, rec)
        ready, started, _ = self.probes.results(uid, running)
        unready = {c["name"] for c in running} - ready
        probe_messages = {
            n: m for n in unready if (m := self.probes.message(uid, n, "readinessProbe"))
        }
        sb = rec.current_sandbox()
        obs = PodObservation(
            sandbox_ready=sb is not None and sb.state == cri.SANDBOX_READY,
            pod_ips=result.pod_ips,
            containers=tuple(rec.containers),
            waiting=result.waiting,
            ready=ready,
            started=started,
            runtime_name=self.runtime_name(),
            probe_messages=probe_messages,
            resize_errors=result.resize_errors,
            resize_pending=(pending.reason, pending.message) if pending else None,
            resources=self._status_resources(allocated, rec),
        )
        status = compute_pod_status(
            pod, obs, self.clock.now(), self.node_address, result.init_failed
        )
        if self.mirrors is not None and self.static is not None and self.static.get(uid):
            if self._sync_mirror(pod):
                self.status.set_status(pod, status)
        else:
            self.status.set_status(pod, status)
        for w in result.waiting.values():
            if w.reason in (
                "CrashLoopBackOff",
                "ImagePullBackOff",
                "ErrImagePull",
                "ContainerCreating",
            ):
                self.queue.add_after(uid, 1.0)
                break

    def _others(self, uid: str) -> list[Object]:
        """The other admitted pods, as allocated (a resize must fit beside them)."""
        return [
            self.allocations.allocated(p)
            for p in self.admitted_pods()
            if p["metadata"].get("uid") != uid
        ]

    def _status_resources(
        self, allocated: Mapping[str, Any], rec: PodRecord
    ) -> dict[str, dict[str, Any]]:
        """status.containerStatuses[].resources, as the kubelet 1.33 reports
        them for the containers the runtime has: the allocated resources,
        with the cpu and memory limits and the cpu request a running
        container's cgroup has (they differ while a resize was refused)."""
        latest: dict[str, Any] = {}
        for c in rec.containers:
            latest.setdefault(c.name, c)
        spec = allocated.get("spec") or {}
        out: dict[str, dict[str, Any]] = {}
        for key in ("initContainers", "containers", "ephemeralContainers"):
            for c in spec.get(key) or []:
                info = latest.get(c["name"])
                if info is None:
                    continue
                res = copy.deepcopy(dict(c.get("resources") or {}))
                applied = self.syncer.resizer.applied(info.id) if info.state == "running" else None
                for part, names in (("limits", ("cpu", "memory")), ("requests", ("cpu",))):
                    have = (applied or {}).get(part) or {}
                    for name in names:
                        if part in res and name in have:
                            res[part][name] = have[name]
                out[c["name"]] = res
        return out

    def _running_specs(
        self, pod: Mapping[str, Any], rec: PodRecord | None
    ) -> list[Mapping[str, Any]]:
        """The running containers that are probed and count for readiness:
        the app containers and the native sidecars."""
        running = {c.name for c in (rec.containers if rec else []) if c.state == "running"}
        return [c for c in _probed_specs(pod) if c["name"] in running]

    def _sync_probes(
        self, pod: Mapping[str, Any], rec: PodRecord, pod_ips: tuple[str, ...]
    ) -> None:
        uid = pod["metadata"]["uid"]
        latest: dict[str, Any] = {}
        for c in rec.containers:
            latest.setdefault(c.name, c)
        for spec in _probed_specs(pod):
            info = latest.get(spec["name"])
            if info is None or info.state != "running":
                self.probes.remove_container(uid, spec["name"])
                continue
            named = {
                p["name"]: int(p["containerPort"]) for p in spec.get("ports") or [] if p.get("name")
            }
            ip = pod_ips[0] if pod_ips else ""
            self.probes.sync_container(uid, spec, ProbeTarget(info.id, ip, named), info.started_at)

    def _terminate(self, pod: Object, rec: PodRecord | None) -> None:
        md = pod["metadata"]
        grace = md.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        if rec is not None:
            self.syncer.kill_pod(pod, rec, int(grace))
            rec = self.view.relist(md["uid"]).get(md["uid"])
            obs = PodObservation(
                containers=tuple(rec.containers) if rec else (), runtime_name=self.runtime_name()
            )
            self.status.set_status(
                pod, compute_pod_status(pod, obs, self.clock.now(), self.node_address)
            )
        self._cleanup(md["uid"], pod, rec)
        self.status.delete_terminated(pod)

    def _cleanup(self, uid: str, pod: Object | None, rec: PodRecord | None) -> None:
        """The pod is gone from the API (or finishing): nothing of it may stay."""
        if rec is not None:
            if pod is not None:
                self.syncer.kill_pod(pod, rec, 0)
            else:
                stub = {"metadata": {"name": uid, "uid": uid}, "spec": {}}
                self.syncer.kill_pod(stub, rec, 0)
            fresh = self.view.relist(uid).get(uid)
            if fresh is not None:
                self.syncer.remove_pod(fresh)
        # The pod's own cgroup (its sandboxes' parent), as the kubelet removes it.
        remove_pod_cgroup(self.cgroup_root, uid)
        self.allocations.forget(uid)
        self.probes.remove_pod(uid)
        self.status.forget(uid)
        teardown_volumes(self.root, uid)
        self.pleg.forget(uid)
        with self._lock:
            self._admitted.discard(uid)
            self._failed.pop(uid, None)
            done = self._failed_done.pop(uid, None)
        if done is not None:
            done.set()
