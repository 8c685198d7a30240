"""The host state of `skiff up` as a clean lifecycle (issue 22).

The issue's sequence: `skiff up --data-dir A`, a pod and a Service reachable
from this host, Ctrl-C, then `skiff up --data-dir B` with the same cluster
and service CIDRs, whose pod and Service must be reachable too; before, A's
bridge route shadowed B's pod network. Around A's run the host is
snapshotted (links, routes, addresses, iptables and nftables, cgroups in
every hierarchy, mounts, network namespaces): after Ctrl-C nothing of A is
left. With kill -9 of A instead, B refuses to start naming A's bridge and
--cluster-cidr, `skiff down --data-dir A` removes what A left (twice: the
second finds nothing), and B then serves.

Both use the harness of the side-by-side test: offline image import, free
ports and CIDRs, and a cleanup of everything by name even after a failure.
"""

from __future__ import annotations

import ipaddress
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.host_state import Instance, leftovers, processes
from controlplane.client.apiclient import GrpcApiClient
from tests.harness import hoststate
from tests.harness.images import TestImages
from tests.harness.images.catalog import WEB_BODY
from tests.harness.nodeprocs import REPO, Daemon, free_service_cidrs, short_tempdir
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


class Pair:
    """Two skiff up instances with the same CIDRs, run one after the other."""

    def __init__(self, base: Path, archive: Path, registries: Path) -> None:
        cluster, service = free_cluster_cidrs(1)[0], free_service_cidrs(1)[0]
        self.a = Up("a", base / "a", cluster, service)
        self.b = Up("b", base / "b", cluster, service)
        self.registries = registries
        for up in (self.a, self.b):
            up.data_dir.mkdir()
            up.import_image(archive)

    def instance(self, up: Up) -> Instance:
        return Instance.of(up.layout, up.cluster_cidr, up.service_cidr, up.dns_ip)


@pytest.fixture
def pair(images: TestImages) -> Iterator[Pair]:
    base = short_tempdir("skdn-")
    archive, registries = offline_web_image(base, images)
    p = Pair(base, archive, registries)
    try:
        yield p
    except BaseException:
        for up in (p.a, p.b):
            sys.stderr.write(up.log_tail() + "\n")
        raise
    finally:
        errors = []
        for up in (p.a, p.b):
            try:
                up.cleanup()
            except BaseException as exc:
                errors.append(exc)
        shutil.rmtree(base, ignore_errors=True)
        if errors:
            raise errors[0]


def serve_web(
    up: Up, registries: Path, extra: tuple[str, ...] = ()
) -> tuple[GrpcApiClient, str, str]:
    """Start `up`, run the web pod and its Service; wait until both answer
    from this host. Returns the client, the pod IP and the cluster IP."""
    if extra:
        up.daemon = Daemon(
            f"skiff up {up.name}", [*up.argv(registries), *extra], up.data_dir.parent / "up.log"
        )
        up.daemon.start()
    else:
        up.start(registries)
    api = up.wait_ready()
    api.create("Pod", web_pod())
    svc = api.create("Service", web_service())["spec"]["clusterIP"]
    pod_ip = wait_for(
        lambda: running_ip(api), timeout=60, interval=0.1, message=f"pod of {up.name} Running"
    )
    assert ipaddress.ip_address(pod_ip) in ipaddress.ip_network(up.cluster_cidr)
    for ip in (pod_ip, svc):
        wait_for(
            lambda ip=ip: http_get(ip) == WEB_BODY,  # type: ignore[misc]
            timeout=30,
            interval=0.1,
            message=f"{up.name}: http://{ip}/ to answer",
        )
    return api, pod_ip, svc


def skiff(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "skiff.py"), *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def tokens(up: Up, pod_ip: str) -> set[str]:
    lay = up.layout
    # Any address of its cluster CIDR (a /19), as the "a.b.c." of each of its
    # /24s: its first two octets alone also named other tests' instances, run
    # at the same time in the /19s beside it (seen in make test).
    in_cidr = {
        ".".join(str(net.network_address).split(".")[:3]) + "."
        for net in ipaddress.ip_network(up.cluster_cidr).subnets(new_prefix=24)
    }
    return {
        str(up.data_dir),
        lay.cni_bridge,
        lay.dns_interface,
        lay.chain_prefix,
        lay.cni_network,
        lay.runtime_cgroup.strip("/"),
        up.dns_ip,
        pod_ip,
        *in_cidr,
    }


