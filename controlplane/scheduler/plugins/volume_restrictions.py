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

from collections.abc import Callable, Sequence
from typing import Any

from controlplane.api import volumes as v
from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache, NodeInfo
from controlplane.scheduler.framework import NodeFilterPlugin
from controlplane.scheduler.handle import NodeHandle
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
from controlplane.scheduler.volume_state import VolumeLister

NAME = names.VOLUME_RESTRICTIONS
R_RWOP = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)

Users = dict[str, list[tuple[str, str]]]  # claim name -> [(pod key, node)]


def claim_users(
    pod: PodInfo, cache: Cache, names_of: Callable[[PodInfo], tuple[str, ...]] | None = None
) -> Users:
    """The other pods (not finished) that use each of `pod`'s claims, and their nodes."""
    names_of = names_of or (lambda p: tuple(v.pod_claim_names(p.pod)))
    wanted = set(names_of(pod))
    users: Users = {name: [] for name in wanted}
    for node in cache.nodes.values():
        if not node.pods:
            continue
        for other in node.pods.values():
            if other.namespace != pod.namespace or other.key == pod.key:
                continue
            claims = names_of(other)
            if not claims or (other.pod.get("status") or {}).get("phase") in (
                "Succeeded",
                "Failed",
            ):
                continue
            for name in claims:
                if name in wanted:
                    users[name].append((other.key, node.name))
    return users


def claim_modes(claim: dict[str, Any]) -> set[str]:
    return set((claim.get("status") or {}).get("accessModes") or v.access_modes(claim))


def exclusive_nodes(
    pod: PodInfo, users: Users, state: VolumeLister
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

    def __init__(self, handle: NodeHandle) -> None:
        self.state = handle.volumes
        # The claim names of the pods seen, by their spec object (specs do not change).
        self._names: dict[int, tuple[object, tuple[str, ...]]] = {}

    def _unbound(self, namespace: str, name: str) -> bool:
        claim = self.state.claim(namespace, name)
        return claim is not None and not v.spec(claim).get("volumeName")

    def _names_of(self, p: PodInfo) -> tuple[str, ...]:
        spec = p.pod.get("spec")
        hit = self._names.get(id(spec))
        if hit is not None and hit[0] is spec:
            return hit[1]
        names = tuple(v.pod_claim_names(p.pod))
        if len(self._names) > 100_000:
            self._names.clear()
        self._names[id(spec)] = (spec, names)
        return names

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status:
        names = self._names_of(pod)
        if not names:
            return SKIP
        if all(self._unbound(pod.namespace, n) for n in names):
            # Only a pod between Reserve and PreBind can use an unbound claim.
            users: Users = {n: [] for n in names}
            for n in names:
                flight = self.state.in_flight(f"{pod.namespace}/{n}")
                if flight is not None and flight[0] != pod.key:
                    users[n].append(flight)
        else:
            users = claim_users(pod, cache, self._names_of)
        st, held = exclusive_nodes(pod, users, self.state)
        if not st.ok:
            return st
        return state.keep(NAME, held)

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        held: dict[str, tuple[str, str, str]] = state.data.get(NAME) or {}
        for _other, where, reason in held.values():
            if where != node.name:
                return Status(Code.UNSCHEDULABLE, (reason,))
        return SUCCESS

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [POD_DELETE, ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, Action.ALL)]


def new(args: dict[str, object], handle: NodeHandle) -> VolumeRestrictions:
    return VolumeRestrictions(handle)
