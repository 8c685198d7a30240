"""Issue 31's NetworkPolicy variants with live traffic, and a Local
Service keeping the client's address: shared by `skiff up`
(tests/e2e/agent) and the 3-node netns cluster (tests/e2e/cluster).

Each variant is a policy on a web pod and a table of connections that must
be allowed or denied once it is in force. A case first waits until every
connection its table denies is open (so a denial seen afterwards is the
policy's doing), then creates the policy and waits until the whole table
holds, then deletes the policy again.

TCP goes through busybox's `nc` inside the pods. busybox has no UDP or SCTP
tool, so those run in the pods' network namespaces (from the runtime's
sandbox status): a Python echo server in web's, a Python client in the
client's; the packets take the pods' own interfaces, addresses and rules.
SCTP needs the kernel's sctp module; its test skips, saying so, without it.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tests.e2e.netcheck import Object, Scene, node_addresses, pod, running, serve, service
from tests.harness.wait import wait_for

NS_A, NS_B = "np-a", "np-b"
UDP_PORT = 5353

UDP_SERVER = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
while True:
    data, peer = s.recvfrom(512)
    s.sendto(b"pong " + data, peer)
"""

UDP_CLIENT = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1.5)
s.sendto(b"ping", (sys.argv[1], int(sys.argv[2])))
try:
    data, _ = s.recvfrom(512)
except OSError:
    sys.exit(1)
sys.exit(0 if data == b"pong ping" else 2)
"""


SCTP_PORT = 7777

SCTP_SERVER = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(8)
while True:
    c, _ = s.accept()
    c.sendall(b"pong " + c.recv(512))
    c.close()
"""

SCTP_CLIENT = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP)
s.settimeout(1.5)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    s.sendall(b"ping")
    data = s.recv(512)
except OSError:
    sys.exit(1)
