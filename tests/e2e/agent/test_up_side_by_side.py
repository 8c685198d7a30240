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

import ipaddress
import secrets
import shutil
import signal
import socket
import sys
from collections.abc import Iterator

import pytest

from agent.proxy import dns_wire as w
from tests.harness.images import TestImages
from tests.harness.images.catalog import WEB_BODY
from tests.harness.nodeprocs import (
    free_service_cidrs,
    short_tempdir,
)
from tests.harness.skiff_up import (
    Up,
    free_cluster_cidrs,
    http_get,
    offline_web_image,
    running_ip,
    web_pod,
    web_service,
)
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]


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
