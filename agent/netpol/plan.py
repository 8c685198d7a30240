"""A node's NetworkPolicy rules as one nftables table (a pure plan, then text).

`build(policies, pods, namespaces, node)` decides every rule; `Plan.text()`
renders one `nft -f` transaction that replaces the table whole (declare it,
delete it, declare it again with its contents: the kernel applies the file
atomically, so no packet ever sees an empty or half-built table). Layout of
`table inet <name>`:

- base chains `ingress` and `egress` on the forward hook, each only while a
  pod is isolated in its direction (pod-to-pod traffic, routed across nodes
  or bridged on one with br_netfilter; host-network pods and the node's own
  traffic never pass it). Each first accepts
  packets of connections conntrack already knows (replies to allowed
  connections, and connections allowed before a rule changed), then looks
  the destination (source) address up in the verdict map `in_pods`
  (`out_pods`): the node's own pods that some policy isolates in that
  direction, each mapped to `jump` to the chain of the policies selecting it.
  Every base chain must accept a packet; any address not in a map passes.
- one chain per distinct set of selecting policies (`pin_*`, `pout_*`):
  a `jump` to each policy's chain, then `drop`;
- one chain per policy and direction (`pol_*_in`, `pol_*_out`): one rule per
  allowed (peers, ports) pair ending in `accept`, which ends the base
  chain's evaluation. Peers are one interval set each (`s_*`: pod addresses
  and ipBlocks less their excepts, merged), shared between rules with the
  same peers, so a packet's cost does not grow with the pods a rule allows;
  named ports are sets of `address . protocol . port` (`n_*`).

While no pod of the node is isolated (no policy, or none selecting its
pods) the table has no base chain at all, so at rest a forwarded packet
passes nothing of ours; it keeps one chain that nothing jumps to, whose
`ct` expression holds conntrack on in the namespace (connections open
before the first policy are then known, and stay allowed).

Nothing here runs nft; names depend only on the objects, so the same
inputs always give the same text.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import socket
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from agent.netpol.policy import NAME_LABEL, IpBlock, PodInfo, PodPeer, Policy, Port, Rule

DEFAULT_TABLE = "skiff-netpol"
Direction = str  # "in" or "out"


def netpol_table(chain_prefix: str) -> str:
    """The table of the agent whose service chains are `<chain_prefix>-*`:
    skiff-netpol for the default SKIFF, `<prefix>-netpol` for another."""
    return DEFAULT_TABLE if chain_prefix == "SKIFF" else f"{chain_prefix.lower()}-netpol"


def _hash(text: str, n: int = 12) -> str:
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()[:n].lower()


def _comment(text: str) -> str:
    safe = "".join(c for c in text if c.isalnum() or c in "-_./:[] ")
    return f'comment "{safe[:120]}"'


@dataclass
class Plan:
    table: str = DEFAULT_TABLE
    # set name -> (type, interval flag, elements)
    sets: dict[str, tuple[str, bool, tuple[str, ...]]] = field(default_factory=dict)
    in_pods: dict[str, str] = field(default_factory=dict)  # pod IP -> chain
    out_pods: dict[str, str] = field(default_factory=dict)
    chains: dict[str, list[str]] = field(default_factory=dict)
    policies: int = 0  # policies that select a pod of this node
    skipped: list[str] = field(default_factory=list)  # why a policy was not enforced

    def add_set(self, kind: str, interval: bool, elements: Sequence[str]) -> str:
        body = tuple(elements)
        name = ("s_" if interval else "n_") + _hash(kind + "\n" + "\n".join(body))
        self.sets.setdefault(name, (kind, interval, body))
        return name

    @property
    def isolates(self) -> bool:
        """Whether any pod of this node is isolated (in either direction)."""
        return bool(self.in_pods or self.out_pods)

    def text(self) -> str:
        """One `nft -f` transaction: the table replaced whole."""
        t = self.table
        out = [f"table inet {t}", f"delete table inet {t}", f"table inet {t} {{"]
        if not self.isolates:
            # Nothing to enforce, so no hook: forwarded packets pass no chain
            # of ours. The one chain is never jumped to; its ct expression
            # only keeps conntrack tracking this namespace's connections, so
            # that those open before a first policy stay established then.
            out += [
                "  chain conntrack {",
                "    ct state established,related accept",
                "  }",
                "}",
            ]
            return "\n".join(out) + "\n"
        for name in sorted(self.sets):
            kind, interval, elements = self.sets[name]
            flags = " flags interval;" if interval else ""
            out.append(
                f"  set {name} {{ type {kind};{flags} elements = {{ {', '.join(elements)} }} }}"
            )
        for name, members in (("in_pods", self.in_pods), ("out_pods", self.out_pods)):
            elems = ", ".join(f"{ip} : jump {chain}" for ip, chain in sorted(members.items()))
            body = f" elements = {{ {elems} }}" if elems else ""
            out.append(f"  map {name} {{ type ipv4_addr : verdict;{body} }}")
        for base, key, table in (("ingress", "daddr", "in_pods"), ("egress", "saddr", "out_pods")):
            if not (self.in_pods if table == "in_pods" else self.out_pods):
                continue  # no pod isolated in this direction: no hook for it
            out += [
                f"  chain {base} {{",
                "    type filter hook forward priority filter; policy accept;",
                "    ct state established,related accept",
                f"    ip {key} vmap @{table}",
                "  }",
            ]
        for name in sorted(self.chains):
            out.append(f"  chain {name} {{")
            out += [f"    {line}" for line in self.chains[name]]
            out.append("  }")
        out.append("}")
        return "\n".join(out) + "\n"


class _Resolver:
    """Pods by namespace and namespace labels, to turn peers into addresses."""

    def __init__(self, pods: Iterable[PodInfo], namespaces: Mapping[str, Mapping[str, str]]):
        self.by_ns: dict[str, list[PodInfo]] = defaultdict(list)
        for p in pods:
            self.by_ns[p.namespace].append(p)
        self.ns_labels: dict[str, Mapping[str, str]] = dict(namespaces)
        self.addresses: dict[tuple[object, str], list[str]] = {}
        for ns in self.by_ns:
            self.ns_labels.setdefault(ns, {NAME_LABEL: ns})

    def peer_pods(self, peer: PodPeer, namespace: str) -> list[PodInfo]:
        if peer.namespaces is None:
            spaces = [namespace]
        else:
            sel = peer.namespaces
            spaces = sorted(ns for ns, labels in self.ns_labels.items() if sel.matches(labels))
        out: list[PodInfo] = []
        for ns in spaces:
            for p in self.by_ns.get(ns, ()):
                if peer.pods is None or peer.pods.matches(p.labels):
                    out.append(p)
        return out

    def all_pods(self) -> list[PodInfo]:
        return [p for pods in self.by_ns.values() for p in pods]


def _addresses(rule: Rule, policy: Policy, r: _Resolver) -> list[str]:
    """The rule's peers as merged CIDRs ([] when they match no address);
    the same peers in the same namespace are resolved once per plan."""
    key = (rule.peers, policy.namespace)
    cached = r.addresses.get(key)
    if cached is not None:
        return cached
    blocks: list[ipaddress.IPv4Network] = []
    singles: set[int] = set()
    for peer in rule.peers or ():
        if isinstance(peer, IpBlock):
            blocks += peer.networks()
        else:
            singles.update(_ip_int(p.ip) for p in r.peer_pods(peer, policy.namespace))
    merged = list(ipaddress.collapse_addresses(blocks))
    spans = [(int(n.network_address), int(n.broadcast_address)) for n in merged]
    items = [(lo, _cidr(n)) for (lo, _), n in zip(spans, merged, strict=True)]
    # Pod addresses one by one (no ipaddress objects: thousands per rule),
    # less those an ipBlock already covers, so the interval set has no overlap.
    items += [
        (i, socket.inet_ntoa(i.to_bytes(4, "big")))
        for i in singles
        if not any(lo <= i <= hi for lo, hi in spans)
    ]
    out = [text for _, text in sorted(items)]
    r.addresses[key] = out
    return out


def _ip_int(ip: str) -> int:
    return int.from_bytes(socket.inet_aton(ip), "big")


def _cidr(net: ipaddress.IPv4Network) -> str:
    return str(net.network_address) if net.prefixlen == 32 else str(net)


def _port_matches(ports: Sequence[Port]) -> list[str]:
    """Numbered ports and bare protocols, one match per protocol."""
    out: list[str] = []
    for proto in ("TCP", "UDP", "SCTP"):
        mine = [p for p in ports if p.protocol == proto and not isinstance(p.port, str)]
        if not mine:
            continue
        name = proto.lower()
        if any(p.port is None for p in mine):
            out.append(f"meta l4proto {name}")
            continue
        values = sorted(
            {f"{p.port}-{p.end_port}" if p.end_port else str(p.port) for p in mine},
            key=lambda v: int(v.split("-")[0]),
        )
        out.append(f"meta l4proto {name} th dport {{ {', '.join(values)} }}")
    return out


def _named(ports: Sequence[Port], pods: Iterable[PodInfo]) -> list[str]:
    """`ip . proto . port` elements for the named ports of `pods`."""
    elements: set[tuple[int, str, int]] = set()
    wanted = [(str(p.port), p.protocol) for p in ports if isinstance(p.port, str)]
    for pod in pods:
        for name, proto in wanted:
            number = pod.ports.get((name, proto))
            if number is not None:
                elements.add((int(ipaddress.IPv4Address(pod.ip)), proto.lower(), number))
    return [
        f"{ipaddress.IPv4Address(ip)} . {proto} . {port}" for ip, proto, port in sorted(elements)
    ]


def _policy_chain(
    plan: Plan, policy: Policy, direction: Direction, targets: list[PodInfo], r: _Resolver
) -> list[str]:
    rules = policy.ingress if direction == "in" else policy.egress
    peer_key, dest_key = ("saddr", "daddr") if direction == "in" else ("daddr", "daddr")
    lines: list[str] = []
    for i, rule in enumerate(rules or ()):
        note = _comment(f"{policy.key} {'ingress' if direction == 'in' else 'egress'}[{i}]")
        peer = ""
        if rule.peers is not None:
            addrs = _addresses(rule, policy, r)
            if not addrs:
                continue  # peers that match no address allow nothing
            peer = f"ip {peer_key} @{plan.add_set('ipv4_addr', True, addrs)} "
        if not rule.ports:
            lines.append(f"{peer}accept {note}")
            continue
        for match in _port_matches(rule.ports):
            lines.append(f"{peer}{match} accept {note}")
        if any(isinstance(p.port, str) for p in rule.ports):
            if direction == "in":
                owners: Iterable[PodInfo] = targets
            elif rule.peers is None:
                owners = r.all_pods()
            else:
                owners = [
                    p
                    for peer_sel in rule.peers
                    if isinstance(peer_sel, PodPeer)
                    for p in r.peer_pods(peer_sel, policy.namespace)
                ]
                peer = ""  # the named set holds the peers' own addresses
            elements = _named(rule.ports, owners)
            if elements:
                named = plan.add_set("ipv4_addr . inet_proto . inet_service", False, elements)
                lines.append(
                    f"{peer}ip {dest_key} . meta l4proto . th dport @{named} accept {note}"
                )
    return lines


def build(
    policies: Iterable[Policy],
    pods: Iterable[PodInfo],
    namespaces: Mapping[str, Mapping[str, str]],
    node: str,
    table: str = DEFAULT_TABLE,
) -> Plan:
    """The rules for the pods of `node`: see the module docstring."""
    plan = Plan(table=table)
    pod_list = list(pods)
    r = _Resolver(pod_list, namespaces)
    local = [p for p in pod_list if p.node == node]
    # pod IP -> (direction -> chains of the policies selecting it)
    selecting: dict[str, dict[Direction, list[str]]] = defaultdict(lambda: {"in": [], "out": []})
    for policy in sorted(policies, key=lambda p: p.key):
        targets = [
            p
            for p in local
            if p.namespace == policy.namespace and policy.pod_selector.matches(p.labels)
        ]
        if not targets:
            continue
        plan.policies += 1
        for direction in ("in", "out"):
            if (policy.ingress if direction == "in" else policy.egress) is None:
                continue
            chain = f"pol_{_hash(policy.key)}_{direction}"
            plan.chains[chain] = _policy_chain(plan, policy, direction, targets, r)
            for p in targets:
                selecting[p.ip][direction].append(chain)
    for ip, by_direction in sorted(selecting.items()):
        for direction, chains in by_direction.items():
            if not chains:
                continue
            pod_chain = f"p{direction}_{_hash(' '.join(chains))}"
            plan.chains.setdefault(pod_chain, [*(f"jump {c}" for c in chains), "drop"])
            (plan.in_pods if direction == "in" else plan.out_pods)[ip] = pod_chain
    return plan
