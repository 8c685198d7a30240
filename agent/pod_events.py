"""Events the agent records about its pods, as the kubelet's recorder does:
one Event per (pod, reason, message) until the message changes, so a
condition that persists across syncs (a ConfigMap deleted under a running
pod) is said once, not every sync period. Best effort: an API error is
logged, never raised into the sync that noticed the condition.

`image_pull_events` says a container's image pull failure as the kubelet's
image manager does: a Warning `Failed` (`Failed to pull image "IMAGE":
ERROR`) or `ErrImageNeverPull`, naming the container by its field path
(`spec.initContainers{NAME}`), so a sidecar whose image cannot be pulled is
in `kubectl describe pod` and `kubectl get events`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from agent.pod_status import Waiting
from controlplane.client import errors
from controlplane.client.interface import ApiClient

log = logging.getLogger("skiff.agent.events")


class PodEvents:
    def __init__(self, api: ApiClient, node: str) -> None:
        self.api = api
        self.node = node
        self._lock = threading.Lock()
        self._said: dict[tuple[str, str], str] = {}  # (pod uid, key) -> last message

    def warn_once(
        self,
        pod: Mapping[str, Any],
        key: str,
        reason: str,
        message: str,
        field_path: str = "",
    ) -> None:
        """A Warning event, unless the same one was the last said for `key`."""
        uid = str(pod["metadata"].get("uid") or "")
        with self._lock:
            if self._said.get((uid, key)) == message:
                return
            self._said[(uid, key)] = message
        self.record(pod, "Warning", reason, message, field_path)

    def clear(self, pod: Mapping[str, Any], key: str) -> None:
        """The condition under `key` is over: say it again if it comes back."""
        uid = str(pod["metadata"].get("uid") or "")
        with self._lock:
            self._said.pop((uid, key), None)

    def forget(self, keep: set[str]) -> None:
        """Drop what was said about pods not in `keep` (gone from the node)."""
        with self._lock:
            for k in [k for k in self._said if k[0] not in keep]:
                del self._said[k]

    def record(
        self, pod: Mapping[str, Any], kind: str, reason: str, message: str, field_path: str = ""
    ) -> None:
        meta = pod["metadata"]
        ns = meta.get("namespace") or "default"
        involved = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta["name"],
            "namespace": ns,
            "uid": meta.get("uid", ""),
        }
        if field_path:
            involved["fieldPath"] = field_path
        event = {
            "metadata": {"generateName": f"{meta['name']}.", "namespace": ns},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": kind,
            "source": {"component": "kubelet", "host": self.node},
            "count": 1,
        }
        try:
            self.api.create("Event", event, ns)
        except errors.ApiError as err:
            log.debug("event %s not written: %s", reason, err)


_LISTS = ("initContainers", "containers", "ephemeralContainers")


def image_pull_events(
    events: PodEvents, pod: Mapping[str, Any], waiting: Mapping[str, Waiting]
) -> None:
    """Say each container's failed pull once per error (`waiting`: container
    name -> why it waits); a container past its pull is forgotten, so a
    later failure is said again."""
    spec = pod.get("spec") or {}
    for field in _LISTS:
        for c in spec.get(field) or []:
            name = str(c.get("name", ""))
            key, path = f"pull/{name}", f"spec.{field}{{{name}}}"
            w = waiting.get(name)
            if w is not None and w.reason == "ErrImagePull":
                msg = f'Failed to pull image "{c.get("image", "")}": {w.message}'
                events.warn_once(pod, key, "Failed", msg, path)
            elif w is not None and w.reason == "ErrImageNeverPull":
                events.warn_once(pod, key, "ErrImageNeverPull", w.message, path)
            elif w is None or w.reason != "ImagePullBackOff":
                events.clear(pod, key)
