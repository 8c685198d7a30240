"""Pod volumes on the node, and the CRI mounts they give each container.

Volumes live under `<agent root>/pods/<uid>/volumes/<plugin>/<name>`:
emptyDir (a directory, or tmpfs for medium Memory), hostPath (with the
`type` checks Kubernetes makes), persistentVolumeClaim (the bound volume's
host path, through `VolumeSources.claims`), configMap, secret, downwardAPI and projected
(files from agent/volume_files.py written through the kubelet's atomic
writer, agent/atomic_writer.py, so readers never see half an update; kept
up to date by `refresh_volumes` while the pod runs). Removing a pod's
volumes unmounts tmpfs first and never follows symlinks out of the pod dir.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent import atomic_writer, subpath
from agent.pod_config import ConfigError
from agent.volume_files import ClaimLookup, VolumeSources, file_kind, volume_files
from controlplane.api.quantity import parse_quantity
from machinery import libc
from proto.runtime.v1 import api_pb2 as cri

_PROPAGATION = {
    None: cri.PROPAGATION_PRIVATE,
    "None": cri.PROPAGATION_PRIVATE,
    "HostToContainer": cri.PROPAGATION_HOST_TO_CONTAINER,
    "Bidirectional": cri.PROPAGATION_BIDIRECTIONAL,
}


def pod_dir(root: Path, pod: Mapping[str, Any]) -> Path:
    return root / "pods" / str(pod["metadata"]["uid"])


def _plugin_dir(volume: Mapping[str, Any]) -> str:
    for key, plugin in (
        ("emptyDir", "empty-dir"),
        ("configMap", "configmap"),
        ("secret", "secret"),
        ("downwardAPI", "downward-api"),
        ("projected", "projected"),
    ):
        if key in volume:
            return "kubernetes.io~" + plugin
    raise ConfigError(f"volume {volume.get('name')!r}: unsupported volume type")


def _check_host_path(name: str, path: str, kind: str) -> None:
    p = Path(path)
    if kind == "DirectoryOrCreate":
        p.mkdir(mode=0o755, parents=True, exist_ok=True)
    elif kind == "FileOrCreate":
        p.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        p.touch(mode=0o644, exist_ok=True)
    checks: dict[str, Callable[[int], bool]] = {
        "Directory": stat.S_ISDIR,
        "File": stat.S_ISREG,
        "Socket": stat.S_ISSOCK,
        "CharDevice": stat.S_ISCHR,
        "BlockDevice": stat.S_ISBLK,
    }
    if kind in checks:
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            raise ConfigError(f"hostPath volume {name}: {path} does not exist") from None
        if not checks[kind](mode):
            raise ConfigError(f"hostPath volume {name}: {path} is not a {kind}")


def refresh_volumes(
    root: Path,
    pod: Mapping[str, Any],
    src: VolumeSources,
    only: Callable[[Mapping[str, Any]], bool] = lambda volume: True,
) -> tuple[int, dict[str, str]]:
    """Bring the pod's configMap, secret, downwardAPI and projected volumes
    to what their sources say now (the kubelet's remount each sync period).
    Returns how many were rewritten and, by volume, why one could not be
    (its ConfigMap or Secret deleted under the running pod): such a volume
    keeps its last content."""
    base = pod_dir(root, pod) / "volumes"
    done, failed = 0, {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        kind = file_kind(volume)
        if kind is None or not only(volume):
            continue
        target = base / _plugin_dir(volume) / volume["name"]
        if not (target / atomic_writer.DATA).is_symlink():
            continue  # not set up on this node (yet)
        try:
            files = volume_files(pod, volume, src)
            mode = (volume[kind] or {}).get("defaultMode", 0o644)
            done += atomic_writer.write(target, files, mode, refresh=True)
        except ConfigError as err:
            failed[volume["name"]] = str(err)
    return done, failed


def volumes_set_up(root: Path, pod: Mapping[str, Any]) -> bool:
    """Whether every configMap, secret, downwardAPI and projected volume of
    the pod has been written on this node (its sandbox was made)."""
    base = pod_dir(root, pod) / "volumes"
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if file_kind(volume) is None:
            continue
        if not (base / _plugin_dir(volume) / volume["name"] / atomic_writer.DATA).is_symlink():
            return False
    return True


def refresh_token_volumes(root: Path, pod: Mapping[str, Any], src: VolumeSources) -> int:
    """Rewrite the projected volumes holding a ServiceAccount token whose
    token changed (renewed before it expires); how many were rewritten."""

    def has_token(volume: Mapping[str, Any]) -> bool:
        sources = (volume.get("projected") or {}).get("sources") or []
        return any("serviceAccountToken" in s for s in sources)

    return refresh_volumes(root, pod, src, has_token)[0]


def write_atomic_dir(
    target: Path, files: Mapping[str, tuple[bytes, int | None]], default_mode: int
) -> None:
    """Publish `files` under `target` through the atomic writer."""
    atomic_writer.write(target, files, default_mode)


def _ensure_tmpfs(path: Path) -> None:
    path.mkdir(mode=0o750, parents=True, exist_ok=True)
    if not os.path.ismount(path):
        libc.mount("tmpfs", str(path), "tmpfs", 0, "mode=0755,size=16m")


def size_limit(volume: Mapping[str, Any]) -> int | None:
    """An emptyDir's sizeLimit in bytes (rounded up), None when it has none;
    ConfigError for one that is not a positive quantity (the API server
    refuses those; a pod from elsewhere, a static one, may still carry it)."""
    limit = (volume.get("emptyDir") or {}).get("sizeLimit")
    if limit is None:
        return None
    try:
        value = parse_quantity(limit)
    except ValueError as err:
        raise ConfigError(f"volume {volume.get('name')!r}: emptyDir.sizeLimit: {err}") from None
    if value <= 0:
        raise ConfigError(f"volume {volume.get('name')!r}: emptyDir.sizeLimit must be positive")
    return math.ceil(value)


def empty_dir_limits(root: Path, pod: Mapping[str, Any]) -> list[tuple[str, Path, int, str]]:
    """(name, host path, limit in bytes, the limit as written) of each
    disk-backed emptyDir of `pod` that has a sizeLimit: what the kubelet's
    eviction manager measures (a Memory one is bounded by its tmpfs)."""
    out = []
    base = pod_dir(root, pod) / "volumes" / _plugin_dir({"emptyDir": {}})
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        source = volume.get("emptyDir") if isinstance(volume, Mapping) else None
        if not isinstance(source, Mapping) or source.get("medium") == "Memory":
            continue
        try:
            limit = size_limit(volume)
        except ConfigError:
            continue
        if limit is not None:
            out.append((str(volume["name"]), base / str(volume["name"]), limit,
                        str(source.get("sizeLimit"))))  # fmt: skip
    return out


def volume_paths(
    root: Path, pod: Mapping[str, Any], claims: ClaimLookup | None = None
) -> dict[str, str]:
    """Volume name -> host path, without making anything (but a claim's directory)."""
    base = pod_dir(root, pod) / "volumes"
    paths: dict[str, str] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if "hostPath" in volume:
            paths[volume["name"]] = str(volume["hostPath"]["path"])
        elif "persistentVolumeClaim" in volume:
            if claims is None:
                raise ConfigError(f"volume {volume['name']!r}: persistentVolumeClaim not supported")
            paths[volume["name"]] = claims(pod, volume)
        else:
            paths[volume["name"]] = str(base / _plugin_dir(volume) / volume["name"])
    return paths


def setup_volumes(root: Path, pod: Mapping[str, Any], src: VolumeSources) -> dict[str, str]:
    """Make every volume of the pod; return volume name -> host path."""
    paths = volume_paths(root, pod, src.claims)
    pod_dir(root, pod).mkdir(mode=0o750, parents=True, exist_ok=True)
    os.chmod(pod_dir(root, pod), 0o750)  # its volumes are the pod's, not every host user's
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = volume["name"]
        if "persistentVolumeClaim" in volume:
            continue  # volume_paths made it ready
        if "hostPath" in volume:
            hp = volume["hostPath"]
            _check_host_path(name, hp["path"], hp.get("type", ""))
            continue
        path = Path(paths[name])
        if "emptyDir" in volume:
            path.mkdir(mode=0o777, parents=True, exist_ok=True)
            path.chmod(0o777)
            if (volume["emptyDir"] or {}).get("medium") == "Memory" and not os.path.ismount(path):
                size = size_limit(volume)  # bytes: never the text, which reaches the options
                libc.mount("tmpfs", str(path), "tmpfs", 0, f"size={size}" if size else None)
        else:
            kind = file_kind(volume) or ""
            default_mode = (volume[kind] or {}).get("defaultMode", 0o644)
            if kind in ("secret", "projected"):
                # credentials never touch persistent disk (the kubelet's way)
                _ensure_tmpfs(path)
            write_atomic_dir(path, volume_files(pod, volume, src), default_mode)
    return paths


def container_mounts(
    container: Mapping[str, Any],
    volume_paths: Mapping[str, str],
    subpath_dir: Path | None = None,
) -> list[cri.Mount]:
    """The CRI mounts of a container. A subPath is resolved inside its
    volume and bound under `subpath_dir` (agent.subpath); without one, only
    checked."""
    mounts = []
    for index, vm in enumerate(container.get("volumeMounts") or []):
        name = vm["name"]
        if name not in volume_paths:
            raise ConfigError(
                f"container {container['name']}: volumeMount {name!r} names no volume of the pod"
            )
        host = volume_paths[name]
        sub = vm.get("subPath")
        if sub:
            try:
                if subpath_dir is None:
                    host = subpath.checked_path(host, sub)
                else:
                    target = subpath_dir / name / str(container["name"]) / str(index)
                    host = subpath.prepare(host, sub, target)
            except ConfigError as err:
                raise ConfigError(f"container {container['name']}: {err}") from None
            except OSError as err:
                raise ConfigError(
                    f"container {container['name']}: subPath {sub!r}: {err.strerror}"
                ) from None
        mounts.append(
            cri.Mount(
                container_path=vm["mountPath"],
                host_path=host,
                readonly=bool(vm.get("readOnly")),
                propagation=_PROPAGATION.get(vm.get("mountPropagation"), cri.PROPAGATION_PRIVATE),
            )
        )
    return mounts


def teardown_volumes(root: Path, pod_uid: str, *, keep_pod_dir: bool = False) -> None:
    """Remove a pod's volumes: unmount tmpfs first, never follow links.
    The whole pod dir goes with them, unless `keep_pod_dir` (a terminated
    pod still in the API: its volumes go, as the kubelet removes them, so
    an eviction frees the disk its emptyDirs held; its containers'
    termination messages stay until the pod is deleted)."""
    base = root / "pods" / pod_uid
    if not base.exists():
        return
    parts = [base / "volumes", base / "volume-subpaths"] if keep_pod_dir else [base]
    parts = [part for part in parts if part.exists()]
    if not parts:
        return  # gone already (a finished pod's sync period)
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    with atomic_writer.LOCK:  # no refresh writes into what is being removed
        for part in parts:
            prefix = str(part.resolve()) + "/"
            for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
                with contextlib.suppress(OSError):  # as `umount` did, whose failure was ignored
                    libc.umount2(point)
            shutil.rmtree(part, ignore_errors=True)


__all__ = [
    "VolumeSources",
    "container_mounts",
    "pod_dir",
    "refresh_token_volumes",
    "refresh_volumes",
    "setup_volumes",
    "teardown_volumes",
    "volume_files",
    "volume_paths",
    "volumes_set_up",
    "write_atomic_dir",
]
