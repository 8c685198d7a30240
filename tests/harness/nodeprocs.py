"""A skiff node as real processes: `skiff runtime` (or a private containerd)
and `skiff agent`, each with its own temporary directories, socket, cgroup
root, CNI bridge and pod CIDR, next to a `skiff controlplane` process.

Everything is started with the repository's interpreter, waited for with
`wait_for` on a real request, and stopped by its pid. `Node.cleanup()`
undoes everything the node made, also after a failure: it stops the agent,
removes every pod sandbox through CRI (so CNI DEL runs), stops the runtime,
kills by pid whatever is left in the node's cgroups (pids the cgroups list,
never names), removes those cgroups, the NAT chains skiff-cni made for the
node's pod CIDR, the node's bridge, its service proxy's chains, its
NetworkPolicy table and cluster DNS interface, any HAProxy its agent left
(`remove_network_leftovers`), and every mount under its directory. Agents
run with the ingress off (`--ingress-http-port 0`) unless a test's
agent_args turn it on with ports of its own, so no node takes 80 or 443.

Agents of two test runs on one machine share the root network namespace:
each node takes its own DNS interface and iptables chain prefix, and each
run its own service CIDR (`run_service_cidr`: its control planes'
--service-cidr, and the tenth address its nodes' --cluster-dns), never
skiff's default 10.43.0.0/16 and 10.43.0.10, which the other run may hold.

The network stays on the machine: pods live on the node's own bridge, and
the registry mirrors in `registries_yaml` and the containerd hosts.toml point
only at the local test registry.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agent.cri_client import CRIClient
from agent.ingress.haproxy import HAProxy, IngressSettings
from agent.netpol.nft import CommandNft
from agent.netpol.plan import netpol_table
from agent.proxy.iptables import CommandIptables
from agent.proxy.local_address import remove_local_address
from agent.proxy.proxy import cleanup as proxy_cleanup
from agent.proxy.rules import Chains
from controlplane.client import errors
from controlplane.client.apiclient import GrpcApiClient
from runtime.cni import install
from runtime.cni import iptables as cni_iptables
from tests.harness import containerd as ctrd
from tests.harness.cgroup import remove_cgroup_tree
from tests.harness.mounts import unmount_all
from tests.harness.ports import free_port
from tests.harness.reserve import Reservation, try_reserve_network
from tests.harness.wait import wait_for

if TYPE_CHECKING:
    from tests.harness.controlplane import ControlPlane

REPO = Path(__file__).resolve().parents[2]
CGROUP_FS = Path("/sys/fs/cgroup")
RuntimeKind = Literal["skiff", "containerd"]


def short_tempdir(prefix: str) -> Path:
    """A directory under /tmp with a short path (unix socket names are
    limited to 107 bytes, and containerd nests its sockets deep)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


def registries_yaml(path: Path, registry_url: str, hosts: tuple[str, ...]) -> Path:
    """k3s-style registries.yaml: every host in `hosts` mirrored to the local
    registry, and no default endpoint (nothing leaves the machine)."""
    lines = ["mirrors:"]
    for host in hosts:
        lines += [f'  "{host}":', f'    endpoint: ["{registry_url}"]']
    lines.append("disable_default_endpoint: true")
    path.write_text("\n".join(lines) + "\n")
    return path


