"""VolumeRestrictions: claims that one pod or one node holds exclusively.

- ReadWriteOncePod: a claim with that access mode used by any other pod
  makes the pod unschedulable everywhere (PreFilter), with kube-scheduler's
  reason.
- ReadWriteOnce: a claim (without ReadWriteMany or ReadOnlyMany) that a pod
  already uses on one node may be used only on that node: every other node
  is rejected with a reason naming the claim, the pod and the node, so "why
  pending" tells who holds the volume.

The decisions are plain functions over the cache's pods (`claim_users`,
`exclusive_nodes`); the class only carries them between PreFilter and Filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from controlplane.api import volumes as v
from controlplane.scheduler.cache import Cache, NodeInfo
from controlplane.scheduler.framework import NodeFilterPlugin
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import (
    POD_DELETE,
    SKIP,
    SUCCESS,
    Action,
    ClusterEvent,
    Code,
    CycleState,
    Resource,
    Status,
    unschedulable,
)
from controlplane.scheduler.volume_state import VolumeState

if TYPE_CHECKING:
    from controlplane.scheduler.scheduler import Scheduler

NAME = "VolumeRestrictions"
R_RWOP = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)

Users = dict[str, list[tuple[str, str]]]  # claim name -> [(pod key, node)]


def claim_users(pod: PodInfo, cache: Cache) -> Users:
    """The other pods (not finished) that use each of `pod`'s claims, and their nodes."""
    wanted = set(v.pod_claim_names(pod.pod))
    users: Users = {name: [] for name in wanted}
    for node in cache.nodes.values():
        for other in node.pods.values():
            if other.key == pod.key or other.namespace != pod.namespace:
                continue
            if (other.pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            for name in v.pod_claim_names(other.pod):
                if name in wanted:
                    users[name].append((other.key, node.name))
    return users


def claim_modes(claim: dict[str, Any]) -> set[str]:
    return set((claim.get("status") or {}).get("accessModes") or v.access_modes(claim))


def exclusive_nodes(
    pod: PodInfo, users: Users, state: VolumeState
) -> tuple[Status, dict[str, tuple[str, str, str]]]:
    """PreFilter's decision, and for RWO claims in use: claim -> (pod, node, reason)."""
    held: dict[str, tuple[str, str, str]] = {}
    for name, using in users.items():
        if not using:
            continue
        claim = state.claim(pod.namespace, name)
        if claim is None:
            continue
        modes = claim_modes(claim)
        if "ReadWriteOncePod" in modes:
            return unschedulable(R_RWOP), {}
        if "ReadWriteOnce" in modes and not modes & {"ReadWriteMany", "ReadOnlyMany"}:
            other, node = using[0]
            held[name] = (
                other,
                node,
                f'node(s) conflict with ReadWriteOnce persistentvolumeclaim "{name}" '
                f"in use by pod {other} on node {node}",
            )
    return Status(), held


class VolumeRestrictions(NodeFilterPlugin):
    name = NAME

    def __init__(self) -> None:
        self.state = VolumeState()

    def attach(self, scheduler: Scheduler) -> None:
        self.state = scheduler.volumes

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status:
        if not v.pod_claim_names(pod.pod):
            return SKIP
        st, held = exclusive_nodes(pod, claim_users(pod, cache), self.state)
        if not st.ok:
            return st
        if not held:
            return SKIP
        state.data[NAME] = held
        return SUCCESS

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        held: dict[str, tuple[str, str, str]] = state.data.get(NAME) or {}
        for _other, where, reason in held.values():
            if where != node.name:
                return Status(Code.UNSCHEDULABLE, (reason,))
        return SUCCESS

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [POD_DELETE, ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, Action.ALL)]


def new(args: dict[str, object]) -> VolumeRestrictions:
    return VolumeRestrictions()
