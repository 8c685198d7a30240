"""A multi-node skiff cluster on one machine, for e2e tests and bench/cluster.py.

The control plane runs in the root network namespace and listens only on the
address the test gives its own bridge. Each node is a network namespace the
test makes, joined to that bridge by a veth pair (its `eth0`, with an address
from a private /24 no route of this machine uses), with its own `skiff
runtime` (socket, root and state dirs, cgroup parent) and `skiff agent` (root
dir, CNI dirs, bridge, pod cgroup root). Daemons are started with the command
lines of vagrant/systemd's units (flags overridden for the node), inside the
node's network namespace with `nsenter --net` rather than `ip netns exec`:
the latter also makes a private mount namespace with a fresh /sys, which
hides /sys/fs/cgroup from the runtime and keeps its mounts out of reach of
the cleanup. Nodes join with the join token over TLS.

Node namespaces have no default route (nothing leaves the machine). Images
come from the session's local registry on 127.0.0.1 of the root namespace,
which node namespaces cannot reach: a small TCP relay in this process listens
on the bridge address and forwards to it, and each runtime's registries.yaml
mirrors docker.io there with no default endpoint.

Everything is removed afterwards, also after a failure, and only by what the
harness recorded: processes by pid, pods through CRI, cgroups, mounts under
the node's directory, the namespaces, the bridge and the host veth ends. No
iptables rule is written in the root namespace (the agents and CNI plugins
write theirs inside the node namespaces, which go with them).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent.cri_client import CRIClient
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import load_config
from tests.harness import containerd as ctrd
from tests.harness.mounts import unmount_all
from tests.harness.nodeprocs import (
    Daemon,
    kill_runtime_monitors,
    registries_yaml,
    remove_cgroups,
    remove_network_leftovers,
    short_tempdir,
    used_routes,
    wait_runtime_ready,
)
from tests.harness.ports import free_port
from tests.harness.reserve import try_reserve_network
from tests.harness.systemd_units import UNITS, unit_argv
from tests.harness.wait import wait_for

REPO = Path(__file__).resolve().parents[2]
Backend = Literal["host-gw", "vxlan"]
CLUSTER_CIDR = "10.244.0.0/16"


# ---------------------------------------------------------------- commands


def _skiff_command(argv: list[str]) -> list[str]:
    """A unit's argv with /opt/skiff/src/.venv/bin/{skiff,python} replaced by
    this checkout's interpreter."""
    exe = Path(argv[0]).name
    if exe == "skiff":
        return [sys.executable, str(REPO / "skiff.py"), *argv[1:]]
    if exe.startswith("python"):
        return [sys.executable, *argv[1:]]
    raise ValueError(f"unexpected unit executable {argv[0]}")


def unit_command(
    unit: str,
    env: Mapping[str, str],
    overrides: Mapping[str, str],
    extra: list[str] | None = None,
    key: str = "ExecStart",
) -> list[str]:
    """The command line of vagrant/systemd/`unit` with each flag in
    `overrides` given the new value (and added if the unit lacks it), plus
    `extra` arguments."""
    argv = _skiff_command(unit_argv(UNITS / unit, env, key))
    todo = dict(overrides)
    out: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in todo:
            out += [word, todo.pop(word)]
            i += 2
            continue
        out.append(word)
        i += 1
    for flag, value in todo.items():
        out += [flag, value]
    return out + (extra or [])


def in_netns(netns: str, argv: list[str]) -> list[str]:
    """Run `argv` in `netns` only (same mount namespace, /sys and cgroups)."""
    return ["nsenter", f"--net=/run/netns/{netns}", "--", *argv]


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def free_subnet() -> ipaddress.IPv4Network:
    """A 192.168.X.0/24 (X in 200..250) that no route of this machine uses,
    reserved for this process (tests/harness/reserve.py)."""
    used = [u for u in used_routes() if u.prefixlen > 0]
    for _ in range(200):
        net = ipaddress.IPv4Network(f"192.168.{200 + secrets.randbelow(51)}.0/24")
        if not any(net.overlaps(u) for u in used) and try_reserve_network(net) is not None:
            return net
    raise RuntimeError("no free 192.168.X.0/24 for the test bridge")


# ---------------------------------------------------------------- relay