def used_routes() -> set[ipaddress.IPv4Network]:
    out = subprocess.run(
        ["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True, check=False
    ).stdout
    nets = set()
    for line in out.splitlines():
        word = line.split(" ", 1)[0]
        with contextlib.suppress(ValueError):
            if "/" in word:
                nets.add(ipaddress.IPv4Network(word, strict=False))
    return nets


def used_addresses() -> set[ipaddress.IPv4Address]:
    """Every IPv4 address an interface of this network namespace holds."""
    out = subprocess.run(
        ["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=False
    ).stdout
    held = set()
    for line in out.split("\n"):
        words = line.split()
        if "inet" in words[:-1]:
            with contextlib.suppress(ValueError):
                held.add(ipaddress.IPv4Address(words[words.index("inet") + 1].split("/")[0]))
    return held


def free_service_cidrs(n: int) -> list[str]:
    """`n` distinct 10.X.0.0/16 (X in 100..199) that no route of this
    machine overlaps and no address of it lies in (another run's cluster
    DNS address is such an address, on its dummy interface), each reserved
    for this process (tests/harness/reserve.py)."""
    used = [u for u in used_routes() if u.prefixlen > 0]
    held = used_addresses()
    out: list[str] = []
    candidates = list(range(100, 200))
    secrets.SystemRandom().shuffle(candidates)  # every /16 is tried once, in a random order
    for x in candidates:
        net = ipaddress.IPv4Network(f"10.{x}.0.0/16")
        if any(net.overlaps(u) for u in used):
            continue
        if not any(a in net for a in held) and try_reserve_network(net) is not None:
            out.append(str(net))
            if len(out) == n:
                return out
    raise RuntimeError("no free 10.X.0.0/16 for the service CIDRs")


@functools.cache
def run_service_cidr() -> str:
    """This test run's service CIDR, chosen once (see the module docstring)."""
    return free_service_cidrs(1)[0]


def cluster_dns_ip(service_cidr: str) -> str:
    """The cluster DNS address of a service CIDR: its tenth, as skiff's default."""
    return str(ipaddress.ip_network(service_cidr)[10])


def free_pod_cidr() -> str:
    """A 10.250.X.0/24 no route on this machine uses yet, reserved for this
    process (tests/harness/reserve.py)."""
    used = used_routes()
    for _ in range(200):
        net = ipaddress.IPv4Network(f"10.250.{100 + secrets.randbelow(150)}.0/24")
        if any(net.overlaps(u) for u in used if u.prefixlen > 0):
            continue
        if try_reserve_network(net) is not None:
            return str(net)
    raise RuntimeError("no free 10.250.X.0/24 for a test node")


_cluster_cidrs: dict[str, list[Reservation]] = {}  # handed out, until released


def free_cluster_cidr(timeout: float = 180.0) -> str:
    """A 10.248.0.0/13 sub-range (/19: 32 node subnets of /24) that no route
    on this machine overlaps, reserved for this process until
    `release_cluster_cidr`, for a control plane's node-IPAM controller: its
    default (10.244.0.0/16) would give every test cluster's first node the
    same subnet on this one host. All 64 are tried; while every one is taken
    (other runs on this machine), it waits for one to be let go."""
    candidates = [
        ipaddress.IPv4Network(f"10.{248 + i // 8}.{32 * (i % 8)}.0/19") for i in range(64)
    ]

    def pick() -> str | None:
        used = [u for u in used_routes() if u.prefixlen > 0]
        secrets.SystemRandom().shuffle(candidates)
        for net in candidates:
            if any(net.overlaps(u) for u in used):
                continue
            reserved = try_reserve_network(net)
            if reserved is not None:
                _cluster_cidrs[str(net)] = reserved
                return str(net)
        return None

    found = wait_for(pick, timeout, interval=1.0,
                     message="no free 10.248.0.0/13 sub-range for a test cluster")  # fmt: skip
    assert found is not None
    return found


def release_cluster_cidr(cidr: str) -> None:
    """Let another test cluster have `cidr` (its routes are gone)."""
    for reservation in _cluster_cidrs.pop(cidr, []):
        reservation.release()


def controlplane_args() -> list[str]:
    """Flags for a test `skiff controlplane`: SQLite, and its own cluster
    CIDR when it runs the node-IPAM controller."""
    from controlplane import main as cp_main

    args = ["--store", "sqlite", "--service-cidr", run_service_cidr()]
    if "--cluster-cidr" in cp_main.build_parser().format_help():
        args += ["--cluster-cidr", free_cluster_cidr(), "--node-cidr-mask-size", "24"]
    return args


def controlplane_runs_controllers() -> bool:
    """Whether `skiff controlplane` can run the scheduler and controllers
    (then the node-IPAM controller, not the test, gives nodes their podCIDR)."""
    from controlplane import main as cp_main

    if hasattr(cp_main, "components"):
        return True
    targets = [str(t) for _, t in getattr(cp_main, "COMPONENTS", [])]
    return any("scheduler" in t for t in targets) and any("controller" in t for t in targets)


def start_controlplane(base: Path, component_threads: bool = True) -> ControlPlane:
    """`skiff controlplane` under `base` with its scheduler and controllers
    (when it has them) and its own cluster CIDR. With `component_threads`
    the components run as threads of the control plane
    (--no-component-processes, its mode on one CPU): as processes each would
    import the control plane again and keep watches of its own, for tests
    that drive nodes, not the components. A benchmark passes False to
    measure the control plane as it runs by default."""
    from controlplane import main as cp_main
    from tests.harness.controlplane import ControlPlane

    cp = ControlPlane(base / "cp", controlplane_args())
    if hasattr(cp, "components"):
        cp.components = controlplane_runs_controllers()
        threads_flag = "--no-component-processes" in cp_main.build_parser().format_help()
        if cp.components and component_threads and threads_flag:
            cp.extra_args.append("--no-component-processes")
    try:
        return cp.start()
    except BaseException:
        cp.close()
        raise


def cgroup_hierarchies() -> list[Path]:
    if (CGROUP_FS / "cgroup.controllers").exists():
        return [CGROUP_FS]
    out = []
    for d in sorted(CGROUP_FS.iterdir()):
        if d.is_dir() and not d.is_symlink() and (d / "cgroup.procs").exists():
            out.append(d)
    return out


def remove_cgroups(name: str) -> None:
    """Kill (by the pids the cgroups list) and remove /<name> in every hierarchy."""
    for h in cgroup_hierarchies():
        remove_cgroup_tree(h / name.strip("/"))


def remove_nat_for(cidr: str) -> None:
    """Tear down every skiff-cni NAT chain whose rules mention an address in
    `cidr` (the attachments of this node's pods), with their jumps."""
    net = ipaddress.ip_network(cidr)
    res = subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True)
    cids = set()
    for line in res.stdout.splitlines():
        if not line.startswith("-A ") or "SKIFF-" not in line:
            continue
        words = line.split()
        mine = False
        for w in words:
            addr = w.split("/", 1)[0].split(":", 1)[0]
            with contextlib.suppress(ValueError):
                if ipaddress.ip_address(addr) in net:
                    mine = True
        if not mine:
            continue
        for w in words:
            if w.startswith("SKIFF-") and w.count("-") >= 2:
                cids.add(w.split("-", 2)[2])
    for cid in cids:
        with contextlib.suppress(Exception):
            cni_iptables.teardown(cid)


def delete_link(name: str) -> None:
    subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)


