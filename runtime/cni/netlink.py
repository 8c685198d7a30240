"""A small rtnetlink client over a raw `AF_NETLINK` socket: links (bridge,
veth, vxlan), addresses, routes, neighbours and bridge FDB entries.

This is the plugin's hot path. `pyroute2` does all of this too, but importing
it costs ~200 ms per plugin invocation, against a budget of ~15 ms for a
whole ADD; the few message types the plugin needs fit in this module. It
imports only `_socket` and `struct`. It never switches namespaces itself:
open the socket inside `oslib.NetNS` to talk to another namespace.
"""

from __future__ import annotations

import _socket
import posix
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

AF_INET = 2
AF_INET6 = 10
AF_BRIDGE = 7
AF_UNSPEC = 0

NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLM_F_ROOT = 0x100
NLM_F_MATCH = 0x200
NLM_F_DUMP = NLM_F_ROOT | NLM_F_MATCH
NLM_F_REPLACE = 0x100
NLM_F_EXCL = 0x200
NLM_F_CREATE = 0x400
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLA_F_NESTED = 0x8000

RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK, RTM_SETLINK = 16, 17, 18, 19
RTM_NEWADDR, RTM_DELADDR, RTM_GETADDR = 20, 21, 22
RTM_NEWROUTE, RTM_DELROUTE, RTM_GETROUTE = 24, 25, 26
RTM_NEWNEIGH, RTM_DELNEIGH, RTM_GETNEIGH = 28, 29, 30

IFF_UP = 0x1
IFLA_ADDRESS, IFLA_IFNAME, IFLA_MTU, IFLA_LINK, IFLA_MASTER = 1, 3, 4, 5, 10
IFLA_PROTINFO, IFLA_LINKINFO, IFLA_NET_NS_FD, IFLA_EXT_MASK = 12, 18, 28, 29
IFLA_INFO_KIND, IFLA_INFO_DATA = 1, 2
VETH_INFO_PEER = 1
IFLA_BRPORT_MODE = 4
IFLA_VXLAN_ID, IFLA_VXLAN_LINK, IFLA_VXLAN_LOCAL = 1, 3, 4
IFLA_VXLAN_LEARNING, IFLA_VXLAN_PORT = 7, 15
RTEXT_FILTER_SKIP_STATS = 1 << 3

IFA_ADDRESS, IFA_LOCAL = 1, 2
IFA_F_NODAD = 0x02
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY, RTA_TABLE = 1, 4, 5, 6, 15
RT_TABLE_MAIN = 254
RTN_UNICAST = 1
RT_SCOPE_UNIVERSE, RT_SCOPE_LINK, RT_SCOPE_HOST = 0, 253, 254
RTNH_F_ONLINK = 4
RTPROT_BOOT = 3
RTPROT_SKIFF = 183  # marks routes to other nodes' pod subnets as ours
NDA_DST, NDA_LLADDR = 1, 2
NUD_PERMANENT = 0x80
NTF_SELF = 0x02

_HDR = struct.Struct("=IHHII")
_ATTR = struct.Struct("=HH")
_IFINFO = struct.Struct("=BxHiII")
_IFADDR = struct.Struct("=BBBBi")
_RTMSG = struct.Struct("=BBBBBBBBI")
_NDMSG = struct.Struct("=BxxxiHBB")


class NetlinkError(OSError):
    """The kernel answered a request with an error (errno in `.errno`)."""


def attr(kind: int, payload: bytes) -> bytes:
    """One netlink attribute, padded to 4 bytes."""
    length = 4 + len(payload)
    return _ATTR.pack(length, kind) + payload + b"\0" * ((-length) & 3)


def nested(kind: int, *attrs: bytes) -> bytes:
    return attr(kind | NLA_F_NESTED, b"".join(attrs))


def u32(v: int) -> bytes:
    return struct.pack("=I", v)


def cstr(s: str) -> bytes:
    return s.encode() + b"\0"


