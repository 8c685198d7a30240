"""The DNS responder on its node-local address, used by a "pod" through resolv.conf.

A node netns N holds `skiff-dns` (10.43.0.10) and runs a DnsServer in a child
process (started with `ip netns exec N`, stopped by pid). A pod netns P with
a veth to N resolves names with glibc (`getent`): `ip netns exec` shows it
/etc/netns/<P>/resolv.conf — written here, removed afterwards — with the
nameserver and search path a pod gets. Nothing leaves the test's namespaces.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.proxy.local_address import ensure_local_address, remove_local_address
from tests.harness.netns import temp_netns, unique_name
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.netns]

DNS_IP = "10.43.0.10"
REPO = Path(__file__).resolve().parents[3]

SERVER = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from agent.proxy.dns import DnsServer, DnsSettings

objs = json.loads(sys.argv[3])

class Lookup:
    def service(self, ns, name):
        return objs["services"].get(f"{ns}/{name}")
    def endpoint_slices(self, ns, name):
        return objs["slices"].get(f"{ns}/{name}", [])
    def services_by_ip(self, ip):
        return []

s = DnsServer(settings=DnsSettings(listen_host=sys.argv[1], port=53, forward=False), lookup=Lookup())
s.start()
print("ready", flush=True)
sys.stdin.read()  # until the test closes our stdin (or kills us)
s.stop()
"""

OBJECTS = {
    "services": {
        "default/web": {"spec": {"clusterIP": "10.43.0.20", "ports": [{"port": 80}]}},
        "default/db": {"spec": {"clusterIP": "None"}},
    },
    "slices": {  # a headless Service's addresses, over two EndpointSlices
        "default/db": [
            {
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.244.1.5"]}],
                "metadata": {"name": "db-a", "labels": {"kubernetes.io/service-name": "db"}},
            },
            {
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.244.2.6"]}],
                "metadata": {"name": "db-b", "labels": {"kubernetes.io/service-name": "db"}},
            },
        ]
    },
}


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def pod_with_dns() -> Iterator[str]:
    with temp_netns("skdns-node-") as node, temp_netns("skdns-pod-") as pod:
        h, p = unique_name("skdnh"), unique_name("skdnp")
        ip("-n", node, "link", "add", h, "type", "veth", "peer", "name", p, "netns", pod)
        ip("-n", node, "addr", "add", "10.244.1.1/24", "dev", h)
        ip("-n", node, "link", "set", h, "up")
        ip("-n", pod, "addr", "add", "10.244.1.2/24", "dev", p)
        ip("-n", pod, "link", "set", p, "up")
        ip("-n", pod, "route", "add", "default", "via", "10.244.1.1")
        prefix = ["ip", "netns", "exec", node]
        ensure_local_address(DNS_IP, prefix=prefix)
        ensure_local_address(DNS_IP, prefix=prefix)  # idempotent
        etc = Path("/etc/netns") / pod
        made_parent = not etc.parent.exists()
        etc.mkdir(parents=True)
        server = subprocess.Popen(
            [*prefix, sys.executable, "-c", SERVER, DNS_IP, str(REPO), json.dumps(OBJECTS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            (etc / "resolv.conf").write_text(
                f"nameserver {DNS_IP}\n"
                "search default.svc.cluster.local svc.cluster.local cluster.local\n"
                "options ndots:5 timeout:1 attempts:2\n"
            )
            assert server.stdout is not None
            assert server.stdout.readline().strip() == "ready"
            yield pod
        finally:
            server.kill()
            server.wait()
            shutil.rmtree(etc, ignore_errors=True)
            if made_parent:
                with contextlib.suppress(OSError):  # another test may use it now
                    etc.parent.rmdir()
            assert remove_local_address(DNS_IP, prefix=prefix)
            assert not remove_local_address(DNS_IP, prefix=prefix)


def getent(pod: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", pod, "getent", *args],
        capture_output=True,
        text=True,
        timeout=20,
    )


def addresses(out: str) -> set[str]:
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def test_pod_resolves_services_through_its_resolv_conf(pod_with_dns: str) -> None:
    pod = pod_with_dns
    # Short name through the search path (glibc, ndots:5).
    web = wait_for(lambda: getent(pod, "ahostsv4", "web"), timeout=10, message="web resolves")
    assert web.returncode == 0 and addresses(web.stdout) == {"10.43.0.20"}
    full = getent(pod, "ahostsv4", "web.default.svc.cluster.local")
    assert addresses(full.stdout) == {"10.43.0.20"}
    headless = getent(pod, "ahostsv4", "db.default")
    assert addresses(headless.stdout) == {"10.244.1.5", "10.244.2.6"}
    dashed = getent(pod, "ahostsv4", "10-244-9-9.default.pod.cluster.local")
    assert addresses(dashed.stdout) == {"10.244.9.9"}
    # Unknown names: NXDOMAIN for every search domain -> not found (exit 2).
    assert getent(pod, "ahostsv4", "nope").returncode == 2
