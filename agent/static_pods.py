"""Static pods: pods read from a manifest directory, run without the API server.

The kubelet's `--pod-manifest-path`. Every `*.yaml`, `*.yml` and `*.json`
file in the directory holds one or more Pod documents. Each becomes a pod
bound to this node, named `<name>-<node>`, in namespace `default` unless the
manifest says otherwise, with a UID derived from the parsed document and the
node name (so an agent restart finds the same pod in the runtime and never
restarts its containers, and any change to the document gives a new UID: the
old pod is killed and the new one started). The annotations
`kubernetes.io/config.source: file` and `kubernetes.io/config.hash: <uid>`
mark it. A file that cannot be read or holds an invalid Pod is logged with
its name and the problem and skipped as a whole; the others still run.

`StaticPodSource` re-reads the directory when its clock says a period has
passed (polling, no inotify) and reports added and removed pods; a file is
parsed again only when its content changed. `MirrorPods` keeps one
mirror pod per static pod in the API server (annotation
`kubernetes.io/config.mirror: <hash>`, owned by the Node) so that users see
it and the status manager has an object to write status to: a mirror that is
missing, being deleted or belongs to another version is replaced; a mirror
whose static pod is gone is deleted.

This module never talks to the runtime and never blocks on the API server:
the agent runs static pods through its ordinary sync path whether or not the
control plane answers.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from agent.status_manager import delete_now
from controlplane.api.defaults import apply_defaults
from controlplane.api.validation import validate
from controlplane.client import errors
from controlplane.client.interface import ApiClient, Object
from machinery.clock import Clock

log = logging.getLogger("skiff.agent.static")

CONFIG_SOURCE = "kubernetes.io/config.source"
CONFIG_HASH = "kubernetes.io/config.hash"
CONFIG_MIRROR = "kubernetes.io/config.mirror"
SOURCE_FILE = "file"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

# What MirrorPods.ensure found: the mirror was current, it was (re)created, or
# a pod that is no mirror holds the name (then no status may be written to it).
MirrorState = Literal["current", "created", "blocked"]


class ManifestError(Exception):
    """A manifest file that cannot become static pods; the message says why."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def static_uid(document: Mapping[str, Any], node_name: str) -> str:
    """The UID (and config hash) of the static pod made from `document` on `node_name`.

    Hashes the parsed document in canonical JSON, so formatting and comments
    do not matter but any change to the pod does."""
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{node_name}\0{canonical}".encode()).hexdigest()[:32]


def is_static(pod: Mapping[str, Any]) -> bool:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(CONFIG_SOURCE) == SOURCE_FILE and annotations.get(CONFIG_HASH))


def is_mirror(pod: Mapping[str, Any]) -> bool:
    return CONFIG_MIRROR in ((pod.get("metadata") or {}).get("annotations") or {})