def remove_network_leftovers(agent_root: Path, chain_prefix: str) -> None:
    """What an agent leaves on purpose when it stops (so a restart opens no
    window): its NetworkPolicy table, and the HAProxy of its ingress (by the
    pid file under its root, checked against the process's command line)."""
    HAProxy(IngressSettings(state_dir=agent_root / "ingress")).stop()
    if chain_prefix:
        CommandNft().delete_table("inet", netpol_table(chain_prefix))


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_runtime_monitors(runtime_root: Path) -> None:
    """skiff runtime's container monitors outlive the runtime: kill them (and
    the containers' first processes) by the pids the runtime recorded under
    its root, and wait until they are gone; cgroups get the rest."""
    pids: list[int] = []
    for meta in runtime_root.glob("*/*/meta.json"):
        with contextlib.suppress(OSError, ValueError):
            d = json.loads(meta.read_text())
            pids += [int(d.get(k) or 0) for k in ("monitor_pid", "pid1", "init_pid")]
    pids = [p for p in pids if p and alive(p)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not any(alive(p) for p in pids), timeout=10, message="monitors to die")


def wait_runtime_ready(daemon: Daemon, socket_path: Path, timeout: float, what: str) -> None:
    """Wait until the runtime `daemon` serves CRI on `socket_path` (its
    Version answers); fail at once if the process exits."""
    client = CRIClient(f"unix://{socket_path}", timeout=2)
    try:

        def ready() -> bool:
            daemon.check()
            if not socket_path.is_socket():
                return False
            client.version()
            return True

        wait_for(ready, timeout=timeout, interval=0.1, message=f"{what} to answer Version")
    finally:
        client.close()


