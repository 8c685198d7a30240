"""Two `skiff up` on one machine, side by side (issue #8).

Each runs as a user would start it, `skiff up --data-dir DIR` with its own
--api-port, --agent-port, --cluster-cidr and --service-cidr (so its own
cluster DNS address, the tenth of the service CIDR), and finds its
web image (busybox httpd, built by tests.harness.images) imported offline
into its data dir; no registry is reached. Both nodes go Ready, a pod on
each runs with an address from its own cluster CIDR, and each cluster's
ClusterIP Service reaches its own pod from this host, each cluster's DNS
answers for its own Service, and each proxy's iptables chains carry the
prefix derived from its data dir. Ctrl-C (SIGINT) to one removes its chains
and DNS address and leaves the other's pod, Service, DNS and chains working.

Everything is removed afterwards, also after a failure, by what the test
knows: the processes by the pids it started, the monitors by the pids the
runtimes recorded, the cgroups, both bridges, every iptables chain of either
instance (the proxies' by their prefixes, skiff-cni's by the pod addresses),
the DNS interfaces, the mounts (pods' network namespaces) under the data
dirs and the data dirs.
"""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent.host_state import Instance, stop_runtime
from agent.layout import Layout
from agent.proxy import dns_wire as w
from agent.proxy.iptables import CommandIptables
from agent.proxy.local_address import remove_local_address
from agent.proxy.proxy import cleanup as proxy_cleanup
from agent.proxy.rules import Chains
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import load_config
from tests.harness.images import TestImages
from tests.harness.images.catalog import WEB_BODY
from tests.harness.mounts import unmount_all
from tests.harness.nodeprocs import (
    REPO,
    Daemon,
    delete_link,
    free_cluster_cidr,
    free_service_cidrs,
    kill_runtime_monitors,
    remove_cgroups,
    remove_nat_for,
    remove_network_leftovers,
    short_tempdir,
)
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]

IMAGE = "docker.io/skiff-e2e/web:1"
NODE = socket.gethostname().split(".")[0].lower()  # skiff up's default node name


def free_cluster_cidrs(n: int) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        cidr = free_cluster_cidr()
        if not any(ipaddress.ip_network(cidr).overlaps(ipaddress.ip_network(c)) for c in out):
            out.append(cidr)
    return out