def test_stop_leaves_the_host_as_it_was_and_the_next_instance_serves(pair: Pair) -> None:
    a, b = pair.a, pair.b
    before = hoststate.take()
    api, pod_ip, _ = serve_web(a, pair.registries)
    during = hoststate.take()
    mine = hoststate.owned_tokens(during, tokens(a, pod_ip), a.layout.cni_bridge)
    # The snapshot while it runs does show what it made (the check has teeth).
    assert hoststate.left_behind(before, during, mine).keys() >= {
        "links",
        "routes",
        "addresses",
        "iptables",
        "nftables",
        "cgroups",
        "mounts",
    }
    api.close()
    assert a.daemon is not None and a.daemon.stop(signal.SIGINT, timeout=90) == 0
    after = hoststate.take()
    assert hoststate.left_behind(before, after, mine) == {}, a.log_tail()
    assert leftovers(pair.instance(a)) == [], a.log_tail()

    # The second instance: same CIDRs, another data dir.
    api_b, _, _ = serve_web(b, pair.registries)
    api_b.close()


def test_after_kill_9_skiff_down_removes_what_was_left(pair: Pair) -> None:
    a, b = pair.a, pair.b
    api, _, _ = serve_web(a, pair.registries)
    api.close()
    assert a.daemon is not None
    a.daemon.stop(signal.SIGKILL)
    a.daemon = None
    inst_a = pair.instance(a)
    assert any(x.startswith(f"link {a.layout.cni_bridge}") for x in leftovers(inst_a))
    assert processes(inst_a)  # its runtime and pods outlive it

    # A second instance over the same CIDRs refuses, naming the culprit.
    res = skiff(*b.argv(pair.registries)[2:])
    assert res.returncode == 1, res.stdout + res.stderr
    assert a.layout.cni_bridge in res.stderr and "--cluster-cidr" in res.stderr, res.stderr
    assert not (b.data_dir / "admin.conf").exists()

    res = skiff("down", "--data-dir", str(a.data_dir))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"bridge {a.layout.cni_bridge}" in res.stdout, res.stdout
    assert leftovers(inst_a) == []
    res = skiff("down", "--data-dir", str(a.data_dir))  # idempotent
    assert res.returncode == 0 and "nothing of" in res.stdout, res.stdout + res.stderr

    api_b, _, _ = serve_web(b, pair.registries)
    api_b.close()


def test_after_kill_9_the_same_skiff_up_adopts_its_pods(pair: Pair) -> None:
    a = pair.a
    api, pod_ip, svc = serve_web(a, pair.registries)
    api.close()
    assert a.daemon is not None
    a.daemon.stop(signal.SIGKILL)
    a.daemon = None
    # Started again on the same data dir: the old runtime is stopped, the
    # pod kept running and taken over, and both addresses still answer.
    a.admin_conf.unlink()  # written again once the node is Ready
    a.start(pair.registries)
    api = a.wait_ready()
    assert running_ip(api) == pod_ip
    for ip in (pod_ip, svc):
        assert http_get(ip) == WEB_BODY
    api.close()
    assert a.daemon is not None and a.daemon.stop(signal.SIGINT, timeout=90) == 0
    assert leftovers(pair.instance(a)) == []


def test_keep_pods_keeps_what_the_pod_needs_and_skiff_down_removes_it(pair: Pair) -> None:
    a = pair.a
    api, pod_ip, _ = serve_web(a, pair.registries, ("--keep-pods",))
    api.close()
    assert a.daemon is not None and a.daemon.stop(signal.SIGINT, timeout=90) == 0
    log = a.daemon.log_tail(20000) if a.daemon else ""
    a.daemon = None
    assert (
        "--keep-pods: kept for the pods left running" in (a.data_dir.parent / "up.log").read_text()
    )
    assert http_get(pod_ip) == WEB_BODY  # the pod, its bridge and route live on
    left = leftovers(pair.instance(a))
    assert any(x.startswith(f"link {a.layout.cni_bridge}") for x in left), left
    assert not any("iptables" in x for x in left), left  # the Services' rules are the agent's
    res = skiff("down", "--data-dir", str(a.data_dir))
    assert res.returncode == 0, res.stdout + res.stderr
    assert leftovers(pair.instance(a)) == [], log