sys.exit(0 if data == b"pong ping" else 2)
"""


def sctp_supported() -> bool:
    """Whether this kernel has SCTP (a module some kernels leave out)."""
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP).close()
    except OSError:
        return False
    return True


def sandbox_netns(scene: Scene, p: Object) -> str:
    """The network namespace path of a running pod, from its sandbox status."""
    assert scene.cri_of is not None, "this scene cannot reach the runtime"
    cri = scene.cri_of(p["spec"]["nodeName"])
    try:
        meta = p["metadata"]
        labels = {"io.kubernetes.pod.name": meta["name"],
                  "io.kubernetes.pod.namespace": meta["namespace"],
                  "io.kubernetes.pod.uid": meta["uid"]}  # fmt: skip
        sandboxes = [s for s in cri.list_pod_sandboxes(labels) if s.state == 0]  # SANDBOX_READY
        assert sandboxes, f"no ready sandbox for {meta['namespace']}/{meta['name']}"
        info = cri.pod_sandbox_status(sandboxes[0].id, verbose=True).info["info"]
        return str(json.loads(info)["netns"])
    finally:
        cri.close()


@contextlib.contextmanager
def echo_server(netns: str, program: str, port: int) -> Iterator[None]:
    """An echo server (UDP_SERVER, SCTP_SERVER) in `netns` while the block runs."""
    proc = subprocess.Popen(["nsenter", f"--net={netns}", sys.executable, "-c", program, str(port)])
    try:
        yield
    finally:
        proc.kill()  # the pid this test started
        proc.wait(timeout=10)


@dataclass
class Peers:
    scene: Scene
    pods: dict[str, Object]
    netns: dict[str, str]

    def ip(self, name: str) -> str:
        return str(self.pods[name]["status"]["podIP"])

    def tcp(self, src: str, dst: str, port: int) -> bool:
        cmd = f"echo | timeout 2 nc {self.ip(dst)} {port} >/dev/null 2>&1"
        return self.scene.exec_in(self.pods[src], ["sh", "-c", cmd]) == 0

    def by_program(self, client: str, src: str, dst: str, port: int) -> bool:
        argv = ["nsenter", f"--net={self.netns[src]}", sys.executable, "-c", client,
                self.ip(dst), str(port)]  # fmt: skip
        return subprocess.run(argv, check=False, timeout=20).returncode == 0


# (source pod, protocol, port) -> allowed?
Table = dict[tuple[str, str, int], bool]


def holds(peers: Peers, table: Table, dst: str = "web") -> Callable[[], bool]:
    """A wait condition: every connection of `table` is as it says; the
    first one that is not stays as the exception a timeout shows."""

    def check() -> bool:
        for (src, proto, port), want in table.items():
            if proto == "TCP":
                got = peers.tcp(src, dst, port)
            else:
                client = UDP_CLIENT if proto == "UDP" else SCTP_CLIENT
                got = peers.by_program(client, src, dst, port)
            if got != want:
                verb = "allowed" if got else "denied"
                raise AssertionError(f"{src} -> {dst} {proto}/{port} {verb}")
        return True

    return check


def web_policy(name: str, ingress: list[Object]) -> Object:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": NS_A},
        "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "ingress": ingress},
    }


def run_case(peers: Peers, policies: list[Object], table: Table, dst: str = "web") -> None:
    scene = peers.scene
    opened = {k: True for k, allowed in table.items() if not allowed}
    wait_for(holds(peers, opened, dst), timeout=60, interval=0.5,
             message=f"open before {[p['metadata']['name'] for p in policies]}")  # fmt: skip
    for p in policies:
        scene.api.create("NetworkPolicy", p, p["metadata"]["namespace"])
    try:
        wait_for(holds(peers, table, dst), timeout=60, interval=0.5,
                 message=f"in force: {[p['metadata']['name'] for p in policies]}")  # fmt: skip
    finally:
        for p in policies:
            scene.api.delete("NetworkPolicy", p["metadata"]["name"], p["metadata"]["namespace"])


def web_pod(scene: Scene, node: str) -> Object:
    """httpd on :80 (port name http) and :8080 (port name alt)."""
    p = pod(scene, "web", {"app": "web"}, node, f"{serve('web')} && httpd -p 8080 -h /w", NS_A)
    p["spec"]["containers"][0]["ports"] = [
        {"name": "http", "containerPort": 80, "protocol": "TCP"},
        {"name": "alt", "containerPort": 8080, "protocol": "TCP"},
    ]
    return p


def setup_peers(scene: Scene) -> Peers:
    for ns, team in ((NS_A, "a"), (NS_B, "b")):
        scene.create("Namespace", {"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": ns, "labels": {"team": team}}})  # fmt: skip
    scene.create("Pod", web_pod(scene, scene.node(0)), NS_A)
    members = {"ca": (NS_A, {"role": "client"}, 1), "cb": (NS_B, {"role": "client"}, 2),
               "cx": (NS_B, {"role": "other"}, 1)}  # fmt: skip
    for name, (ns, labels, i) in members.items():
        scene.create("Pod", pod(scene, name, labels, scene.node(i), serve(name), ns), ns)
    hn = pod(scene, "hn", {"role": "client"}, scene.node(1), "true", NS_A)
    hn["spec"]["hostNetwork"] = True
    scene.create("Pod", hn, NS_A)
    where = {"web": NS_A, "hn": NS_A} | {n: m[0] for n, m in members.items()}
    pods = {name: running(scene.api, name, ns) for name, ns in where.items()}
    netns = {n: sandbox_netns(scene, pods[n]) for n in ("web", "ca", "cb")}
    return Peers(scene, pods, netns)


def check_policy_variants(scene: Scene) -> None:
    """namespaceSelector, namespaceSelector with podSelector, ipBlock with
    except, a named port, endPort, UDP, and a host-network pod that no
    policy governs, each with live connections."""
    peers = setup_peers(scene)
    team_b = {"namespaceSelector": {"matchLabels": {"team": "b"}}}
    with echo_server(peers.netns["web"], UDP_SERVER, UDP_PORT):
        run_case(
            peers,
            [web_policy("from-team-b", [{"from": [team_b]}])],
            {("ca", "TCP", 80): False, ("cb", "TCP", 80): True, ("cx", "TCP", 80): True},
        )
        both = team_b | {"podSelector": {"matchLabels": {"role": "client"}}}
        run_case(
            peers,
            [web_policy("team-b-clients", [{"from": [both]}])],
            {("ca", "TCP", 80): False, ("cb", "TCP", 80): True, ("cx", "TCP", 80): False},
        )
        block = {"ipBlock": {"cidr": "0.0.0.0/0", "except": [f"{peers.ip('cb')}/32"]}}
        run_case(
            peers,
            [web_policy("all-but-cb", [{"from": [block]}])],
            {("ca", "TCP", 80): True, ("cb", "TCP", 80): False, ("cx", "TCP", 80): True},
        )
        run_case(
            peers,
            [web_policy("named-port", [{"ports": [{"port": "alt"}]}])],
            {("ca", "TCP", 80): False, ("ca", "TCP", 8080): True},
        )
        ranged = [{"protocol": "TCP", "port": 8000, "endPort": 8100}]
        run_case(
            peers,
            [web_policy("port-range", [{"ports": ranged}])],
            {("ca", "TCP", 80): False, ("ca", "TCP", 8080): True, ("cb", "TCP", 8080): True},
        )
        udp_only = [{"protocol": "UDP", "port": UDP_PORT}]
        run_case(peers, [web_policy("udp-only", [{"ports": udp_only}])],
                 {("ca", "UDP", UDP_PORT): True, ("cb", "UDP", UDP_PORT): True,
                  ("ca", "TCP", 80): False})  # fmt: skip
        tcp_only = [{"protocol": "TCP", "port": UDP_PORT}, {"protocol": "TCP", "port": 80}]
        run_case(
            peers,
            [web_policy("tcp-only", [{"ports": tcp_only}])],
            {("ca", "UDP", UDP_PORT): False, ("ca", "TCP", 80): True},
        )
    # A deny-all in np-a cuts its pods' egress, but not the host-network
    # pod's: its traffic is the node's, which policies do not govern.
    deny = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "deny-all", "namespace": NS_A},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}}  # fmt: skip
    run_case(peers, [deny], {("ca", "TCP", 80): False, ("hn", "TCP", 80): True}, dst="cx")


# ---- externalTrafficPolicy: Local -------------------------------------------------------

ECHO_IP = (
    "mkdir -p /w/cgi-bin && printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\n"
    "echo $REMOTE_ADDR\\n' > /w/cgi-bin/ip && chmod +x /w/cgi-bin/ip && httpd -p 80 -h /w"
)


def remote_addr(ip: str, port: int) -> tuple[str, str]:
    """(the address the backend saw, the address this client sent from)."""
    conn = http.client.HTTPConnection(ip, port, timeout=5)
    try:
        conn.request("GET", "/cgi-bin/ip")
        ours = conn.sock.getsockname()[0]  # before the response, which may close it
        resp = conn.getresponse()
        body = resp.read().decode(errors="replace").strip()
        assert resp.status == 200, f"{ip}:{port} answered {resp.status}: {body}"
        # busybox httpd listens on IPv6 and names IPv4 peers [::ffff:a.b.c.d]
        seen = str(ipaddress.ip_address(body.strip("[]")))
        mapped = ipaddress.ip_address(seen)
        if isinstance(mapped, ipaddress.IPv6Address) and mapped.ipv4_mapped is not None:
            seen = str(mapped.ipv4_mapped)
        return seen, ours
    finally:
        conn.close()


def check_local_keeps_source(scene: Scene, port: int, client_outside: bool) -> None:
    """A LoadBalancer Service with externalTrafficPolicy Local. A client
    outside the nodes is seen by the backend with its own address on the
    node that runs it; where the cluster has another node, that node (no
    local endpoint) does not answer, and a Cluster Service through it hides
    the client's address. A client on the node itself is answered (its
    traffic is masqueraded, as kube-proxy does: it has no address worth
    keeping)."""
    api = scene.api
    scene.create("Pod", pod(scene, "echoip", {"app": "echoip"}, scene.node(0), ECHO_IP), "default")
    local = service("echoip-local", port, {"app": "echoip"}, type="LoadBalancer",
                    externalTrafficPolicy="Local")  # fmt: skip
    scene.create("Service", local, "default")
    running(api, "echoip", "default")
    home = node_addresses(api, [scene.node(0)])[0]

    def seen_is_ours() -> bool:
        try:
            seen, ours = remote_addr(home, port)
        except OSError as err:
            raise AssertionError(f"no answer: {err!r}") from err
        if client_outside:
            assert seen == ours, f"the backend saw {seen}, the client is {ours}"
        return True

    wait_for(seen_is_ours, timeout=60, interval=0.3, message=f"Local Service on {home}:{port}")
    if len(scene.nodes) < 2:
        return
    # Through another node: a Cluster Service answers, hiding the client's
    # address (once it does, that node's proxy has both Services) ...
    away = node_addresses(api, [scene.node(1)])[0]
    cluster_port = port + 1
    scene.create("Service", service("echoip-cluster", cluster_port, {"app": "echoip"},
                                    type="LoadBalancer"), "default")  # fmt: skip

    def hidden() -> bool:
        try:
            seen, ours = remote_addr(away, cluster_port)
        except OSError as err:
            raise AssertionError(f"no answer: {err!r}") from err
        assert seen != ours, "a Cluster Service through another node kept the address"
        return True

    wait_for(hidden, timeout=60, interval=0.3, message=f"Cluster Service on {away}:{cluster_port}")
    # ... and the Local one does not: that node has no endpoint of its own.
    with contextlib.suppress(OSError):
        got = remote_addr(away, port)
        raise AssertionError(f"{away} has no local endpoint but answered {got}")


def check_sctp_policy(scene: Scene) -> None:
    """An SCTP port allowed, TCP on the same pod denied, then the reverse."""
    peers = setup_peers(scene)
    with echo_server(peers.netns["web"], SCTP_SERVER, SCTP_PORT):
        sctp_only = [{"protocol": "SCTP", "port": SCTP_PORT}]
        run_case(peers, [web_policy("sctp-only", [{"ports": sctp_only}])],
                 {("ca", "SCTP", SCTP_PORT): True, ("ca", "TCP", 80): False})  # fmt: skip
        run_case(peers, [web_policy("tcp-80", [{"ports": [{"protocol": "TCP", "port": 80}]}])],
                 {("ca", "SCTP", SCTP_PORT): False, ("ca", "TCP", 80): True})  # fmt: skip
