"""Routes to other nodes (host-gw, VXLAN) against a fake netlink socket:
what is added, replaced and pruned, without root."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.cni import netlink as nl
from runtime.cni import routes
from runtime.cni.skel import CNIError


class FakeNetlink:
    """The slice of `netlink.Netlink` that routes.reconcile uses."""

    def __init__(self) -> None:
        self.links: dict[str, nl.Link] = {
            "eth0": nl.Link(2, "eth0", "02:00:00:00:00:01", 1500, 0, "veth", nl.IFF_UP)
        }
        self.addrs: list[tuple[int, str, int]] = [(2, "10.250.9.1", 24)]
        self.route_table: dict[str, nl.Route] = {
            "192.168.0.0/16": nl.Route("192.168.0.0/16", "10.250.9.254", 2, nl.RTPROT_BOOT, 254)
        }
        self.neigh: dict[tuple[int, str], str] = {}
        self.fdb: dict[tuple[int, str], str] = {}
        self.created: list[tuple[str, str, int, str]] = []

    def addresses(self, index: int = 0, family: int = 0) -> list[tuple[int, str, int]]:
        return [a for a in self.addrs if not index or a[0] == index]

    def add_address(self, index: int, address: str, prefixlen: int) -> bool:
        if (index, address, prefixlen) in self.addrs:
            return False
        self.addrs.append((index, address, prefixlen))
        return True

    def get_link(self, name: str | None = None, index: int = 0) -> nl.Link | None:
        for link in self.links.values():
            if link.name == name or (index and link.index == index):
                return link
        return None

    def create_link(self, name: str, kind: str, data: bytes = b"", mtu: int = 0, **kw: Any) -> None:
        self.links[name] = nl.Link(
            len(self.links) + 2, name, kw.get("mac", ""), mtu, 0, kind, nl.IFF_UP
        )
        self.created.append((name, kind, mtu, kw.get("mac", "")))

    def set_link(self, index: int, up: bool | None = None, **kw: Any) -> None:
        pass

    def add_route(
        self,
        dst: str | None,
        gateway: str | None = None,
        oif: int = 0,
        protocol: int = 3,
        onlink: bool = False,
        replace: bool = False,
        family: int = 2,
    ) -> bool:
        assert dst is not None and replace
        self.route_table[dst] = nl.Route(dst, gateway, oif, protocol, 254)
        return True

    def delete_route(
        self,
        dst: str | None,
        gateway: str | None = None,
        oif: int = 0,
        protocol: int = 0,
        family: int = 2,
    ) -> bool:
        assert dst is not None
        return self.route_table.pop(dst, None) is not None

    def routes(self, family: int = 2) -> list[nl.Route]:
        return list(self.route_table.values())

    def set_neighbour(self, index: int, ip: str, mac: str) -> None:
        self.neigh[(index, ip)] = mac

    def delete_neighbour(self, index: int, ip: str) -> bool:
        return self.neigh.pop((index, ip), None) is not None

    def set_fdb(self, index: int, mac: str, dst_ip: str) -> None:
        self.fdb[(index, mac)] = dst_ip

    def delete_fdb(self, index: int, mac: str, dst_ip: str) -> bool:
        return self.fdb.pop((index, mac), None) is not None

    def neighbours(self, index: int, family: int = 2) -> list[tuple[str, str, int]]:
        if family == nl.AF_BRIDGE:
            return [(ip, mac, nl.NUD_PERMANENT) for (i, mac), ip in self.fdb.items() if i == index]
        return [(ip, mac, nl.NUD_PERMANENT) for (i, ip), mac in self.neigh.items() if i == index]


PEERS = [
    {"nodeIP": "10.250.9.1", "podCIDR": "10.251.1.0/24"},
    {"nodeIP": "10.250.9.2", "podCIDR": "10.251.2.7/24"},  # host bits are ignored
    {"nodeIP": "10.250.9.3", "podCIDR": "10.251.3.0/24"},
]


def ours(sock: FakeNetlink) -> dict[str, str | None]:
    return {d: r.gateway for d, r in sock.route_table.items() if r.protocol == nl.RTPROT_SKIFF}


def test_host_gw_routes_peers_and_prunes_only_its_own() -> None:
    sock = FakeNetlink()
    conf = {"backend": {"type": "host-gw", "peers": PEERS}}
    routes.reconcile(sock, conf, ["10.251.1.0/24"])  # type: ignore[arg-type]
    assert ours(sock) == {"10.251.2.0/24": "10.250.9.2", "10.251.3.0/24": "10.250.9.3"}
    conf["backend"]["peers"] = PEERS[:2]
    routes.reconcile(sock, conf, ["10.251.1.0/24"])  # type: ignore[arg-type]
    assert ours(sock) == {"10.251.2.0/24": "10.250.9.2"}
    assert "192.168.0.0/16" in sock.route_table  # not ours: untouched


def test_vxlan_device_neighbours_fdb_and_pruning() -> None:
    sock = FakeNetlink()
    conf: dict[str, Any] = {"backend": {"type": "vxlan", "vni": 7, "peers": PEERS}}
    routes.reconcile(sock, conf, ["10.251.1.0/24"])  # type: ignore[arg-type]
    assert sock.created == [("skiff.7", "vxlan", 1450, routes.vtep_mac("10.250.9.1"))]
    dev = sock.links["skiff.7"].index
    assert (dev, "10.251.1.0", 32) in sock.addrs
    assert ours(sock) == {"10.251.2.0/24": "10.251.2.0", "10.251.3.0/24": "10.251.3.0"}
    assert sock.neigh == {
        (dev, "10.251.2.0"): routes.vtep_mac("10.250.9.2"),
        (dev, "10.251.3.0"): routes.vtep_mac("10.250.9.3"),
    }
    assert sock.fdb == {
        (dev, routes.vtep_mac("10.250.9.2")): "10.250.9.2",
        (dev, routes.vtep_mac("10.250.9.3")): "10.250.9.3",
    }
    conf["backend"]["peers"] = PEERS[:2]
    routes.reconcile(sock, conf, ["10.251.1.0/24"])  # type: ignore[arg-type]
    assert list(ours(sock)) == ["10.251.2.0/24"]
    assert list(sock.neigh) == [(dev, "10.251.2.0")]
    assert list(sock.fdb) == [(dev, routes.vtep_mac("10.250.9.2"))]
    assert len(sock.created) == 1  # the device is reused


@pytest.mark.parametrize(
    "backend",
    [
        {"type": "bgp"},
        {"type": "host-gw", "peers": [{"nodeIP": "10.0.0.1"}]},
        {"type": "host-gw", "peers": {"nodeIP": "x"}},
        {"type": "vxlan", "peers": [{"nodeIP": "192.0.2.1", "podCIDR": "10.9.0.0/24"}]},
    ],
)
def test_bad_backends_are_config_errors(backend: dict[str, Any]) -> None:
    with pytest.raises(CNIError) as exc:
        routes.reconcile(FakeNetlink(), {"backend": backend}, [])  # type: ignore[arg-type]
    assert exc.value.code == 7


def test_vxlan_pod_mtu_leaves_room_for_the_encapsulation() -> None:
    sock = FakeNetlink()  # eth0 (MTU 1500) holds 10.250.9.1
    vxlan: dict[str, Any] = {"type": "vxlan", "localIP": "10.250.9.1", "peers": PEERS}
    assert routes.pod_mtu(sock, vxlan, 1500) == 1450  # type: ignore[arg-type]
    assert routes.pod_mtu(sock, vxlan, 0) == 1450  # type: ignore[arg-type]
    assert routes.pod_mtu(sock, vxlan, 1400) == 1400  # type: ignore[arg-type]
    host_gw = {"type": "host-gw", "peers": PEERS}
    assert routes.pod_mtu(sock, host_gw, 1500) == 1500  # type: ignore[arg-type]
    # No local IP to be found (no peer on a local subnet): as configured.
    lost = {"type": "vxlan", "peers": [{"nodeIP": "192.0.2.1", "podCIDR": "10.9.0.0/24"}]}
    assert routes.pod_mtu(sock, lost, 1500) == 1500  # type: ignore[arg-type]
