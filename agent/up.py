"""`skiff up`: control plane, runtime and agent on this machine, as k3s server.

Like k3s server, the control plane and the agent run in this process (the
`skiff` dispatcher hands main() a function that starts the control plane,
since the agent package may not import it); the runtime stays a child
process (`python -m skiff runtime`), as k3s keeps containerd apart: it does
the namespace and mount work, and the pods' monitors outlive it. Each part
gets the flags of its own command (`skiff controlplane ...`, `skiff agent
...`), made to work together. main() waits until each is ready and prints
how to use skiffctl. Without an embedded control plane (agent.up.main called
directly) it runs `skiff controlplane` as a child process instead. With `--data-dir
DIR` every socket, state directory, log and CNI file lives under DIR, and
what is host-global is named after DIR (Layout.under: the bridge, the
cgroups, the CNI network, the service proxy's iptables chains, the dummy
interface of the cluster DNS address); without it the standard paths and
names are used (/run/skiff/cri.sock, /var/lib/skiff/..., /etc/cni/net.d,
/opt/cni/bin, /var/log/pods, skiff0, SKIFF-SERVICES, skiff-dns). Two can then
run side by side once the second also gets its own ports and address ranges:
--api-port, --agent-port (the agent's endpoint, 10250 by default),
--cluster-cidr and --service-cidr (the cluster DNS address follows it, as the
kube-dns Service's cluster IP does: its tenth address). Ctrl-C (or SIGTERM) stops the agent, removes the
pods it ran (unless --keep-pods), then stops the runtime and the control
plane, and removes what the instance made on the host (host_state.teardown;
with --keep-pods only what the kept pods do not need). At start it takes the
data dir (root's, writable by nobody else, one instance at a time), adopts
or removes what a previous instance of the same names left, and refuses a
host route or address inside its CIDRs that is not its own (prepare_host). The logs of the control plane and the agent go to controlplane.log
and agent.log under the log directory, by logger name (the shared client
library, controlplane.client, logs into controlplane.log).

Memory at rest is part of the issue's target (under 150 MB RSS summed over
every process): two Python processes with gRPC fewer than a supervisor plus
separate control plane and agent, glibc limited to two malloc arenas here
and in the runtime (M_ARENA_MAX; the default allows eight per core, each
keeping its own free pages, and this process runs over a hundred threads),
and the free pages startup leaves returned once Ready (malloc_trim).
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from agent import main as agent_main
from agent.cri_client import CRIClient, CRIError
from agent.host_state import Instance
from agent.layout import Layout
from agent.up_host import clean_host, prepare_host, take_data_dir
from agent.up_kubelet_args import agent_flags
from controlplane.client import errors
from controlplane.client.apiclient import connect
from controlplane.client.config import ConfigError, load_config
from machinery import libc
from machinery.atomicfile import copy_private
from machinery.signals import StopSignals

log = logging.getLogger("skiff.up")

REPO_ROOT = Path(__file__).resolve().parents[1]
# The components' secure ports (kube-scheduler's, vc-scheduler's in skiff, kube-controller-manager's).
SECURE_PORTS = (("scheduler", 10259), ("volcano-scheduler", 10260), ("controller-manager", 10257))

# The glibc malloc arena limit for skiff up's processes.
ARENA_MAX = 2


class Running(Protocol):
    def stop(self) -> None: ...


# Starts the control plane in this process from the argv of `skiff
# controlplane` and returns it once it serves; raises RuntimeError if it
# cannot start.
EmbedControlPlane = Callable[[list[str]], Running]


def limit_malloc_arenas() -> None:
    """At most ARENA_MAX glibc malloc arenas in this process from now on
    (threads started later share them), as MALLOC_ARENA_MAX does for a new
    process; not if MALLOC_ARENA_MAX is set."""
    if "MALLOC_ARENA_MAX" not in os.environ:
        libc.mallopt(libc.M_ARENA_MAX, ARENA_MAX)


def release_free_memory() -> None:
    """malloc_trim(0): give the pages malloc holds free (startup leaves many:
    imports, PKI, YAML) back to the kernel; free() only returns the heap's top."""
    libc.release_free_memory()


