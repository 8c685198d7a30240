"""Deployment rollout arithmetic, as Kubernetes' deployment/util does it (pure).

- `scaled_value()` / `resolve_fenceposts()`: maxSurge and maxUnavailable as
  ints or percentages of the desired replicas (surge rounds up,
  unavailability rounds down; both zero means unavailability 1).
- `template_hash()`: the pod-template-hash label value (FNV-32a over the
  canonical template plus collisionCount, SafeEncodeString'd).
- revisions: `next_revision()`, `revision_of()`.
- one step of a rolling update: `new_rs_replicas()` (scale the new
  ReplicaSet up within maxSurge) and `old_rs_scale_down()` (clean up
  unhealthy old replicas first, then scale old ones down within
  maxUnavailable, oldest first).
- `proportional_scale()`: distributing a replica change across the active
  ReplicaSets of a rollout, largest first, leftovers to the largest.
- `history_to_delete()`: old ReplicaSets beyond revisionHistoryLimit.

ReplicaSets are described by `RS` records; nothing here performs I/O.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
ROLLBACK_TO = "deprecated.deployment.rollback.to"
POD_TEMPLATE_HASH = "pod-template-hash"

_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def scaled_value(value: int | str | None, total: int, round_up: bool) -> int:
    """An IntOrString: an int as is, "N%" as N% of `total` rounded up or down."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError(f"invalid value {value!r}: must be an integer or a percentage")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        try:
            pct = int(text[:-1])
        except ValueError:
            raise ValueError(f"invalid value {value!r}: bad percentage") from None
        exact = pct * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"invalid value {value!r}: must be an integer or a percentage") from None