class TcpRelay:
    """Accepts on (host, port) and copies bytes both ways to `target`.
    `listener` (a listening socket on host:port) and `connect` (makes the
    upstream connection) let either side live in another network namespace
    (see tests.harness.netns.NetnsSockets)."""

    def __init__(
        self,
        host: str,
        port: int,
        target: tuple[str, int],
        *,
        listener: socket.socket | None = None,
        connect: Callable[[tuple[str, int]], socket.socket] | None = None,
    ) -> None:
        self.target = target
        self._connect = connect or (lambda addr: socket.create_connection(addr, timeout=10))
        self.sock = listener or socket.create_server((host, port), reuse_port=False)
        self.sock.settimeout(0.5)
        self.address = f"{host}:{port}"
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="tcp-relay", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = self._connect(self.target)
            except OSError:
                conn.close()
                continue
            upstream.settimeout(None)
            conn.settimeout(None)
            with self._lock:
                self._conns += [conn, upstream]
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        self._thread.join(5)
        with self._lock:
            for c in self._conns:
                with contextlib.suppress(OSError):
                    c.close()


# ---------------------------------------------------------------- components


def components_wired() -> bool:
    """Whether `skiff controlplane` starts the scheduler and controllers itself
    (its parser then takes the controller manager's flags)."""
    from controlplane import main as cp_main

    parser = cp_main.build_parser()
    return any("--node-monitor-grace-period" in a.option_strings for a in parser._actions)


def components_main(argv: list[str]) -> int:
    """`python -m tests.harness.cluster components --credentials FILE [manager
    flags]`: the scheduler and controller manager (leader-elected) in one
    process next to a control plane that does not start them itself, with
    the same component hooks `skiff controlplane` would call."""
    import argparse
    import logging

    from controlplane.controllers import config, manager
    from controlplane.scheduler import run as scheduler
    from controlplane.scheduler.batch import run as batch_scheduler

    parser = argparse.ArgumentParser(prog="python -m tests.harness.cluster components")
    parser.add_argument("--credentials", required=True)
    config.add_flags(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level="INFO", format="%(asctime)s %(name)s %(levelname)s %(message)s")
    client = connect(load_config(Path(args.credentials)), timeout=30)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    scheduler.component()(client, stop)
    batch_scheduler.component()(client, stop)
    manager.component(config.config_from_args(args))(client, stop)
    stop.wait()
    client.close()
    return 0


# ---------------------------------------------------------------- control plane


@dataclass
class ClusterControlPlane:
    """`skiff controlplane` in the root namespace, listening on the bridge address."""

    base: Path
    host: str
    extra_args: list[str] = field(default_factory=list)
    controller_args: list[str] = field(default_factory=list)
    port: int = field(default_factory=free_port)
    # The scheduler and controllers as threads of the control plane
    # (--no-component-processes, as nodeprocs.start_controlplane and `skiff
    # up` run them): as the unit runs them on two CPUs, three processes that
    # each import the control plane and keep watches of their own, for tests
    # of the nodes. A benchmark passes False to measure the default.
    component_threads: bool = True
    daemon: Daemon | None = None
    sidecar: Daemon | None = None

    @property
    def data_dir(self) -> Path:
        return self.base / "data"

    @property
    def server(self) -> str:
        return f"{self.host}:{self.port}"

    def argv(self) -> list[str]:
        return unit_command(
            "skiff-controlplane.service",
            # The unit's grace is Kubernetes' 40 s; a test's controller_args,
            # given after it, win.
            {
                "SKIFF_ADVERTISE_ADDRESS": self.host,
                "SKIFF_API_PORT": str(self.port),
                "SKIFF_NODE_GRACE": "40",
            },
            {
                "--listen": self.server,
                "--data-dir": str(self.data_dir),
                "--advertise-address": self.server,
                "--tls-san": self.host,
            },
            [
                "--bookmark-interval",
                "0.5",
                *(["--no-component-processes"] if self.component_threads else []),
                *self.extra_args,
                *(self.controller_args if components_wired() else []),
            ],
        )

    def start(self) -> ClusterControlPlane:
        self.base.mkdir(parents=True, exist_ok=True)
        self.daemon = Daemon("skiff controlplane", self.argv(), self.base / "controlplane.log")
        self.daemon.start()

        def ready() -> bool:
            assert self.daemon is not None
            self.daemon.check()
            if not (self.data_dir / "admin.conf").exists():
                return False
            with connect(load_config(self.data_dir / "admin.conf"), timeout=2) as c:
                c.whoami()
            return True

        wait_for(ready, timeout=60, interval=0.2, message=f"controlplane on {self.server}")
        if not components_wired() and self.sidecar is None:
            argv = [sys.executable, "-m", "tests.harness.cluster", "components"]
            argv += ["--credentials", str(self.data_dir / "admin.conf"), *self.controller_args]
            self.sidecar = Daemon("components", argv, self.base / "components.log")
            self.sidecar.start()
        return self

    def client(self, timeout: float = 10.0, lean_watches: bool = False) -> GrpcApiClient:
        """An admin client; `lean_watches` as `python -m agent.hollow` connects
        (its watches' objects without managedFields)."""
        return connect(
            load_config(self.data_dir / "admin.conf"), timeout=timeout, lean_watches=lean_watches
        )

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.sidecar is not None:
            self.sidecar.stop(sig)
            self.sidecar = None
        if self.daemon is not None:
            self.daemon.stop(sig)

    def log_tail(self, n: int = 8000) -> str:
        out = [d.log_tail(n) for d in (self.daemon, self.sidecar) if d is not None]
        return "\n".join(out)

    def running(self) -> bool:
        return self.daemon is not None and self.daemon.running()