class AgentLogs(logging.Filter):
    """Records of the agent (for agent.log); the rest go to controlplane.log."""

    def __init__(self, agent: bool) -> None:
        super().__init__()
        self.agent = agent

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        mine = name.startswith(("skiff.agent", "agent.", "skiff.streaming")) or name == "agent"
        return mine == self.agent and not name.startswith("skiff.up")


def log_to_files(lay: Layout, level: str) -> None:
    """This process's log records into controlplane.log and agent.log, as
    when each ran as its own process; skiff up's own records stay on stderr."""
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    root = logging.getLogger()
    root.setLevel(level.upper())
    for existing in root.handlers:
        existing.addFilter(lambda record: record.name.startswith("skiff.up"))
    for name, agent in (("controlplane.log", False), ("agent.log", True)):
        handler = logging.FileHandler(lay.log_dir / name)
        handler.setFormatter(fmt)
        handler.addFilter(AgentLogs(agent))
        root.addHandler(handler)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skiff up", description="Run control plane, runtime and agent on this machine."
    )
    p.add_argument("--data-dir", help="keep every socket, state dir, log and CNI file under DIR")
    p.add_argument("--api-port", type=int, default=6443)
    p.add_argument("--node-name", default=socket.gethostname().split(".")[0].lower())
    p.add_argument("--node-ip", default="")
    p.add_argument("--node-labels", default="")
    p.add_argument("--register-with-taints", default="")
    p.add_argument("--agent-port", type=int, default=10250, help="the agent's endpoint port")
    p.add_argument("--cluster-cidr", default="10.244.0.0/16", help="pod network of the cluster")
    p.add_argument("--service-cidr", default="10.43.0.0/16", help="cluster IPs of Services")
    p.add_argument(
        "--cluster-dns",
        default="",
        help="DNS address of pods, served by the agent (default: the tenth address of"
        " --service-cidr, the kube-dns Service's cluster IP)",
    )
    p.add_argument("--registry-config", default="", help="registries.yaml for the runtime")
    p.add_argument("--disable-default-registry-endpoint", action="store_true")
    p.add_argument("--keep-pods", action="store_true", help="leave pods running when stopping")
    p.add_argument(
        "--disable",
        action="append",
        default=[],
        choices=["ingress", "servicelb", "metrics-server"],
        help="do not run the built-in ingress controller, ServiceLB or metrics API (k3s'"
        " --disable traefik, servicelb, metrics-server: with metrics-server, no metrics.k8s.io,"
        " as on a cluster without one); repeat for more",
    )
    p.add_argument("--disable-network-policy", action="store_true")
    p.add_argument("--ingress-http-port", type=int, default=80)
    p.add_argument("--ingress-https-port", type=int, default=443)
    p.add_argument(
        "--scheduler-config",
        default="",
        metavar="FILE",
        help="the scheduler's profiles (skiff controlplane --scheduler-config)",
    )
    p.add_argument(
        "--volcano-scheduler-config",
        default="",
        metavar="FILE",
        help="the batch scheduler's volcano-scheduler.conf "
        "(skiff controlplane --volcano-scheduler-config)",
    )
    for who, port in SECURE_PORTS:
        p.add_argument(f"--{who}-secure-port", type=int, default=port,
                       help=f"skiff controlplane --{who}-secure-port (0: none)")  # fmt: skip
    p.add_argument("--component-bind-address", default="127.0.0.1",
                   help="skiff controlplane --component-bind-address")  # fmt: skip
    p.add_argument("--kubelet-arg", action="append", default=[], metavar="FLAG=VALUE",
                   help="a flag for the agent, as k3s' --kubelet-arg (e.g."
                   " eviction-hard=nodefs.available<10%%); repeat for more")  # fmt: skip
    p.add_argument("--log-level", default="info")
    return p


class Child:
    def __init__(self, name: str, argv: list[str], log_path: Path) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.env: dict[str, str] = {}  # added to this process's environment

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=REPO_ROOT,
                env={**os.environ, **self.env},
                start_new_session=True,
            )
        log.info("%s started (pid %d), log %s", self.name, self.proc.pid, self.log_path)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        log.info("%s stopped", self.name)

    def check(self) -> None:
        """Raise RuntimeError, with the tail of its log, if it has exited."""
        if self.alive():
            return
        tail = self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""
        raise RuntimeError(f"{self.name} exited (see {self.log_path}):\n{tail}")