@dataclass
class Up:
    """One `skiff up --data-dir` process and what it makes on the host."""

    name: str
    data_dir: Path
    cluster_cidr: str
    service_cidr: str
    api_port: int = field(default_factory=free_port)
    agent_port: int = field(default_factory=free_port)
    # The ingress's ports: never the host's 80 and 443 (another instance, or
    # anything else on this machine, may hold them).
    http_port: int = field(default_factory=free_port)
    https_port: int = field(default_factory=free_port)
    # The schedulers' and the controller manager's secure ports: never the
    # standard ones another instance may hold.
    scheduler_port: int = field(default_factory=free_port)
    volcano_port: int = field(default_factory=free_port)
    controller_manager_port: int = field(default_factory=free_port)
    daemon: Daemon | None = None
    extra_args: tuple[str, ...] = ()  # more `skiff up` flags

    @property
    def layout(self) -> Layout:
        return Layout.under(self.data_dir)

    @property
    def dns_ip(self) -> str:
        return str(ipaddress.ip_network(self.service_cidr)[10])

    @property
    def admin_conf(self) -> Path:
        return self.data_dir / "admin.conf"  # written once the node is Ready

    def argv(self, registries: Path) -> list[str]:
        return [
            sys.executable, str(REPO / "skiff.py"), "up",
            "--data-dir", str(self.data_dir),
            "--api-port", str(self.api_port),
            "--agent-port", str(self.agent_port),
            "--ingress-http-port", str(self.http_port),
            "--ingress-https-port", str(self.https_port),
            "--scheduler-secure-port", str(self.scheduler_port),
            "--volcano-scheduler-secure-port", str(self.volcano_port),
            "--controller-manager-secure-port", str(self.controller_manager_port),
            "--cluster-cidr", self.cluster_cidr,
            "--service-cidr", self.service_cidr,
            "--registry-config", str(registries),
            "--disable-default-registry-endpoint",
            *self.extra_args,
        ]  # fmt: skip

    def import_image(self, archive: Path) -> None:
        """`skiff image import` into the runtime root this instance will use."""
        res = subprocess.run(
            [sys.executable, str(REPO / "skiff.py"), "image", "--root",
             str(self.layout.runtime_root), "import", str(archive)],
            cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert res.returncode == 0, res.stdout + res.stderr

    def start(self, registries: Path) -> None:
        self.daemon = Daemon(
            f"skiff up {self.name}",
            self.argv(registries),
            self.data_dir.parent / f"{self.name}.log",
        )
        self.daemon.start()

    def wait_ready(self, timeout: float = 90.0) -> GrpcApiClient:
        def ready() -> bool:
            assert self.daemon is not None
            self.daemon.check()
            return self.admin_conf.exists()

        wait_for(ready, timeout=timeout, interval=0.1, message=f"skiff up {self.name} Ready")
        api = connect(load_config(self.admin_conf), timeout=10)
        node = api.get("Node", NODE)
        conds = {c["type"]: c["status"] for c in node["status"]["conditions"]}
        assert conds.get("Ready") == "True", conds
        assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == self.agent_port
        return api

    def chains(self) -> set[str]:
        """This instance's service-proxy chains now in the filter and nat tables."""
        prefix = self.layout.chain_prefix + "-"
        out = set()
        for table in ("filter", "nat"):
            text = subprocess.run(
                ["iptables-save", "-t", table], capture_output=True, text=True, check=True
            ).stdout
            out |= {ln[1:].split()[0] for ln in text.splitlines() if ln.startswith(":" + prefix)}
        return out

    def has_dns_address(self) -> bool:
        """Its DNS address is on this host (on its dummy interface, or on lo
        when the kernel has no dummy driver)."""
        res = subprocess.run(
            ["ip", "-o", "addr", "show", "to", f"{self.dns_ip}/32"],
            capture_output=True,
            text=True,
            check=True,
        )
        return bool(res.stdout.strip())

    def cleanup(self) -> None:
        """Undo everything this instance may have left; keep going on errors."""
        lay = self.layout
        seen: list[BaseException] = []

        def attempt(fn: Any, *args: Any) -> None:
            try:
                fn(*args)
            except BaseException as exc:
                seen.append(exc)

        if self.daemon is not None:  # Ctrl-C: skiff up removes its pods itself
            attempt(self.daemon.stop, signal.SIGINT, 60.0)
        # A runtime a killed `skiff up` left (as the next one would stop it).
        inst = Instance.of(lay, self.cluster_cidr, self.service_cidr, self.dns_ip)
        attempt(stop_runtime, inst)
        attempt(kill_runtime_monitors, self.layout.runtime_root)
        attempt(remove_cgroups, lay.runtime_cgroup)
        attempt(proxy_cleanup, CommandIptables(), Chains(lay.chain_prefix))
        attempt(remove_network_leftovers, lay.agent_root, lay.chain_prefix)
        attempt(remove_nat_for, self.cluster_cidr)
        attempt(remove_local_address, self.dns_ip, lay.dns_interface)
        attempt(delete_link, lay.cni_bridge)
        attempt(unmount_all, self.data_dir)
        shutil.rmtree(self.data_dir, ignore_errors=True)
        if seen:
            raise seen[0]

    def log_tail(self) -> str:
        out = [self.daemon.log_tail(6000) if self.daemon else ""]
        for name in ("agent.log", "runtime.log"):
            with contextlib.suppress(OSError):
                out.append(f"--- {name}\n" + (self.layout.log_dir / name).read_text()[-4000:])
        return f"=== skiff up {self.name} ===\n" + "\n".join(out)


def offline_web_image(base: Path, images: TestImages) -> tuple[Path, Path]:
    """The web image as an archive for `skiff image import`, and a
    registries.yaml with no mirror and no default endpoint (offline)."""
    layout = images.layout(base / "layout", {IMAGE: images.web(port=80)})
    archive = base / "web.tar"
    with tarfile.open(archive, "w") as tf:
        for entry in sorted(layout.rglob("*")):
            tf.add(entry, arcname=str(entry.relative_to(layout)), recursive=False)
    registries = base / "registries.yaml"
    registries.write_text("mirrors: {}\ndisable_default_endpoint: true\n")
    return archive, registries


@pytest.fixture
def two_ups(images: TestImages) -> Iterator[tuple[Up, Up]]:
    base = short_tempdir("skup-")
    clusters = free_cluster_cidrs(2)
    services = free_service_cidrs(2)
    ups = (
        Up("a", base / "a", clusters[0], services[0]),
        Up("b", base / "b", clusters[1], services[1]),
    )
    try:
        archive, registries = offline_web_image(base, images)
        for up in ups:
            up.data_dir.mkdir()
            up.import_image(archive)
        for up in ups:
            up.start(registries)
        yield ups
    except BaseException:
        for up in ups:
            sys.stderr.write(up.log_tail() + "\n")
        raise
    finally:
        errors: list[BaseException] = []
        for up in ups:
            try:
                up.cleanup()
            except BaseException as exc:
                errors.append(exc)
        shutil.rmtree(base, ignore_errors=True)
        if errors:
            raise errors[0]


def web_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": IMAGE,
                    "imagePullPolicy": "Never",
                    "ports": [{"containerPort": 80}],
                }
            ],
            "terminationGracePeriodSeconds": 1,
        },
    }


