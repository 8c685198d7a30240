"""What the agent reads from NetworkPolicies, Pods and Namespaces.

Pure functions from the Kubernetes-shaped dicts (as the informers cache
them) to small frozen records, with `networking.k8s.io/v1` semantics as
Kubernetes and kube-router have them:

- a policy selects pods in its own namespace (`spec.podSelector`; `{}` is
  every pod there) and isolates them for the directions in
  `spec.policyTypes` (absent: Ingress, plus Egress when `spec.egress` is
  given, as the API server defaults it);
- a rule allows traffic from (to) any of its peers on any of its ports; no
  peers means every address, no ports every port; `ingress: [{}]` allows all;
- a peer is a `podSelector` (pods of the policy's namespace), a
  `namespaceSelector` (every pod of the matching namespaces), both (pods
  matching the first in namespaces matching the second) or an `ipBlock`
  (a CIDR less its `except` CIDRs);
- a port is a number, a range (`port` .. `endPort`) or a container port's
  name, for TCP (the default), UDP or SCTP.

Host-network pods are neither selected nor peers: they have the node's
address, which no policy governs. Nothing here touches the kernel or the API.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controlplane.client.selectors import Selector, SelectorError, from_label_selector

PROTOCOLS = ("TCP", "UDP", "SCTP")
NAME_LABEL = "kubernetes.io/metadata.name"  # every namespace has it, as in Kubernetes


class PolicyError(ValueError):
    """A policy the agent cannot enforce as written (the API refuses these)."""


@dataclass(frozen=True)
class IpBlock:
    cidr: ipaddress.IPv4Network | None  # None: an IPv6 block, which no IPv4 address is in
    excepts: tuple[ipaddress.IPv4Network, ...] = ()

    def networks(self) -> list[ipaddress.IPv4Network]:
        """The CIDR less every `except`, as disjoint networks."""
        if self.cidr is None:
            return []
        out = [self.cidr]
        for hole in self.excepts:
            nxt: list[ipaddress.IPv4Network] = []
            for net in out:
                if hole.subnet_of(net):
                    nxt.extend(net.address_exclude(hole))
                elif not net.subnet_of(hole):
                    nxt.append(net)
            out = nxt
        return out


@dataclass(frozen=True)
class PodPeer:
    pods: Selector | None  # None: every pod of the chosen namespaces
    namespaces: Selector | None  # None: the policy's own namespace


@dataclass(frozen=True)
class Port:
    protocol: str
    port: int | str | None = None  # None: every port of the protocol; str: a named port
    end_port: int | None = None


@dataclass(frozen=True)
class Rule:
    peers: tuple[PodPeer | IpBlock, ...] | None  # None: every address
    ports: tuple[Port, ...]  # (): every port and protocol


@dataclass(frozen=True)
class Policy:
    namespace: str
    name: str
    pod_selector: Selector
    ingress: tuple[Rule, ...] | None  # None: not isolating ingress
    egress: tuple[Rule, ...] | None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class PodInfo:
    namespace: str
    name: str
    ip: str
    node: str
    labels: Mapping[str, str]
    ports: Mapping[tuple[str, str], int]  # (name, protocol) -> containerPort


def _selector(value: Any, path: str) -> Selector:
    if not isinstance(value, Mapping):
        raise PolicyError(f"{path}: not a label selector")
    try:
        return from_label_selector(value)
    except SelectorError as err:
        raise PolicyError(f"{path}: {err}") from err


def _peer(raw: Any, path: str) -> PodPeer | IpBlock:
    if not isinstance(raw, Mapping):
        raise PolicyError(f"{path}: not an object")
    block = raw.get("ipBlock")
    if block is not None:
        if not isinstance(block, Mapping):
            raise PolicyError(f"{path}.ipBlock: not an object")
        try:
            cidr = ipaddress.ip_network(str(block.get("cidr") or ""), strict=False)
            excepts = [
                ipaddress.ip_network(str(e), strict=False) for e in block.get("except") or []
            ]
        except ValueError as err:
            raise PolicyError(f"{path}.ipBlock: {err}") from err
        if not isinstance(cidr, ipaddress.IPv4Network):
            return IpBlock(None)
        v4 = tuple(e for e in excepts if isinstance(e, ipaddress.IPv4Network))
        return IpBlock(cidr, v4)
    pods, namespaces = raw.get("podSelector"), raw.get("namespaceSelector")
    if pods is None and namespaces is None:
        raise PolicyError(f"{path}: needs podSelector, namespaceSelector or ipBlock")
    return PodPeer(
        _selector(pods, f"{path}.podSelector") if pods is not None else None,
        _selector(namespaces, f"{path}.namespaceSelector") if namespaces is not None else None,
    )


def _port(raw: Any, path: str) -> Port:
    if not isinstance(raw, Mapping):
        raise PolicyError(f"{path}: not an object")
    protocol = str(raw.get("protocol") or "TCP")
    if protocol not in PROTOCOLS:
        raise PolicyError(f"{path}.protocol: {protocol!r} is not TCP, UDP or SCTP")
    port, end = raw.get("port"), raw.get("endPort")
    if port is None:
        return Port(protocol)
    if isinstance(port, str) and not port.isdigit():
        return Port(protocol, port)
    number = int(port)
    if end is not None and int(end) < number:
        raise PolicyError(f"{path}.endPort: {end} is below port {number}")
    return Port(protocol, number, int(end) if end is not None else None)


def _rules(raw: Any, peers_field: str, path: str) -> tuple[Rule, ...]:
    out: list[Rule] = []
    for i, rule in enumerate(raw or []):
        here = f"{path}[{i}]"
        if not isinstance(rule, Mapping):
            raise PolicyError(f"{here}: not an object")
        peers_raw = rule.get(peers_field)
        peers = (
            tuple(_peer(p, f"{here}.{peers_field}[{j}]") for j, p in enumerate(peers_raw))
            if peers_raw
            else None
        )
        ports = tuple(_port(p, f"{here}.ports[{j}]") for j, p in enumerate(rule.get("ports") or []))
        out.append(Rule(peers, ports))
    return tuple(out)


def parse_policy(obj: Mapping[str, Any]) -> Policy:
    """One NetworkPolicy as a `Policy`; raises PolicyError naming the field."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise PolicyError("spec: not an object")
    types = spec.get("policyTypes")
    if not types:
        types = ["Ingress", *(["Egress"] if spec.get("egress") else [])]
    selector = spec.get("podSelector")
    return Policy(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        pod_selector=_selector(selector if selector is not None else {}, "spec.podSelector"),
        ingress=_rules(spec.get("ingress"), "from", "spec.ingress") if "Ingress" in types else None,
        egress=_rules(spec.get("egress"), "to", "spec.egress") if "Egress" in types else None,
    )


