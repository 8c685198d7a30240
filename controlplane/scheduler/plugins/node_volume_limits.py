"""NodeVolumeLimits: a node takes no more claim-backed volumes than it can attach.

A node that publishes a limit as an `attachable-volumes-*` entry of its
allocatable resources (the smallest one counts) rejects a pod whose new
claims would take the number of distinct claims its pods use above it, with
kube-scheduler's reason. Nodes without such an entry have no limit. The
count is a plain function (`over_limit`).
"""

from __future__ import annotations

from collections.abc import Sequence

from controlplane.api import volumes as v
from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache, NodeInfo
from controlplane.scheduler.framework import NodeFilterPlugin
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import (
    NODE_ADD,
    NODE_UPDATE,
    POD_DELETE,
    SUCCESS,
    ClusterEvent,
    Code,
    CycleState,
    Status,
    relevant,
)

NAME = names.NODE_VOLUME_LIMITS
REASON = "node(s) exceed max volume count"
LIMIT_PREFIX = "attachable-volumes-"


def node_limit(node: NodeInfo) -> int | None:
    allocatable = (node.node.get("status") or {}).get("allocatable") or {}
    limits = []
    for key, value in allocatable.items():
        if str(key).startswith(LIMIT_PREFIX):
            try:
                limits.append(int(str(value)))
            except ValueError:
                continue
    return min(limits) if limits else None


def over_limit(pod: PodInfo, node: NodeInfo) -> bool:
    limit = node_limit(node)
    if limit is None:
        return False
    used = {
        (other.namespace, name)
        for other in node.pods.values()
        if other.key != pod.key
        for name in v.pod_claim_names(other.pod)
    }
    new = {(pod.namespace, name) for name in v.pod_claim_names(pod.pod)} - used
    return bool(new) and len(used) + len(new) > limit


class NodeVolumeLimits(NodeFilterPlugin):
    name = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status:
        # The cache gives every allocatable resource a column: no limit column, no limits.
        limited = any(name.startswith(LIMIT_PREFIX) for name in cache.res_cols)
        return relevant(limited and v.pod_claim_names(pod.pod))

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if over_limit(pod, node):
            return Status(Code.UNSCHEDULABLE, (REASON,))
        return SUCCESS

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [NODE_ADD, NODE_UPDATE, POD_DELETE]


def new(args: dict[str, object], handle: NodeHandle) -> NodeVolumeLimits:
    return NodeVolumeLimits()
