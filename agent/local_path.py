"""The node side of the `skiff.io/local-path` provisioner: directories, size limits, deletion.

The control plane decides (the scheduler picks the node, the PV controller
creates the PersistentVolume with nodeAffinity to it and `local.path` under
the root this agent announced); this module does the filesystem work, and
speaks to the control plane only through the API:

1. at start it makes its root directory and announces it on its own Node
   (annotation `storage.skiff.io/local-path-root`, with the label
   `storage.skiff.io/local-path: "true"` for selection; retried until it works
   and put back if the Node loses it); a node without it gets no
   local-path volumes;
2. it watches the PersistentVolumes labelled `storage.skiff.io/local-path-node`
   = its name (the only volumes a node may list; the controller labels them),
   keeping those `pv.kubernetes.io/provisioned-by: skiff.io/local-path` whose
   nodeAffinity names this node;
3. for each live one it makes the directory (mode 0770, root's: root in a
   container writes it, and a pod's fsGroup is given the tree when it
   mounts it, agent/claims.py; never 0777 as local-path provisioners make
   it, which lets any host user who learns the path read and write a
   pod's data; a directory an older agent made 0777 loses the other
   bits), applies the size limit as a project quota where the
   filesystem supports one, and records the outcome in the volume's
   annotations: `storage.skiff.io/local-path-state: ready` and
   `storage.skiff.io/local-path-quota` saying how the size is enforced or
   why it is not (e.g. "not enforced: ext4 at / is not mounted with
   prjquota"); a later capacity (expansion) re-applies the quota;
4. for one being deleted (reclaim Delete) it removes the directory, then
   lifts the `storage.skiff.io/local-path-cleanup` finalizer so the object
   goes.

It never touches a path outside its root, never follows a symlink out of
it, and never deletes the data of a volume that is not being deleted.
"""

from __future__ import annotations

import copy
import logging
import os
import shutil
import subprocess
import threading
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlplane.api import volumes as v
from controlplane.client import errors
from controlplane.client.informer import SharedInformerFactory
from controlplane.client.interface import ApiClient, Object
from controlplane.client.workqueue import RateLimitingQueue, work

log = logging.getLogger("skiff.agent.local_path")

READY = "ready"
ANNOUNCE = "/announce"  # the queue key of "put the root on our Node" (no volume has a '/')


class LocalPathError(Exception):
    """A volume directory that cannot be made or removed safely."""


@dataclass(frozen=True)
class Mount:
    point: str
    fstype: str
    options: frozenset[str]
    device: str


def mount_of(path: str, mountinfo: str = "/proc/self/mountinfo") -> Mount:
    """The mount that holds `path` (longest mount point prefix)."""
    best: Mount | None = None
    real = os.path.realpath(path)
    with open(mountinfo) as f:
        for line in f:
            left, _, right = line.partition(" - ")
            parts, tail = left.split(), right.split()
            if len(parts) < 6 or len(tail) < 3:
                continue
            point = parts[4].replace("\\040", " ")
            if real != point and not real.startswith(point.rstrip("/") + "/"):
                continue
            if best is None or len(point) >= len(best.point):
                opts = frozenset(parts[5].split(",")) | frozenset(tail[2].split(","))
                best = Mount(point, tail[0], opts, tail[1])
    if best is None:
        raise LocalPathError(f"no mount holds {path}")
    return best


def project_id(name: str) -> int:
    """A stable project quota id for a volume (never 0, the default project)."""
    return (zlib.crc32(name.encode()) & 0x7FFFFFFF) or 1


def quota_plan(mount: Mount, tools: Mapping[str, str | None]) -> str:
    """'' when project quotas can be used on `mount`, else why not (pure)."""
    if mount.fstype == "xfs":
        if not mount.options & {"prjquota", "pquota", "pqnoenforce"}:
            return f"xfs at {mount.point} is not mounted with prjquota"
        if not tools.get("xfs_quota"):
            return "xfs_quota is not installed"
        return ""
    if mount.fstype == "ext4":
        if "prjquota" not in mount.options:
            return f"ext4 at {mount.point} is not mounted with prjquota"
        if not tools.get("setquota") or not tools.get("chattr"):
            return "setquota or chattr is not installed"
        return ""
    return f"{mount.fstype} at {mount.point} has no project quotas (xfs or ext4 with prjquota)"


def _run(argv: list[str]) -> None:
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise LocalPathError(f"{' '.join(argv)}: {out.stderr.strip() or out.returncode}")


