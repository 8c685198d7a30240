"""What one skiff instance leaves on the host: found, checked and removed by name.

An instance (`skiff up`, or `skiff agent` + `skiff runtime` with the
standard names) puts state on the host that outlives its processes: the CNI
bridge and its route, a VXLAN device, peer routes, the cluster-DNS address
on its dummy interface, the service proxy's iptables chains and skiff-cni's
per-pod NAT chains (nftables chains too: iptables here is iptables-nft),
the CNI config and IPAM state, cgroups in every hierarchy, mounts and the
pods' network-namespace pins under its directories, and the processes
themselves (the runtime, the pods' monitors, the containers). `Instance`
names all of it; `teardown()` removes it, in the order k3s' killall script
uses (processes, then mounts, then network, then files and cgroups), and is
idempotent; `leftovers()` says what is there; `conflicts()` finds host
routes and addresses inside the pod or service CIDR that are not ours.

Nothing here imports the runtime (the import contract): skiff-cni's own
cleanup is its CNI GC command, run as the runtime would run it, and the rest
is plain Linux (cgroupfs, /proc, umount2, `ip`, iptables-restore).
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import json
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent.layout import Layout
from agent.netpol.nft import CommandNft
from agent.netpol.plan import netpol_table
from agent.network import CONF_NAME
from agent.pod_cgroups import cgroup_mounts, remove_empty_tree
from agent.proxy.iptables import CommandIptables
from agent.proxy.local_address import remove_local_address
from agent.proxy.proxy import cleanup as proxy_cleanup
from agent.proxy.proxy import read_existing
from agent.proxy.rules import Chains
from machinery import libc
from machinery.atomicfile import write_atomic

log = logging.getLogger("skiff.up.host")

RECORD = "instance.json"
# skiff-cni marks the routes to other nodes' pod subnets with this protocol
# (runtime/cni/netlink.RTPROT_SKIFF; a number on the wire, not an import).
RTPROT_SKIFF = 183


@dataclass(frozen=True)
class Instance:
    """The host-global names and directories of one instance."""

    data_dir: Path
    # Every mount under these is the instance's (pods' rootfs, volumes,
    # network-namespace pins), and so is a python process naming a path
    # under them (the runtime and the pods' monitors).
    roots: tuple[Path, ...]
    cgroup: str  # the runtime's cgroup parent; the pods' root lies under it
    bridge: str
    dns_interface: str
    dns_ip: str
    chain_prefix: str
    cni_network: str
    cni_conf_dir: Path
    cni_bin_dir: Path
    ipam_dir: Path
    cluster_cidr: str
    service_cidr: str
    # The instance's own directories. Any of them may be a mount the admin
    # made (a disk of its own for pods' volumes, as for a kubelet's root):
    # only the mounts beneath them are the instance's to remove.
    own_dirs: tuple[Path, ...] = ()

    @staticmethod
    def of(lay: Layout, cluster_cidr: str, service_cidr: str, dns_ip: str) -> Instance:
        standard = lay == Layout.standard()
        roots = (lay.data_dir, lay.cri_socket.parent) if standard else (lay.data_dir,)
        return Instance(
            data_dir=lay.data_dir,
            roots=roots,
            cgroup=lay.runtime_cgroup,
            bridge=lay.cni_bridge,
            dns_interface=lay.dns_interface,
            dns_ip=dns_ip,
            chain_prefix=lay.chain_prefix,
            cni_network=lay.cni_network,
            cni_conf_dir=lay.cni_conf_dir,
            cni_bin_dir=lay.cni_bin_dir,
            ipam_dir=lay.agent_root / "ipam",
            cluster_cidr=cluster_cidr,
            service_cidr=service_cidr,
            own_dirs=(
                lay.data_dir,
                lay.controlplane_dir,
                lay.runtime_root,
                lay.agent_root,
                lay.log_dir,
            ),
        )

    @property
    def cni_conf(self) -> Path:
        return self.cni_conf_dir / CONF_NAME

    @property
    def record(self) -> Path:
        return self.data_dir / RECORD

    def save(self) -> None:
        """Write the record `skiff down` reads (atomically; no secret in it)."""
        data = {
            k: (list(map(str, v)) if isinstance(v, tuple) else str(v))
            for k, v in asdict(self).items()
        }
        write_atomic(self.record, json.dumps(data, indent=2) + "\n", durable=True)

    @staticmethod
    def load(path: Path) -> Instance:
        """The record `save()` wrote; ValueError naming the field if it is bad."""
        try:
            d = json.loads(path.read_text())
            return Instance(
                data_dir=Path(d["data_dir"]),
                roots=tuple(Path(p) for p in d["roots"]),
                cgroup=str(d["cgroup"]),
                bridge=str(d["bridge"]),
                dns_interface=str(d["dns_interface"]),
                dns_ip=str(d["dns_ip"]),
                chain_prefix=str(d["chain_prefix"]),
                cni_network=str(d["cni_network"]),
                cni_conf_dir=Path(d["cni_conf_dir"]),
                cni_bin_dir=Path(d["cni_bin_dir"]),
                ipam_dir=Path(d["ipam_dir"]),
                cluster_cidr=str(d["cluster_cidr"]),
                service_cidr=str(d["service_cidr"]),
                own_dirs=tuple(Path(p) for p in d.get("own_dirs", [])),  # older records: none
            )
        except KeyError as err:
            raise ValueError(f"{path}: field {err} missing") from None
        except (TypeError, json.JSONDecodeError) as err:
            raise ValueError(f"{path}: {err}") from None


# ------------------------------------------------------------------ finding


def _ip_json(*args: str) -> list[dict[str, Any]]:
    res = subprocess.run(
        ["ip", "-j", *args], capture_output=True, text=True, timeout=30, check=False
    )
    if res.returncode != 0 or not res.stdout.strip():
        return []
    out = json.loads(res.stdout)
    return out if isinstance(out, list) else []


def link_exists(name: str) -> bool:
    return bool(_ip_json("link", "show", "dev", name)) if name else False


def written_conf(inst: Instance) -> dict[str, Any]:
    """The skiff-cni entry of the conflist the agent wrote, or {}."""
    try:
        conf = json.loads(inst.cni_conf.read_text())
    except (OSError, ValueError):
        return {}
    for entry in conf.get("plugins") or []:
        if isinstance(entry, dict) and entry.get("type") == "skiff-cni":
            return {"cniVersion": conf.get("cniVersion"), "name": conf.get("name"), **entry}
    return {}


def vxlan_device(conf: Mapping[str, Any]) -> str:
    backend = conf.get("backend") or {}
    if backend.get("type") != "vxlan":
        return ""
    return str(backend.get("device") or f"skiff.{int(backend.get('vni', 1))}")


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _ancestors() -> set[int]:
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def names_a_root(argv: Sequence[str], roots: Iterable[Path]) -> bool:
    """A python process (the runtime, a pod's monitor) or an HAProxy (the
    ingress, which outlives a killed agent) with an argument that names a
    path under one of `roots`."""
    program = os.path.basename(argv[0]) if argv else ""
    if not (program.startswith("python") or program == "haproxy"):
        return False
    prefixes = [str(r).rstrip("/") + "/" for r in roots]
    return any(p in arg for arg in argv[1:] for p in prefixes)


def _cgroup_pids(cgroup: str) -> set[int]:
    pids: set[int] = set()
    rel = cgroup.strip("/")
    if not rel:
        return pids
    for mount in cgroup_mounts():
        top = mount / rel
        if not top.is_dir():
            continue
        for dirpath, _dirs, _files in os.walk(top):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(x) for x in (Path(dirpath) / "cgroup.procs").read_text().split())
    return pids


def processes(inst: Instance) -> set[int]:
    """Live processes of the instance: in its cgroup tree (pods), or python
    and haproxy processes naming its directories (runtime, monitors, the
    ingress); never this one or its ancestors."""
    pids = _cgroup_pids(inst.cgroup)
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and names_a_root(_cmdline(int(entry.name)), inst.roots):
            pids.add(int(entry.name))
    return {p for p in pids if _alive(p)} - _ancestors()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def mounts_under(
    roots: Iterable[Path],
    mountinfo: Path = Path("/proc/self/mountinfo"),
    keep: Iterable[Path] = (),
) -> list[str]:
    """Mount points at or under any of `roots`, deepest first, but for
    those at exactly one of `keep`."""
    prefixes = [str(r).rstrip("/") for r in roots]
    kept = {str(k).rstrip("/") for k in keep}
    out = []
    for line in mountinfo.read_text().splitlines():
        parts = line.split(" ")
        if len(parts) < 5:
            continue
        point = parts[4].replace("\\040", " ")
        if point not in kept and any(point == p or point.startswith(p + "/") for p in prefixes):
            out.append(point)
    return sorted(set(out), key=lambda p: (-p.count("/"), p))


def cgroup_dirs(cgroup: str) -> list[Path]:
    rel = cgroup.strip("/")
    return [m / rel for m in cgroup_mounts() if rel and (m / rel).is_dir()]


def proxy_chains(prefix: str) -> list[str]:
    existing = read_existing(CommandIptables(), Chains(prefix))
    return sorted(f"{t}/{c}" for t in existing.chains for c in existing.ours(t))


def runtime_processes(inst: Instance) -> set[int]:
    """A `skiff runtime` of the instance still running (its skiff up was
    killed: the runtime runs in a session of its own)."""
    out = set()
    for pid in processes(inst):
        argv = _cmdline(pid)
        if "runtime" in argv and "--listen" in argv:
            out.add(pid)
    return out


def stop_runtime(inst: Instance, timeout: float = 15.0) -> int:
    """SIGTERM a leftover runtime (its pods' monitors outlive it, to be
    adopted by the next one), SIGKILL after `timeout`; how many there were."""
    pids = runtime_processes(inst)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    if not _wait(lambda: not any(_alive(p) for p in pids), timeout):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _wait(lambda: not any(_alive(p) for p in pids), timeout)
    return len(pids)


def leftovers(inst: Instance) -> list[str]:
    """What of the instance is on the host now, one line each."""
    found = []
    pids = processes(inst)
    if pids:
        found.append(f"{len(pids)} processes (pids {', '.join(map(str, sorted(pids)[:8]))})")
    mounts = mounts_under(inst.roots, keep=inst.own_dirs)
    if mounts:
        found.append(f"{len(mounts)} mounts under {', '.join(map(str, inst.roots))}")
    conf = written_conf(inst)
    for name in (inst.bridge, inst.dns_interface, vxlan_device(conf)):
        if link_exists(name):
            found.append(f"link {name}")
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        chains = proxy_chains(inst.chain_prefix)
        if chains:
            found.append(f"{len(chains)} iptables chains {inst.chain_prefix}-*")
    with contextlib.suppress(OSError, RuntimeError):
        if CommandNft().has_table("inet", netpol_table(inst.chain_prefix)):
            found.append(f"nftables table inet {netpol_table(inst.chain_prefix)}")
    for d in cgroup_dirs(inst.cgroup):
        found.append(f"cgroup {d}")
    if inst.cni_conf.exists():
        found.append(f"CNI config {inst.cni_conf}")
    return found


# ------------------------------------------------------------------ conflicts


@dataclass(frozen=True)
class Conflict:
    device: str
    network: str  # the route's destination or the address
    flag: str  # the flag whose range it lies in
    cidr: str

    def message(self) -> str:
        return (
            f"{self.network} on {self.device} lies inside {self.flag} {self.cidr}: pods or"
            f" Services there would be unreachable. {self.device} is not this instance's"
            f" (another cluster's bridge? if it is a stopped skiff up's, `skiff down"
            f" --data-dir ITS_DIR` removes it); remove it or choose another {self.flag}"
        )


def find_conflicts(
    routes: Sequence[Mapping[str, Any]],
    addresses: Sequence[Mapping[str, Any]],
    ranges: Mapping[str, str],
    ours: set[str],
    own_addresses: frozenset[str] = frozenset(),
) -> list[Conflict]:
    """Routes (`ip -j route`) and addresses (`ip -j addr`) inside one of
    `ranges` (flag -> CIDR) on a device not in `ours`, except our own
    addresses wherever they are (the DNS address sits on `lo` on kernels
    without the dummy driver). A wider route (a
    default or a 10.0.0.0/8 through a VPN) shadows nothing of ours, since
    the longer prefix wins; one inside the range does."""
    nets = {flag: ipaddress.ip_network(cidr, strict=False) for flag, cidr in ranges.items() if cidr}
    found: list[Conflict] = []

    def check(device: str, text: str) -> None:
        if device in ours:
            return
        try:
            net = ipaddress.ip_network(text, strict=False)
        except ValueError:
            return
        for flag, rng in nets.items():
            if net.version == rng.version and net.subnet_of(rng):  # type: ignore[arg-type]
                found.append(Conflict(device, str(net), flag, str(rng)))

    for r in routes:
        dst = str(r.get("dst") or "")
        if dst and dst != "default":
            check(str(r.get("dev") or ""), dst if "/" in dst else f"{dst}/32")
    for link in addresses:
        for a in link.get("addr_info") or []:
            if a.get("family") == "inet" and a.get("local") not in own_addresses:
                check(str(link.get("ifname") or ""), f"{a.get('local')}/32")
    return found


def conflicts(inst: Instance, vxlan: str = "") -> list[Conflict]:
    """find_conflicts() on this host's main routing table and addresses."""
    ours = {inst.bridge, inst.dns_interface} | ({vxlan} if vxlan else set())
    ranges = {"--cluster-cidr": inst.cluster_cidr, "--service-cidr": inst.service_cidr}
    routes, addresses = _ip_json("route", "show"), _ip_json("addr", "show")
    return find_conflicts(routes, addresses, ranges, ours, frozenset({inst.dns_ip}))


