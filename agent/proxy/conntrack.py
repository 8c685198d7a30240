"""Which UDP conntrack entries a rule change leaves stale (kube-proxy's job too).

UDP has no connection to end: once a flow is in the conntrack table it keeps
its NAT decision, so a client that keeps sending to a removed endpoint (or
to a cluster IP that had no endpoints when it started) is stuck until the
entry expires. `stale_udp_flows(old, new)` is a pure function from the
Service ports before and after a sync to the `conntrack -D` filters that
clear exactly those entries. TCP needs nothing: the REJECT or a RST ends it.
Nothing here runs a command.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.proxy.model import ServicePort


def _by_key(ports: Iterable[ServicePort]) -> dict[tuple[str, str], ServicePort]:
    return {(sp.key, sp.protocol): sp for sp in ports if sp.protocol == "UDP"}


def stale_udp_flows(
    old: Iterable[ServicePort], new: Iterable[ServicePort]
) -> list[tuple[str, ...]]:
    """`conntrack -D` argument lists, sorted and without duplicates."""
    before, after = _by_key(old), _by_key(new)
    out: set[tuple[str, ...]] = set()
    for key, sp in before.items():
        now = after.get(key)
        kept = {ep.ip for ep in now.endpoints} if now is not None else set()
        for ep in sp.endpoints:
            if ep.ip in kept:
                continue
            out.add(("-p", "udp", "--orig-dst", sp.cluster_ip, "--dst-nat", ep.ip))
            if sp.node_port:
                out.add(("-p", "udp", "--orig-port-dst", str(sp.node_port), "--dst-nat", ep.ip))
    for key, sp in after.items():
        prev = before.get(key)
        if sp.endpoints and (prev is None or not prev.endpoints):
            out.add(("-p", "udp", "--orig-dst", sp.cluster_ip))
            if sp.node_port:
                out.add(("-p", "udp", "--orig-port-dst", str(sp.node_port)))
    return sorted(out)
