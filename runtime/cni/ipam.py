"""skiff-ipam: host-local's keys and semantics, in-process or as its own
executable.

Configuration (`ipam` of the network config): `subnet` (+ `rangeStart`,
`rangeEnd`, `gateway`) or `ranges` (a list of range sets, each a list of
ranges; one address per range set), `routes`, `dataDir` (default
`/var/lib/cni/networks`). Allocations are files in `<dataDir>/<network>/`
named by address and holding `<container id>\\r\\n<ifname>`, plus
`last_reserved_ip.<range set>`; every change happens under an exclusive
`flock` of `<dir>/lock`. That is host-local's on-disk format and lock, so the
two can even share a directory. Allocation is round-robin from the last
reserved address; network, broadcast and gateway addresses are never handed
out. The allocator reaches disk only through the `Store` methods, so unit tests
run it on a fake.
"""

from __future__ import annotations

import _socket
import posix

from machinery.atomicfile import write_atomic
from runtime.cni import oslib
from runtime.cni.skel import GENERIC, INVALID_CONFIG, TRY_AGAIN_LATER, CNIError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    class Store(Protocol):
        def lock(self) -> None: ...
        def unlock(self) -> None: ...
        def reserve(self, container_id: str, ifname: str, ip: str, range_id: str) -> bool: ...
        def last_reserved(self, range_id: str) -> str | None: ...
        def release_by_id(self, container_id: str, ifname: str) -> list[str]: ...
        def get_by_id(self, container_id: str, ifname: str) -> list[str]: ...
        def all_ids(self) -> dict[str, tuple[str, str]]: ...
        def release_ip(self, ip: str) -> None: ...


DEFAULT_DATA_DIR = "/var/lib/cni/networks"
LINE_BREAK = "\r\n"


def _to_int(ip: str) -> tuple[int, int]:
    """(family bits, integer) of an address."""
    if ":" in ip:
        return 128, int.from_bytes(_socket.inet_pton(_socket.AF_INET6, ip), "big")
    return 32, int.from_bytes(_socket.inet_pton(_socket.AF_INET, ip), "big")


def _to_str(bits: int, value: int) -> str:
    if bits == 128:
        return _socket.inet_ntop(_socket.AF_INET6, value.to_bytes(16, "big"))
    return _socket.inet_ntop(_socket.AF_INET, value.to_bytes(4, "big"))


class Range:
    """One subnet with its allocatable [start, end] and gateway."""

    __slots__ = ("bits", "end", "gateway", "network", "prefix", "start", "subnet")

    def __init__(self, spec: dict[str, Any]) -> None:
        subnet = spec.get("subnet")
        if not isinstance(subnet, str) or "/" not in subnet:
            raise CNIError(INVALID_CONFIG, f"ipam: invalid subnet {subnet!r}")
        addr, _, plen_s = subnet.partition("/")
        try:
            bits, value = _to_int(addr)
            prefix = int(plen_s)
        except (OSError, ValueError):
            raise CNIError(INVALID_CONFIG, f"ipam: invalid subnet {subnet!r}") from None
        if not 0 <= prefix <= bits or bits - prefix < 2:
            raise CNIError(INVALID_CONFIG, f"ipam: subnet {subnet} is too small")
        self.bits = bits
        self.prefix = prefix
        host_mask = (1 << (bits - prefix)) - 1
        self.network = value & ~host_mask
        self.subnet = f"{_to_str(bits, self.network)}/{prefix}"
        last = self.network | host_mask
        if bits == 32:
            last -= 1  # broadcast
        self.start = self._field(spec, "rangeStart", self.network + 1)
        self.end = self._field(spec, "rangeEnd", last)
        self.gateway = self._field(spec, "gateway", self.network + 1)
        if not (self.network < self.start <= self.end <= last):
            raise CNIError(
                INVALID_CONFIG,
                f"ipam: range {self.fmt(self.start)}-{self.fmt(self.end)} not in {self.subnet}",
            )

    def _field(self, spec: dict[str, Any], key: str, default: int) -> int:
        val = spec.get(key)
        if val is None or val == "":
            return default
        try:
            bits, value = _to_int(str(val))
        except OSError:
            raise CNIError(INVALID_CONFIG, f"ipam: invalid {key} {val!r}") from None
        if bits != self.bits or value & ~((1 << (bits - self.prefix)) - 1) != self.network:
            raise CNIError(INVALID_CONFIG, f"ipam: {key} {val} is not in {self.subnet}")
        return value

    def fmt(self, value: int) -> str:
        return _to_str(self.bits, value)

    def contains(self, ip: str) -> bool:
        try:
            bits, value = _to_int(ip)
        except OSError:
            return False
        return bits == self.bits and self.start <= value <= self.end


