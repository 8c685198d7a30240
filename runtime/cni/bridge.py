"""Bridge mode: a Linux bridge on the node, a veth pair per attachment with
the container end created directly inside the pod's namespace as
CNI_IFNAME, addresses and routes from IPAM, optional gateway address,
hairpin, IP masquerade, host ports and routes to other nodes.

Configuration keys are the reference `bridge` plugin's (`bridge`,
`isGateway`, `isDefaultGateway`, `forceAddress`, `ipMasq`, `mtu`,
`hairpinMode`, `ipam`) plus `backend` (see `routes.py`) and the
`portMappings` capability (`runtimeConfig.portMappings`).

ADD undoes every finished step if a later one fails, so a failed ADD leaves
no link, address or rule behind. DEL succeeds on whatever is already gone.
The plugin process is single-threaded, which is what makes `oslib.NetNS`
safe here.
"""

from __future__ import annotations

from runtime.cni import delegate, iptables, oslib
from runtime.cni import netlink as nl
from runtime.cni.skel import (
    GENERIC,
    INVALID_CONFIG,
    UNKNOWN_CONTAINER,
    Args,
    CNIError,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

DEFAULT_BRIDGE = "cni0"


class NetConf:
    """The keys of one network configuration that bridge mode reads."""

    __slots__ = (
        "bridge",
        "force_address",
        "hairpin",
        "ip_masq",
        "is_default_gateway",
        "is_gateway",
        "mtu",
        "name",
        "port_mappings",
    )

    def __init__(self, conf: dict[str, Any]) -> None:
        self.name = str(conf.get("name", ""))
        self.bridge = str(conf.get("bridge") or DEFAULT_BRIDGE)
        if len(self.bridge) > 15 or "/" in self.bridge or " " in self.bridge:
            raise CNIError(INVALID_CONFIG, f"invalid bridge name {self.bridge!r}")
        self.is_default_gateway = bool(conf.get("isDefaultGateway", False))
        self.is_gateway = bool(conf.get("isGateway", False)) or self.is_default_gateway
        self.force_address = bool(conf.get("forceAddress", False))
        self.ip_masq = bool(conf.get("ipMasq", False))
        self.hairpin = bool(conf.get("hairpinMode", False))
        mtu = conf.get("mtu", 0) or 0
        if not isinstance(mtu, int) or mtu < 0 or (mtu and mtu < 68):
            raise CNIError(INVALID_CONFIG, f"invalid mtu {mtu!r}")
        self.mtu = mtu
        rc = conf.get("runtimeConfig") or {}
        pm = rc.get("portMappings") if isinstance(rc, dict) else None
        self.port_mappings: list[dict[str, Any]] = list(pm) if isinstance(pm, list) else []


def host_veth_name(network: str, container_id: str, ifname: str) -> str:
    return "veth" + oslib.digest(f"{network}\0{container_id}\0{ifname}", 8)


def _open_netns(path: str) -> oslib.NetNS:
    try:
        ns = oslib.NetNS(path)
    except OSError as exc:
        raise CNIError(
            UNKNOWN_CONTAINER, f"failed to open netns {path!r}: {exc.strerror}"
        ) from None
    if not oslib.is_netns_fd(ns.fileno()):
        ns.close()
        raise CNIError(UNKNOWN_CONTAINER, f"{path!r} is not a network namespace")
    return ns


def _netlink_in(ns: oslib.NetNS) -> nl.Netlink:
    with ns:
        return nl.Netlink()


def ensure_bridge(sock: nl.Netlink, conf: NetConf) -> nl.Link:
    br = sock.get_link(conf.bridge)
    if br is None:
        try:
            # An explicit MAC: otherwise the bridge takes its lowest port's and
            # changes it as pods come and go, leaving pods with stale ARP
            # entries for their gateway.
            sock.create_link(conf.bridge, "bridge", mtu=conf.mtu, mac=_random_mac())
        except nl.NetlinkError as exc:
            if exc.errno != 17:  # a concurrent ADD made it first
                raise
        br = sock.get_link(conf.bridge)
        if br is None:
            raise CNIError(GENERIC, f"bridge {conf.bridge} vanished after creation")
    if br.kind and br.kind != "bridge":
        raise CNIError(INVALID_CONFIG, f"{conf.bridge} already exists but is not a bridge")
    if conf.mtu and br.mtu > conf.mtu:
        # The bridge predates a smaller MTU (the backend became vxlan): it
        # must not pass frames its new pods' links cannot take.
        sock.set_link(br.index, mtu=conf.mtu)
    if not br.flags & nl.IFF_UP:
        sock.set_link(br.index, up=True)
    return br


def _random_mac() -> str:
    import posix

    raw = bytearray(posix.urandom(6))
    raw[0] = (raw[0] & 0xFE) | 0x02  # unicast, locally administered
    return ":".join(f"{b:02x}" for b in raw)


def _split(cidr: str) -> tuple[str, int]:
    addr, _, plen = cidr.partition("/")
    return addr, int(plen)


def _subnet_of(cidr: str) -> str:
    """`10.1.2.3/24` -> `10.1.2.0/24` (either family)."""
    import _socket

    addr, plen = _split(cidr)
    fam, bits = (_socket.AF_INET6, 128) if ":" in addr else (_socket.AF_INET, 32)
    raw = int.from_bytes(_socket.inet_pton(fam, addr), "big")
    mask = ((1 << bits) - 1) ^ ((1 << (bits - plen)) - 1)
    return _socket.inet_ntop(fam, (raw & mask).to_bytes(bits // 8, "big")) + f"/{plen}"


def add(args: Args) -> dict[str, Any]:
    conf = NetConf(args.conf)
    ns = _open_netns(args.netns)
    undo: list[Callable[[], object]] = []
    pending: list[oslib.Proc] = []
    try:
        ipam_result = delegate.ipam_add(args)
        undo.append(lambda: delegate.ipam_del(args))
        ips = [dict(ip) for ip in ipam_result.get("ips", [])]
        if not ips:
            raise CNIError(GENERIC, "IPAM returned no addresses")
        # NAT rules go in one iptables-restore per family, started now and
        # collected after the links are made: the two overlap.
        if conf.ip_masq or conf.port_mappings:
            cid = iptables.chain_id(conf.name, args.container_id, args.ifname)
            undo.append(lambda: _teardown_rules(cid, ips))
            pending = _start_rules(args, conf, cid, ips)
        host = nl.Netlink()
        try:
            backend = args.conf.get("backend")
            if isinstance(backend, dict) and backend.get("type") == "vxlan":
                from runtime.cni import routes

                conf.mtu = routes.pod_mtu(host, backend, conf.mtu)
            result = _add_links(args, conf, ns, host, ips, ipam_result, undo)
            if conf.port_mappings:
                oslib.write_sysctl(f"net/ipv4/conf/{conf.bridge}/route_localnet", "1")
            if conf.is_gateway:
                for ip in ips:
                    v6 = ":" in ip["address"]
                    sysctl = "net/ipv6/conf/all/forwarding" if v6 else "net/ipv4/ip_forward"
                    if oslib.read_sysctl(sysctl) != "1":
                        oslib.write_sysctl(sysctl, "1")
            local_cidrs = [_subnet_of(ip["address"]) for ip in ips if ":" not in ip["address"]]
            if args.conf.get("backend"):
                from runtime.cni import routes  # only nodes routing to peers need it

                routes.reconcile(host, args.conf, local_cidrs)
        finally:
            host.close()
            for proc in pending:
                proc.wait()
        for proc in pending:
            iptables.finish(proc)
        undo.clear()
        return result
    except BaseException:
        for proc in pending:
            proc.wait()  # the rules' teardown must not race their creation
        for step in reversed(undo):
            try:
                step()
            except Exception:  # best effort undo; the first error is the one reported
                pass
        raise
    finally:
        ns.close()


def _start_rules(
    args: Args, conf: NetConf, cid: str, ips: list[dict[str, Any]]
) -> list[oslib.Proc]:
    note = iptables.comment(conf.name, args.container_id)
    extra: list[str] = []
    if conf.ip_masq and args.conf.get("backend"):
        from runtime.cni import routes

        extra = routes.no_masquerade_cidrs(args.conf)
    by_family: dict[bool, list[str]] = {}
    for ip in ips:
        cidr = str(ip["address"])
        addr = _split(cidr)[0]
        v6 = ":" in addr
        lines = by_family.setdefault(v6, [])
        if conf.ip_masq:
            no_masq = [_subnet_of(cidr)] + [c for c in extra if (":" in c) == v6]
            lines += iptables.masquerade_lines(cid, note, addr, no_masq)
        if conf.port_mappings:
            lines += iptables.hostport_lines(cid, note, addr, conf.port_mappings)
    return [iptables.start_restore(lines, v6) for v6, lines in by_family.items() if lines]


def _add_links(
    args: Args,
    conf: NetConf,
    ns: oslib.NetNS,
    host: nl.Netlink,
    ips: list[dict[str, Any]],
    ipam_result: dict[str, Any],
    undo: list[Callable[[], object]],
) -> dict[str, Any]:
    br = ensure_bridge(host, conf)
    veth = host_veth_name(conf.name, args.container_id, args.ifname)
    pod = _netlink_in(ns)
    try:
        if pod.get_link(args.ifname) is not None:
            raise CNIError(
                GENERIC, f"container veth name {args.ifname!r} already exists in {args.netns}"
            )
        for attempt in (0, 1):
            try:
                host.create_veth(veth, args.ifname, ns.fileno(), mtu=conf.mtu, master=br.index)
                break
            except nl.NetlinkError as exc:
                if exc.errno != 17 or attempt:
                    raise CNIError(
                        GENERIC, f"failed to create veth {veth}: {exc.strerror}"
                    ) from None
                host.delete_link(name=veth)  # a stale host end from a lost attachment
        undo.append(lambda: _delete_host_veth(veth))
        host_link = host.get_link(veth)
        if host_link is None:
            raise CNIError(GENERIC, f"veth {veth} vanished after creation")
        if conf.hairpin:
            host.set_hairpin(host_link.index, True)
        link = pod.get_link(args.ifname)
        if link is None:
            raise CNIError(GENERIC, f"{args.ifname} missing in {args.netns} after creation")
        pod.set_link(link.index, up=True)
        pod.set_link(1, up=True)  # `lo` (always index 1): pods need it, and no runtime forgets it
        for ip in ips:
            ip["interface"] = 2
            addr, plen = _split(ip["address"])
            pod.add_address(link.index, addr, plen)
        gateways = {ip.get("gateway") for ip in ips if ip.get("gateway")}
        if conf.is_default_gateway:
            for gw in gateways:
                pod.add_route(None, str(gw), link.index, family=nl.family_of(str(gw)))
        for r in ipam_result.get("routes") or []:
            dst = str(r.get("dst", ""))
            gw = r.get("gw")
            if not gw:
                fam_v6 = ":" in dst
                gw = next((g for g in gateways if (":" in str(g)) == fam_v6), None)
            if dst in ("0.0.0.0/0", "::/0") and conf.is_default_gateway:
                continue  # already added above
            pod.add_route(
                None if dst.endswith("/0") else dst,
                str(gw) if gw else None,
                link.index,
                family=nl.family_of(dst.partition("/")[0] or "0.0.0.0"),
            )
        if conf.is_gateway:
            for ip in ips:
                if ip.get("gateway"):
                    _, plen = _split(ip["address"])
                    host.add_address(br.index, str(ip["gateway"]), plen)
        br = host.get_link(index=br.index) or br
    finally:
        pod.close()
    routes_out = [dict(r) for r in ipam_result.get("routes") or []]
    if conf.is_default_gateway and not any(
        r.get("dst") in ("0.0.0.0/0", "::/0") for r in routes_out
    ):
        for gw in gateways:
            routes_out.append({"dst": "::/0" if ":" in str(gw) else "0.0.0.0/0", "gw": gw})
    result: dict[str, Any] = {
        "cniVersion": args.version,
        "interfaces": [
            {"name": br.name, "mac": br.mac},
            {"name": host_link.name, "mac": host_link.mac},
            {"name": link.name, "mac": link.mac, "sandbox": args.netns},
        ],
        "ips": ips,
    }
    if routes_out:
        result["routes"] = routes_out
    result["dns"] = dict(args.conf.get("dns") or {})
    return result


def _delete_host_veth(name: str) -> None:
    with nl.Netlink() as sock:
        sock.delete_link(name=name)


def _teardown_rules(cid: str, ips: list[dict[str, Any]] | None = None) -> None:
    iptables.teardown(cid)
    if ips and any(":" in str(ip.get("address", "")) for ip in ips):
        iptables.teardown(cid, v6=True)


def delete(args: Args) -> None:
    conf = NetConf(args.conf)
    errors: list[str] = []
    prev = args.conf.get("prevResult")
    prev_ips = [
        _split(str(ip.get("address")))[0]
        for ip in (prev.get("ips") or [] if isinstance(prev, dict) else [])
        if isinstance(ip, dict) and "/" in str(ip.get("address", ""))
    ]
    cid = iptables.chain_id(conf.name, args.container_id, args.ifname)
    pending: dict[bool, oslib.Proc] = {}
    fallback: list[bool] = []  # families whose rules need the search-based teardown
    want_rules = conf.ip_masq or conf.port_mappings
    if want_rules:
        # The exact inverse of ADD's rules, overlapping the link deletion;
        # if anything is missing, the search-based teardown below does it.
        note = iptables.comment(conf.name, args.container_id)
        for v6 in (False, True):
            ip = next((a for a in prev_ips if (":" in a) == v6), None)
            if ip is None and prev_ips:
                continue  # prevResult says: no address of this family
            if ip is None and (conf.ip_masq or v6):
                fallback.append(v6)
                continue
            lines = iptables.delete_lines(cid, note, ip, conf.ip_masq, bool(conf.port_mappings))
            pending[v6] = iptables.start_restore(lines, v6)
    try:
        if args.netns and oslib.is_netns(args.netns):
            ns = oslib.NetNS(args.netns)
            try:
                pod = _netlink_in(ns)
                try:
                    pod.delete_link(name=args.ifname)
                finally:
                    pod.close()
            except OSError as exc:
                errors.append(f"deleting {args.ifname} in {args.netns}: {exc}")
            finally:
                ns.close()
        _delete_host_veth(host_veth_name(conf.name, args.container_id, args.ifname))
        delegate.ipam_del(args)
    finally:
        for v6, proc in pending.items():
            if proc.wait()[0] != 0:
                fallback.append(v6)
    for v6 in fallback:
        iptables.teardown(cid, v6)
    if errors:
        raise CNIError(GENERIC, "; ".join(errors))


def check(args: Args) -> None:
    conf = NetConf(args.conf)
    prev = args.conf.get("prevResult")
    if not isinstance(prev, dict):
        raise CNIError(INVALID_CONFIG, "CHECK needs prevResult")
    ns = _open_netns(args.netns)
    try:
        pod = _netlink_in(ns)
        try:
            link = pod.get_link(args.ifname)
            if link is None:
                raise CNIError(GENERIC, f"{args.ifname} not found in {args.netns}")
            have = {f"{a}/{p}" for _, a, p in pod.addresses(link.index)}
        finally:
            pod.close()
    finally:
        ns.close()
    for ip in prev.get("ips") or []:
        if ip.get("address") not in have:
            raise CNIError(GENERIC, f"address {ip.get('address')} not on {args.ifname}")
    host = nl.Netlink()
    try:
        br = host.get_link(conf.bridge)
        if br is None:
            raise CNIError(GENERIC, f"bridge {conf.bridge} not found")
        veth = host.get_link(host_veth_name(conf.name, args.container_id, args.ifname))
        if veth is None or veth.master != br.index:
            raise CNIError(GENERIC, f"host veth of {args.container_id} not on {conf.bridge}")
    finally:
        host.close()
    if conf.ip_masq or conf.port_mappings:
        cid = iptables.chain_id(conf.name, args.container_id, args.ifname)
        chains = {ln.split(" ", 1)[0][1:] for ln in iptables.save() if ln.startswith(":")}
        want = ([f"SKIFF-MQ-{cid}"] if conf.ip_masq else []) + (
            [f"SKIFF-DN-{cid}", f"SKIFF-SN-{cid}"] if conf.port_mappings else []
        )
        missing = [c for c in want if c not in chains]
        if missing:
            raise CNIError(GENERIC, f"NAT chains missing: {', '.join(missing)}")
    delegate.ipam_check(args)


def gc(args: Args) -> None:
    """GC (CNI 1.1): remove every attachment of this network that is not in
    `cni.dev/valid-attachments`: host veths on the bridge, NAT chains (found
    by this network's rule comment), then IPAM allocations."""
    conf = NetConf(args.conf)
    valid = [
        (str(a.get("containerID", "")), str(a.get("ifname", "")))
        for a in args.conf.get("cni.dev/valid-attachments") or []
        if isinstance(a, dict)
    ]
    keep_veths = {host_veth_name(conf.name, cid, ifname) for cid, ifname in valid}
    with nl.Netlink() as sock:
        br = sock.get_link(conf.bridge)
        if br is not None:
            for link in sock.links():
                if link.master == br.index and link.kind == "veth" and link.name not in keep_veths:
                    sock.delete_link(link.index)
    keep_rules = {iptables.chain_id(conf.name, cid, ifname) for cid, ifname in valid}
    mine = f'--comment "skiff {iptables.comment(conf.name, "")[7:-1]}'
    stale = set()
    for line in iptables.save():
        if line.startswith("-A ") and mine in line and " -j SKIFF-" in line:
            target = line.rsplit(" -j ", 1)[1].split(" ", 1)[0]
            cid = target.rsplit("-", 1)[1]
            if cid not in keep_rules:
                stale.add(cid)
    for cid in sorted(stale):
        iptables.teardown(cid)
    delegate.ipam_gc(args)


def status(args: Args) -> None:
    delegate.ipam_status(args)
