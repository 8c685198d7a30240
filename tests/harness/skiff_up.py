"""`skiff up` as a test runs it: one `skiff up --data-dir` process (`Up`)
with its own ports and address ranges, and everything it makes on the host
removed by what the test knows; and the offline web image, pod and Service
the e2e tests of skiff up run (tests/e2e/agent/test_up_*.py, the client
libraries' runner)."""

from __future__ import annotations

import contextlib
import ipaddress
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.host_state import Instance, stop_runtime
from agent.layout import Layout
from agent.proxy.iptables import CommandIptables
from agent.proxy.local_address import remove_local_address
from agent.proxy.proxy import cleanup as proxy_cleanup
from agent.proxy.rules import Chains
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import load_config
from tests.harness.images import TestImages
from tests.harness.mounts import unmount_all
from tests.harness.nodeprocs import (
    REPO,
    Daemon,
    delete_link,
    free_cluster_cidr,
    kill_runtime_monitors,
    release_cluster_cidr,
    remove_cgroups,
    remove_nat_for,
    remove_network_leftovers,
)
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

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
        release_cluster_cidr(self.cluster_cidr)  # its routes are gone

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
