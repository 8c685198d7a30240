"""Pod-level cgroups: removed once the pod's sandboxes are gone.

The agent names every pod's cgroup parent (`<root>/pod<uid>`, or
`<root>/burstable/pod<uid>` and `<root>/besteffort/pod<uid>`, see
pod_config.pod_cgroup_parent); the runtime creates that directory on demand and
removes only the cgroups it made under it, as containerd does. Removing the
pod's own directory (and, when the agent stops for good, the empty tree under
the root) is the agent's job, as it is the kubelet's; otherwise every pod that
ever ran leaves an empty cgroup per hierarchy behind.

Only empty directories are removed (rmdir): a cgroup that still has processes
or children is left alone, and a periodic sweep of the pod cgroups of pods
the agent no longer knows removes those that were still busy at first. Paths are cgroupfs paths under every mounted cgroup
hierarchy (v1: one per controller; v2: the unified one).
"""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

QOS_DIRS = ("", "burstable", "besteffort")


def cgroup_mounts(mountinfo: Path = Path("/proc/self/mountinfo")) -> list[Path]:
    """Mount points of the cgroup (v1) and cgroup2 filesystems."""
    mounts: list[Path] = []
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        return mounts
    for line in lines:
        fields, sep, rest = line.partition(" - ")
        if not sep:
            continue
        fstype = rest.split(" ", 1)[0]
        parts = fields.split(" ")
        if fstype in ("cgroup", "cgroup2") and len(parts) > 4:
            mounts.append(Path(parts[4].replace("\\040", " ")))
    return mounts


def _rmdir(path: Path) -> bool:
    try:
        os.rmdir(path)
        return True
    except FileNotFoundError:
        return False
    except OSError as err:
        if err.errno not in (errno.EBUSY, errno.ENOTEMPTY):
            log.warning("cannot remove cgroup %s: %s", path, err)
        return False


def remove_pod_cgroup(root: str, uid: str, mounts: list[Path] | None = None) -> int:
    """Remove pod<uid> under root (whichever QoS class it was in) in every
    hierarchy; returns how many directories went."""
    if not uid:
        return 0
    removed = 0
    for mount in cgroup_mounts() if mounts is None else mounts:
        for qos in QOS_DIRS:
            rel = "/".join(p for p in (root.strip("/"), qos, f"pod{uid}") if p)
            removed += _rmdir(mount / rel)
    return removed


def sweep_pod_cgroups(root: str, keep: set[str], mounts: list[Path] | None = None) -> int:
    """Remove the empty pod<uid> cgroups under root of every uid not in `keep`
    (the kubelet's housekeeping does the same): a removal right after the
    sandboxes went can find the cgroup still busy for a moment. Returns how
    many directories went."""
    removed = 0
    for mount in cgroup_mounts() if mounts is None else mounts:
        for qos in QOS_DIRS:
            parent = mount / "/".join(p for p in (root.strip("/"), qos) if p)
            try:
                entries = list(os.scandir(parent))
            except OSError:
                continue
            for entry in entries:
                uid = entry.name[3:]
                if entry.name.startswith("pod") and uid not in keep and entry.is_dir():
                    removed += _rmdir(Path(entry.path))
    return removed


def remove_empty_tree(root: str, mounts: list[Path] | None = None) -> int:
    """Remove the empty cgroup directories at and under root, deepest first
    (the agent is stopping and its pods are gone); returns how many went."""
    removed = 0
    for mount in cgroup_mounts() if mounts is None else mounts:
        top = mount / root.strip("/")
        if not root.strip("/") or not top.is_dir():
            continue
        for dirpath, _dirs, _files in sorted(os.walk(top), key=lambda w: -len(w[0])):
            removed += _rmdir(Path(dirpath))
    return removed