def parse_attrs(data: bytes, offset: int = 0) -> dict[int, bytes]:
    """Attributes of one message (last occurrence wins), type without flags."""
    out: dict[int, bytes] = {}
    end = len(data)
    while offset + 4 <= end:
        length, kind = _ATTR.unpack_from(data, offset)
        if length < 4:
            break
        out[kind & 0x3FFF] = data[offset + 4 : offset + length]
        offset += (length + 3) & ~3
    return out


def family_of(addr: str) -> int:
    return AF_INET6 if ":" in addr else AF_INET


def pton(addr: str) -> bytes:
    return _socket.inet_pton(family_of(addr), addr)


def ntop(raw: bytes) -> str:
    return _socket.inet_ntop(AF_INET6 if len(raw) == 16 else AF_INET, raw)


def mac_to_str(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def mac_from_str(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


class Link:
    """What the plugin needs to know about one link."""

    __slots__ = ("flags", "index", "kind", "mac", "master", "mtu", "name")

    def __init__(
        self, index: int, name: str, mac: str, mtu: int, master: int, kind: str, flags: int
    ) -> None:
        self.index = index
        self.name = name
        self.mac = mac
        self.mtu = mtu
        self.master = master
        self.kind = kind
        self.flags = flags

    def __repr__(self) -> str:
        return f"Link({self.index}, {self.name!r}, kind={self.kind!r})"


class Route:
    __slots__ = ("dst", "gateway", "oif", "protocol", "table")

    def __init__(self, dst: str | None, gateway: str | None, oif: int, protocol: int, table: int):
        self.dst = dst
        self.gateway = gateway
        self.oif = oif
        self.protocol = protocol
        self.table = table


def _parse_link(payload: bytes) -> Link:
    _, _, index, flags, _ = _IFINFO.unpack_from(payload, 0)
    a = parse_attrs(payload, _IFINFO.size)
    kind = ""
    if IFLA_LINKINFO in a:
        info = parse_attrs(a[IFLA_LINKINFO])
        kind = info.get(IFLA_INFO_KIND, b"").rstrip(b"\0").decode()
    return Link(
        index,
        a.get(IFLA_IFNAME, b"").rstrip(b"\0").decode(),
        mac_to_str(a.get(IFLA_ADDRESS, b"")),
        struct.unpack("=I", a[IFLA_MTU])[0] if IFLA_MTU in a else 0,
        struct.unpack("=I", a[IFLA_MASTER])[0] if IFLA_MASTER in a else 0,
        kind,
        flags,
    )


class Netlink:
    """One NETLINK_ROUTE socket, bound to the namespace it was created in."""

    def __init__(self) -> None:
        self.sock = _socket.socket(16, _socket.SOCK_RAW | _socket.SOCK_CLOEXEC, 0)
        self.sock.setsockopt(270, 11, 1)  # SOL_NETLINK, NETLINK_EXT_ACK
        self.sock.bind((0, 0))
        self.seq = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Netlink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport ---------------------------------------------------------

    def _send(self, mtype: int, flags: int, body: bytes) -> int:
        self.seq += 1
        msg = _HDR.pack(_HDR.size + len(body), mtype, flags | NLM_F_REQUEST, self.seq, 0) + body
        self.sock.send(msg)
        return self.seq

    def _request_unless(
        self, errnos: tuple[int, ...], msg_type: int, flags: int, body: bytes
    ) -> bool:
        """request(); False when the kernel answers one of `errnos` (the
        thing is already there, or already gone)."""
        try:
            self.request(msg_type, flags, body)
        except NetlinkError as exc:
            if exc.errno in errnos:
                return False
            raise
        return True

    def request(self, mtype: int, flags: int, body: bytes) -> list[tuple[int, bytes]]:
        """Send one request; return the (type, payload) replies. A dump reads
        until DONE; anything else until the ACK or error (raised)."""
        seq = self._send(mtype, flags | NLM_F_ACK, body)
        dump = flags & NLM_F_DUMP == NLM_F_DUMP
        out: list[tuple[int, bytes]] = []
        while True:
            data = self.sock.recv(1 << 16)
            off = 0
            while off + _HDR.size <= len(data):
                length, rtype, _, rseq, _ = _HDR.unpack_from(data, off)
                payload = data[off + _HDR.size : off + length]
                off += (length + 3) & ~3
                if rseq != seq:
                    continue
                if rtype == NLMSG_DONE:
                    return out
                if rtype == NLMSG_ERROR:
                    err = -struct.unpack_from("=i", payload)[0]
                    if err:
                        raise NetlinkError(err, posix.strerror(err))
                    if not dump:
                        return out
                    continue
                out.append((rtype, payload))

    # -- links -------------------------------------------------------------

    def get_link(self, name: str | None = None, index: int = 0) -> Link | None:
        body = _IFINFO.pack(AF_UNSPEC, 0, index, 0, 0) + attr(
            IFLA_EXT_MASK, u32(RTEXT_FILTER_SKIP_STATS)
        )
        if name is not None:
            body += attr(IFLA_IFNAME, cstr(name))
        try:
            replies = self.request(RTM_GETLINK, 0, body)
        except NetlinkError as exc:
            if exc.errno in (19, 6):  # ENODEV, ENXIO
                return None
            raise
        for rtype, payload in replies:
            if rtype == RTM_NEWLINK:
                return _parse_link(payload)
        return None

    def links(self) -> list[Link]:
        body = _IFINFO.pack(AF_UNSPEC, 0, 0, 0, 0) + attr(
            IFLA_EXT_MASK, u32(RTEXT_FILTER_SKIP_STATS)
        )
        return [
            _parse_link(p)
            for t, p in self.request(RTM_GETLINK, NLM_F_DUMP, body)
            if t == RTM_NEWLINK
        ]

    def create_link(
        self,
        name: str,
        kind: str,
        data: bytes = b"",
        mtu: int = 0,
        up: bool = True,
        master: int = 0,
        mac: str = "",
        extra: bytes = b"",
    ) -> None:
        """RTM_NEWLINK with NLM_F_EXCL: raises NetlinkError(EEXIST) if taken."""
        attrs = attr(IFLA_IFNAME, cstr(name))
        if mtu:
            attrs += attr(IFLA_MTU, u32(mtu))
        if master:
            attrs += attr(IFLA_MASTER, u32(master))
        if mac:
            attrs += attr(IFLA_ADDRESS, mac_from_str(mac))
        info = attr(IFLA_INFO_KIND, kind.encode())
        if data:
            info += attr(IFLA_INFO_DATA | NLA_F_NESTED, data)
        attrs += nested(IFLA_LINKINFO, info) + extra
        flags = IFF_UP if up else 0
        body = _IFINFO.pack(AF_UNSPEC, 0, 0, flags, IFF_UP if up else 0) + attrs
        self.request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, body)

    def create_veth(
        self,
        name: str,
        peer_name: str,
        peer_netns_fd: int,
        mtu: int = 0,
        master: int = 0,
        peer_mac: str = "",
    ) -> None:
        """A veth pair: `name` here, up and enslaved to `master`; `peer_name`
        created directly inside the namespace `peer_netns_fd`, still down."""
        peer = attr(IFLA_IFNAME, cstr(peer_name)) + attr(IFLA_NET_NS_FD, u32(peer_netns_fd))
        if mtu:
            peer += attr(IFLA_MTU, u32(mtu))
        if peer_mac:
            peer += attr(IFLA_ADDRESS, mac_from_str(peer_mac))
        # The peer cannot be created up (veth_open needs both ends registered).
        peer_msg = _IFINFO.pack(AF_UNSPEC, 0, 0, 0, 0) + peer
        data = attr(VETH_INFO_PEER, peer_msg)
        self.create_link(name, "veth", data=data, mtu=mtu, master=master)

    def set_link(
        self,
        index: int,
        up: bool | None = None,
        mtu: int = 0,
        master: int = -1,
        mac: str = "",
    ) -> None:
        attrs = b""
        if mtu:
            attrs += attr(IFLA_MTU, u32(mtu))
        if master >= 0:
            attrs += attr(IFLA_MASTER, u32(master))
        if mac:
            attrs += attr(IFLA_ADDRESS, mac_from_str(mac))
        flags = change = 0
        if up is not None:
            change = IFF_UP
            flags = IFF_UP if up else 0
        self.request(RTM_NEWLINK, 0, _IFINFO.pack(AF_UNSPEC, 0, index, flags, change) + attrs)

    def set_hairpin(self, index: int, on: bool) -> None:
        body = _IFINFO.pack(AF_BRIDGE, 0, index, 0, 0) + nested(
            IFLA_PROTINFO, attr(IFLA_BRPORT_MODE, bytes([1 if on else 0]))
        )
        self.request(RTM_SETLINK, 0, body)

    def delete_link(self, index: int = 0, name: str | None = None) -> bool:
        """Delete a link; False when it does not exist."""
        body = _IFINFO.pack(AF_UNSPEC, 0, index, 0, 0)
        if name is not None:
            body += attr(IFLA_IFNAME, cstr(name))
        return self._request_unless((19, 6), RTM_DELLINK, 0, body)

    # -- addresses ---------------------------------------------------------

    def add_address(self, index: int, address: str, prefixlen: int) -> bool:
        """Add an address; False when it is already there."""
        fam = family_of(address)
        raw = pton(address)
        # IPv6: no duplicate address detection, so the address is usable at
        # once (the subnet is ours and IPAM hands each address out once).
        flags = IFA_F_NODAD if fam == AF_INET6 else 0
        body = _IFADDR.pack(fam, prefixlen, flags, RT_SCOPE_UNIVERSE, index)
        body += attr(IFA_LOCAL, raw) + attr(IFA_ADDRESS, raw)
        return self._request_unless((17,), RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, body)  # EEXIST

    def addresses(self, index: int = 0, family: int = AF_UNSPEC) -> list[tuple[int, str, int]]:
        """(ifindex, address, prefixlen) of every address, or of one link."""
        out = []
        for t, p in self.request(RTM_GETADDR, NLM_F_DUMP, _IFADDR.pack(family, 0, 0, 0, 0)):
            if t != RTM_NEWADDR:
                continue
            _, plen, _, _, idx = _IFADDR.unpack_from(p, 0)
            if index and idx != index:
                continue
            a = parse_attrs(p, _IFADDR.size)
            raw = a.get(IFA_LOCAL) or a.get(IFA_ADDRESS)
            if raw:
                out.append((idx, ntop(raw), plen))
        return out

    # -- routes ------------------------------------------------------------

    def _route_body(
        self,
        dst: str | None,
        gateway: str | None,
        oif: int,
        protocol: int,
        scope: int,
        onlink: bool,
        family: int,
    ) -> bytes:
        if dst is not None:
            net, plen_s = dst.split("/") if "/" in dst else (dst, "")
            family = family_of(net)
            plen = int(plen_s) if plen_s else (128 if family == AF_INET6 else 32)
        else:
            net, plen = "", 0
            if gateway:
                family = family_of(gateway)
        body = _RTMSG.pack(
            family,
            plen,
            0,
            0,
            RT_TABLE_MAIN,
            protocol,
            scope,
            RTN_UNICAST,
            RTNH_F_ONLINK if onlink else 0,
        )
        if net and plen:
            body += attr(RTA_DST, pton(net))
        if gateway:
            body += attr(RTA_GATEWAY, pton(gateway))
        if oif:
            body += attr(RTA_OIF, u32(oif))
        return body

    def add_route(
        self,
        dst: str | None,
        gateway: str | None = None,
        oif: int = 0,
        protocol: int = RTPROT_BOOT,
        onlink: bool = False,
        replace: bool = False,
        family: int = AF_INET,
    ) -> bool:
        """Add (or replace) a route; False when an identical one exists."""
        scope = RT_SCOPE_UNIVERSE if gateway else RT_SCOPE_LINK
        body = self._route_body(dst, gateway, oif, protocol, scope, onlink, family)
        flags = NLM_F_CREATE | (NLM_F_REPLACE if replace else NLM_F_EXCL)
        return self._request_unless((17,), RTM_NEWROUTE, flags, body)

    def delete_route(
        self,
        dst: str | None,
        gateway: str | None = None,
        oif: int = 0,
        protocol: int = 0,
        family: int = AF_INET,
    ) -> bool:
        body = self._route_body(dst, gateway, oif, protocol, RT_SCOPE_UNIVERSE, False, family)
        return self._request_unless((3, 19), RTM_DELROUTE, 0, body)  # ESRCH, ENODEV

    def routes(self, family: int = AF_INET) -> list[Route]:
        out = []
        body = _RTMSG.pack(family, 0, 0, 0, 0, 0, 0, 0, 0)
        for t, p in self.request(RTM_GETROUTE, NLM_F_DUMP, body):
            if t != RTM_NEWROUTE:
                continue
            _, dst_len, _, _, table, proto, _, rtype, _ = _RTMSG.unpack_from(p, 0)
            a = parse_attrs(p, _RTMSG.size)
            if RTA_TABLE in a:
                table = struct.unpack("=I", a[RTA_TABLE])[0]
            if table != RT_TABLE_MAIN or rtype != RTN_UNICAST:
                continue
            dst = ntop(a[RTA_DST]) + f"/{dst_len}" if RTA_DST in a else None
            gw = ntop(a[RTA_GATEWAY]) if RTA_GATEWAY in a else None
            oif = struct.unpack("=I", a[RTA_OIF])[0] if RTA_OIF in a else 0
            out.append(Route(dst, gw, oif, proto, table))
        return out

    # -- neighbours and FDB ------------------------------------------------

    def set_neighbour(self, index: int, ip: str, mac: str) -> None:
        body = _NDMSG.pack(family_of(ip), index, NUD_PERMANENT, 0, 0)
        body += attr(NDA_DST, pton(ip)) + attr(NDA_LLADDR, mac_from_str(mac))
        self.request(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, body)

    def delete_neighbour(self, index: int, ip: str) -> bool:
        body = _NDMSG.pack(family_of(ip), index, 0, 0, 0) + attr(NDA_DST, pton(ip))
        return self._request_unless((2, 19), RTM_DELNEIGH, 0, body)

    def neighbours(self, index: int, family: int = AF_INET) -> Iterator[tuple[str, str, int]]:
        """(ip or vtep ip, mac, state) for one link; family AF_BRIDGE gives FDB."""
        body = _NDMSG.pack(family, index, 0, 0, 0)
        for t, p in self.request(RTM_GETNEIGH, NLM_F_DUMP, body):
            if t != RTM_NEWNEIGH:
                continue
            _, idx, state, _, _ = _NDMSG.unpack_from(p, 0)
            if idx != index:
                continue
            a = parse_attrs(p, _NDMSG.size)
            ip = ntop(a[NDA_DST]) if NDA_DST in a else ""
            mac = mac_to_str(a[NDA_LLADDR]) if NDA_LLADDR in a else ""
            yield ip, mac, state

    def set_fdb(self, index: int, mac: str, dst_ip: str) -> None:
        """A permanent bridge FDB entry on a vxlan device: mac -> remote VTEP."""
        body = _NDMSG.pack(AF_BRIDGE, index, NUD_PERMANENT, NTF_SELF, 0)
        body += attr(NDA_LLADDR, mac_from_str(mac)) + attr(NDA_DST, pton(dst_ip))
        self.request(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, body)

    def delete_fdb(self, index: int, mac: str, dst_ip: str) -> bool:
        body = _NDMSG.pack(AF_BRIDGE, index, 0, NTF_SELF, 0)
        body += attr(NDA_LLADDR, mac_from_str(mac)) + attr(NDA_DST, pton(dst_ip))
        return self._request_unless((2, 19), RTM_DELNEIGH, 0, body)


def vxlan_data(vni: int, local: str, port: int, underlay_index: int) -> bytes:
    data = attr(IFLA_VXLAN_ID, u32(vni))
    data += attr(IFLA_VXLAN_LOCAL, pton(local))
    data += attr(IFLA_VXLAN_LEARNING, b"\0")
    data += attr(IFLA_VXLAN_PORT, struct.pack(">H", port))
    if underlay_index:
        data += attr(IFLA_VXLAN_LINK, u32(underlay_index))
    return data
