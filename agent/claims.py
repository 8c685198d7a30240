"""persistentVolumeClaim volumes of a pod: from the claim to a host directory.

`ClaimVolumes.path(pod, volume)` follows the claim to its bound
PersistentVolume (reading both from the API) and returns the host path
the containers get, as a hostPath volume's would be: `local.path` or
`hostPath.path`. On the way it

- refuses, with a clear message that becomes the pod's waiting reason, a
  claim that does not exist or is not bound yet (and writes a FailedMount
  Event on the pod once per message), a volume of another source, and a
  local volume pinned to other nodes;
- makes the directory of a local-path volume if this node's provisioner
  has not done so yet, and of a hostPath volume of type DirectoryOrCreate;
- gives the tree to the pod's fsGroup once per pod (group ownership,
  group read/write, setgid directories; with fsGroupChangePolicy
  OnRootMismatch only when the root does not have it yet), as the kubelet does.

`read_only_mounts` turns the mounts of a volume whose claim source says
`readOnly` into read-only ones. Path checks (subPath) stay with the volume
code; this module never mounts anything.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent.local_path import LocalPathError, LocalPathVolumes, is_mine
from agent.pod_config import ConfigError
from controlplane.api import volumes as v
from controlplane.client import errors
from controlplane.client.interface import ApiClient
from proto.runtime.v1 import api_pb2 as cri

log = logging.getLogger("skiff.agent.claims")


def fs_group_of(pod: Mapping[str, Any]) -> int | None:
    group = ((pod.get("spec") or {}).get("securityContext") or {}).get("fsGroup")
    return int(group) if isinstance(group, int) and not isinstance(group, bool) else None


def apply_fs_group(path: Path, gid: int, policy: str = "Always") -> None:
    """Group `gid` on everything under `path`, group rw, setgid on directories (no links followed).

    With fsGroupChangePolicy OnRootMismatch, a tree whose root already has
    that group and setgid is left alone (a large volume is not walked again)."""
    st = os.lstat(path)
    if policy == "OnRootMismatch" and st.st_gid == gid and st.st_mode & stat.S_ISGID:
        return
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        for name in [*dirnames, *filenames, ""]:
            target = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(target)
            if stat.S_ISLNK(st.st_mode):
                continue
            os.lchown(target, -1, gid)
            mode = stat.S_IMODE(st.st_mode) | stat.S_IRGRP | stat.S_IWGRP
            if stat.S_ISDIR(st.st_mode):
                mode |= stat.S_IXGRP | stat.S_ISGID
            os.chmod(target, mode)


def read_only_mounts(
    pod: Mapping[str, Any], container: Mapping[str, Any], mounts: list[cri.Mount]
) -> None:
    """Make the container's mounts of read-only claim volumes read-only (in place).

    `mounts` are container_mounts' output, one per volumeMount in order."""
    read_only = {
        vol.get("name")
        for vol in (pod.get("spec") or {}).get("volumes") or []
        if (vol.get("persistentVolumeClaim") or {}).get("readOnly")
    }
    if not read_only:
        return
    for vm, mount in zip(container.get("volumeMounts") or [], mounts, strict=False):
        if vm.get("name") in read_only:
            mount.readonly = True


class ClaimVolumes:
    """See the module docstring."""

    def __init__(self, api: ApiClient, node: str, local: LocalPathVolumes | None = None) -> None:
        self.api = api
        self.node = node
        self.local = local
        self._lock = threading.Lock()
        self._owned: set[tuple[str, str]] = set()  # (pod uid, path) given to the fsGroup
        self._said: dict[tuple[str, str], str] = {}  # (pod uid, claim) -> last event message

    def _refuse(self, pod: Mapping[str, Any], claim: str, message: str) -> ConfigError:
        key = (str(pod["metadata"].get("uid")), claim)
        with self._lock:
            repeat = self._said.get(key) == message
            self._said[key] = message
        if not repeat:
            self._event(pod, "FailedMount", message)
        return ConfigError(message)

    def _event(self, pod: Mapping[str, Any], reason: str, message: str) -> None:
        meta = pod["metadata"]
        ns = meta.get("namespace") or "default"
        try:
            self.api.create(
                "Event",
                {
                    "metadata": {"generateName": f"{meta['name']}.", "namespace": ns},
                    "involvedObject": {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": meta["name"],
                        "namespace": ns,
                        "uid": meta.get("uid", ""),
                    },
                    "reason": reason,
                    "message": message,
                    "type": "Warning",
                    "source": {"component": "agent", "host": self.node},
                    "count": 1,
                },
                ns,
            )
        except errors.ApiError as err:
            log.debug("event %s not written: %s", reason, err)

    def path(self, pod: Mapping[str, Any], volume: Mapping[str, Any]) -> str:
        ns = pod["metadata"].get("namespace") or "default"
        name = str((volume.get("persistentVolumeClaim") or {}).get("claimName") or "")
        try:
            claim = self.api.get("PersistentVolumeClaim", name, ns)
        except errors.NotFound:
            raise self._refuse(pod, name, f'persistentvolumeclaim "{name}" not found') from None
        if not v.is_bound_claim(claim):
            phase = (claim.get("status") or {}).get("phase") or "Pending"
            raise self._refuse(
                pod,
                name,
                f'waiting for persistentvolumeclaim "{name}" to be bound (it is {phase})',
            )
        pv_name = str(v.spec(claim)["volumeName"])
        try:
            pv = self.api.get("PersistentVolume", pv_name)
        except errors.NotFound:
            raise self._refuse(pod, name, f'persistentvolume "{pv_name}" not found') from None
        host = v.volume_path(pv)
        if not host:
            raise self._refuse(
                pod,
                name,
                f"persistentvolume {pv_name}: only local and hostPath volumes can be mounted",
            )
        nodes = v.volume_node_names(pv)
        if "local" in v.spec(pv) and nodes is not None and self.node not in nodes:
            raise self._refuse(
                pod,
                name,
                f"persistentvolume {pv_name} is pinned to {', '.join(nodes)}, not {self.node}",
            )
        try:
            self._ensure_dir(pv, host)
        except (OSError, LocalPathError) as err:
            raise self._refuse(pod, name, f"persistentvolume {pv_name}: {err}") from None
        gid = fs_group_of(pod)
        key = (str(pod["metadata"].get("uid")), host)
        if (
            gid is not None
            and key not in self._owned
            and not ((volume.get("persistentVolumeClaim") or {}).get("readOnly"))
        ):
            policy = str(
                ((pod.get("spec") or {}).get("securityContext") or {}).get("fsGroupChangePolicy")
                or "Always"
            )
            apply_fs_group(Path(host), gid, policy)
            with self._lock:
                self._owned.add(key)
        return host

    def _ensure_dir(self, pv: Mapping[str, Any], host: str) -> None:
        if self.local is not None and is_mine(pv, self.node):
            self.local.ensure(pv)
            return
        source = v.spec(pv).get("hostPath") or {}
        if source.get("type") == "DirectoryOrCreate":
            Path(host).mkdir(mode=0o755, parents=True, exist_ok=True)
        if not os.path.isdir(host):
            raise LocalPathError(f"{host} is not a directory on node {self.node}")

    def forget(self, pod_uid: str) -> None:
        with self._lock:
            self._owned = {k for k in self._owned if k[0] != pod_uid}
            self._said = {k: m for k, m in self._said.items() if k[0] != pod_uid}
