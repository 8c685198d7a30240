"""The service proxy's rules in a real kernel, inside namespaces of the test's own.

Topology (all namespaces made here, all removed afterwards):

    client netns C 192.168.77.2 ──veth── 192.168.77.1  node netns N
    pod netns P1 10.244.1.2     ──veth── 10.244.1.1    (iptables run here,
    pod netns P2 10.244.2.2     ──veth── 10.244.2.1     ip_forward on)

Each pod runs a tiny TCP server that answers "<name> <peer address>". The
proxy runs in this process against a fake ApiClient, applying its rules with
`ip netns exec N iptables-restore`; the host's own iptables are never touched.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agent.proxy.iptables import CommandIptables
from agent.proxy.proxy import ProxySettings, ServiceProxy
from tests.fakes.endpointslices import address, endpoint_slice
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.netns import temp_netns, unique_name
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.netns]

CLUSTER_IP = "10.43.0.20"
NODE_IP = "192.168.77.1"
NODE_PORT = 30080

SERVER = r"""
import socket, sys, threading
name = sys.argv[1]
def udp():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0", 8053))
    while True:
        data, peer = u.recvfrom(512)
        u.sendto(name.encode(), peer)
threading.Thread(target=udp, daemon=True).start()
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8080))
s.listen(64)
while True:
    c, peer = s.accept()
    try:
        c.sendall(f"{name} {peer[0]}".encode())
    finally:
        c.close()
"""

CLIENT = r"""
import json, socket, sys
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = []
for _ in range(count):
    try:
        c = socket.create_connection((host, port), timeout=2)
        data = b""
        while True:
            chunk = c.recv(256)
            if not chunk:
                break
            data += chunk
        c.close()
        out.append(data.decode())
    except OSError as err:
        out.append(f"error {type(err).__name__}")
print(json.dumps(out))
"""


UDP_CLIENT = r"""
import socket, sys
host, port, src = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
u.bind(("0.0.0.0", src))
u.settimeout(2)
u.sendto(b"?", (host, port))
try:
    print(u.recv(512).decode())
except OSError as err:
    print(f"error {type(err).__name__}")
