"""Node lifecycle decisions, as Kubernetes' node lifecycle controller makes them (pure).

- `node_health()`: from the last heartbeat we observed (the node Lease's
  renewTime or the Ready condition's heartbeat) and the grace period
  (default 40 s), is the node healthy, or should its Ready (and pressure)
  conditions become Unknown ("Kubelet stopped posting node status.")?
- `wanted_taints()`: the NoSchedule and NoExecute taints a node should carry
  for its Ready condition (`node.kubernetes.io/not-ready` when False,
  `node.kubernetes.io/unreachable` when Unknown) and `unschedulable`.
- `eviction_delay()`: when a pod on a NoExecute-tainted node must go: at
  once without a matching toleration, after the smallest tolerationSeconds,
  or never when tolerated forever. Pods that do not tolerate not-ready/
  unreachable at all get the DefaultTolerationSeconds (300 s) the
  Kubernetes admission plugin would have added.
- `zone_state()` and `eviction_qps()`: Normal / PartialDisruption /
  FullDisruption from the share of unhealthy nodes, and the rate at which
  nodes may be tainted for eviction in that state.
No I/O, no clock: `now` is an argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controlplane.api.taints import tolerates
from machinery.rfc3339 import parse_time

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
# TaintNodesByCondition: a pressure condition that is True puts its NoSchedule
# taint on the node (the node itself may not change its taints).
PRESSURE_TAINTS = {
    "MemoryPressure": "node.kubernetes.io/memory-pressure",
    "DiskPressure": "node.kubernetes.io/disk-pressure",
    "PIDPressure": "node.kubernetes.io/pid-pressure",
}
DEFAULT_GRACE = 40.0
DEFAULT_TOLERATION_SECONDS = 300
UNHEALTHY_ZONE_THRESHOLD = 0.55
LARGE_CLUSTER_THRESHOLD = 50
EVICTION_QPS = 0.1
SECONDARY_EVICTION_QPS = 0.01

STATUS_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


@dataclass(frozen=True)
class Health:
    ready: str  # "True", "False" or "Unknown"
    mark_unknown: bool  # conditions must be rewritten to Unknown now
    next_check: float  # when the heartbeat would go stale


def node_health(
    ready_status: str | None, last_heartbeat: float, now: float, grace: float = DEFAULT_GRACE
) -> Health:
    stale_at = last_heartbeat + grace
    if now >= stale_at:
        return Health("Unknown", ready_status != "Unknown", now + grace)
    return Health(ready_status or "Unknown", False, stale_at)


def wanted_taints(
    ready: str, unschedulable: bool, pressures: Sequence[str] = ()
) -> list[dict[str, str]]:
    """The taints this controller manages that the node should carry:
    not-ready/unreachable (NoSchedule and NoExecute), unschedulable, and the
    NoSchedule taint of each pressure condition in `pressures` that is True."""
    taints: list[dict[str, str]] = []
    if ready == "False":
        taints += [
            {"key": NOT_READY, "effect": "NoSchedule"},
            {"key": NOT_READY, "effect": "NoExecute"},
        ]
    elif ready == "Unknown":
        taints += [
            {"key": UNREACHABLE, "effect": "NoSchedule"},
            {"key": UNREACHABLE, "effect": "NoExecute"},
        ]
    if unschedulable:
        taints.append({"key": UNSCHEDULABLE, "effect": "NoSchedule"})
    taints += [{"key": PRESSURE_TAINTS[c], "effect": "NoSchedule"} for c in pressures]
    return taints


def pressures(node: Mapping[str, Any]) -> list[str]:
    """The pressure conditions of `node` that are True."""
    conds = (node.get("status") or {}).get("conditions") or []
    return [
        str(c["type"])
        for c in conds
        if c.get("type") in PRESSURE_TAINTS and c.get("status") == "True"
    ]


MANAGED_KEYS = (NOT_READY, UNREACHABLE, UNSCHEDULABLE, *PRESSURE_TAINTS.values())


def merge_taints(
    current: Sequence[Mapping[str, Any]], wanted: Sequence[Mapping[str, str]], now_text: str
) -> list[dict[str, Any]] | None:
    """The node's new taint list, or None when nothing changes. Taints not
    managed here are kept as they are; NoExecute taints get timeAdded."""
    kept = [dict(t) for t in current if t.get("key") not in MANAGED_KEYS]
    have = {(t.get("key"), t.get("effect")): t for t in current if t.get("key") in MANAGED_KEYS}
    out = list(kept)
    for w in wanted:
        existing = have.get((w["key"], w["effect"]))
        if existing is not None:
            out.append(dict(existing))
        else:
            t: dict[str, Any] = dict(w)
            if w["effect"] == "NoExecute":
                t["timeAdded"] = now_text
            out.append(t)
    same = {(t.get("key"), t.get("effect")) for t in current} == {
        (t.get("key"), t.get("effect")) for t in out
    }
    return None if same and len(out) == len(current) else out


def placed_at(pod: Mapping[str, Any], default: float) -> float:
    """When the pod was placed on its node: its PodScheduled condition's
    transition, else its creation (a pod created bound), else `default`."""
    status = pod.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            at = parse_time(cond.get("lastTransitionTime"))
            if at is not None:
                return at
    at = parse_time((pod.get("metadata") or {}).get("creationTimestamp"))
    return default if at is None else at


def eviction_delay(
    tolerations: Sequence[Mapping[str, Any]],
    taints: Sequence[Mapping[str, Any]],
    default_toleration_seconds: int = DEFAULT_TOLERATION_SECONDS,
) -> float | None:
    """Seconds after the taints were added until eviction; None: never; 0: now."""
    no_execute = [t for t in taints if t.get("effect") == "NoExecute"]
    if not no_execute:
        return None
    tols = list(tolerations)
    for key in (NOT_READY, UNREACHABLE):
        probe = {"key": key, "effect": "NoExecute"}
        if not any(tolerates(t, probe) for t in tolerations):
            tols.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": default_toleration_seconds,
                }
            )
    delay: float | None = None
    for taint in no_execute:
        matching = [t for t in tols if tolerates(t, taint)]
        if not matching:
            return 0.0
        bounded = [
            float(t["tolerationSeconds"])
            for t in matching
            if t.get("tolerationSeconds") is not None
        ]
        if not bounded:
            continue  # tolerated forever
        seconds = max(0.0, min(bounded))
        delay = seconds if delay is None else min(delay, seconds)
    return delay


def zone_state(ready: int, not_ready: int) -> str:
    total = ready + not_ready
    if total > 0 and ready == 0 and not_ready > 0:
        return "FullDisruption"
    if not_ready > 2 and not_ready / total >= UNHEALTHY_ZONE_THRESHOLD:
        return "PartialDisruption"
    return "Normal"


def eviction_qps(state: str, zone_size: int, qps: float = EVICTION_QPS) -> float:
    """How many nodes a second may be tainted for eviction in a zone."""
    if state == "Normal":
        return qps
    if state == "PartialDisruption":
        return SECONDARY_EVICTION_QPS if zone_size > LARGE_CLUSTER_THRESHOLD else 0.0
    return 0.0  # FullDisruption: evicting would only make things worse
