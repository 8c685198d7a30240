"""Pod CIDR allocation for nodes: one subnet per node out of the cluster CIDR (pure).

`CidrAllocator(cluster_cidr="10.244.0.0/16", node_mask=24)` hands out the
next free /24 after the last one given, wrapping around as Kubernetes'
CIDR set does (`allocate()`), marks CIDRs nodes already carry as used
(`occupy()`, at start), and takes them back (`release()`) when a Node goes.
Thread-safe; it never talks to the API server (the node IPAM controller
does, and writes `spec.podCIDR`/`spec.podCIDRs`).
"""

from __future__ import annotations

import ipaddress
import threading


class CidrExhausted(Exception):
    """Every subnet of the cluster CIDR is in use."""


class CidrAllocator:
    def __init__(self, cluster_cidr: str = "10.244.0.0/16", node_mask: int = 24) -> None:
        self.network = ipaddress.ip_network(cluster_cidr, strict=True)
        if node_mask < self.network.prefixlen or node_mask > self.network.max_prefixlen:
            raise ValueError(
                f"node mask /{node_mask} must lie within {cluster_cidr} "
                f"(/{self.network.prefixlen}../{self.network.max_prefixlen})"
            )
        self.node_mask = node_mask
        self.size = 2 ** (node_mask - self.network.prefixlen)
        self._step = 2 ** (self.network.max_prefixlen - node_mask)
        self._used: set[int] = set()
        self._next = 0
        self._lock = threading.Lock()

    def _index(self, cidr: str) -> int | None:
        try:
            net = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            return None
        if net.version != self.network.version or net.prefixlen != self.node_mask:
            return None
        if not net.subnet_of(self.network):  # type: ignore[arg-type]
            return None
        offset = int(net.network_address) - int(self.network.network_address)
        return int(offset // self._step)

    def _cidr(self, index: int) -> str:
        base = int(self.network.network_address) + index * self._step
        return f"{ipaddress.ip_address(base)}/{self.node_mask}"

    def occupy(self, cidr: str) -> bool:
        """Mark `cidr` used; False when it is not one of ours."""
        index = self._index(cidr)
        if index is None:
            return False
        with self._lock:
            self._used.add(index)
        return True

    def allocate(self) -> str:
        with self._lock:
            if len(self._used) >= self.size:
                raise CidrExhausted(f"no free /{self.node_mask} left in {self.network}")
            for i in range(self.size):
                candidate = (self._next + i) % self.size
                if candidate not in self._used:
                    self._used.add(candidate)
                    self._next = (candidate + 1) % self.size
                    return self._cidr(candidate)
        raise CidrExhausted(f"no free /{self.node_mask} left in {self.network}")

    def release(self, cidr: str) -> None:
        index = self._index(cidr)
        if index is None:
            return
        with self._lock:
            self._used.discard(index)

    def used(self) -> int:
        with self._lock:
            return len(self._used)
