"""Routes to other nodes' pod subnets: `host-gw` (a route per peer via its
node IP) or `vxlan` (one vxlan device per node, a route, a permanent
neighbour and a permanent FDB entry per peer, flannel's scheme).

Configured by the network config's `backend` key (ours; the reference bridge
keys are untouched):

    "backend": {"type": "host-gw" | "vxlan",
                "peers": [{"nodeIP": "10.250.0.2", "podCIDR": "10.251.2.0/24"}],
                "localIP": "...",     # optional: found from the peers' subnet
                "vni": 1, "port": 4789, "device": "skiff.1"}   # vxlan only

`reconcile()` is level-triggered and idempotent: it makes the node's routes
match the peer list (adding, replacing and removing routes it owns, marked
with protocol RTPROT_SKIFF), so the agent can call it whenever Nodes change
and every ADD calls it too. A VTEP's MAC is derived from its node IP, so
peers need exchange nothing but node IP and pod CIDR. Runs in the node's
namespace (the plugin's own); never in a pod's.
"""

from __future__ import annotations

import _socket

from runtime.cni import netlink as nl
from runtime.cni.skel import INVALID_CONFIG, CNIError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

VXLAN_OVERHEAD = 50


def vtep_mac(node_ip: str) -> str:
    """A locally administered unicast MAC derived from an IPv4 node IP."""
    raw = _socket.inet_pton(_socket.AF_INET, node_ip)
    return "0a:58:" + ":".join(f"{b:02x}" for b in raw)


def network_of(cidr: str) -> tuple[str, int]:
    addr, _, plen_s = cidr.partition("/")
    try:
        plen = int(plen_s)
        value = int.from_bytes(_socket.inet_pton(_socket.AF_INET, addr), "big")
    except (OSError, ValueError):
        raise CNIError(INVALID_CONFIG, f"backend: invalid CIDR {cidr!r}") from None
    mask = ((1 << 32) - 1) ^ ((1 << (32 - plen)) - 1)
    return _socket.inet_ntop(_socket.AF_INET, (value & mask).to_bytes(4, "big")), plen


def _in_subnet(ip: str, addr: str, plen: int) -> bool:
    try:
        a = int.from_bytes(_socket.inet_pton(_socket.AF_INET, ip), "big")
        b = int.from_bytes(_socket.inet_pton(_socket.AF_INET, addr), "big")
    except OSError:
        return False
    mask = ((1 << 32) - 1) ^ ((1 << (32 - plen)) - 1)
    return a & mask == b & mask


class Peer:
    __slots__ = ("node_ip", "pod_cidr")

    def __init__(self, node_ip: str, pod_cidr: str) -> None:
        self.node_ip = node_ip
        net, plen = network_of(pod_cidr)
        self.pod_cidr = f"{net}/{plen}"


def parse_peers(backend: dict[str, Any]) -> list[Peer]:
    peers = backend.get("peers") or []
    if not isinstance(peers, list):
        raise CNIError(INVALID_CONFIG, "backend.peers must be a list")
    out = []
    for p in peers:
        if not isinstance(p, dict) or not p.get("nodeIP") or not p.get("podCIDR"):
            raise CNIError(INVALID_CONFIG, f"backend.peers: need nodeIP and podCIDR in {p!r}")
        out.append(Peer(str(p["nodeIP"]), str(p["podCIDR"])))
    return out


def _local_ip(sock: nl.Netlink, backend: dict[str, Any], peers: list[Peer]) -> tuple[str, int]:
    """(local node IP, its link index): configured, or the address sharing a
    subnet with a peer's node IP."""
    want = str(backend.get("localIP") or "")
    for idx, addr, plen in sock.addresses(family=nl.AF_INET):
        if want:
            if addr == want:
                return addr, idx
        elif plen < 32 and any(_in_subnet(p.node_ip, addr, plen) for p in peers):
            return addr, idx
    if want:
        return want, 0
    raise CNIError(INVALID_CONFIG, "backend: cannot find the local node IP; set backend.localIP")


def pod_mtu(sock: nl.Netlink, backend: dict[str, Any], mtu: int) -> int:
    """The MTU for the bridge and the pods' links: with `vxlan`, at most the
    underlay link's MTU less VXLAN_OVERHEAD (a pod's full-size packet must
    fit in one encapsulated frame; a larger one is dropped on the way, and
    the bridge drops oversized frames without telling the sender), else
    `mtu` as configured (0: the kernel's default)."""
    if backend.get("type") != "vxlan":
        return mtu
    try:
        _, underlay = _local_ip(sock, backend, parse_peers(backend))
    except CNIError:
        return mtu  # no local IP known yet: the next ADD after the first peer caps it
    under = sock.get_link(index=underlay) if underlay else None
    if under is None or not under.mtu:
        return mtu
    cap = under.mtu - VXLAN_OVERHEAD
    return min(mtu, cap) if mtu else cap


