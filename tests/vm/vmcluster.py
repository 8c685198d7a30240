"""The Vagrant cluster of vagrant/ booted for real, for tests/vm.

Everything of the VM cluster lives in one network namespace that
vagrant/vmnet.sh makes: libvirtd and virtlogd, both isolated libvirt
networks (no NAT, no forwarding), the VMs' taps and bridges, and every
`vagrant` and `ssh` this harness runs (`ip netns exec`). This process stays
in its own namespace and reaches the VMs through two relays made with
`NetnsSockets`: the control plane's API (127.0.0.1:free here -> the
control-plane VM inside) and, the other way, the session's local registry
(the private network's host address inside -> 127.0.0.1 here), which the
nodes' runtimes mirror docker.io to.

The synced folder is rsync (no NFS server needed), so credentials go the
README's one-way way: provision the control plane, copy its credentials out
with fetch-credentials.sh, rsync them to the nodes, provision the nodes.

`vm_cluster()` times each phase (box build, boot, provision, join, destroy)
into `PHASES` and undoes everything on the way out, also after a failure:
`vagrant destroy`, then `vmnet.sh down` (domains, networks, pool, daemons by
their recorded pids, the namespace), the relays, the credentials it wrote.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import load_config
from tests.harness.cluster import TcpRelay
from tests.harness.netns import NetnsSockets
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

REPO = Path(__file__).resolve().parents[2]
VAGRANT_DIR = REPO / "vagrant"
VMNET = VAGRANT_DIR / "vmnet.sh"
BOX_BUILD = VAGRANT_DIR / "box" / "build.sh"
CREDENTIALS = VAGRANT_DIR / ".cluster"  # what nodes get: the CA and a join token
CACHE = Path(os.environ.get("SKIFF_VM_CACHE", "/var/cache/skiff/vm"))
NS = os.environ.get("SKIFF_VM_NS", "skiff-vm")
NET = os.environ.get("SKIFF_NET", "192.168.56")
BOX = os.environ.get("SKIFF_BOX", "skiff-bookworm")
REGISTRY_PORT = 5000  # the registry relay, on the private network's host address

# (phase, seconds), in the order they ran: printed at the end of the session.
PHASES: list[tuple[str, float]] = []


class VmError(RuntimeError):
    """A step of the VM cluster failed; the message says which and how to fix it."""


def _write(line: str) -> None:
    sys.stderr.write(line)
    sys.stderr.flush()


# Where progress lines go; conftest points it past pytest's output capture.
WRITE: list[Callable[[str], None]] = [_write]


def say(line: str) -> None:
    """Progress of a run that takes many minutes, shown as it happens."""
    WRITE[0](f"[vm] {line}\n")


def phase_done(name: str, started: float) -> None:
    took = time.monotonic() - started
    PHASES.append((name, took))
    say(f"{name}: {took:.1f} s")


@contextmanager
def timed(name: str) -> Iterator[None]:
    started = time.monotonic()
    yield
    phase_done(name, started)


def _run(argv: list[str], env: dict[str, str], timeout: float, what: str) -> str:
    proc = subprocess.run(
        argv, cwd=VAGRANT_DIR, env=env, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        tail = (proc.stdout[-3000:] + "\n" + proc.stderr[-3000:]).strip()
        raise VmError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


@dataclass
class VmNode:
    name: str
    ip: str
    cluster: VmCluster

    def exec(self, pod: str, cmd: list[str], namespace: str = "default", timeout: int = 10) -> str:
        """Run `cmd` in `pod`'s running container on this node (CRI, over ssh)."""
        return self.exec_many(pod, cmd, 1, namespace, timeout)[0]

    def exec_many(
        self, pod: str, cmd: list[str], repeat: int, namespace: str = "default", timeout: int = 10
    ) -> list[str]:
        req = {"pod": pod, "cmd": cmd, "repeat": repeat, "namespace": namespace}
        req["timeout"] = timeout
        script = "cd /opt/skiff/src && sudo .venv/bin/python -m tests.vm.podexec " + _shell_quote(
            json.dumps(req)
        )
        out = self.cluster.ssh(self.name, script, timeout=60 + repeat * (timeout + 2))
        got: list[str] = json.loads(out.strip().splitlines()[-1])
        return got


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