def web_service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "type": "ClusterIP",
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": 80, "protocol": "TCP"}],
        },
    }


def running_ip(api: GrpcApiClient) -> str:
    st = api.get("Pod", "web", "default").get("status") or {}
    return str(st.get("podIP") or "") if st.get("phase") == "Running" else ""


def http_get(ip: str) -> str:
    with urllib.request.urlopen(f"http://{ip}:80/", timeout=2) as resp:
        return str(resp.read().decode())


def resolve(dns_ip: str, name: str) -> list[str]:
    """A records for `name` from the DNS server on dns_ip:53 (UDP)."""
    qid = secrets.randbelow(65536)
    query = w.Message(id=qid, rd=True, questions=[w.Question(name, w.A)]).to_wire()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.sendto(query, (dns_ip, 53))
        reply = w.parse(s.recv(4096))
    assert reply.id == qid
    return [w.read_a(r) for r in reply.answers if r.rtype == w.A]


def test_two_skiff_ups_side_by_side(two_ups: tuple[Up, Up]) -> None:
    a, b = two_ups
    # Nothing host-global is shared: bridges, cgroups, chains, DNS devices.
    la, lb = a.layout, b.layout
    for attr in ("cni_bridge", "cgroup_root", "chain_prefix", "dns_interface", "cni_network"):
        assert getattr(la, attr) != getattr(lb, attr), attr
    apis = {up.name: up.wait_ready() for up in two_ups}

    service_ip: dict[str, str] = {}
    for up in two_ups:
        api = apis[up.name]
        api.create("Pod", web_pod())
        created = api.create("Service", web_service())
        service_ip[up.name] = created["spec"]["clusterIP"]
        assert ipaddress.ip_address(service_ip[up.name]) in ipaddress.ip_network(up.service_cidr)
        dns = api.get("Service", "kube-dns", "kube-system")["spec"]["clusterIP"]
        assert dns == up.dns_ip
    pod_ip: dict[str, str] = {}
    for up in two_ups:
        ip = wait_for(
            lambda up=up: running_ip(apis[up.name]),  # type: ignore[misc]
            timeout=60,
            interval=0.1,
            message=f"pod web of {up.name} Running with an IP",
        )
        assert ipaddress.ip_address(ip) in ipaddress.ip_network(up.cluster_cidr)
        pod_ip[up.name] = ip
    assert pod_ip["a"] != pod_ip["b"]

    def serves(up: Up) -> None:
        """Its Service reaches its pod from this host; its DNS names it."""
        wait_for(
            lambda: http_get(service_ip[up.name]) == WEB_BODY,
            timeout=30,
            interval=0.1,
            message=f"service web of {up.name} at {service_ip[up.name]} to answer",
        )
        wait_for(
            lambda: resolve(up.dns_ip, "web.default.svc.cluster.local") == [service_ip[up.name]],
            timeout=15,
            interval=0.1,
            message=f"DNS of {up.name} at {up.dns_ip} to name its service",
        )
        chains = up.chains()
        assert f"{up.layout.chain_prefix}-SERVICES" in chains
        assert any(c.startswith(f"{up.layout.chain_prefix}-SEP-") for c in chains), chains
        assert up.has_dns_address()

    for up in two_ups:
        serves(up)

    # Ctrl-C to a: it stops and cleans up after itself only.
    assert a.daemon is not None
    assert a.daemon.stop(signal.SIGINT, timeout=60) == 0
    assert a.chains() == set()
    assert not a.has_dns_address()
    assert b.daemon is not None and b.daemon.running()
    assert running_ip(apis["b"]) == pod_ip["b"]
    serves(b)
    for api in apis.values():
        api.close()
