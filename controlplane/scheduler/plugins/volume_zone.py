"""VolumeZone: a pod goes only to nodes in the zone and region of its bound volumes.

A bound volume labelled `topology.kubernetes.io/zone` or `.../region` (or
the beta failure-domain labels; several values joined by `__`) admits only
nodes whose label has one of those values; others are rejected with
kube-scheduler's reason. Unbound claims are VolumeBinding's business. The
check is a plain function (`zone_conflict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controlplane.api import volumes as v
from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache, NodeInfo
from controlplane.scheduler.framework import NodeFilterPlugin
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import (
    NODE_ADD,
    NODE_UPDATE,
    SKIP,
    SUCCESS,
    Action,
    ClusterEvent,
    Code,
    CycleState,
    Resource,
    Status,
)

NAME = names.VOLUME_ZONE
REASON = "node(s) had no available volume zone"
TOPOLOGY_LABELS = (*v.ZONE_LABELS, *v.REGION_LABELS)


def volume_topology(volumes: list[dict[str, Any]]) -> list[tuple[str, set[str]]]:
    """(label, allowed values) for every topology label of the volumes."""
    out = []
    for pv in volumes:
        labels = (pv.get("metadata") or {}).get("labels") or {}
        for key in TOPOLOGY_LABELS:
            if key in labels:
                out.append((key, set(str(labels[key]).split("__"))))
    return out


def zone_conflict(constraints: list[tuple[str, set[str]]], node_labels: dict[str, str]) -> bool:
    for key, allowed in constraints:
        if key in node_labels and node_labels[key] not in allowed:
            return True
        if key not in node_labels:
            return True
    return False


class VolumeZone(NodeFilterPlugin):
    name = NAME

    def __init__(self, handle: NodeHandle) -> None:
        self.state = handle.volumes

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status:
        names = v.pod_claim_names(pod.pod)
        if not names:
            return SKIP
        bound = []
        for name in names:
            claim = self.state.claim(pod.namespace, name)
            volume_name = v.spec(claim).get("volumeName") if claim else None
            volume = self.state.volume(str(volume_name)) if volume_name else None
            if volume is not None:
                bound.append(volume)
        return state.keep(NAME, volume_topology(bound))

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if zone_conflict(state.data.get(NAME) or [], node.labels):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,))
        return SUCCESS

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [NODE_ADD, NODE_UPDATE, ClusterEvent(Resource.PERSISTENT_VOLUME, Action.ALL)]


def new(args: dict[str, object], handle: NodeHandle) -> VolumeZone:
    return VolumeZone(handle)
