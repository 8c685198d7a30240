"""Node resource management wired to this node: the eviction manager's
signals, pods and actions, image GC and container GC through CRI.

`observe()` reads the signals (the runtime's ImageFsInfo for imagefs);
`pod_usages()` each admitted pod's usage from its cgroup and log dir;
`evict()` hands a victim to its pod worker (`PodWorkers.fail`) and waits
until its containers are gone; `reclaim()` runs container GC, then image
GC. A runtime that fails ImageFsInfo, ListImages or ListContainers is
recorded in `problems` (the Node's ContainerRuntimeUnhealthy condition)
and the round goes on without that signal: never an exception out of here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agent.admission import pod_requests
from agent.container_gc import ContainerGCPolicy, DeadContainer, containers_to_remove
from agent.cri_client import CRIClient, CRIError
from agent.eviction import local_storage, signals
from agent.eviction import thresholds as t
from agent.eviction.manager import EvictionManager
from agent.eviction.ranking import PodUsage
from agent.eviction.signals import Observation, ThresholdNotifier
from agent.eviction.thresholds import EvictionConfig
from agent.image_gc import FsUsage, ImageGCPolicy, ImageTracker, bytes_to_free, images_to_free
from agent.pod_config import CONTAINER_NAME_LABEL, POD_UID_LABEL, pod_cgroup_parent, pod_log_dir
from agent.pod_workers import PodWorkers
from agent.static_pods import is_static
from proto.runtime.v1 import api_pb2 as cri

log = logging.getLogger("skiff.agent.resources")

NS = 1e9


@dataclass(frozen=True)
class ResourceSettings:
    eviction: EvictionConfig | None = None
    image_gc: ImageGCPolicy = field(default_factory=ImageGCPolicy)
    container_gc: ContainerGCPolicy = field(default_factory=ContainerGCPolicy)
    eviction_period: float = 2.0
    container_gc_period: float = 60.0
    image_gc_period: float = 300.0
    evict_wait: float = 30.0


class NodeResources:
    def __init__(
        self,
        settings: ResourceSettings,
        cri_client: CRIClient,
        workers: PodWorkers,
        fs_path: str,
        cgroup_root: str,
        log_root: str,
        allocatable_memory: Callable[[], int],
        now: Callable[[], float] = time.time,
        volume_root: Path | None = None,
    ) -> None:
        self.settings = settings
        self.volume_root = volume_root  # the agent's root: pods' emptyDirs under it
        self.cri = cri_client
        self.workers = workers
        self.fs_path = fs_path
        self.cgroup_root = cgroup_root
        self.log_root = log_root
        self.allocatable_memory = allocatable_memory
        self.now = now
        self.images = ImageTracker()
        self.problems: dict[str, str] = {}  # reason -> message, for the Node
        self.wake = threading.Event()
        self.notifier = ThresholdNotifier(self.wake.set)
        self.manager = (
            EvictionManager(
                settings.eviction,
                self.observe,
                self.pod_usages,
                self.evict,
                self.reclaim,
                local_storage=self.local_storage_violations,
            )
            if settings.eviction is not None
            else None
        )

    # -------------------------------------------------------------- signals
    def _problem(self, reason: str, err: CRIError | None) -> None:
        if err is None:
            self.problems.pop(reason, None)
        else:
            if reason not in self.problems:
                log.warning("%s: %s", reason, err)
            self.problems[reason] = f"{err.method}: {err.message}"

    def image_fs(self) -> str:
        """The mount point of the runtime's image filesystem, or "" if it cannot say."""
        try:
            fss = self.cri.image_fs_info()
        except CRIError as err:
            self._problem("ImageFsInfoFailed", err)
            return ""
        self._problem("ImageFsInfoFailed", None)
        return next((f.fs_id.mountpoint for f in fss if f.fs_id.mountpoint), "")

    def observe(self) -> dict[str, Observation]:
        obs: dict[str, Observation] = {t.MEMORY_AVAILABLE: signals.node_memory()}
        allocatable = self.allocatable_memory()
        if allocatable > 0:
            pods = signals.cgroup_memory(self.cgroup_root, allocatable)
            if pods is not None:
                obs[t.ALLOCATABLE_MEMORY_AVAILABLE] = pods
        obs[t.NODEFS_AVAILABLE], obs[t.NODEFS_INODES_FREE] = signals.filesystem(self.fs_path)
        mount = self.image_fs()
        if mount:
            obs[t.IMAGEFS_AVAILABLE], obs[t.IMAGEFS_INODES_FREE] = signals.filesystem(mount)
        obs[t.PID_AVAILABLE] = signals.pids()
        self._arm(obs)
        return obs

    def _arm(self, obs: Mapping[str, Observation]) -> None:
        """Be woken when memory crosses the most urgent hard memory threshold."""
        cfg = self.settings.eviction
        hier = signals.memory_hierarchy()
        if cfg is None or hier is None or hier[1]:
            return
        for signal, rel in (
            (t.ALLOCATABLE_MEMORY_AVAILABLE, self.cgroup_root),
            (t.MEMORY_AVAILABLE, ""),
        ):
            th = cfg.hard(signal)
            o = obs.get(signal)
            if th is None or o is None:
                continue
            cgroup = hier[0] / rel.strip("/")
            usage = o.capacity - th.value.of(o.capacity) + signals.inactive_file(cgroup, False)
            self.notifier.arm(cgroup, max(0, usage))
            return

    def local_storage_violations(self) -> list[tuple[PodUsage, str]]:
        """Pods whose disk-backed emptyDir is past its sizeLimit."""
        if self.volume_root is None:
            return []
        return local_storage.violations(self.pod_usages(), self.volume_root)

    def pod_usages(self) -> list[PodUsage]:
        out = []
        for pod in self.workers.admitted_pods():
            uid = pod["metadata"]["uid"]
            rel = pod_cgroup_parent(pod, self.cgroup_root)
            hier = signals.memory_hierarchy()
            ws = signals.working_set(hier[0] / rel.strip("/"), hier[1]) if hier else None
            requests = pod_requests(pod)
            out.append(
                PodUsage(
                    uid=uid,
                    pod=pod,
                    priority=int((pod.get("spec") or {}).get("priority") or 0),
                    memory=ws or 0,
                    memory_request=int(requests.get("memory", 0)),
                    # Its logs and its emptyDir volumes (under the agent's
                    # root, the nodefs), as the kubelet counts a pod's disk.
                    disk=signals.dir_bytes(Path(pod_log_dir(pod, self.log_root)))
                    + signals.dir_bytes(
                        Path(self.fs_path) / "pods" / uid / "volumes" / "kubernetes.io~empty-dir"
                    ),
                    disk_request=int(requests.get("ephemeral-storage", 0)),
                    processes=signals.cgroup_processes(rel),
                    critical=is_static(pod),
                )
            )
        return out

    # -------------------------------------------------------------- actions
    def evict(self, victim: PodUsage, message: str, grace: int) -> bool:
        pod_grace = int((victim.pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
        grace = min(grace, pod_grace) if grace > 0 else 0
        done = self.workers.fail(victim.uid, "Evicted", message, grace)
        if not done.wait(self.settings.evict_wait + grace):
            log.warning(
                "eviction: pod %s not stopped within %.0fs", victim.uid, self.settings.evict_wait
            )
        return True

    def reclaim(self, signal: str) -> None:
        """Node-level resources before pods: dead containers, then images."""
        self.container_gc()
        if signal in (
            t.IMAGEFS_AVAILABLE,
            t.IMAGEFS_INODES_FREE,
            t.NODEFS_AVAILABLE,
            t.NODEFS_INODES_FREE,
        ):
            self.image_gc(force=True)

    def _containers(self) -> list[cri.Container] | None:
        try:
            found = self.cri.list_containers()
        except CRIError as err:
            self._problem("ListContainersFailed", err)
            return None
        self._problem("ListContainersFailed", None)
        return found

    def container_gc(self) -> int:
        """Remove dead containers beyond the policy, with their logs; how many."""
        containers = self._containers()
        if containers is None:
            return 0
        dead = [
            DeadContainer(
                c.id,
                c.labels.get(POD_UID_LABEL, ""),
                c.labels.get(CONTAINER_NAME_LABEL, c.metadata.name),
                c.created_at / NS,
            )
            for c in containers
            if c.state in (cri.CONTAINER_EXITED, cri.CONTAINER_CREATED, cri.CONTAINER_UNKNOWN)
            and c.labels.get(POD_UID_LABEL)
        ]
        # A created container that never ran is dead only once it is not the newest.
        removed = 0
        for c in containers_to_remove(dead, self.now(), self.settings.container_gc):
            log_path = ""
            with contextlib.suppress(CRIError):
                log_path = self.cri.container_status(c.id).log_path
            try:
                self.cri.remove_container(c.id)
            except CRIError as err:
                if not err.not_found:
                    log.warning("container GC: removing %s: %s", c.id[:12], err)
                continue
            for path in self._log_files(c.pod_uid, log_path):
                with contextlib.suppress(OSError):
                    os.unlink(path)
            removed += 1
        if removed:
            log.info("container GC removed %d dead containers", removed)
        return removed

    def _log_files(self, pod_uid: str, log_path: str) -> list[Path]:
        """The container's log file: CRI gives it absolute (containerd) or
        relative to the pod's log directory (<log root>/<ns>_<name>_<uid>)."""
        if not log_path:
            return []
        if os.path.isabs(log_path):
            return [Path(log_path)]
        return [d / log_path for d in Path(self.log_root).glob(f"*_{pod_uid}") if d.is_dir()]

    def _pod_images(self) -> set[str]:
        """The images the active pods' containers name, in the forms a
        runtime lists them by (`busybox:1.36` is docker.io/library/busybox:1.36)."""
        out: set[str] = set()
        for pod in self.workers.admitted_pods():
            spec = pod.get("spec") or {}
            for key in ("initContainers", "containers", "ephemeralContainers"):
                for c in spec.get(key) or []:
                    image = str(c.get("image") or "")
                    if image:
                        out |= {image, docker_name(image)}
        return out

    def image_gc(self, force: bool = False) -> int:
        """Remove unused images, least recently used first, when the image
        filesystem is above the high threshold (or under disk pressure,
        `force`); how many bytes went."""
        mount = self.image_fs()
        containers = self._containers()
        if not mount or containers is None:
            return 0
        try:
            images = self.cri.list_images()
        except CRIError as err:
            self._problem("ListImagesFailed", err)
            return 0
        self._problem("ListImagesFailed", None)
        in_use = {c.image_ref for c in containers} | {c.image.image for c in containers}
        # And every image the node's active pods name, as the kubelet's image
        # manager counts them: a container being created (listed after the
        # containers were) holds its image too.
        in_use |= self._pod_images()
        in_use_ids = {i.id for i in images
                      if i.id in in_use or {*i.repo_tags, *i.repo_digests} & in_use}  # fmt: skip
        now = self.now()
        records = self.images.observe(((i.id, i.size, i.pinned) for i in images), in_use_ids, now)
        b, _ = signals.filesystem(mount)
        fs = FsUsage(b.capacity, b.available)
        policy = self.settings.image_gc
        amount = bytes_to_free(fs, policy)
        if force and amount == 0:
            amount = max(0, fs.capacity * (100 - policy.low_threshold) // 100 - fs.available)
        freed = 0
        for image in images_to_free(records, in_use_ids, amount, now, policy):
            try:
                self.cri.remove_image(image.id)
            except CRIError as err:
                log.warning("image GC: removing %s: %s", image.id[:19], err)
                continue
            freed += image.size
        if freed:
            log.info(
                "image GC freed %d bytes (%.0f%% used, high %d%%)",
                freed,
                fs.percent_used,
                policy.high_threshold,
            )
        return freed

    # -------------------------------------------------------------- loops
    def eviction_round(self) -> None:
        self.wake.clear()
        if self.manager is not None:
            self.manager.synchronize()

    def run_eviction(self, stop: threading.Event) -> None:
        """Every eviction period, or at once when memory crosses a threshold."""
        while not stop.is_set():
            try:
                self.eviction_round()
            except Exception:
                log.exception("eviction round failed")
            deadline = time.monotonic() + self.settings.eviction_period
            while not stop.is_set() and not self.wake.is_set() and time.monotonic() < deadline:
                self.wake.wait(min(0.5, max(0.0, deadline - time.monotonic())))

    def pressures(self) -> dict[str, str]:
        if self.manager is None:
            return {}
        return {p.condition: p.message for p in self.manager.pressures()}

    def stop(self) -> None:
        self.wake.set()
        self.notifier.disarm()


def docker_name(image: str) -> str:
    """An image name as Docker and the CRI runtimes list it: a registry
    host (`docker.io` when the first part is none), `library/` for
    docker.io's one-part names, `:latest` without a tag or digest."""
    first, _, rest = image.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        first, rest = "docker.io", image
    if first == "docker.io" and "/" not in rest:
        rest = f"library/{rest}"
    last = rest.rsplit("/", 1)[-1]
    if "@" not in last and ":" not in last:
        rest += ":latest"
    return f"{first}/{rest}"
