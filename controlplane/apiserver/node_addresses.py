"""Which addresses a node may claim as its own.

A node names its addresses twice: in the serving certificate it asks for at
join (the cluster CA signs it, so a wrong address there lets the node pose
as that host to anyone trusting the CA) and in its Node's status.addresses
(where the API server dials its agent, so a wrong one points the API server
at any host:port). An address may not be link-local (a cloud's metadata
service), multicast, reserved or unspecified, in the Service range (where
pods find the API server), or an address or pod range of another Node; nor
loopback in a certificate (`problem`), though a Node's status may name it
(`status_problem`: a node on the control plane's own host, and so
possibly several nodes at once). The API
server's own host address is not refused: a node may run there (skiff up),
and clients verify the API server by its name (kubeconfig tls-server-name),
which no node may take (bootstrap.py). Reads Nodes through the registry;
never writes.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from typing import Any

from controlplane.apiserver.tls import address_problem

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
ADDRESS_TYPES = frozenset({"InternalIP", "ExternalIP"})


def node_ips(node: dict[str, Any]) -> set[str]:
    """The IP addresses a Node's status claims."""
    found = set()
    for entry in (node.get("status") or {}).get("addresses") or []:
        if isinstance(entry, dict) and entry.get("type") in ADDRESS_TYPES:
            try:
                found.add(str(ipaddress.ip_address(str(entry.get("address")))))
            except ValueError:
                continue
    return found


class NodeAddresses:
    """See the module docstring. `nodes()` lists every Node (decoded)."""

    def __init__(
        self,
        nodes: Callable[[], Iterable[dict[str, Any]]],
        service_cidr: str,
    ) -> None:
        self.nodes = nodes
        self.services = ipaddress.ip_network(service_cidr, strict=False)

    def problem(self, node: str, ip: IP) -> str | None:
        """Why `node` may not have `ip` in its serving certificate (None: it may)."""
        return self._problem(node, ip, loopback=False)

    def status_problem(self, node: str, ip: IP) -> str | None:
        """Why `node` may not put `ip` in its status: as `problem`, but a
        loopback address is the node's own host (a node beside the control
        plane: skiff up); the API server dials it only to find the agent's
        certificate for that node's name."""
        return self._problem(node, ip, loopback=True)

    def _problem(self, node: str, ip: IP, loopback: bool) -> str | None:
        found = address_problem(ip, loopback)
        if found:
            return found
        if ip.version == self.services.version and ip in self.services:
            return f"in the Service range {self.services}"
        if loopback and ip.is_loopback:
            # Every node on one host has this host's loopback (several agents
            # beside the control plane); the API server checks the agent's
            # certificate against the node's name when it dials one.
            return None
        for other in self.nodes():
            name = (other.get("metadata") or {}).get("name")
            if name == node:
                continue
            if str(ip) in node_ips(other):
                return f'an address of node "{name}"'
            spec = other.get("spec") or {}
            for cidr in spec.get("podCIDRs") or [spec.get("podCIDR")]:
                try:
                    network = ipaddress.ip_network(str(cidr), strict=False) if cidr else None
                except ValueError:
                    network = None
                if network is not None and ip.version == network.version and ip in network:
                    return f'in the pod range of node "{name}"'
        return None