class DaemonExited(BaseException):
    """A daemon the test needs has exited (ends a wait_for at once)."""


@dataclass
class Daemon:
    """One process we started; stopped only by its pid."""

    # `check()` raises DaemonExited, which wait_for does not swallow (it is
    # not an Exception): a daemon that died fails the wait at once.

    name: str
    argv: list[str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv,
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise DaemonExited(f"{self.name} exited {self.proc.returncode}:\n{self.log_tail()}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            code = self.proc.wait(timeout)
        self.proc = None
        return code

    def log_tail(self, n: int = 4000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_bytes()[-n:].decode(errors="replace")
        return ""


@dataclass
class NodeSpec:
    name: str
    pod_cidr: str
    bridge: str
    cgroup_name: str  # top-level cgroup of the node: pods and runtime below it
    dns_interface: str = ""  # the dummy interface holding the cluster DNS address
    chain_prefix: str = ""  # the service proxy's iptables chains

    @classmethod
    def unique(cls, prefix: str = "e2e") -> NodeSpec:
        tag = secrets.token_hex(3)
        return cls(
            name=f"{prefix}-{tag}",
            pod_cidr=free_pod_cidr(),
            bridge=f"ske{tag}",
            cgroup_name=f"skiff-e2e-{tag}",
            dns_interface=f"skd{tag}",
            chain_prefix=f"E{tag.upper()}",
        )


@dataclass
class Node:
    """Runtime + agent of one node; see the module docstring."""

    spec: NodeSpec
    base: Path
    server: str  # control plane HOST:PORT
    cp_data_dir: Path
    runtime_kind: RuntimeKind
    registry_url: str
    mirrored_hosts: tuple[str, ...] = ("docker.io", "registry.k8s.io")
    agent_args: tuple[str, ...] = ()
    runtime: Daemon | None = None
    agent: Daemon | None = None
    agent_port: int = field(default_factory=free_port)
    _stack: ExitStack = field(default_factory=ExitStack)
    _containerd: ctrd.Containerd | None = None

    # ------------------------------------------------------------ paths
    @property
    def cni_conf_dir(self) -> Path:
        return self.base / "net.d"

    @property
    def cni_bin_dir(self) -> Path:
        return self.base / "cni-bin"

    @property
    def endpoint(self) -> str:
        if self._containerd is not None:
            return self._containerd.endpoint
        return f"unix://{self.base}/rt/cri.sock"

    @property
    def runtime_pid(self) -> int:
        """The pid of the runtime process this node started (skiff or containerd)."""
        if self._containerd is not None:
            return self._containerd.pid
        assert self.runtime is not None
        return self.runtime.pid

    @property
    def pod_cgroup_root(self) -> str:
        return f"/{self.spec.cgroup_name}/pods"

    # ------------------------------------------------------------ start
    def start(self) -> Node:
        install.install(str(self.cni_bin_dir))
        self.cni_conf_dir.mkdir(parents=True, exist_ok=True)
        if self.runtime_kind == "skiff":
            self._start_skiff_runtime()
        else:
            mirrors = {h: self.registry_url for h in self.mirrored_hosts}
            self._containerd = self._stack.enter_context(
                ctrd.run_containerd(
                    self.base / "ctrd",
                    cni_conf_dir=self.cni_conf_dir,
                    cni_bin_dir=self.cni_bin_dir,
                    mirrors=mirrors,
                )
            )
        self.start_agent()
        return self

    def start_runtime_only(self) -> Node:
        """The runtime (skiff or containerd) with the node's CNI config as
        the agent would write it, and no agent: for tests of the CRI side."""
        from agent.network import NetworkConfigurator, NetworkSettings

        install.install(str(self.cni_bin_dir))
        settings = NetworkSettings(
            conf_dir=self.cni_conf_dir,
            bin_dir=self.cni_bin_dir,
            bridge=self.spec.bridge,
            ipam_dir=self.base / "ipam",
        )
        NetworkConfigurator(settings).apply(self.spec.pod_cidr, "127.0.0.1", [])
        if self.runtime_kind == "skiff":
            self._start_skiff_runtime()
        else:
            mirrors = {h: self.registry_url for h in self.mirrored_hosts}
            self._containerd = self._stack.enter_context(
                ctrd.run_containerd(
                    self.base / "ctrd",
                    cni_conf_dir=self.cni_conf_dir,
                    cni_bin_dir=self.cni_bin_dir,
                    mirrors=mirrors,
                )
            )
        return self

    def _start_skiff_runtime(self) -> None:
        rt = self.base / "rt"
        rt.mkdir(parents=True, exist_ok=True)
        regs = registries_yaml(
            self.base / "registries.yaml", self.registry_url, self.mirrored_hosts
        )
        argv = [
                sys.executable,
                str(REPO / "skiff.py"),
                "runtime",
                "--listen",
                f"unix://{rt}/cri.sock",
                "--root",
                str(rt / "root"),
                "--state",
                str(rt / "state"),
                "--cgroup-parent",
                f"/{self.spec.cgroup_name}/runtime",
                "--cni-conf-dir",
                str(self.cni_conf_dir),
                "--cni-bin-dir",
                str(self.cni_bin_dir),
                "--cni-bin-dir",
                str(ctrd.LOOPBACK.parent),
                "--registry-config",
                str(regs),
                "--disable-default-registry-endpoint",
        ]  # fmt: skip
        self.runtime = Daemon("skiff runtime", argv, self.base / "runtime.log")
        self.runtime.start()
        wait_runtime_ready(self.runtime, rt / "cri.sock", timeout=30, what="skiff runtime")

    def agent_argv(self) -> list[str]:
        return [
            sys.executable, str(REPO / "skiff.py"), "agent",
            "--server", self.server,
            "--token", (self.cp_data_dir / "join-token").read_text().strip(),
            "--ca-file", str(self.cp_data_dir / "pki" / "ca.crt"),
            "--node-name", self.spec.name,
            "--node-ip", "127.0.0.1",
            "--runtime-endpoint", self.endpoint,
            "--root-dir", str(self.base / "agent"),
            "--pod-log-dir", str(self.base / "pods"),
            "--cgroup-root", self.pod_cgroup_root,
            "--cni-conf-dir", str(self.cni_conf_dir),
            "--cni-bin-dir", str(self.cni_bin_dir),
            "--cni-bridge", self.spec.bridge,
            "--listen", f"127.0.0.1:{self.agent_port}",
            # The run's DNS address on the node's own interface, and the
            # node's own chains; the test's agent_args may override them.
            "--cluster-dns", self.dns_ip,
            "--dns-interface", self.spec.dns_interface,
            "--iptables-chain-prefix", self.spec.chain_prefix,
            "--ingress-http-port", "0",
            *self.agent_args,
        ]  # fmt: skip

    @property
    def dns_ip(self) -> str:
        return cluster_dns_ip(run_service_cidr())

    def start_agent(self) -> None:
        self.agent = Daemon("skiff agent", self.agent_argv(), self.base / "agent.log")
        self.agent.start()

    def restart_agent(self, sig: int = signal.SIGKILL) -> None:
        assert self.agent is not None
        self.agent.stop(sig)
        self.start_agent()

    # ------------------------------------------------------------ readiness
    def wait_ready(
        self, api: GrpcApiClient, timeout: float = 60.0, ipam: bool | None = None
    ) -> dict[str, Any]:
        """Wait for the Node and its pod CIDR (from the node-IPAM controller
        when the control plane runs it, else patched in here), then until
        the agent wrote the CNI config and the Node is Ready."""

        def registered() -> dict[str, Any]:
            assert self.agent is not None
            self.agent.check()
            node: dict[str, Any] = api.get("Node", self.spec.name)
            return node

        node = wait_for(registered, timeout=timeout, message=f"Node {self.spec.name} registered")
        if ipam if ipam is not None else controlplane_runs_controllers():

            def assigned() -> str:
                n = api.get("Node", self.spec.name)
                return str((n.get("spec") or {}).get("podCIDR") or "")

            cidr = wait_for(assigned, timeout=timeout, message="podCIDR from node IPAM")
        else:
            if not (node.get("spec") or {}).get("podCIDR"):
                with contextlib.suppress(errors.ApiError):
                    api.patch(
                        "Node",
                        self.spec.name,
                        {"spec": {"podCIDR": self.spec.pod_cidr, "podCIDRs": [self.spec.pod_cidr]}},
                    )
            cidr = api.get("Node", self.spec.name)["spec"]["podCIDR"]
        self.spec.pod_cidr = cidr  # the controller's choice wins, cleanup follows it

        def conf_written() -> bool:
            assert self.agent is not None
            self.agent.check()
            return (self.cni_conf_dir / "10-skiff.conflist").exists()

        wait_for(conf_written, timeout=timeout, message="agent to write the CNI conflist")

        def ready() -> dict[str, Any]:
            n: dict[str, Any] = api.get("Node", self.spec.name)
            conds = {c["type"]: c["status"] for c in n["status"].get("conditions") or []}
            return n if conds.get("Ready") == "True" else {}

        result: dict[str, Any] = wait_for(ready, timeout=timeout, message="Node Ready")
        return result

    # ------------------------------------------------------------ cleanup
    def cri(self) -> CRIClient:
        return CRIClient(self.endpoint, timeout=30)

    def cleanup(self) -> None:
        errors_seen: list[BaseException] = []

        def attempt(fn: Any, *args: Any) -> None:
            try:
                fn(*args)
            except BaseException as exc:  # keep cleaning, report after
                errors_seen.append(exc)

        if self.agent is not None:
            attempt(self.agent.stop)
        if self.runtime is not None and self.runtime.running():
            attempt(ctrd.remove_all_pods, self.endpoint)
        if self.runtime is not None:
            attempt(self.runtime.stop)
        attempt(self._stack.close)  # containerd: pods removed, stopped, shims killed
        attempt(kill_runtime_monitors, self.base / "rt" / "root")
        attempt(remove_cgroups, self.spec.cgroup_name)
        attempt(remove_nat_for, self.spec.pod_cidr)
        attempt(delete_link, self.spec.bridge)
        if self.spec.chain_prefix:
            attempt(proxy_cleanup, CommandIptables(), Chains(self.spec.chain_prefix))
        attempt(remove_network_leftovers, self.base / "agent", self.spec.chain_prefix)
        if self.spec.dns_interface:
            attempt(remove_local_address, self.dns_ip, self.spec.dns_interface)
        attempt(unmount_all, self.base)
        shutil.rmtree(self.base, ignore_errors=True)
        if errors_seen:
            raise errors_seen[0]

    def logs(self) -> str:
        out = []
        for d in (self.runtime, self.agent):
            if d is not None:
                out.append(f"--- {d.name} ({d.log_path}) ---\n{d.log_tail()}")
        if self._containerd is not None:
            out.append(f"--- containerd ---\n{self._containerd.log_tail()}")
        return "\n".join(out)


@contextmanager
def running_node(
    server: str,
    cp_data_dir: Path,
    runtime_kind: RuntimeKind,
    registry_url: str,
    spec: NodeSpec | None = None,
    agent_args: tuple[str, ...] = (),
) -> Iterator[Node]:
    node = Node(
        spec=spec or NodeSpec.unique(),
        base=short_tempdir("ske2e-"),
        server=server,
        cp_data_dir=cp_data_dir,
        runtime_kind=runtime_kind,
        registry_url=registry_url,
        agent_args=agent_args,
    )
    try:
        node.start()
        yield node
    except BaseException:
        sys.stderr.write(node.logs() + "\n")
        raise
    finally:
        node.cleanup()