def parse_range_sets(ipam: dict[str, Any]) -> list[list[Range]]:
    """host-local's `ranges`, or the legacy single `subnet`, as range sets."""
    if ipam.get("ranges"):
        sets = ipam["ranges"]
        if not isinstance(sets, list) or not all(isinstance(s, list) and s for s in sets):
            raise CNIError(INVALID_CONFIG, "ipam: ranges must be a list of non-empty lists")
        return [[Range(r) for r in s] for s in sets]
    if ipam.get("subnet"):
        return [[Range(ipam)]]
    raise CNIError(INVALID_CONFIG, "ipam: no IP ranges specified (subnet or ranges)")


class DiskStore:
    """host-local's file store: one file per address, a flock'd `lock` file."""

    def __init__(self, data_dir: str, network: str) -> None:
        if not network or "/" in network or network in (".", ".."):
            raise CNIError(INVALID_CONFIG, f"ipam: invalid network name {network!r}")
        self.dir = oslib.join(data_dir, network)
        oslib.makedirs(self.dir, 0o755)
        self._lock_fd = -1

    def lock(self) -> None:
        import fcntl

        self._lock_fd = posix.open(
            oslib.join(self.dir, "lock"), posix.O_RDWR | posix.O_CREAT | posix.O_CLOEXEC, 0o644
        )
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)

    def unlock(self) -> None:
        if self._lock_fd >= 0:
            posix.close(self._lock_fd)  # closing releases the flock
            self._lock_fd = -1

    def _path(self, name: str) -> str:
        return oslib.join(self.dir, name)

    def reserve(self, container_id: str, ifname: str, ip: str, range_id: str) -> bool:
        try:
            fd = posix.open(self._path(ip), posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            posix.write(fd, (container_id.strip() + LINE_BREAK + ifname).encode())
        finally:
            posix.close(fd)
        write_atomic(self._path("last_reserved_ip." + range_id), ip.encode(), durable=True)
        return True

    def last_reserved(self, range_id: str) -> str | None:
        try:
            with open(self._path("last_reserved_ip." + range_id)) as f:
                return f.read().strip() or None
        except FileNotFoundError:
            return None

    def _entries(self) -> list[tuple[str, str, str]]:
        out = []
        for name in posix.listdir(self.dir):
            if name == "lock" or name.startswith("last_reserved_ip") or name.endswith(".tmp"):
                continue
            try:
                with open(self._path(name), newline="") as f:
                    content = f.read()
            except OSError:
                continue
            cid, _, ifname = content.partition(LINE_BREAK)
            out.append((name, cid.strip(), ifname.strip()))
        return out

    def get_by_id(self, container_id: str, ifname: str) -> list[str]:
        cid = container_id.strip()
        return [ip for ip, c, i in self._entries() if c == cid and i == ifname]

    def release_by_id(self, container_id: str, ifname: str) -> list[str]:
        released = self.get_by_id(container_id, ifname)
        for ip in released:
            self.release_ip(ip)
        return released

    def release_ip(self, ip: str) -> None:
        try:
            posix.unlink(self._path(ip))
        except FileNotFoundError:
            pass

    def all_ids(self) -> dict[str, tuple[str, str]]:
        return {ip: (c, i) for ip, c, i in self._entries()}


def store_for(conf: dict[str, Any]) -> DiskStore:
    ipam = conf.get("ipam") or {}
    return DiskStore(str(ipam.get("dataDir") or DEFAULT_DATA_DIR), str(conf.get("name", "")))


def _requested_ips(conf: dict[str, Any], cni_args: dict[str, str]) -> list[str]:
    """Specific addresses asked for through CNI_ARGS `IP=` or runtimeConfig `ips`."""
    out: list[str] = []
    if cni_args.get("IP"):
        out += [x.strip() for x in cni_args["IP"].split(",") if x.strip()]
    rc = conf.get("runtimeConfig") or {}
    for ip in rc.get("ips") or []:
        out.append(str(ip))
    return [ip.partition("/")[0] for ip in out]


def allocate(
    conf: dict[str, Any],
    container_id: str,
    ifname: str,
    cni_args: dict[str, str] | None = None,
    store: Store | None = None,
) -> dict[str, Any]:
    """ADD: one address per range set; the CNI IPAM result (1.0 shape)."""
    ipam = conf.get("ipam") or {}
    range_sets = parse_range_sets(ipam)
    st = store if store is not None else store_for(conf)
    requested = _requested_ips(conf, cni_args or {})
    ips: list[dict[str, Any]] = []
    st.lock()
    try:
        existing = st.get_by_id(container_id, ifname)
        for set_id, rset in enumerate(range_sets):
            ip = _allocate_in_set(st, rset, str(set_id), container_id, ifname, requested, existing)
            r, value = ip
            ips.append({"address": f"{r.fmt(value)}/{r.prefix}", "gateway": r.fmt(r.gateway)})
    except BaseException:
        # Undo this call's reservations; addresses held before stay held.
        for entry in ips:
            addr = entry["address"].partition("/")[0]
            if addr not in existing:
                st.release_ip(addr)
        raise
    finally:
        st.unlock()
    result: dict[str, Any] = {"cniVersion": conf.get("cniVersion", "1.0.0"), "ips": ips}
    routes = ipam.get("routes")
    if routes:
        result["routes"] = [dict(r) for r in routes]
    result["dns"] = {}
    return result


def _allocate_in_set(
    st: Store,
    rset: list[Range],
    set_id: str,
    container_id: str,
    ifname: str,
    requested: list[str],
    existing: list[str],
) -> tuple[Range, int]:
    # Idempotent ADD: the container already holds an address in this set.
    for ip in existing:
        for r in rset:
            if r.contains(ip):
                return r, _to_int(ip)[1]
    for ip in requested:
        for r in rset:
            if r.contains(ip):
                value = _to_int(ip)[1]
                if value == r.gateway:
                    raise CNIError(INVALID_CONFIG, f"requested ip {ip} is the gateway")
                if not st.reserve(container_id, ifname, ip, set_id):
                    raise CNIError(TRY_AGAIN_LATER, f"requested IP address {ip} is not available")
                return r, value
    # Round-robin from the address after the last reserved one.
    last = st.last_reserved(set_id)
    start_r, start_v = 0, rset[0].start
    if last:
        for i, r in enumerate(rset):
            if r.contains(last):
                v = _to_int(last)[1] + 1
                if v > r.end:
                    start_r, start_v = (i + 1) % len(rset), rset[(i + 1) % len(rset)].start
                else:
                    start_r, start_v = i, v
                break
    n = len(rset)
    order = [(start_r + k) % n for k in range(n)] + [start_r]
    first = True
    for idx in order:
        r = rset[idx]
        if first:
            lo, hi = start_v, r.end
            first = False
        elif idx == start_r:
            lo, hi = r.start, start_v - 1
        else:
            lo, hi = r.start, r.end
        for value in range(lo, hi + 1):
            if value == r.gateway:
                continue
            if st.reserve(container_id, ifname, r.fmt(value), set_id):
                return r, value
    subnets = ",".join(r.subnet for r in rset)
    raise CNIError(TRY_AGAIN_LATER, f"no IP addresses available in range set: {subnets}")


def _existing_store(conf: dict[str, Any], store: Store | None) -> Store | None:
    """`store`, or the network's own store if it exists; None when nothing was
    ever allocated on this network (DEL and GC then have nothing to free)."""
    if store is not None:
        return store
    ipam = conf.get("ipam") or {}
    data_dir = str(ipam.get("dataDir") or DEFAULT_DATA_DIR)
    if not oslib.isdir(oslib.join(data_dir, str(conf.get("name", "")))):
        return None
    return store_for(conf)


def release(
    conf: dict[str, Any], container_id: str, ifname: str, store: Store | None = None
) -> list[str]:
    """DEL: free whatever the container holds; nothing held is fine."""
    st = _existing_store(conf, store)
    if st is None:
        return []
    st.lock()
    try:
        return st.release_by_id(container_id, ifname)
    finally:
        st.unlock()


def check(
    conf: dict[str, Any], container_id: str, ifname: str, store: Store | None = None
) -> list[str]:
    """CHECK: the container must hold an address; returns what it holds."""
    st = store if store is not None else store_for(conf)
    held = st.get_by_id(container_id, ifname)
    if not held:
        raise CNIError(
            GENERIC, f"failed to find address for container {container_id} interface {ifname}"
        )
    return held


def gc(conf: dict[str, Any], store: Store | None = None) -> list[str]:
    """GC: free every allocation not in `cni.dev/valid-attachments`."""
    valid = {
        (str(a.get("containerID", "")).strip(), str(a.get("ifname", "")))
        for a in conf.get("cni.dev/valid-attachments") or []
    }
    st = _existing_store(conf, store)
    if st is None:
        return []
    st.lock()
    try:
        freed = []
        for ip, owner in st.all_ids().items():
            if owner not in valid:
                st.release_ip(ip)
                freed.append(ip)
        return freed
    finally:
        st.unlock()