# ---------------------------------------------------------------- nodes


@dataclass
class ClusterNode:
    """One node: netns + veth + runtime + agent (see the module docstring)."""

    name: str
    index: int
    ip: str
    prefixlen: int
    bridge: str  # the test bridge in the root namespace
    base: Path
    cp: ClusterControlPlane
    registry_url: str
    backend: Backend
    agent_extra: tuple[str, ...] = ()
    tag: str = field(default_factory=lambda: secrets.token_hex(3))
    runtime: Daemon | None = None
    agent: Daemon | None = None
    netns_made: bool = False

    @property
    def netns(self) -> str:
        return f"skn-{self.tag}"

    @property
    def host_veth(self) -> str:
        return f"skh{self.tag}"

    @property
    def cni_bridge(self) -> str:
        return f"skc{self.tag}"

    @property
    def cgroup_name(self) -> str:
        return f"skiff-e2ec-{self.tag}"

    @property
    def endpoint(self) -> str:
        return f"unix://{self.base}/rt/cri.sock"

    @property
    def agent_address(self) -> str:
        return f"{self.ip}:10250"

    # ------------------------------------------------------------ network
    def make_network(self) -> None:
        _ip("netns", "add", self.netns)
        self.netns_made = True
        peer = f"skp{self.tag}"
        _ip("link", "add", self.host_veth, "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", self.netns)
        _ip("link", "set", self.host_veth, "master", self.bridge, "up")
        for args in (
            ("link", "set", "lo", "up"),
            ("link", "set", peer, "name", "eth0"),
            ("addr", "add", f"{self.ip}/{self.prefixlen}", "dev", "eth0"),
            ("link", "set", "eth0", "up"),
        ):
            _ip("-n", self.netns, *args)

    def sh(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """Run a command in the node's network namespace."""
        return subprocess.run(in_netns(self.netns, list(argv)), capture_output=True, text=True)

    # ------------------------------------------------------------ daemons
    def start(self) -> ClusterNode:
        self.base.mkdir(parents=True, exist_ok=True)
        if not self.netns_made:
            self.make_network()
        pre = unit_command(
            "skiff-runtime.service",
            {},
            {"--bin-dir": str(self.base / "cni-bin")},
            key="ExecStartPre",
        )
        subprocess.run(pre, check=True, cwd=REPO, capture_output=True)
        (self.base / "net.d").mkdir(exist_ok=True)
        self.start_runtime()
        self.start_agent()
        return self

    def start_runtime(self) -> None:
        rt = self.base / "rt"
        rt.mkdir(parents=True, exist_ok=True)
        regs = registries_yaml(
            self.base / "registries.yaml", self.registry_url, ("docker.io", "registry.k8s.io")
        )
        argv = unit_command(
            "skiff-runtime.service",
            {},
            {
                "--listen": self.endpoint,
                "--root": str(rt / "root"),
                "--state": str(rt / "state"),
                "--cni-conf-dir": str(self.base / "net.d"),
                "--cni-bin-dir": str(self.base / "cni-bin"),
                "--cgroup-parent": f"/{self.cgroup_name}/runtime",
                "--registry-config": str(regs),
            },
            ["--disable-default-registry-endpoint"],
        )
        self.runtime = Daemon("skiff runtime", in_netns(self.netns, argv), self.base / "rt.log")
        self.runtime.start()
        wait_runtime_ready(self.runtime, rt / "cri.sock", timeout=60, what=f"{self.name} runtime")

    def agent_argv(self) -> list[str]:
        env = {
            "SKIFF_SERVER": self.cp.server,
            "SKIFF_NODE_NAME": self.name,
            "SKIFF_NODE_IP": self.ip,
            "SKIFF_CNI_BACKEND": self.backend,
        }
        return unit_command(
            "skiff-agent.service",
            env,
            {
                "--ca-file": str(self.cp.data_dir / "pki" / "ca.crt"),
                "--runtime-endpoint": self.endpoint,
                "--root-dir": str(self.base / "agent"),
                "--pod-log-dir": str(self.base / "pods"),
                "--cgroup-root": f"/{self.cgroup_name}/pods",
                "--cni-conf-dir": str(self.base / "net.d"),
                "--cni-bin-dir": str(self.base / "cni-bin"),
                "--cni-bridge": self.cni_bridge,
                "--cni-backend": self.backend,
                "--cluster-cidr": CLUSTER_CIDR,
                "--listen": self.agent_address,
            },
            list(self.agent_extra),
        )

    def start_agent(self) -> None:
        token = (self.cp.data_dir / "join-token").read_text().strip()
        argv = in_netns(self.netns, self.agent_argv())
        self.agent = Daemon("skiff agent", argv, self.base / "agent.log")
        # The unit takes the token from SKIFF_JOIN_TOKEN (never on the command line).
        os.environ["SKIFF_JOIN_TOKEN"] = token
        try:
            self.agent.start()
        finally:
            del os.environ["SKIFF_JOIN_TOKEN"]

    def kill(self) -> None:
        """The node dies: agent and runtime stopped hard (containers keep
        running under their monitors, as on a host whose kubelet died)."""
        for d in (self.agent, self.runtime):
            if d is not None:
                d.stop(signal.SIGKILL)

    def wait_ready(self, api: GrpcApiClient, timeout: float = 90.0) -> dict[str, Any]:
        """Node registered, pod CIDR given by node IPAM (the control plane,
        or the components sidecar, always runs it), CNI config written,
        Ready. The pod CIDR is never patched in here: a patch racing node
        IPAM gave two nodes the same subnet."""

        def registered() -> dict[str, Any]:
            assert self.agent is not None
            self.agent.check()
            node: dict[str, Any] = api.get("Node", self.name)
            return node

        wait_for(registered, timeout=timeout, interval=0.2, message=f"Node {self.name}")

        def ready() -> dict[str, Any]:
            assert self.agent is not None
            self.agent.check()
            n: dict[str, Any] = api.get("Node", self.name)
            conds = {
                c["type"]: c["status"] for c in (n.get("status") or {}).get("conditions") or []
            }
            ok = (
                conds.get("Ready") == "True"
                and (self.base / "net.d" / "10-skiff.conflist").exists()
            )
            return n if ok else {}

        result: dict[str, Any] = wait_for(
            ready, timeout=timeout, interval=0.2, message=f"Node {self.name} Ready"
        )
        return result

    # ------------------------------------------------------------ pods
    def cri(self) -> CRIClient:
        return CRIClient(self.endpoint, timeout=30)

    def exec(self, pod: str, cmd: list[str], namespace: str = "default", timeout: int = 10) -> str:
        """Run `cmd` in the first running container of `pod` on this node."""
        c = self.cri()
        try:
            labels = {"io.kubernetes.pod.name": pod, "io.kubernetes.pod.namespace": namespace}
            running = [x for x in c.list_containers(labels) if x.state == 1]  # CONTAINER_RUNNING
            if not running:
                raise AssertionError(f"no running container of {pod} on {self.name}")
            resp = c.exec_sync(running[0].id, cmd, timeout)
            if resp.exit_code != 0:
                raise AssertionError(
                    f"{cmd} in {pod} exited {resp.exit_code}: {resp.stderr.decode(errors='replace')}"
                )
            return resp.stdout.decode(errors="replace")
        finally:
            c.close()

    # ------------------------------------------------------------ cleanup
    def stop_daemons(self) -> None:
        if self.agent is not None:
            self.agent.stop()
        if self.runtime is not None and self.runtime.running():
            with contextlib.suppress(Exception):
                ctrd.remove_all_pods(self.endpoint)
        if self.runtime is not None:
            self.runtime.stop()

    def cleanup(self) -> None:
        errors_seen: list[BaseException] = []

        def attempt(fn: Any, *args: Any) -> None:
            try:
                fn(*args)
            except BaseException as exc:  # keep cleaning, report after
                errors_seen.append(exc)

        attempt(self.stop_daemons)
        attempt(remove_network_leftovers, self.base / "agent", "")  # its table goes with the netns
        attempt(kill_runtime_monitors, self.base / "rt" / "root")
        attempt(remove_cgroups, self.cgroup_name)
        attempt(unmount_all, self.base)
        if self.netns_made:
            _ip("netns", "del", self.netns, check=False)
            self.netns_made = False
        _ip("link", "del", self.host_veth, check=False)
        shutil.rmtree(self.base, ignore_errors=True)
        if errors_seen:
            raise errors_seen[0]

    def logs(self, n: int = 4000) -> str:
        out = []
        for d in (self.runtime, self.agent):
            if d is not None:
                out.append(f"--- {self.name} {d.name} ({d.log_path}) ---\n{d.log_tail(n)}")
        return "\n".join(out)


# ---------------------------------------------------------------- cluster


@dataclass
class Cluster:
    """A bridge, a control plane and nodes; see the module docstring."""

    base: Path
    subnet: ipaddress.IPv4Network
    bridge: str
    cp: ClusterControlPlane
    nodes: list[ClusterNode]
    relay: TcpRelay | None = None
    extra_cps: list[ClusterControlPlane] = field(default_factory=list)

    @property
    def host_ip(self) -> str:
        return str(self.subnet.network_address + 1)

    def client(self, timeout: float = 10.0) -> GrpcApiClient:
        return self.cp.client(timeout)

    def node(self, name: str) -> ClusterNode:
        return next(n for n in self.nodes if n.name == name)

    def logs(self, n: int = 4000) -> str:
        parts = [node.logs(n) for node in self.nodes]
        for cp in [self.cp, *self.extra_cps]:
            parts.append(f"--- controlplane {cp.server} ---\n{cp.log_tail(2 * n)}")
        return "\n".join(parts)


@contextmanager
def running_cluster(
    registry_host: str,
    nodes: int = 3,
    backend: Backend = "host-gw",
    cp_args: list[str] | None = None,
    controller_args: list[str] | None = None,
    agent_args: tuple[str, ...] = (),
    wait_ready: bool = True,
    component_threads: bool = True,
) -> Iterator[Cluster]:
    """Bridge + control plane + `nodes` nodes, all removed on exit.
    `registry_host` is the local registry's 127.0.0.1:PORT;
    `component_threads` as ClusterControlPlane's."""
    base = short_tempdir("skcl-")
    subnet = free_subnet()
    tag = secrets.token_hex(3)
    bridge = f"skb{tag}"
    host_ip = str(subnet.network_address + 1)
    stack = ExitStack()
    cluster: Cluster | None = None
    try:
        _ip("link", "add", bridge, "type", "bridge")
        stack.callback(_ip, "link", "del", bridge, check=False)
        _ip("addr", "add", f"{host_ip}/{subnet.prefixlen}", "dev", bridge)
        _ip("link", "set", bridge, "up")
        reg_host, reg_port = registry_host.rsplit(":", 1)
        relay = TcpRelay(host_ip, free_port(), (reg_host, int(reg_port)))
        stack.callback(relay.close)
        cp = ClusterControlPlane(
            base / "cp", host_ip, list(cp_args or []), list(controller_args or []),
            component_threads=component_threads,
        )  # fmt: skip
        stack.callback(cp.stop)
        cluster = Cluster(base, subnet, bridge, cp, [], relay)
        cp.start()
        for i in range(nodes):
            node = ClusterNode(
                name=f"node-{i + 1}",
                index=i,
                ip=str(subnet.network_address + 10 + i),
                prefixlen=subnet.prefixlen,
                bridge=bridge,
                base=base / f"n{i + 1}",
                cp=cp,
                registry_url=f"http://{relay.address}",
                backend=backend,
                agent_extra=agent_args,
            )
            cluster.nodes.append(node)
            stack.callback(node.cleanup)
            node.start()
        if wait_ready:
            with cp.client() as api:
                for node in cluster.nodes:
                    node.wait_ready(api)
        yield cluster
    except BaseException:
        if cluster is not None:
            sys.stderr.write(cluster.logs() + "\n")
        raise
    finally:
        try:
            keep = os.environ.get("SKIFF_E2E_LOGS")
            if keep:  # keep the daemons' logs for a post-mortem
                for log in base.glob("**/*.log"):
                    dest = Path(keep) / base.name / log.relative_to(base)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(log, dest)
            stack.close()
        finally:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["components"]:
        raise SystemExit(components_main(sys.argv[2:]))
    raise SystemExit("usage: python -m tests.harness.cluster components --credentials FILE ...")