"""


def udp_ask(netns: str, host: str, port: int, src: int) -> str:
    return subprocess.run(
        ["ip", "netns", "exec", netns, sys.executable, "-c", UDP_CLIENT, host, str(port), str(src)],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.strip()


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def connect(netns: str, host: str, port: int, count: int = 1) -> list[str]:
    out = subprocess.run(
        ["ip", "netns", "exec", netns, sys.executable, "-c", CLIENT, host, str(port), str(count)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    result: list[str] = json.loads(out)
    return result


def ns_iptables_save(netns: str) -> str:
    return subprocess.run(
        ["ip", "netns", "exec", netns, "iptables-save"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _answers(netns: str, addr: str, name: str) -> Callable[[], bool]:
    return lambda: connect(netns, addr, 8080)[0].startswith(name)


FOREIGN_RULES = """*nat
:OTHER-TOOL - [0:0]
:SKIFF-MQ-0123456789abcdef - [0:0]
-A PREROUTING -j OTHER-TOOL
-A OTHER-TOOL -d 10.99.0.1/32 -j RETURN
-A POSTROUTING -s 10.244.9.9/32 -j SKIFF-MQ-0123456789abcdef
-A SKIFF-MQ-0123456789abcdef -j MASQUERADE
COMMIT
*filter
:OTHER-TOOL - [0:0]
-A FORWARD -j OTHER-TOOL
-A OTHER-TOOL -s 10.99.0.1/32 -j ACCEPT
COMMIT
"""

FOREIGN_CLEANUP = """*nat
-D PREROUTING -j OTHER-TOOL
-D POSTROUTING -s 10.244.9.9/32 -j SKIFF-MQ-0123456789abcdef
-F OTHER-TOOL
-X OTHER-TOOL
-F SKIFF-MQ-0123456789abcdef
-X SKIFF-MQ-0123456789abcdef
COMMIT
*filter
-D FORWARD -j OTHER-TOOL
-F OTHER-TOOL
-X OTHER-TOOL
COMMIT
"""


@dataclass
class Net:
    node: str
    client: str
    pods: dict[str, str]  # pod name -> netns
    pod_ips: dict[str, str]


@pytest.fixture
def net() -> Iterator[Net]:
    servers: list[subprocess.Popen[bytes]] = []
    with (
        temp_netns("skpx-node-") as node,
        temp_netns("skpx-cli-") as client,
        temp_netns("skpx-p1-") as p1,
        temp_netns("skpx-p2-") as p2,
    ):
        try:
            subprocess.run(
                ["ip", "netns", "exec", node, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"],
                check=True,
            )
            # client <-> node
            a, b = unique_name("skpxa"), unique_name("skpxb")
            ip("-n", node, "link", "add", a, "type", "veth", "peer", "name", b, "netns", client)
            ip("-n", node, "addr", "add", f"{NODE_IP}/24", "dev", a)
            ip("-n", node, "link", "set", a, "up")
            ip("-n", client, "addr", "add", "192.168.77.2/24", "dev", b)
            ip("-n", client, "link", "set", b, "up")
            ip("-n", client, "route", "add", "10.43.0.0/16", "via", NODE_IP)
            # The node's default route (kube-proxy relies on one for cluster IPs).
            ip("-n", node, "route", "add", "default", "via", "192.168.77.2")
            pods = {"pod1": p1, "pod2": p2}
            pod_ips = {}
            for i, (name, pns) in enumerate(pods.items(), start=1):
                h, p = unique_name("skpxh"), unique_name("skpxp")
                ip("-n", node, "link", "add", h, "type", "veth", "peer", "name", p, "netns", pns)
                ip("-n", node, "addr", "add", f"10.244.{i}.1/24", "dev", h)
                ip("-n", node, "link", "set", h, "up")
                ip("-n", pns, "addr", "add", f"10.244.{i}.2/24", "dev", p)
                ip("-n", pns, "link", "set", p, "up")
                ip("-n", pns, "route", "add", "default", "via", f"10.244.{i}.1")
                pod_ips[name] = f"10.244.{i}.2"
                servers.append(
                    subprocess.Popen(
                        ["ip", "netns", "exec", pns, sys.executable, "-c", SERVER, name]
                    )
                )
            for name, addr in pod_ips.items():
                wait_for(_answers(node, addr, name), timeout=15, message=f"{name}'s server")
            yield Net(node, client, pods, pod_ips)
        finally:
            for proc in servers:
                proc.kill()
                proc.wait()


def service(affinity: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "type": "NodePort",
        "clusterIP": CLUSTER_IP,
        "selector": {"app": "web"},
        "ports": [
            {
                "name": "http",
                "port": 80,
                "targetPort": 8080,
                "protocol": "TCP",
                "nodePort": NODE_PORT,
            },
            {
                "name": "dns",
                "port": 53,
                "targetPort": 8053,
                "protocol": "UDP",
                "nodePort": NODE_PORT,
            },
        ],
    }
    if affinity:
        spec["sessionAffinity"] = "ClientIP"
    return {"metadata": {"name": "web", "namespace": "default"}, "spec": spec}


def endpoints(pod_ips: list[str]) -> dict[str, Any]:
    """The Service's EndpointSlice (what the proxy reads)."""
    return endpoint_slice(
        "web",
        [address(a, node="node1") for a in pod_ips],
        [
            {"name": "http", "port": 8080, "protocol": "TCP"},
            {"name": "dns", "port": 8053, "protocol": "UDP"},
        ],
    )


def names(replies: list[str]) -> set[str]:
    return {r.split()[0] for r in replies}