def no_masquerade_cidrs(conf: dict[str, Any]) -> list[str]:
    """Pod subnets of peers: traffic to them keeps its pod source address."""
    backend = conf.get("backend")
    if not isinstance(backend, dict):
        return []
    return [p.pod_cidr for p in parse_peers(backend)]


def reconcile(sock: nl.Netlink, conf: dict[str, Any], local_cidrs: list[str]) -> None:
    """Make this node's routes to peer pod subnets match `conf["backend"]`."""
    backend = conf.get("backend")
    if not isinstance(backend, dict) or not backend:
        return
    kind = backend.get("type", "host-gw")
    local = {network_of(c) for c in local_cidrs}
    peers = [p for p in parse_peers(backend) if network_of(p.pod_cidr) not in local]
    if kind == "host-gw":
        _host_gw(sock, backend, peers)
    elif kind == "vxlan":
        _vxlan(sock, backend, peers, local_cidrs)
    else:
        raise CNIError(INVALID_CONFIG, f"backend.type {kind!r}: want host-gw or vxlan")


def _prune(sock: nl.Netlink, want: set[str], oif: int = 0) -> None:
    for r in sock.routes():
        stale = r.protocol == nl.RTPROT_SKIFF and r.dst and r.dst not in want
        if stale and r.dst and (not oif or r.oif == oif):
            sock.delete_route(r.dst, r.gateway, r.oif, nl.RTPROT_SKIFF)


def _host_gw(sock: nl.Netlink, backend: dict[str, Any], peers: list[Peer]) -> None:
    local_ip = str(backend.get("localIP") or "")
    want = set()
    for p in peers:
        if p.node_ip == local_ip:
            continue
        sock.add_route(p.pod_cidr, p.node_ip, protocol=nl.RTPROT_SKIFF, replace=True)
        want.add(p.pod_cidr)
    _prune(sock, want)


def vxlan_device(backend: dict[str, Any]) -> str:
    vni = int(backend.get("vni", 1))
    return str(backend.get("device") or f"skiff.{vni}")


def _vxlan(
    sock: nl.Netlink, backend: dict[str, Any], peers: list[Peer], local_cidrs: list[str]
) -> None:
    vni = int(backend.get("vni", 1))
    port = int(backend.get("port", 4789))
    name = vxlan_device(backend)
    local_ip, underlay = _local_ip(sock, backend, peers)
    peers = [p for p in peers if p.node_ip != local_ip]
    dev = sock.get_link(name)
    if dev is None:
        mtu = 0
        if underlay:
            under = sock.get_link(index=underlay)
            mtu = under.mtu - VXLAN_OVERHEAD if under and under.mtu else 0
        try:
            sock.create_link(
                name,
                "vxlan",
                data=nl.vxlan_data(vni, local_ip, port, underlay),
                mtu=mtu,
                mac=vtep_mac(local_ip),
            )
        except nl.NetlinkError as exc:
            if exc.errno != 17:
                raise
        dev = sock.get_link(name)
        if dev is None:
            raise CNIError(999, f"vxlan device {name} vanished after creation")
    elif not dev.flags & nl.IFF_UP:
        sock.set_link(dev.index, up=True)
    if dev.kind and dev.kind != "vxlan":
        raise CNIError(INVALID_CONFIG, f"{name} exists and is a {dev.kind}, not vxlan")
    # The VTEP address: the network address of this node's pod subnet, /32.
    for cidr in local_cidrs:
        net, _ = network_of(cidr)
        sock.add_address(dev.index, net, 32)
    want_routes = set()
    want_macs = {}
    for p in peers:
        vtep_ip, _ = network_of(p.pod_cidr)
        mac = vtep_mac(p.node_ip)
        sock.set_neighbour(dev.index, vtep_ip, mac)
        sock.set_fdb(dev.index, mac, p.node_ip)
        sock.add_route(
            p.pod_cidr, vtep_ip, dev.index, protocol=nl.RTPROT_SKIFF, onlink=True, replace=True
        )
        want_routes.add(p.pod_cidr)
        want_macs[mac] = p.node_ip
    _prune(sock, want_routes, dev.index)
    for ip, mac, state in list(sock.neighbours(dev.index)):
        if state & nl.NUD_PERMANENT and mac and mac not in want_macs:
            sock.delete_neighbour(dev.index, ip)
    for ip, mac, state in list(sock.neighbours(dev.index, nl.AF_BRIDGE)):
        if state & nl.NUD_PERMANENT and ip and want_macs.get(mac) != ip:
            sock.delete_fdb(dev.index, mac, ip)
