"""The node IPAM controller: give every Node a pod CIDR from the cluster CIDR.

Nodes that already carry `spec.podCIDR` mark it used as the informer first
sees them (before any worker runs); a Node without one gets the next free
/24 (`ipam.CidrAllocator`) written to `spec.podCIDR` and `spec.podCIDRs`;
a deleted Node's CIDR is released. An allocation is remembered per node
until the informer shows it, so a second sync never hands out a second
CIDR. Never changes a CIDR a node already has.
"""

from __future__ import annotations

import threading

from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext
from controlplane.controllers.ipam import CidrAllocator, CidrExhausted


class NodeIpamController(Controller):
    name = "nodeipam"
    default_workers = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.allocator = CidrAllocator(ctx.config.cluster_cidr, ctx.config.node_cidr_mask_size)
        self._lock = threading.Lock()
        self._assigned: dict[str, str] = {}
        self.nodes = self.watch("Node")
        self.follow(self.nodes, self._added, self._deleted)

    def _cidr(self, node: Object) -> str:
        return str(podutil.spec(node).get("podCIDR") or "")

    def _added(self, node: Object) -> None:
        cidr = self._cidr(node)
        if cidr:
            self.allocator.occupy(cidr)
            with self._lock:
                pending = self._assigned.pop(podutil.name_of(node), None)
            if pending and pending != cidr:
                # Another writer gave the node its CIDR first (the API server
                # refused ours: a CIDR is set once): ours goes back.
                self.allocator.release(pending)
        else:
            self.enqueue(node)

    def _deleted(self, node: Object) -> None:
        name = podutil.name_of(node)
        with self._lock:
            pending = self._assigned.pop(name, None)
        for cidr in {self._cidr(node), pending or ""}:
            if cidr:
                self.allocator.release(cidr)

    def sync(self, key: str) -> float | None:
        node = self.nodes.store.get_by_key(key)
        if node is None or self._cidr(node) or podutil.is_deleting(node):
            return None
        name = podutil.name_of(node)
        with self._lock:
            cidr = self._assigned.get(name)
        if cidr is None:
            try:
                cidr = self.allocator.allocate()
            except CidrExhausted as err:
                self.recorder.event(node, "Warning", "CIDRNotAvailable", str(err))
                return 60.0
            with self._lock:
                self._assigned[name] = cidr
        try:
            self.client.patch("Node", name, {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}})
        except errors.NotFound:
            self.allocator.release(cidr)
            with self._lock:
                self._assigned.pop(name, None)
            return None
        self.recorder.event(
            node, "Normal", "CIDRAssignmentSucceeded", f"Node {name} got pod CIDR {cidr}"
        )
        return None


def init(ctx: ControllerContext) -> Controller | None:
    if not ctx.config.allocate_node_cidrs:
        return None
    return NodeIpamController(ctx)