class Interrupted(Exception):
    """Ctrl-C or SIGTERM while starting: stop what runs, print nothing more."""


def _wait(
    what: str,
    ready: Callable[[], bool],
    check: Callable[[], None],
    stop: StopSignals,
    timeout: float = 120.0,
) -> None:
    """Poll ready() until it is true; check() raises if what we wait on died.
    On the main thread, which takes the signals."""
    deadline = time.monotonic() + timeout
    while not stop.is_set():
        try:
            check()
        except RuntimeError as err:
            raise RuntimeError(f"while waiting for {what}: {err}") from None
        try:
            if ready():
                return
        except Exception:  # not yet: the daemon is still coming up
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        stop.wait_in_main(0.1)
    raise Interrupted(f"stopped while waiting for {what}")


def cluster_dns(args: argparse.Namespace) -> str:
    """--cluster-dns, else the tenth address of --service-cidr (the cluster IP
    the control plane gives the kube-dns Service: 10.43.0.10 by default)."""
    if args.cluster_dns:
        return str(args.cluster_dns)
    try:
        return str(ipaddress.ip_network(args.service_cidr)[10])
    except (ValueError, IndexError) as err:
        raise SystemExit(f"skiff up: --service-cidr {args.service_cidr}: {err}") from None


def install_cni(bin_dir: Path) -> None:
    """Put the skiff CNI plugin launchers into bin_dir."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "runtime.cni.install", "--bin-dir", str(bin_dir)],
        check=True,
        cwd=REPO_ROOT,
        capture_output=True,
    )


def agent_argv(args: argparse.Namespace, lay: Layout, dns_ip: str, server: str) -> list[str]:
    """The `skiff agent` flags of skiff up's agent (the join token is filled
    in once the control plane wrote it): every host-global name from `lay`,
    then the --kubelet-arg flags (ValueError for one skiff up sets)."""
    owned = [
        "--server",
        server,
        "--token",
        "",
        "--ca-file",
        str(lay.controlplane_dir / "pki" / "ca.crt"),
        "--node-name",
        args.node_name,
        "--node-ip",
        args.node_ip,
        "--node-labels",
        args.node_labels,
        "--register-with-taints",
        args.register_with_taints,
        "--runtime-endpoint",
        f"unix://{lay.cri_socket}",
        "--root-dir",
        str(lay.agent_root),
        "--pod-log-dir",
        str(lay.pod_logs),
        "--cgroup-root",
        lay.cgroup_root,
        "--cni-conf-dir",
        str(lay.cni_conf_dir),
        "--cni-bin-dir",
        str(lay.cni_bin_dir),
        "--cni-bridge",
        lay.cni_bridge,
        "--cni-network-name",
        lay.cni_network,
        "--cluster-cidr",
        args.cluster_cidr,
        "--cluster-dns",
        dns_ip,
        "--dns-interface",
        lay.dns_interface,
        "--iptables-chain-prefix",
        lay.chain_prefix,
        "--listen",
        f"0.0.0.0:{args.agent_port}",
        "--ingress-http-port",
        str(0 if "ingress" in args.disable else args.ingress_http_port),
        "--ingress-https-port",
        str(args.ingress_https_port),
        *(["--disable-network-policy"] if args.disable_network_policy else []),
        "--log-level",
        args.log_level.upper(),
    ]
    return owned + agent_flags(args.kubelet_arg, [a for a in owned if a.startswith("--")])


def remove_all_pods(endpoint: str) -> None:
    client = CRIClient(endpoint, timeout=60)
    try:
        for sb in client.list_pod_sandboxes():
            try:
                client.stop_pod_sandbox(sb.id)
                client.remove_pod_sandbox(sb.id)
            except CRIError as err:
                log.warning("removing sandbox %s: %s", sb.id[:12], err)
    finally:
        client.close()


def prepare_dirs(lay: Layout) -> None:
    """The instance's directories and its CNI plugins."""
    for d in (
        lay.controlplane_dir,
        lay.runtime_root,
        lay.runtime_state,
        lay.agent_root,
        lay.cni_conf_dir,
        lay.log_dir,
    ):
        d.mkdir(parents=True, exist_ok=True)
    lay.cri_socket.parent.mkdir(parents=True, exist_ok=True)
    install_cni(lay.cni_bin_dir)