@dataclass
class VmCluster:
    workdir: Path
    env: dict[str, str]
    cp_ip: str
    nodes: list[VmNode] = field(default_factory=list)
    api_address: str = ""
    sockets: NetnsSockets | None = None  # sockets inside the VM network's namespace

    def vagrant(self, *args: str, timeout: float = 1800) -> str:
        return _run(
            ["ip", "netns", "exec", NS, "vagrant", *args],
            self.env,
            timeout,
            "vagrant " + " ".join(args),
        )

    def virsh(self, *args: str, timeout: float = 120) -> str:
        return _run(
            ["ip", "netns", "exec", NS, "virsh", "-q", "-c", "qemu:///system", *args],
            self.env,
            timeout,
            "virsh " + " ".join(args),
        )

    def ssh(self, machine: str, command: str, timeout: float = 120) -> str:
        config = self.workdir / "ssh_config"
        return _run(
            ["ip", "netns", "exec", NS, "ssh", "-F", str(config), machine, command],
            self.env,
            timeout,
            f"ssh {machine} {command!r}",
        )

    def kubectl(self, *args: str, timeout: float = 120) -> str:
        """kubectl on the host, inside the VM network's namespace (where the
        control-plane VM's address routes), with the fetched kubeconfig."""
        kubeconfig = str(self.admin_kubeconfig)
        return _run(
            ["ip", "netns", "exec", NS, "kubectl", "--kubeconfig", kubeconfig, *args],
            self.env,
            timeout,
            "kubectl " + " ".join(args),
        )

    def provision_nodes(self, **settings: str) -> None:
        """The node provisioner again on every node at once, with `settings`
        (SKIFF_* variables) changed: as a user changes a running cluster
        (`SKIFF_X=... vagrant provision`); later vagrant commands keep them."""
        self.env.update(settings)
        names = [n.name for n in self.nodes]
        _each_machine(self, ["provision", "--provision-with", "node"], names, "reprovision")

    def write_ssh_config(self) -> None:
        names = ["controlplane", *(n.name for n in self.nodes)]
        (self.workdir / "ssh_config").write_text(self.vagrant("ssh-config", *names, timeout=300))

    @property
    def node_grace(self) -> int:
        """Seconds without a heartbeat before a node is NotReady (SKIFF_NODE_GRACE)."""
        return int(self.env["SKIFF_NODE_GRACE"])

    def client(self, timeout: float = 30.0) -> GrpcApiClient:
        return connect(load_config(self.admin_kubeconfig, server=self.api_address), timeout)

    @property
    def admin_kubeconfig(self) -> Path:
        """The admin's kubeconfig fetch-credentials.sh made on the host
        (SKIFF_ADMIN_DIR, outside the synced tree the nodes see)."""
        return Path(self.env["SKIFF_ADMIN_DIR"]) / "kubeconfig"

    def node(self, name: str) -> VmNode:
        return next(n for n in self.nodes if n.name == name)

    def domain(self, machine: str) -> str:
        return f"skiff-{machine}"  # the Vagrantfile's libvirt default_prefix

    def logs(self, lines: int = 200) -> str:
        parts = []
        for machine, units in [("controlplane", "skiff-controlplane")] + [
            (n.name, "skiff-runtime -u skiff-agent") for n in self.nodes
        ]:
            try:
                out = self.ssh(
                    machine, f"sudo journalctl --no-pager -n {lines} -u {units}", timeout=60
                )
            except (VmError, subprocess.TimeoutExpired) as err:
                out = f"(no journal: {err})"
            parts.append(f"--- {machine} ---\n{out}")
        return "\n".join(parts)