def pod_info(obj: Mapping[str, Any]) -> PodInfo | None:
    """A pod that has its own IPv4 address and is not finished; else None."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    status = obj.get("status") or {}
    if spec.get("hostNetwork") or status.get("phase") in ("Succeeded", "Failed"):
        return None
    ip = str(status.get("podIP") or "")
    try:
        if not isinstance(ipaddress.ip_address(ip), ipaddress.IPv4Address):
            return None
    except ValueError:
        return None
    ports: dict[tuple[str, str], int] = {}
    for field in ("initContainers", "containers"):
        for c in spec.get(field) or []:
            for p in (c or {}).get("ports") or []:
                if (
                    isinstance(p, Mapping)
                    and p.get("name")
                    and isinstance(p.get("containerPort"), int)
                ):
                    ports.setdefault(
                        (str(p["name"]), str(p.get("protocol") or "TCP")), int(p["containerPort"])
                    )
    return PodInfo(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        ip=ip,
        node=str(spec.get("nodeName") or ""),
        labels=dict(meta.get("labels") or {}),
        ports=ports,
    )


def namespace_labels(namespaces: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, str]]:
    """Namespace name -> its labels, with `kubernetes.io/metadata.name` always set."""
    out: dict[str, Mapping[str, str]] = {}
    for ns in namespaces:
        meta = ns.get("metadata") or {}
        name = str(meta.get("name") or "")
        if name:
            out[name] = {**(meta.get("labels") or {}), NAME_LABEL: name}
    return out