def controlplane_argv(args: argparse.Namespace, lay: Layout, server: str) -> list[str]:
    """The `skiff controlplane` flags of skiff up's control plane."""
    return [
        "--listen",
        f"0.0.0.0:{args.api_port}",
        "--advertise-address",
        server,
        "--data-dir",
        str(lay.controlplane_dir),
        "--service-cidr",
        args.service_cidr,
        "--cluster-cidr",
        args.cluster_cidr,
        "--log-level",
        args.log_level.upper(),
        # Its components as threads, as k3s runs them: processes of their own
        # would add ~60 MB RSS each to the single node's footprint.
        "--no-component-processes",
        *(f"--disable={name}" for name in args.disable),
        *(f"--{who}-secure-port={getattr(args, who.replace('-', '_') + '_secure_port')}"
          for who, _ in SECURE_PORTS),
        f"--component-bind-address={args.component_bind_address}",
        *(["--scheduler-config", str(Path(args.scheduler_config).absolute())]
          if args.scheduler_config else []),
        *(["--volcano-scheduler-config", str(Path(args.volcano_scheduler_config).absolute())]
          if args.volcano_scheduler_config else []),
    ]  # fmt: skip


def runtime_argv(args: argparse.Namespace, lay: Layout) -> list[str]:
    """The `skiff runtime` command line of skiff up's runtime."""
    argv = [sys.executable, "-m", "skiff", "runtime", "--listen", f"unix://{lay.cri_socket}",
            "--root", str(lay.runtime_root), "--state", str(lay.runtime_state),
            "--cni-conf-dir", str(lay.cni_conf_dir), "--cni-bin-dir", str(lay.cni_bin_dir),
            "--cgroup-parent", lay.runtime_cgroup, "--log-level", args.log_level.lower()]  # fmt: skip
    if args.registry_config:
        argv += ["--registry-config", args.registry_config]
    if args.disable_default_registry_endpoint:
        argv.append("--disable-default-registry-endpoint")
    return argv