def vmnet(*args: str, env: dict[str, str], timeout: float = 300) -> str:
    return _run([str(VMNET), *args], env, timeout, "vagrant/vmnet.sh " + " ".join(args))


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAGRANT_", "SKIFF_"))}
    env.update(
        VAGRANT_HOME=str(CACHE / "vagrant.d"),
        VAGRANT_CHECKPOINT_DISABLE="1",
        VAGRANT_BOX_UPDATE_CHECK_DISABLE="1",
        VAGRANT_NO_COLOR="1",
        VAGRANT_DEFAULT_PROVIDER="libvirt",
        LIBVIRT_DEFAULT_URI="qemu:///system",
        SKIFF_VM_CACHE=str(CACHE),
        SKIFF_VM_NS=NS,
        SKIFF_NET=NET,
        SKIFF_BOX=BOX,
    )
    passed = ("SKIFF_MGMT_NET", "SKIFF_LIBVIRT_DRIVER", "SKIFF_CPUS", "SKIFF_MEMORY")
    for key in (*passed, "SKIFF_CNI_BACKEND", "SKIFF_NODE_GRACE"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def libvirt_driver(env: dict[str, str]) -> str:
    """`vmnet.sh driver`: kvm or qemu, with why (its probe boots) said."""
    with timed("driver probe"):
        proc = subprocess.run(
            [str(VMNET), "driver"], env=env, capture_output=True, text=True, timeout=600
        )
    if proc.returncode != 0:
        raise VmError(f"vagrant/vmnet.sh driver failed: {proc.stderr.strip()}")
    why = proc.stderr.strip().removeprefix("vmnet.sh driver: ")
    say(f"libvirt driver {why}")
    return proc.stdout.strip()


def build_box(env: dict[str, str]) -> None:
    """The box, built or taken from the cache (phase `box build`)."""
    with timed("box build"):
        if BOX == "skiff-bookworm":
            _run([str(BOX_BUILD)], env, 3600, "vagrant/box/build.sh")
        boxes = _run(["vagrant", "box", "list"], env, 300, "vagrant box list")
        if not any(line.split()[:1] == [BOX] and "libvirt" in line for line in boxes.splitlines()):
            raise VmError(
                f"missing box: vagrant has no libvirt box {BOX!r} "
                f"(VAGRANT_HOME={env['VAGRANT_HOME']}); build it with `make -C vagrant box`, "
                "or set SKIFF_BOX to a libvirt box `vagrant box list` shows"
            )


def preflight() -> None:
    """Refuse to start over what a previous or parallel run left."""
    if CREDENTIALS.exists():
        raise VmError(
            f"{CREDENTIALS} exists (credentials of another VM cluster): "
            "`vagrant destroy -f` that cluster and remove the directory first"
        )


@contextmanager
def vm_cluster(nodes: int = 2, registry_port: int | None = None) -> Iterator[VmCluster]:
    """Box, namespace, `vagrant up` of the control plane and `nodes` nodes,
    provisioned and joined; everything undone on exit."""
    preflight()
    env = base_env()
    build_box(env)
    env["SKIFF_LIBVIRT_DRIVER"] = libvirt_driver(env)
    # Kubernetes' 40 s without a heartbeat before NotReady: under TCG on a
    # loaded 2-core host the VMs' agents (and the control plane's own
    # controller) get a fraction of a CPU, and both nodes went NotReady and
    # lost their pods in the first scenario.
    tcg = env["SKIFF_LIBVIRT_DRIVER"] == "qemu"
    env.setdefault("SKIFF_NODE_GRACE", "120" if tcg else "40")
    workdir = Path(tempfile.mkdtemp(prefix="skiff-vm-"))
    env.update(
        VAGRANT_DOTFILE_PATH=str(workdir / "dot"),
        SKIFF_NODES=str(nodes),
        SKIFF_SYNC="rsync",
        SKIFF_ADMIN_DIR=str(workdir / "admin"),
        SKIFF_LIBVIRT_POOL="skiff",
        SKIFF_REGISTRY_MIRROR=f"http://{NET}.1:{REGISTRY_PORT}" if registry_port else "",
    )
    cluster = VmCluster(workdir, env, cp_ip=f"{NET}.10")
    cluster.nodes = [VmNode(f"node{i}", f"{NET}.{10 + i}", cluster) for i in range(1, nodes + 1)]
    with ExitStack() as stack:
        if os.environ.get("SKIFF_VM_KEEP") == "1":
            # Debugging: leave the cluster up, to be removed by hand.
            stack.callback(
                say,
                f"SKIFF_VM_KEEP=1: cluster left up (VAGRANT_DOTFILE_PATH={workdir}/dot); "
                "remove it with `make -C vagrant down` and `rm -rf vagrant/.cluster`",
            )
            stack = ExitStack()
        stack.callback(shutil.rmtree, workdir, True)
        stack.callback(shutil.rmtree, CREDENTIALS, True)
        vmnet("up", env=env)
        stack.callback(vmnet, "down", env=env)
        stack.callback(_destroy, cluster)
        sockets = NetnsSockets(NS)
        stack.callback(sockets.close)
        cluster.sockets = sockets
        if registry_port:
            relay = TcpRelay(
                f"{NET}.1",
                REGISTRY_PORT,
                ("127.0.0.1", registry_port),
                listener=sockets.listen((f"{NET}.1", REGISTRY_PORT)),
            )
            stack.callback(relay.close)
        everything = ["controlplane", *(n.name for n in cluster.nodes)]
        with timed("boot"):
            # The first machine alone until its disk exists: a new box's base
            # volume is uploaded into the pool by whichever `vagrant up` gets
            # there first, and the others made their disks on the half-copied
            # volume (their kernels found no root: an initramfs shell).
            _each_machine(
                cluster, ["up", "--no-provision"], everything, "up", first_until="Creating image"
            )
        cluster.write_ssh_config()
        with timed("provision"):
            # install.sh on every VM at once, then the control plane, then
            # (with its credentials) the nodes.
            _each_machine(
                cluster, ["provision", "--provision-with", "install"], everything, "install"
            )
            cluster.vagrant("provision", "--provision-with", "controlplane", "controlplane")
            fetch = VAGRANT_DIR / "fetch-credentials.sh"
            _run(["ip", "netns", "exec", NS, str(fetch)], env, 300, "fetch-credentials.sh")
            names = [n.name for n in cluster.nodes]
            cluster.vagrant("rsync", *names)
            _each_machine(cluster, ["provision", "--provision-with", "node"], names, "node")
        with timed("join"):
            api_relay = TcpRelay(
                "127.0.0.1",
                free_port(),
                (cluster.cp_ip, _api_port(cluster)),
                connect=sockets.connect,
            )
            stack.callback(api_relay.close)
            cluster.api_address = api_relay.address
            with cluster.client() as api:
                wait_for(
                    lambda: _all_ready(api, names),
                    timeout=600,
                    interval=2,
                    message=f"nodes {names} Ready",
                )
        yield cluster


def _each_machine(
    cluster: VmCluster, args: list[str], names: list[str], label: str, first_until: str = ""
) -> None:
    """`vagrant ARGS NAME` for every machine at once, one process each (one
    vagrant process bringing up several libvirt machines in its own threads
    stalled here for minutes before starting any domain). Output goes to
    WORKDIR/NAME-LABEL.log, readable while it runs. With `first_until`, the
    others start once the first machine's output shows that text (or it ended)."""
    procs = {}
    for i, name in enumerate(names):
        path = cluster.workdir / f"{name}-{label}.log"
        log = path.open("w")
        proc = subprocess.Popen(
            ["ip", "netns", "exec", NS, "vagrant", *args, name],
            cwd=VAGRANT_DIR,
            env=cluster.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        procs[name] = (proc, log)
        if i == 0 and first_until:
            wait_for(
                functools.partial(_ended_or_said, proc, path, first_until),
                timeout=1800,
                interval=1,
                message=f"vagrant {' '.join(args)} {name}: {first_until!r}",
            )
    failed = []
    for name, (proc, log) in procs.items():
        proc.wait(timeout=3600)
        log.close()
        if proc.returncode != 0:
            out = (cluster.workdir / f"{name}-{label}.log").read_text(errors="replace")
            failed.append(f"vagrant {' '.join(args)} {name} failed:\n{out[-3000:]}")
    if failed:
        raise VmError("\n".join(failed))


def _ended_or_said(proc: subprocess.Popen[bytes], log: Path, text: str) -> bool:
    return proc.poll() is not None or text in log.read_text(errors="replace")


def _api_port(cluster: VmCluster) -> int:
    server = load_config(cluster.admin_kubeconfig).server
    return int(server.rsplit(":", 1)[1])


def _all_ready(api: GrpcApiClient, names: list[str]) -> bool:
    ready = set()
    for n in api.list("Node").items:
        conds = {c["type"]: c["status"] for c in (n.get("status") or {}).get("conditions") or []}
        if conds.get("Ready") == "True":
            ready.add(n["metadata"]["name"])
    return set(names) <= ready


def _destroy(cluster: VmCluster) -> None:
    started = time.monotonic()
    with contextlib.suppress(VmError, subprocess.TimeoutExpired):
        cluster.vagrant("destroy", "-f", timeout=600)
    phase_done("destroy", started)
