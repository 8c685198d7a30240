"""Pod volumes on the node, and the CRI mounts they give each container.

Volumes live under `<agent root>/pods/<uid>/volumes/<plugin>/<name>`:
emptyDir (a directory, or tmpfs for medium Memory), hostPath (with the
`type` checks Kubernetes makes), persistentVolumeClaim (the bound volume's
host path, through `VolumeSources.claims`), configMap, secret, downwardAPI and projected
(files written atomically through a `..data` symlink swap, as the kubelet's
atomic writer does, so readers never see half an update). Removing a pod's
volumes unmounts tmpfs first and never follows symlinks out of the pod dir.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import subpath
from agent.pod_config import ConfigError, NodeSettings, field_ref
from machinery import libc
from machinery.atomicfile import swap_symlink
from proto.runtime.v1 import api_pb2 as cri

# (namespace, name) -> the object (ConfigMap or Secret) or None when missing.
ObjectLookup = Callable[[str, str], Mapping[str, Any] | None]
# (pod, volume) -> the host path of a persistentVolumeClaim volume (agent/claims.py);
# raises ConfigError while the claim cannot be used yet.
ClaimLookup = Callable[[Mapping[str, Any], Mapping[str, Any]], str]
# (pod, audience, expirationSeconds) -> a ServiceAccount token, or None for now.
TokenSource = Callable[[Mapping[str, Any], str, int], str | None]

_PROPAGATION = {
    None: cri.PROPAGATION_PRIVATE,
    "None": cri.PROPAGATION_PRIVATE,
    "HostToContainer": cri.PROPAGATION_HOST_TO_CONTAINER,
    "Bidirectional": cri.PROPAGATION_BIDIRECTIONAL,
}


@dataclass(frozen=True)
class VolumeSources:
    configmaps: ObjectLookup
    secrets: ObjectLookup
    node: NodeSettings
    claims: ClaimLookup | None = None
    tokens: TokenSource | None = None  # projected serviceAccountToken sources


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


def _key_items(
    data: Mapping[str, str], items: list[dict[str, Any]] | None, what: str, optional: bool
) -> dict[str, tuple[str, int | None]]:
    if not items:
        return {k: (v, None) for k, v in data.items()}
    out = {}
    for item in items:
        if item["key"] not in data:
            if optional:
                continue
            raise ConfigError(f"{what}: key {item['key']!r} not found")
        out[item["path"]] = (data[item["key"]], item.get("mode"))
    return out


def _downward_files(
    pod: Mapping[str, Any], items: list[dict[str, Any]], node: NodeSettings
) -> dict[str, tuple[str, int | None]]:
    out: dict[str, tuple[str, int | None]] = {}
    md = pod["metadata"]
    for item in items:
        if "fieldRef" in item:
            path = item["fieldRef"]["fieldPath"]
            if path in ("metadata.labels", "metadata.annotations"):
                values = md.get(path.split(".")[1]) or {}
                text = "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
            else:
                text = field_ref(pod, path, node)
        else:
            raise ConfigError(f"downwardAPI item {item.get('path')}: only fieldRef is supported")
        out[item["path"]] = (text, item.get("mode"))
    return out


def _object_data(obj: Mapping[str, Any], secret: bool) -> dict[str, str]:
    data: dict[str, str] = {}
    for k, v in (obj.get("data") or {}).items():
        data[k] = base64.b64decode(v).decode(errors="replace") if secret else v
    if secret:
        data.update(obj.get("stringData") or {})
    for k, v in (obj.get("binaryData") or {}).items():
        data[k] = base64.b64decode(v).decode(errors="replace")
    return data


def volume_files(
    pod: Mapping[str, Any], volume: Mapping[str, Any], src: VolumeSources
) -> dict[str, tuple[str, int | None]]:
    """The files (relative path -> (content, mode)) of a file-backed volume."""
    ns = pod["metadata"].get("namespace", "default")
    name = volume["name"]

    def fetch(
        kind: str, ref: Mapping[str, Any], lookup: ObjectLookup, secret: bool
    ) -> dict[str, tuple[str, int | None]]:
        obj_name = ref.get("name") or ref.get("secretName", "")
        obj = lookup(ns, obj_name)
        what = f"volume {name}: {kind} {ns}/{obj_name}"
        if obj is None:
            if ref.get("optional"):
                return {}
            raise ConfigError(f"{what} not found")
        return _key_items(
            _object_data(obj, secret), ref.get("items"), what, bool(ref.get("optional"))
        )

    if "configMap" in volume:
        return fetch("configmap", volume["configMap"], src.configmaps, False)
    if "secret" in volume:
        return fetch("secret", volume["secret"], src.secrets, True)
    if "downwardAPI" in volume:
        return _downward_files(pod, volume["downwardAPI"].get("items") or [], src.node)
    files: dict[str, tuple[str, int | None]] = {}
    for source in volume["projected"].get("sources") or []:
        if "configMap" in source:
            files.update(fetch("configmap", source["configMap"], src.configmaps, False))
        elif "secret" in source:
            files.update(fetch("secret", source["secret"], src.secrets, True))
        elif "downwardAPI" in source:
            files.update(_downward_files(pod, source["downwardAPI"].get("items") or [], src.node))
        elif "serviceAccountToken" in source:
            files.update(_token_file(pod, source["serviceAccountToken"] or {}, src))
        else:
            raise ConfigError(f"volume {name}: unsupported projected source {sorted(source)}")
    return files


def _token_file(
    pod: Mapping[str, Any], source: Mapping[str, Any], src: VolumeSources
) -> dict[str, tuple[str, int | None]]:
    """A projected ServiceAccount token (none yet when it cannot be had: the
    refresh writes it later)."""
    path = str(source.get("path") or "")
    if not path:
        raise ConfigError("serviceAccountToken: path is required")
    if src.tokens is None:
        return {}
    token = src.tokens(pod, str(source.get("audience") or ""),
                       int(source.get("expirationSeconds") or 3600))  # fmt: skip
    return {path: (token, None)} if token else {}


def refresh_token_volumes(root: Path, pod: Mapping[str, Any], src: VolumeSources) -> int:
    """Rewrite the projected volumes holding a ServiceAccount token whose
    token changed (renewed before it expires); how many were rewritten."""
    base = pod_dir(root, pod) / "volumes"
    done = 0
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        sources = (volume.get("projected") or {}).get("sources") or []
        if not any("serviceAccountToken" in s for s in sources):
            continue
        target = base / _plugin_dir(volume) / volume["name"]
        if not (target / "..data").is_symlink():
            continue  # not set up on this node (yet)
        files = volume_files(pod, volume, src)
        current: dict[str, str | None] = {}
        for rel in files:
            try:
                current[rel] = (target / rel).read_text()
            except OSError:
                current[rel] = None
        tops = {Path(rel).parts[0] for rel in files}
        present = {e.name for e in target.iterdir() if not e.name.startswith("..")}
        if tops == present and all(current[r] == c for r, (c, _) in files.items()):
            continue
        write_atomic_dir(target, files, volume["projected"].get("defaultMode", 0o644))
        done += 1
    return done


def write_atomic_dir(
    target: Path, files: Mapping[str, tuple[str, int | None]], default_mode: int
) -> None:
    """Publish `files` under `target` through a `..data` symlink swap: a new
    timestamped dir is filled, then `..data` is renamed to point at it, and
    each top-level name is a symlink through `..data`."""
    target.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix="..", dir=target))
    for rel, (content, mode) in files.items():
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise ConfigError(f"volume file path {rel!r} must be relative without '..'")
        dest = new / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        # created with its final mode, never readable before a chmod
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0)
        with open(fd, "w") as f:
            os.fchmod(fd, mode if mode is not None else default_mode)
            f.write(content)
    new.chmod(0o755)
    old = os.readlink(target / "..data") if (target / "..data").is_symlink() else None
    swap_symlink(target / "..data", new.name)
    tops = {Path(rel).parts[0] for rel in files}
    for top in tops:
        link = target / top
        if not link.is_symlink():
            link.symlink_to(Path("..data") / top)
    for entry in target.iterdir():
        if entry.is_symlink() and entry.name not in tops and not entry.name.startswith(".."):
            entry.unlink()
    if old and old != new.name:
        shutil.rmtree(target / old, ignore_errors=True)


def _ensure_tmpfs(path: Path) -> None:
    path.mkdir(mode=0o750, parents=True, exist_ok=True)
    if not os.path.ismount(path):
        libc.mount("tmpfs", str(path), "tmpfs", 0, "mode=0755,size=16m")


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
                size = (volume["emptyDir"] or {}).get("sizeLimit")
                libc.mount("tmpfs", str(path), "tmpfs", 0, f"size={size}" if size else None)
        else:
            kind = next(
                k for k in ("configMap", "secret", "downwardAPI", "projected") if k in volume
            )
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


def teardown_volumes(root: Path, pod_uid: str) -> None:
    """Remove a pod's volumes dir: unmount tmpfs first, never follow links."""
    base = root / "pods" / pod_uid
    if not base.exists():
        return
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    prefix = str(base.resolve()) + "/"
    for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        with contextlib.suppress(OSError):  # as `umount` did, whose failure was ignored
            libc.umount2(point)
    shutil.rmtree(base, ignore_errors=True)