class Parts:
    """The parts of one skiff up and the steps that start and stop them:
    control plane (in this process, or a child without `embed`), runtime
    (a child), agent (in this process)."""

    def __init__(
        self,
        args: argparse.Namespace,
        lay: Layout,
        dns_ip: str,
        embed: EmbedControlPlane | None,
        stop: StopSignals,
    ) -> None:
        self.args = args
        self.lay = lay
        self.stop = stop
        self.embed = embed
        server = f"127.0.0.1:{args.api_port}"
        self.cp_args = controlplane_argv(args, lay, server)
        py = [sys.executable, "-m", "skiff"]
        self.cp_child = (
            Child(
                "controlplane",
                [*py, "controlplane", *self.cp_args],
                lay.log_dir / "controlplane.log",
            )
            if embed is None
            else None
        )
        self.rt = Child("runtime", runtime_argv(args, lay), lay.log_dir / "runtime.log")
        for child in (self.rt, self.cp_child):
            if child is not None:
                child.env = {"MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", str(ARENA_MAX))}
        self.ag_args = agent_argv(args, lay, dns_ip, server)
        self.admin_conf = lay.controlplane_dir / "admin.conf"
        self.cp: Running | None = None
        self.ag: agent_main.RunningAgent | None = None

    def start_controlplane(self) -> None:
        if self.cp_child is not None:
            self.cp_child.start()

            def api_ready() -> bool:
                with connect(load_config(self.admin_conf), timeout=2) as c:
                    c.whoami()
                return True

            _wait("the control plane API", api_ready, self.cp_child.check, self.stop)
        else:
            assert self.embed is not None
            self.cp = self.embed(self.cp_args)
            log.info(
                "controlplane serving in this process, log %s",
                self.lay.log_dir / "controlplane.log",
            )

    def start_runtime(self) -> None:
        self.rt.start()

        def runtime_ready() -> bool:
            c = CRIClient(f"unix://{self.lay.cri_socket}", timeout=2)
            try:
                c.version()
            finally:
                c.close()
            return True

        _wait("the runtime socket", runtime_ready, self.rt.check, self.stop)

    def start_agent(self) -> None:
        token = (self.lay.controlplane_dir / "join-token").read_text().strip()
        self.ag_args[self.ag_args.index("--token") + 1] = token
        self.ag = agent_main.start(agent_main.build_parser().parse_args(self.ag_args), self.stop)
        if self.stop.is_set():
            raise Interrupted("stopped while starting the agent")
        log.info("agent started in this process, log %s", self.lay.log_dir / "agent.log")

    def wait_node_ready(self) -> None:
        name = self.args.node_name

        def node_ready() -> bool:
            with connect(load_config(self.admin_conf), timeout=2) as c:
                node = c.get("Node", name)
            return any(
                x["type"] == "Ready" and x["status"] == "True" for x in node["status"]["conditions"]
            )

        _wait(f"node {name} to be Ready", node_ready, self.rt.check, self.stop)

    def announce(self) -> None:
        """Hand the admin credential over and say how to use skiff."""
        lay = self.lay
        copy_private(self.admin_conf, lay.data_dir / "admin.conf")
        copy_private(self.admin_conf.parent / "kubeconfig", lay.data_dir / "kubeconfig")
        print(
            f"skiff is up: node {self.args.node_name} is Ready.\n"
            f"  export KUBECONFIG={lay.data_dir / 'kubeconfig'}\n"
            f"  kubectl get nodes\n"
            f"  kubectl apply -f examples/nginx-deployment.yaml   (skiffctl reads it too)\n"
            f"Logs: {lay.log_dir}/{{controlplane,runtime,agent}}.log. Ctrl-C stops skiff.",
            flush=True,
        )

    def serve(self) -> None:
        """Until Ctrl-C or SIGTERM; RuntimeError if a child process exits."""
        release_free_memory()
        while not self.stop.wait_in_main(1.0):
            for child in (self.cp_child, self.rt):
                if child is not None and not child.alive():
                    raise RuntimeError(f"{child.name} exited unexpectedly (see {child.log_path})")

    def shutdown(self) -> None:
        """Agent, pods (unless --keep-pods), runtime, control plane."""
        if self.ag is not None:
            self.ag.stop()
            log.info("agent stopped")
        if not self.args.keep_pods and self.rt.alive():
            try:
                remove_all_pods(f"unix://{self.lay.cri_socket}")
            except CRIError as err:
                log.warning("could not remove pods: %s", err)
        self.rt.stop()
        if self.cp is not None:
            self.cp.stop()
            log.info("controlplane stopped")
        if self.cp_child is not None:
            self.cp_child.stop()


def main(argv: Sequence[str] | None = None, controlplane: EmbedControlPlane | None = None) -> int:
    """`skiff up`. With `controlplane`, the control plane runs in this
    process (what the `skiff` command does); without, as a child process."""
    args = build_parser().parse_args(argv)
    try:  # the agent's flags, only to check the --kubelet-arg ones before anything starts
        agent_argv(args, Layout.under(Path(args.data_dir or "/")), "", "")
    except ValueError as err:
        print(f"skiff up: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    if os.geteuid() != 0:
        print(
            "skiff up: must run as root (it manages namespaces, mounts, cgroups and iptables)",
            file=sys.stderr,
        )
        return 1
    dns_ip = cluster_dns(args)
    limit_malloc_arenas()
    lay = Layout.under(Path(args.data_dir)) if args.data_dir else Layout.standard()
    inst = Instance.of(lay, args.cluster_cidr, args.service_cidr, dns_ip)
    try:
        lock = take_data_dir(lay, bool(args.data_dir))
        prepare_host(inst)
    except (RuntimeError, OSError) as err:
        print(f"skiff up: {err}", file=sys.stderr)
        return 1
    prepare_dirs(lay)
    log_to_files(lay, args.log_level)
    parts = Parts(args, lay, dns_ip, controlplane, StopSignals())
    try:
        parts.start_controlplane()
        parts.start_runtime()
        parts.start_agent()
        parts.wait_node_ready()
        parts.announce()
        parts.serve()
        return 0
    except Interrupted as err:
        log.info("%s", err)
        return 0
    except (RuntimeError, OSError, errors.ApiError, ConfigError) as err:
        print(f"skiff up: {err}", file=sys.stderr)
        return 1
    finally:
        parts.shutdown()
        clean_host(inst, args.keep_pods)
        lock.release()
