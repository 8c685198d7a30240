"""Keeping running pods' API-backed volumes (configMap, secret, downwardAPI,
projected) at their sources, as the kubelet's volume manager does.

Two triggers, one way of doing it (`refresh_pod`):
- a watched Secret or ConfigMap changed (agent/object_cache.py): the pods
  naming it are queued and a worker refreshes them at once;
- every sync period, each running pod (the safety net, and the renewal of
  projected ServiceAccount tokens past 80% of their life).
A source deleted under a running pod leaves the volume's last content and
a FailedMount event with the kubelet's message, said once until it
changes; the pod runs on. A pod whose volumes are not set up yet (waiting
for the ConfigMap that just appeared) is handed to its pod worker instead,
so it starts now rather than at its next retry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.pod_config import ConfigError
from agent.pod_events import PodEvents
from agent.volume_files import VolumeSources, file_kind
from agent.volumes import refresh_volumes, volumes_set_up
from controlplane.client.workqueue import RateLimitingQueue, work

log = logging.getLogger("skiff.agent.volumes")


def running(pod: Mapping[str, Any]) -> bool:
    """Active on the node: not finished, not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def _file_volumes(pod: Mapping[str, Any]) -> list[str]:
    volumes = (pod.get("spec") or {}).get("volumes") or []
    return [v["name"] for v in volumes if file_kind(v) is not None]


@dataclass(eq=False)
class VolumeRefresher:
    """`pod`: the API pod of a uid on this node; `sync`: queue a pod for its worker."""

    root: Path
    sources: VolumeSources
    events: PodEvents
    pod: Callable[[str], Mapping[str, Any] | None]
    sync: Callable[[str], None]
    queue: RateLimitingQueue[str] = field(default_factory=RateLimitingQueue, init=False)
    refreshed: int = field(default=0, init=False)  # pod refreshes done (tests, metrics)

    def changed(self, uids: Iterable[str]) -> None:
        """Sources of these pods changed: refresh them soon (the worker)."""
        for uid in uids:
            self.queue.add(uid)

    def run(self) -> None:
        """The worker: refresh queued pods until the queue shuts down."""
        work(self.queue, self._refresh, self._refresh_failed)

    def _refresh(self, uid: str) -> None:
        pod = self.pod(uid)
        if pod is not None and running(pod):
            self.refresh_pod(pod)

    def _refresh_failed(self, uid: str, err: Exception) -> None:
        log.exception("uid=%s volume refresh failed", uid)

    def stop(self) -> None:
        self.queue.shut_down()

    def refresh_all(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """The sync period's pass over every running pod."""
        active = [p for p in pods if running(p)]
        self.events.forget({str(p["metadata"]["uid"]) for p in active})
        for pod in active:
            self.refresh_pod(pod)

    def refresh_pod(self, pod: Mapping[str, Any]) -> None:
        names = _file_volumes(pod)
        if not names:
            return
        if not volumes_set_up(self.root, pod):
            self.sync(str(pod["metadata"]["uid"]))  # its worker sets them up
            return
        try:
            _, failed = refresh_volumes(self.root, pod, self.sources)
        except (OSError, ConfigError) as err:
            log.warning("pod=%s volume refresh failed: %s", pod["metadata"].get("name"), err)
            return
        self.refreshed += 1
        for volume in names:
            key = f"volume/{volume}"
            if volume in failed:
                why = failed[volume].removeprefix(f"volume {volume}: ")
                msg = f'MountVolume.SetUp failed for volume "{volume}" : {why}'
                self.events.warn_once(pod, key, "FailedMount", msg)
            else:
                self.events.clear(pod, key)
