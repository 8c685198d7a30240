"""Local storage limits, as the kubelet's eviction manager enforces them.

A disk-backed emptyDir with a sizeLimit is not capped by its filesystem:
the kubelet measures it each round and evicts the pod whose emptyDir uses
more than its limit, at once and whatever the node's pressure, with the
message `Usage of EmptyDir volume "cache" exceeds the limit "1Gi". `
(kubelet's localStorageEviction). `violations` finds those pods; the
eviction manager evicts them before anything else. It only measures (du).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from agent.eviction import signals
from agent.eviction.ranking import PodUsage
from agent.volumes import empty_dir_limits

MESSAGE = 'Usage of EmptyDir volume "{name}" exceeds the limit "{limit}". '


def violations(
    pods: Sequence[PodUsage], root: Path, usage: Callable[[Path], int] = signals.dir_bytes
) -> list[tuple[PodUsage, str]]:
    """(pod, eviction message) of each pod with an emptyDir past its sizeLimit."""
    found = []
    for pod in pods:
        for name, path, limit, written in empty_dir_limits(root, pod.pod):
            if path.is_dir() and usage(path) > limit:
                found.append((pod, MESSAGE.format(name=name, limit=written)))
                break
    return found