def mirror_of(pod: Mapping[str, Any]) -> str:
    """The static pod UID a mirror pod stands for ("" for any other pod)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if CONFIG_MIRROR not in annotations:
        return ""
    return str(annotations.get(CONFIG_HASH) or annotations.get(CONFIG_MIRROR) or "")


def static_pod(document: Any, node_name: str, path: Path) -> Object:
    """The static pod for one manifest document; ManifestError if it is not a valid Pod."""
    if not isinstance(document, dict):
        raise ManifestError(path, "a document is not a mapping")
    if document.get("kind") != "Pod":
        raise ManifestError(path, f"kind {document.get('kind')!r} is not Pod")
    if document.get("apiVersion", "v1") != "v1":
        raise ManifestError(path, f"apiVersion {document.get('apiVersion')!r} is not v1")
    meta = document.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name") or not isinstance(meta["name"], str):
        raise ManifestError(path, "metadata.name is required")
    uid = static_uid(document, node_name)
    pod: Object = copy.deepcopy(document)
    md = pod["metadata"]
    md["name"] = f"{md['name']}-{node_name}"
    md["namespace"] = md.get("namespace") or "default"
    md["uid"] = uid
    for key in ("resourceVersion", "creationTimestamp", "deletionTimestamp", "generateName"):
        md.pop(key, None)
    annotations = dict(md.get("annotations") or {})
    annotations.pop(CONFIG_MIRROR, None)
    annotations[CONFIG_SOURCE] = SOURCE_FILE
    annotations[CONFIG_HASH] = uid
    md["annotations"] = annotations
    pod.pop("status", None)
    spec = pod.get("spec")
    if isinstance(spec, dict):
        spec["nodeName"] = node_name
    try:
        apply_defaults("Pod", pod)
        problems = validate("Pod", pod)
    except (TypeError, ValueError, AttributeError, KeyError) as err:
        problems = [f"{type(err).__name__}: {err}"]
    if problems:
        raise ManifestError(path, "; ".join(problems))
    return pod


def read_manifest(path: Path, node_name: str) -> list[Object]:
    """The static pods in one file; ManifestError if the file or any document is bad."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ManifestError(path, f"cannot read: {err}") from err
    try:
        if path.suffix == ".json":
            documents: list[Any] = [json.loads(text)]
        else:
            documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except (ValueError, yaml.YAMLError) as err:
        raise ManifestError(path, f"cannot parse: {err}") from err
    pods = [static_pod(d, node_name, path) for d in documents]
    names = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods]
    if len(set(names)) != len(names):
        raise ManifestError(path, "two documents name the same pod")
    return pods


def manifest_files(directory: Path) -> list[Path]:
    """The manifest files of `directory`, sorted; hidden files are ignored."""
    try:
        entries = list(directory.iterdir())
    except OSError:
        return []
    return sorted(
        p
        for p in entries
        if p.suffix in MANIFEST_SUFFIXES and not p.name.startswith(".") and p.is_file()
    )


@dataclass(frozen=True)
class Changes:
    """What one scan found: pods new since the last scan, and pods gone."""

    added: tuple[Object, ...] = ()
    removed: tuple[Object, ...] = ()


class StaticPodSource:
    """The pods of a manifest directory, re-read every `period` seconds of `clock`."""

    def __init__(self, directory: Path, node_name: str, clock: Clock, period: float = 5.0) -> None:
        self.directory = directory
        self.node_name = node_name
        self.period = period
        self._clock = clock
        self._lock = threading.Lock()
        self._pods: dict[str, Object] = {}
        self._files: dict[Path, tuple[str, list[Object]]] = {}
        self._due: float | None = None

    def get(self, uid: str) -> Object | None:
        with self._lock:
            return self._pods.get(uid)

    def list(self) -> list[Object]:
        with self._lock:
            return list(self._pods.values())

    def poll(self) -> Changes | None:
        """Scan if a period has passed since the last scan (or none was made)."""
        now = self._clock.monotonic()
        if self._due is not None and now < self._due:
            return None
        self._due = now + self.period
        return self.scan()

    def scan(self) -> Changes:
        """Re-read the directory now; files whose bytes did not change are not parsed again."""
        files: dict[Path, tuple[str, list[Object]]] = {}
        for path in manifest_files(self.directory):
            try:
                stamp = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                continue
            known = self._files.get(path)
            if known is not None and known[0] == stamp:
                files[path] = known
                continue
            try:
                files[path] = (stamp, read_manifest(path, self.node_name))
            except ManifestError as err:
                log.error("static pod manifest %s skipped: %s", err.path, err.problem)
                files[path] = (stamp, [])
        pods: dict[str, Object] = {}
        names: set[tuple[str, str]] = set()
        for path, (_, found) in files.items():
            for pod in found:
                md = pod["metadata"]
                if (md["namespace"], md["name"]) in names:
                    log.error(
                        "static pod manifest %s skipped: pod %s/%s is already defined by another file",
                        path,
                        md["namespace"],
                        md["name"],
                    )
                    continue
                names.add((md["namespace"], md["name"]))
                pods[md["uid"]] = pod
        with self._lock:
            old = self._pods
            self._pods = pods
            self._files = files
        added = tuple(p for uid, p in pods.items() if uid not in old)
        removed = tuple(p for uid, p in old.items() if uid not in pods)
        for p in added:
            log.info("pod=%s/%s uid=%s static pod added",
                     p["metadata"]["namespace"], p["metadata"]["name"], p["metadata"]["uid"])  # fmt: skip
        for p in removed:
            log.info("pod=%s/%s uid=%s static pod removed",
                     p["metadata"]["namespace"], p["metadata"]["name"], p["metadata"]["uid"])  # fmt: skip
        return Changes(added, removed)