# ------------------------------------------------------------------ removing


def _wait(cond: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def kill_processes(inst: Instance, timeout: float = 15.0) -> int:
    """SIGKILL every process of the instance until none is left; how many."""
    killed: set[int] = set()

    def gone() -> bool:
        pids = processes(inst)
        for pid in pids - killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed.update(pids)
        return not pids

    if not _wait(gone, timeout):
        raise RuntimeError(f"processes {sorted(processes(inst))} survive SIGKILL")
    return len(killed)


def unmount_all(roots: Iterable[Path], keep: Iterable[Path] = ()) -> int:
    count = 0
    for point in mounts_under(roots, keep=keep):
        try:
            libc.umount2(point, libc.MNT_DETACH)
        except OSError as err:
            if err.errno not in (errno.EINVAL, errno.ENOENT):  # no longer a mount, gone
                raise OSError(err.errno, f"umount {point}: {os.strerror(err.errno or 0)}") from None
            continue
        count += 1
    return count


def cni_gc(inst: Instance, conf: dict[str, Any]) -> bool:
    """skiff-cni's GC with no valid attachment: every host veth on the bridge,
    every NAT chain of the network and every IPAM allocation go."""
    plugin = inst.cni_bin_dir / "skiff-cni"
    traces = inst.cni_conf.exists() or inst.ipam_dir.exists() or link_exists(inst.bridge)
    if not plugin.exists() or not traces:
        return False
    if not conf:  # the config is gone: GC needs only the names
        conf = {
            "name": inst.cni_network,
            "type": "skiff-cni",
            "bridge": inst.bridge,
            "ipam": {
                "type": "skiff-ipam",
                "subnet": inst.cluster_cidr,
                "dataDir": str(inst.ipam_dir),
            },
        }
    conf = {**conf, "cniVersion": "1.1.0", "cni.dev/valid-attachments": []}
    env = {**os.environ, "CNI_COMMAND": "GC", "CNI_PATH": str(inst.cni_bin_dir)}
    res = subprocess.run(
        [str(plugin)],
        input=json.dumps(conf),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if res.returncode != 0:
        log.warning("skiff-cni GC: %s", (res.stdout + res.stderr).strip())
    return res.returncode == 0


def _delete_link(name: str) -> bool:
    if not link_exists(name):
        return False
    subprocess.run(["ip", "link", "del", "dev", name], capture_output=True, timeout=30, check=False)
    return True


def remove_peer_routes(cluster_cidr: str) -> int:
    """Routes skiff-cni made to other nodes' pod subnets inside the cluster CIDR."""
    rng = ipaddress.ip_network(cluster_cidr, strict=False)
    count = 0
    for r in _ip_json("route", "show", "proto", str(RTPROT_SKIFF)):
        dst = str(r.get("dst") or "")
        with contextlib.suppress(ValueError):
            net = ipaddress.ip_network(dst, strict=False)
            if net.version == rng.version and net.subnet_of(rng):  # type: ignore[arg-type]
                subprocess.run(
                    ["ip", "route", "del", dst, "proto", str(RTPROT_SKIFF)],
                    capture_output=True,
                    timeout=30,
                    check=False,
                )
                count += 1
    return count


def teardown(inst: Instance) -> list[str]:
    """Remove everything of the instance from the host, pods included; what
    went, one line each. Idempotent; every step runs even if one fails (the
    first failure is raised at the end)."""
    done: list[str] = []
    failures: list[BaseException] = []

    def step(what: str, fn: Any, *args: Any) -> None:
        try:
            result = fn(*args)
        except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as err:
            log.warning("%s: %s", what, err)
            failures.append(err)
            return
        if result:
            done.append(f"{what}: {result}" if not isinstance(result, bool) else what)

    conf = written_conf(inst)
    step("processes killed", kill_processes, inst)
    step("mounts removed", unmount_all, inst.roots, inst.own_dirs)
    step("pod attachments, NAT chains and IPAM state (CNI GC)", cni_gc, inst, conf)
    step(f"bridge {inst.bridge} and its route", _delete_link, inst.bridge)
    vxlan = vxlan_device(conf)
    if vxlan:
        step(f"vxlan device {vxlan}", _delete_link, vxlan)
    step("peer routes", remove_peer_routes, inst.cluster_cidr)
    if inst.dns_ip:
        step(f"DNS address {inst.dns_ip}", remove_local_address, inst.dns_ip, inst.dns_interface)
    step(
        f"iptables chains {inst.chain_prefix}-*",
        proxy_cleanup,
        CommandIptables(),
        Chains(inst.chain_prefix),
    )
    table = netpol_table(inst.chain_prefix)
    step(f"nftables table inet {table}", CommandNft().delete_table, "inet", table)
    for path in (inst.cni_conf, inst.cni_conf_dir.parent / f".{CONF_NAME}.reconcile.json"):
        step(f"file {path}", _unlink, path)
    step(f"IPAM state {inst.ipam_dir}", _rmtree, inst.ipam_dir)
    step(f"cgroups under {inst.cgroup}", _remove_cgroups, inst.cgroup)
    if failures:
        raise failures[0]
    return done


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False


def _rmtree(path: Path) -> bool:
    if not path.exists():
        return False
    shutil.rmtree(path)
    return True


def _remove_cgroups(cgroup: str) -> int:
    """The tree's directories once its processes are gone (a cgroup can stay
    busy a moment after its last process died)."""
    removed = 0

    def empty() -> bool:
        nonlocal removed
        removed += remove_empty_tree(cgroup)
        return not cgroup_dirs(cgroup)

    if not _wait(empty, 10.0):
        raise RuntimeError(f"cgroups still there: {', '.join(map(str, cgroup_dirs(cgroup)))}")
    return removed