def apply_quota(path: Path, name: str, size: int, mount: Mount) -> None:
    """Limit the directory tree at `path` to `size` bytes with a project quota."""
    pid = project_id(name)
    if mount.fstype == "xfs":
        _run(["xfs_quota", "-x", "-c", f"project -s -p {path} {pid}", mount.point])
        _run(["xfs_quota", "-x", "-c", f"limit -p bhard={size} {pid}", mount.point])
        return
    _run(["chattr", "+P", "-p", str(pid), str(path)])
    kib = max(1, (size + 1023) // 1024)
    _run(["setquota", "-P", str(pid), "0", str(kib), "0", "0", mount.point])


class LocalPathVolumes:
    """The filesystem work on one node (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path_of(self, pv: Mapping[str, Any]) -> Path:
        """The volume's directory, refused unless it lies directly under the root."""
        raw = v.volume_path(pv)
        path = Path(raw)
        name = str(v.meta(pv).get("name") or "")
        if path != self.root / name or not name or "/" in name or name in (".", ".."):
            raise LocalPathError(f"volume {name}: path {raw!r} is not {self.root / name}")
        return path

    def ensure(self, pv: Mapping[str, Any]) -> str:
        """Make the directory and apply the size limit; returns the quota statement."""
        path = self.path_of(pv)
        self.root.mkdir(mode=0o711, parents=True, exist_ok=True)
        if path.is_symlink():
            raise LocalPathError(f"{path} is a symlink")
        try:
            path.mkdir(mode=0o770)
            path.chmod(0o770)
        except FileExistsError:
            mode = path.lstat().st_mode & 0o7777
            if mode & 0o007:
                path.chmod(mode & ~0o007)
        size = v.volume_capacity(pv)
        mount = mount_of(str(path))
        tools = {t: shutil.which(t) for t in ("xfs_quota", "setquota", "chattr")}
        why_not = quota_plan(mount, tools)
        if why_not:
            return f"not enforced: {why_not}"
        try:
            apply_quota(path, str(v.meta(pv)["name"]), size, mount)
        except LocalPathError as err:
            return f"not enforced: {err}"
        return f"enforced: project quota {project_id(str(v.meta(pv)['name']))} of {size} bytes"

    def remove(self, pv: Mapping[str, Any]) -> None:
        """Delete the volume's data; what is already gone is fine."""
        path = self.path_of(pv)
        if path.is_symlink():
            path.unlink()
            return
        if path.exists():
            shutil.rmtree(path)


def is_mine(pv: Mapping[str, Any], node: str) -> bool:
    return v.annotations_of(pv).get(
        v.PROVISIONED_BY_ANNOTATION
    ) == v.LOCAL_PATH_PROVISIONER and node in (v.volume_node_names(pv) or [])


class LocalPathAgent:
    """Announces the root, then reconciles this node's local-path volumes from a watch."""

    def __init__(
        self, api: ApiClient, node: str, root: Path, informers: SharedInformerFactory
    ) -> None:
        self.api = api
        self.node = node
        self.volumes = LocalPathVolumes(root)
        # Only the volumes pinned to this node: the one list of volumes a node may read.
        self.informer = informers.informer_for(
            "PersistentVolume", label_selector=f"{v.LOCAL_PATH_NODE_LABEL}={node}"
        )
        self.queue: RateLimitingQueue[str] = RateLimitingQueue()
        self._thread: threading.Thread | None = None
        self.informer.add_event_handler(
            on_add=self._changed,
            on_update=lambda old, new: self._changed(new),
            on_delete=lambda pv: None,
        )
        # Our Node losing the annotation (registered anew) gets it back.
        informers.informer_for("Node").add_event_handler(
            on_add=self._node_changed,
            on_update=lambda old, new: self._node_changed(new),
            on_delete=lambda node: None,
        )

    def _changed(self, pv: Object) -> None:
        if is_mine(pv, self.node):
            self.queue.add(str(v.meta(pv)["name"]))

    def _node_changed(self, node: Object) -> None:
        if v.meta(node).get("name") != self.node:
            return
        labels = v.meta(node).get("labels") or {}
        root = v.annotations_of(node).get(v.LOCAL_PATH_ROOT_ANNOTATION)
        if root != str(self.volumes.root) or labels.get(v.LOCAL_PATH_LABEL) != "true":
            self.queue.add(ANNOUNCE)

    def announce(self) -> None:
        """Make the root and put its path (and the label saying so) on our Node."""
        self.volumes.root.mkdir(mode=0o711, parents=True, exist_ok=True)
        meta = {
            "labels": {v.LOCAL_PATH_LABEL: "true"},
            "annotations": {v.LOCAL_PATH_ROOT_ANNOTATION: str(self.volumes.root)},
        }
        self.api.patch("Node", self.node, {"metadata": meta})
        log.info("node=%s local-path volumes under %s", self.node, self.volumes.root)

    def start(self) -> None:
        """Announce the root (retried with backoff until it works) and serve the volumes."""
        self.queue.add(ANNOUNCE)
        self._thread = threading.Thread(target=self._work, name="local-path", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.queue.shut_down()
        if self._thread is not None:
            self._thread.join(5)

    def _work(self) -> None:
        work(self.queue, self.sync, self._sync_failed)

    def _sync_failed(self, name: str, err: Exception) -> None:
        log.warning("volume=%s local-path sync failed: %s", name, err)
        self.queue.add_rate_limited(name)

    def sync(self, name: str) -> None:
        if name == ANNOUNCE:
            self.announce()
            return
        pv = self.informer.store.get(name)
        if pv is None or not is_mine(pv, self.node):
            return
        if v.meta(pv).get("deletionTimestamp"):
            if v.LOCAL_PATH_FINALIZER not in (v.meta(pv).get("finalizers") or []):
                return
            self.volumes.remove(pv)
            log.info("volume=%s data deleted", name)
            out = copy.deepcopy(pv)
            out["metadata"]["finalizers"] = [
                f for f in out["metadata"]["finalizers"] if f != v.LOCAL_PATH_FINALIZER
            ]
            try:
                self.api.update("PersistentVolume", out)
            except errors.NotFound:
                pass
            return
        statement = self.volumes.ensure(pv)
        ann = v.annotations_of(pv)
        wanted = {v.LOCAL_PATH_STATE_ANNOTATION: READY, v.LOCAL_PATH_QUOTA_ANNOTATION: statement}
        if any(ann.get(k) != val for k, val in wanted.items()):
            self.api.patch("PersistentVolume", name, {"metadata": {"annotations": wanted}})
            log.info("volume=%s ready; size limit %s", name, statement)
