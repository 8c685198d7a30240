"""Which pods a ReplicaSet deletes first when it scales down (pure).

Kubernetes' ActivePodsWithRanks order, least valuable first:
1. not yet scheduled before scheduled;
2. Pending before Unknown before Running;
3. not ready before ready;
4. more pods of the same owner on the same node before fewer (spreads load);
5. ready for a shorter time before longer;
6. more container restarts before fewer;
7. newer before older (missing creation time first).
`pods_to_delete(pods, n)` returns the first `n` in that order. No I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.controllers import podutil
from machinery import rfc3339

_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def _key(pod: Mapping[str, Any], colocated: int) -> tuple[Any, ...]:
    node = str(podutil.spec(pod).get("nodeName") or "")
    ready = podutil.is_ready(pod)
    since = podutil.ready_since(pod) if ready else None
    created = rfc3339.parse_time(podutil.meta(pod).get("creationTimestamp"))
    return (
        1 if node else 0,
        _PHASE_RANK.get(podutil.phase(pod), 3),
        1 if ready else 0,
        -colocated,
        # Ready for less time (a later transition) sorts first.
        -(since if since is not None else float("inf")) if ready else 0.0,
        -podutil.restart_count(pod),
        # Missing creation time first, then newer before older.
        (0, 0.0) if created is None else (1, -created),
        podutil.name_of(pod),
    )


def rank(pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Pods ordered least valuable first."""
    per_node = Counter(str(podutil.spec(p).get("nodeName") or "") for p in pods)
    return sorted(
        pods,
        key=lambda p: _key(
            p,
            per_node[str(podutil.spec(p).get("nodeName") or "")]
            if podutil.spec(p).get("nodeName")
            else 0,
        ),
    )


def pods_to_delete(pods: Sequence[Mapping[str, Any]], count: int) -> list[Mapping[str, Any]]:
    if count <= 0:
        return []
    return rank(pods)[:count]