def mirror_pod(pod: Mapping[str, Any], node_name: str, node_uid: str) -> Object:
    """The mirror pod the API server keeps for static pod `pod`."""
    md = pod["metadata"]
    meta: Object = {
        "name": md["name"],
        "namespace": md["namespace"],
        "annotations": {**(md.get("annotations") or {}), CONFIG_MIRROR: md["uid"]},
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "name": node_name,
                "uid": node_uid,
                "controller": True,
            }
        ],
    }
    if md.get("labels"):
        meta["labels"] = dict(md["labels"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": copy.deepcopy(pod.get("spec") or {}),
    }


class MirrorPods:
    """Creates, replaces and deletes mirror pods; `lookup(namespace, name)` reads the cache."""

    def __init__(
        self,
        api: ApiClient,
        node_name: str,
        lookup: Callable[[str, str], Object | None],
        node: Callable[[], Object | None],
    ) -> None:
        self._api = api
        self._node_name = node_name
        self._lookup = lookup
        self._node = node

    def _node_uid(self) -> str:
        found = self._node()
        if found is None:
            found = self._api.get("Node", self._node_name)
        return str(found["metadata"]["uid"])

    def ensure(self, pod: Mapping[str, Any]) -> MirrorState:
        """Make the API hold a current mirror of static pod `pod`.

        Raises ApiError when the API server cannot be reached or refuses."""
        md = pod["metadata"]
        ns, name, uid = md["namespace"], md["name"], md["uid"]
        current = self._lookup(ns, name)
        if current is not None:
            cmd = current["metadata"]
            if mirror_of(current) == uid and not cmd.get("deletionTimestamp"):
                return "current"
            if not is_mirror(current):
                log.warning(
                    "pod=%s/%s uid=%s a pod that is not its mirror holds the static pod's name",
                    ns,
                    name,
                    uid,
                )
                return "blocked"
            self._delete(current)
        try:
            self._api.create("Pod", mirror_pod(pod, self._node_name, self._node_uid()), ns)
        except errors.AlreadyExists:
            live = self._api.get("Pod", name, ns)
            if mirror_of(live) == uid and not live["metadata"].get("deletionTimestamp"):
                return "current"
            if is_mirror(live):
                self._delete(live)
            raise
        log.info("pod=%s/%s uid=%s mirror pod created", ns, name, uid)
        return "created"

    def delete_orphans(self, uid: str, mirrors: Iterable[Mapping[str, Any]]) -> None:
        """Delete the mirrors of static pod `uid`, which no longer exists."""
        for m in mirrors:
            if mirror_of(m) == uid:
                self._delete(m)

    def _delete(self, mirror: Mapping[str, Any]) -> None:
        if delete_now(self._api, mirror):
            md = mirror["metadata"]
            log.info("pod=%s/%s mirror pod deleted", md.get("namespace"), md["name"])


__all__ = [
    "CONFIG_HASH",
    "CONFIG_MIRROR",
    "CONFIG_SOURCE",
    "Changes",
    "ManifestError",
    "MirrorPods",
    "MirrorState",
    "StaticPodSource",
    "is_mirror",
    "is_static",
    "mirror_of",
    "mirror_pod",
    "read_manifest",
    "static_pod",
    "static_uid",
]
