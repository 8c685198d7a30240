"""Writes pod statuses to the API server, only when they change.

The last status written per pod UID is kept; a new one is sent as a merge
patch of `status` on the status subresource (a node credential may write
nothing else of a pod). A failed write is forgotten so the next sync
retries it. Deleting a terminated pod (grace 0) is the agent's last word on
it, as the kubelet's status manager does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from controlplane.client import errors
from controlplane.client.interface import ApiClient, DeleteOptions

log = logging.getLogger("skiff.agent.status")


class StatusManager:
    def __init__(self, api: ApiClient) -> None:
        self._api = api
        self._lock = threading.Lock()
        self._sent: dict[str, dict[str, Any]] = {}
        # When each pod not yet running was first given a status, and who is
        # told the seconds until it runs (kubelet_pod_start_duration_seconds).
        self._first_seen: dict[str, float] = {}
        self.started: Callable[[float], None] | None = None

    def set_status(self, pod: Mapping[str, Any], status: dict[str, Any]) -> bool:
        """Send `status` if it differs from what was last sent (or what the
        pod object already carries). Returns whether a write happened."""
        md = pod["metadata"]
        uid = md["uid"]
        with self._lock:
            last = self._sent.get(uid)
            running = (pod.get("status") or {}).get("phase") == "Running"
            if self.started is not None and last is None and not running:
                self._first_seen.setdefault(uid, time.monotonic())
        if status == last or (last is None and status == pod.get("status")):
            return False
        try:
            self._api.patch(
                "Pod",
                md["name"],
                {"status": status},
                namespace=md.get("namespace"),
                subresource="status",
            )
        except errors.NotFound:
            self.forget(uid)
            return False
        except errors.ApiError as err:
            log.warning("pod=%s/%s status write failed: %s", md.get("namespace"), md["name"], err)
            self.forget(uid)
            return False
        with self._lock:
            self._sent[uid] = status
            first = self._first_seen.pop(uid, None) if status.get("phase") == "Running" else None
        if first is not None and self.started is not None:
            self.started(time.monotonic() - first)
        return True

    def delete_terminated(self, pod: Mapping[str, Any]) -> None:
        delete_now(self._api, pod)
        self.forget(pod["metadata"]["uid"])
        with self._lock:
            self._first_seen.pop(pod["metadata"]["uid"], None)

    def forget(self, uid: str) -> None:
        with self._lock:
            self._sent.pop(uid, None)


def delete_now(api: ApiClient, pod: Mapping[str, Any]) -> bool:
    """Delete this very pod (its uid) with no grace period; False when it is
    gone already or was replaced by another of the same name."""
    md = pod["metadata"]
    try:
        api.delete(
            "Pod",
            md["name"],
            namespace=md.get("namespace"),
            options=DeleteOptions(grace_period_seconds=0, precondition_uid=md["uid"]),
        )
    except (errors.NotFound, errors.Conflict):
        return False
    return True