def resolve_fenceposts(
    max_surge: int | str | None, max_unavailable: int | str | None, desired: int
) -> tuple[int, int]:
    surge = scaled_value(max_surge, desired, True)
    unavailable = scaled_value(max_unavailable, desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def strategy_params(deployment: Mapping[str, Any]) -> tuple[str, int, int]:
    """(strategy type, max surge, max unavailable) resolved for the deployment."""
    spec = deployment.get("spec") or {}
    strategy = spec.get("strategy") or {}
    kind = str(strategy.get("type") or "RollingUpdate")
    replicas = int(spec.get("replicas", 1))
    if kind != "RollingUpdate":
        return kind, 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    surge, unavailable = resolve_fenceposts(
        rolling.get("maxSurge", "25%"), rolling.get("maxUnavailable", "25%"), replicas
    )
    return kind, surge, min(unavailable, replicas) if replicas > 0 else 0


def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def canonical_template(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template as Kubernetes' typed object holds it: metadata fields
    sent as null (kubectl's `creationTimestamp: null`, in every template it
    writes, `rollout undo`'s included) are no different from absent ones."""
    out = dict(template)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if v is not None}
    return out


def template_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """The pod-template-hash for a template (and the deployment's collisionCount)."""
    data = json.dumps(canonical_template(template), sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += struct.pack("<I", collision_count & 0xFFFFFFFF)
    digest = _fnv32a(data)
    return "".join(_SAFE[b % len(_SAFE)] for b in str(digest).encode())


def template_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal ignoring the pod-template-hash label (EqualIgnoreHash)."""

    def strip(t: Mapping[str, Any]) -> str:
        t2 = json.loads(json.dumps(canonical_template(t)))
        labels = (t2.get("metadata") or {}).get("labels") or {}
        labels.pop(POD_TEMPLATE_HASH, None)
        return hashlib.sha256(json.dumps(t2, sort_keys=True).encode()).hexdigest()

    return strip(a) == strip(b)


@dataclass(frozen=True)
class RS:
    """What rollout arithmetic needs to know about one ReplicaSet."""

    name: str
    replicas: int  # spec.replicas
    available: int = 0  # status.availableReplicas
    created: float = 0.0
    revision: int = 0
    desired_annotation: int | None = None
    max_annotation: int | None = None
    status_replicas: int = 0


def revision_of(annotations: Mapping[str, str] | None) -> int:
    try:
        return int((annotations or {}).get(REVISION, "0"))
    except ValueError:
        return 0


MAX_REVISION_HISTORY_CHARS = 2000


def revision_history(history: str, old_revision: str) -> str | None:
    """deployment.kubernetes.io/revision-history once a ReplicaSet that was
    `old_revision` becomes the newest again (a rollback to it): the older
    revisions it stood for, oldest dropped past 2000 characters; None when
    even the newest does not fit (as Kubernetes, which then leaves it)."""
    if not history:
        return old_revision
    revisions = history.split(",")
    total = len(history) + len(old_revision) + 1
    start = 0
    while total > MAX_REVISION_HISTORY_CHARS and start < len(revisions):
        total -= len(revisions[start]) + 1
        start += 1
    if total > MAX_REVISION_HISTORY_CHARS:
        return None
    return ",".join([*revisions[start:], old_revision])


def next_revision(old: Sequence[RS]) -> int:
    return max((r.revision for r in old), default=0) + 1


def _by_created(rss: Sequence[RS]) -> list[RS]:
    return sorted(rss, key=lambda r: (r.created, r.name))


def new_rs_replicas(
    deployment_replicas: int, strategy: str, max_surge: int, new: RS, all_rss: Sequence[RS]
) -> int:
    """How far the new ReplicaSet may scale up in this step (NewRSNewReplicas)."""
    if strategy != "RollingUpdate":
        return deployment_replicas
    current = sum(r.replicas for r in all_rss)
    max_total = deployment_replicas + max_surge
    if current >= max_total:
        return new.replicas
    up = min(max_total - current, deployment_replicas - new.replicas)
    return new.replicas + max(0, up)


def old_rs_scale_down(
    deployment_replicas: int, max_unavailable: int, new: RS, old: Sequence[RS]
) -> dict[str, int]:
    """New sizes for old ReplicaSets in one rolling step (reconcileOldReplicaSets)."""
    changes: dict[str, int] = {}
    # A ReplicaSet never counts more available pods than it asks for: a status
    # not yet caught up with a scale-down (spec 2, available 3) must not let
    # us take down pods that are already going.
    old = [replace(r, available=min(r.available, r.replicas)) for r in old]
    new = replace(new, available=min(new.available, new.replicas))
    old_count = sum(r.replicas for r in old)
    if old_count == 0:
        return changes
    all_count = old_count + new.replicas
    min_available = deployment_replicas - max_unavailable
    new_unavailable = new.replicas - new.available
    max_scaled_down = all_count - min_available - new_unavailable
    if max_scaled_down <= 0:
        return changes
    # Unhealthy replicas first: they block nothing if removed.
    current = {r.name: r for r in old}
    cleaned = 0
    for r in _by_created(old):
        if cleaned >= max_scaled_down:
            break
        if r.replicas == 0 or r.available >= r.replicas:
            continue
        n = min(max_scaled_down - cleaned, r.replicas - r.available)
        current[r.name] = replace(r, replicas=r.replicas - n)
        changes[r.name] = r.replicas - n
        cleaned += n
    # Then scale down available ones while availability stays above the floor.
    available = sum(r.available for r in current.values()) + new.available
    if available <= min_available:
        return changes
    budget = available - min_available
    done = 0
    for r in _by_created(list(current.values())):
        if done >= budget:
            break
        if r.replicas == 0:
            continue
        n = min(r.replicas, budget - done)
        changes[r.name] = r.replicas - n
        done += n
    return changes


def filter_active(rss: Sequence[RS]) -> list[RS]:
    return [r for r in rss if r.replicas > 0]


def find_active_or_latest(new: RS | None, old: Sequence[RS]) -> RS | None:
    if new is None and not old:
        return None
    olds = sorted(old, key=lambda r: (r.created, r.name), reverse=True)
    active = filter_active([*olds, *([new] if new else [])])
    if not active:
        return new if new is not None else olds[0]
    if len(active) == 1:
        return active[0]
    return None


def is_saturated(deployment_replicas: int, new: RS | None) -> bool:
    if new is None:
        return False
    return (
        new.replicas == deployment_replicas
        and new.desired_annotation == deployment_replicas
        and new.available == deployment_replicas
    )


def _round_half_away(x: float) -> int:
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def _fraction(rs: RS, deployment_replicas: int, max_surge: int, status_replicas: int) -> int:
    if deployment_replicas == 0:
        return -rs.replicas
    total = deployment_replicas + max_surge
    annotated = rs.max_annotation if rs.max_annotation is not None else status_replicas
    if annotated <= 0:
        return 0
    return _round_half_away(rs.replicas * total / annotated) - rs.replicas


def proportional_scale(
    deployment_replicas: int,
    max_surge: int,
    new: RS | None,
    old: Sequence[RS],
    strategy: str = "RollingUpdate",
    status_replicas: int = 0,
) -> dict[str, int]:
    """New sizes when the deployment's replicas change mid-rollout (the `scale` step)."""
    target = find_active_or_latest(new, old)
    if target is not None:
        if target.replicas == deployment_replicas:
            return {}
        return {target.name: deployment_replicas}
    if is_saturated(deployment_replicas, new):
        return {r.name: 0 for r in filter_active(old)}
    if strategy != "RollingUpdate":
        return {}
    active = filter_active([*old, *([new] if new else [])])
    total = sum(r.replicas for r in active)
    allowed = deployment_replicas + max_surge if deployment_replicas > 0 else 0
    to_add = allowed - total
    if to_add > 0:
        active.sort(key=lambda r: (-r.replicas, -r.created, r.name))
    elif to_add < 0:
        active.sort(key=lambda r: (-r.replicas, r.created, r.name))
    added = 0
    sizes: dict[str, int] = {}
    for r in active:
        if to_add != 0 and r.replicas != 0 and to_add != added:
            frac = _fraction(r, deployment_replicas, max_surge, status_replicas)
            allowed_left = to_add - added
            prop = min(frac, allowed_left) if to_add > 0 else max(frac, allowed_left)
        else:
            prop = 0
        sizes[r.name] = r.replicas + prop
        added += prop
    if active and to_add != 0:
        first = active[0].name
        sizes[first] = max(0, sizes[first] + to_add - added)
    return {
        name: n
        for name, n in sizes.items()
        if n != next(r for r in active if r.name == name).replicas
    }


def history_to_delete(old: Sequence[RS], limit: int) -> list[str]:
    """Old, fully scaled-down ReplicaSets beyond revisionHistoryLimit, oldest first."""
    cleanable = [r for r in old if r.replicas == 0 and r.status_replicas == 0]
    excess = len(cleanable) - max(0, limit)
    if excess <= 0:
        return []
    cleanable.sort(key=lambda r: (r.revision, r.created, r.name))
    return [r.name for r in cleanable[:excess]]