def test_cluster_ip_nodeport_affinity_and_cleanup(net: Net) -> None:
    api = FakeApiClient()
    api.create("Service", service())
    api.create("EndpointSlice", endpoints(list(net.pod_ips.values())))
    ipt = CommandIptables(prefix=["ip", "netns", "exec", net.node])
    proxy = ServiceProxy(
        api,
        "node1",
        ProxySettings(cluster_cidr="10.244.0.0/16", min_sync_interval=0.05),
        iptables=ipt,
    )
    # Chains that are not ours (another tool's, the CNI plugin's) must survive.
    ipt.restore(FOREIGN_RULES)
    proxy.start()
    try:
        wait_for(proxy.has_synced, timeout=10, message="first sync")
        assert "SKIFF-SERVICES" in ns_iptables_save(net.node)

        # Cluster IP from the node itself, balanced over both endpoints.
        replies = connect(net.node, CLUSTER_IP, 80, 40)
        assert names(replies) == {"pod1", "pod2"}, replies

        # Cluster IP from a pod, including hairpin back to itself (masqueraded).
        replies = connect(net.pods["pod1"], CLUSTER_IP, 80, 30)
        assert names(replies) == {"pod1", "pod2"}, replies
        hairpin = [r for r in replies if r.startswith("pod1")]
        assert all(r.split()[1] == "10.244.1.1" for r in hairpin), hairpin

        # Cluster IP from outside the pod network (routed through the node).
        assert names(connect(net.client, CLUSTER_IP, 80, 10)) <= {"pod1", "pod2"}

        # NodePort from another host, masqueraded to the node's address.
        replies = connect(net.client, NODE_IP, NODE_PORT, 20)
        assert names(replies) == {"pod1", "pod2"}, replies
        assert all(r.split()[1].startswith("10.244.") for r in replies), replies

        # NodePort on localhost (route_localnet).
        assert names(connect(net.node, "127.0.0.1", NODE_PORT, 5)) <= {"pod1", "pod2"}

        # UDP through the cluster IP; find a client port whose flow went to pod2.
        src = next(p for p in range(40000, 40060) if udp_ask(net.node, CLUSTER_IP, 53, p) == "pod2")
        assert udp_ask(net.node, CLUSTER_IP, 53, src) == "pod2"  # the flow sticks (conntrack)

        # Endpoint removed -> within a second the rules no longer name pod2.
        t0 = time.monotonic()
        api.update("EndpointSlice", endpoints([net.pod_ips["pod1"]]))
        wait_for(
            lambda: net.pod_ips["pod2"] not in ns_iptables_save(net.node),
            timeout=5,
            interval=0.01,
            message="pod2 gone from the rules",
        )
        propagation = time.monotonic() - t0
        print(f"endpoint change -> rules in place: {propagation * 1000:.0f} ms")
        assert propagation < 1.0
        assert names(connect(net.node, CLUSTER_IP, 80, 10)) == {"pod1"}
        # The UDP flow that went to pod2 was deleted from conntrack: now pod1.
        assert udp_ask(net.node, CLUSTER_IP, 53, src) == "pod1"

        # Session affinity: every connection of one client sticks to one pod.
        api.update("EndpointSlice", endpoints(list(net.pod_ips.values())))
        svc = api.get("Service", "web", "default")
        svc["spec"]["sessionAffinity"] = "ClientIP"
        api.update("Service", svc)
        wait_for(
            lambda: "--rcheck" in ns_iptables_save(net.node), timeout=5, message="affinity rules"
        )
        assert len(names(connect(net.node, CLUSTER_IP, 80, 20))) == 1

        # No endpoints: REJECT (refused at once, not a timeout).
        api.update("EndpointSlice", endpoints([]))
        wait_for(
            lambda: connect(net.node, CLUSTER_IP, 80)[0] == "error ConnectionRefusedError",
            timeout=5,
            message="REJECT for a service without endpoints",
        )
        assert connect(net.client, NODE_IP, NODE_PORT)[0] == "error ConnectionRefusedError"
    finally:
        proxy.stop()
    saved = ns_iptables_save(net.node)
    for line in FOREIGN_RULES.splitlines():
        if line.startswith("-A "):
            assert line.split(" -m comment")[0] in saved, (line, saved)
    ipt.restore(FOREIGN_CLEANUP)
    saved = ns_iptables_save(net.node)
    assert "SKIFF" not in saved and "OTHER-TOOL" not in saved, saved
