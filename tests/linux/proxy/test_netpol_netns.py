"""NetworkPolicy enforcement in a real kernel, inside namespaces of the test's own.

Topology (all made here, all removed afterwards):

    node netns N: bridge 10.244.1.1/24 ── web 10.244.1.2, client 10.244.1.3 (this node)
                  veth 10.244.2.1/24   ── remote 10.244.2.2 (a pod "on node-2", routed)
                  veth 10.244.3.1/24   ── stranger 10.244.3.2 (a pod "on node-2", routed)

Pods on the bridge talk bridged (br_netfilter), the others routed, as pods
of one node and of two nodes do. Each runs a TCP server on 8080 answering
its name. The enforcer runs in this process against a fake ApiClient and
applies its table with `ip netns exec N nft`; the host's rules are untouched.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agent.netpol.controller import NetpolSettings, NetworkPolicyController
from agent.netpol.nft import CommandNft
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.netns import temp_netns, unique_name
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.netns]

SERVER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[2])))
s.listen(64)
while True:
    c, peer = s.accept()
    try:
        c.sendall(sys.argv[1].encode())
    finally:
        c.close()
"""

CLIENT = r"""
import socket, sys
try:
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1)
    print(c.recv(64).decode())
except OSError as err:
    print(f"error {type(err).__name__}")
"""

HOLD = r"""
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
def echoed(word):
    c.sendall(word)
    try:
        return c.recv(64) == word
    except OSError:
        return False
print("connected" if echoed(b"first") else "lost", flush=True)
sys.stdin.readline()
print("echoed" if echoed(b"again") else "lost", flush=True)
"""

ECHO = r"""
import socket, sys, threading
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(8)
def echo(c):
    with c:
        while data := c.recv(64):
            c.sendall(data)
while True:
    threading.Thread(target=echo, args=(s.accept()[0],), daemon=True).start()
"""

PODS = {  # name: (ip, node, labels)
    "web": ("10.244.1.2", "node-1", {"app": "web"}),
    "client": ("10.244.1.3", "node-1", {"role": "client"}),
    "remote": ("10.244.2.2", "node-2", {"role": "client"}),
    "stranger": ("10.244.3.2", "node-2", {"role": "stranger"}),
}


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class Net:
    node: str
    pods: dict[str, str]  # pod -> netns

    def ask(self, src: str, dst: str, port: int = 8080) -> str:
        out = subprocess.run(
            ["ip", "netns", "exec", self.pods[src], sys.executable, "-c", CLIENT,
             PODS[dst][0], str(port)],
            check=True, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        return out.stdout.strip()


@pytest.fixture
def net() -> Iterator[Net]:
    servers: list[subprocess.Popen[bytes]] = []
    with (
        temp_netns("sknp-node-") as node,
        temp_netns("sknp-web-") as web,
        temp_netns("sknp-cli-") as cli,
        temp_netns("sknp-rem-") as rem,
        temp_netns("sknp-str-") as stranger,
    ):
        try:
            for key in ("net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1"):
                subprocess.run(["ip", "netns", "exec", node, "sysctl", "-q", "-w", key], check=True)
            br = unique_name("sknpbr")
            ip("-n", node, "link", "add", br, "type", "bridge")
            ip("-n", node, "addr", "add", "10.244.1.1/24", "dev", br)
            ip("-n", node, "link", "set", br, "up")
            pods = {"web": web, "client": cli, "remote": rem, "stranger": stranger}
            for name, pns in pods.items():
                addr = PODS[name][0]
                gw = addr.rsplit(".", 1)[0] + ".1"
                h, p = unique_name("sknph"), unique_name("sknpp")
                ip("-n", node, "link", "add", h, "type", "veth", "peer", "name", p, "netns", pns)
                if gw == "10.244.1.1":
                    ip("-n", node, "link", "set", h, "master", br)
                else:
                    ip("-n", node, "addr", "add", f"{gw}/24", "dev", h)
                ip("-n", node, "link", "set", h, "up")
                ip("-n", pns, "addr", "add", f"{addr}/24", "dev", p)
                ip("-n", pns, "link", "set", p, "up")
                ip("-n", pns, "route", "add", "default", "via", gw)
                for port in ("8080", "9090"):
                    servers.append(
                        subprocess.Popen(
                            ["ip", "netns", "exec", pns, sys.executable, "-c", SERVER, name, port]
                        )
                    )
            n = Net(node, pods)
            for name in pods:
                src = "client" if name != "client" else "web"
                wait_for(
                    functools.partial(lambda s, d: n.ask(s, d) == d, src, name),
                    timeout=15,
                    message=f"{name}'s server",
                )
            yield n
        finally:
            for proc in servers:
                proc.kill()
                proc.wait()


def pod_obj(name: str) -> dict[str, Any]:
    addr, node, labels = PODS[name]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}],
        },
        "status": {"phase": "Running", "podIP": addr},
    }


def netpol(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


@pytest.fixture
def api() -> FakeApiClient:
    api = FakeApiClient()
    api.create(
        "Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
    )
    for name in PODS:
        api.create("Pod", pod_obj(name), "default")
    return api


def enforcer(api: FakeApiClient, net: Net) -> NetworkPolicyController:
    ctl = NetworkPolicyController(
        api,
        "node-1",
        NetpolSettings(table=unique_name("sknp"), prepare_bridge=False, min_sync_interval=0.0),
        nft=CommandNft(["ip", "netns", "exec", net.node]),
    )
    ctl.start()
    return ctl


def synced_after(ctl: NetworkPolicyController, count: int) -> None:
    wait_for(lambda: ctl.syncs > count and ctl.last_error is None, timeout=15, message="sync")


def hooks(net: Net, ctl: NetworkPolicyController) -> list[str]:
    """The base chains of the enforcer's table (`ingress`, `egress`) in the kernel."""
    out = subprocess.run(
        ["ip", "netns", "exec", net.node, "nft", "list", "table", "inet", ctl.settings.table],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    found, chain = [], ""
    for line in out.splitlines():
        words = line.split()
        if words[:1] == ["chain"]:
            chain = words[1]
        elif "hook" in words:
            found.append(chain)
    return found


def answers(
    net: Net, pairs: list[tuple[str, str]], port: int = 8080
) -> dict[tuple[str, str], bool]:
    return {(s, d): net.ask(s, d, port) == d for s, d in pairs}


ALL = [(s, d) for s in PODS for d in PODS if s != d]


def test_default_deny_then_allow_by_label_both_directions(api: FakeApiClient, net: Net) -> None:
    ctl = enforcer(api, net)
    try:
        synced_after(ctl, 0)
        assert all(answers(net, ALL).values())  # no policy: everything talks
        assert hooks(net, ctl) == []  # ... and no packet passes a chain of ours

        # Default deny ingress for web: nobody reaches it, bridged or routed;
        # web still reaches others (and their replies come back: conntrack).
        n = ctl.syncs
        api.create(
            "NetworkPolicy",
            netpol("deny", {"podSelector": {"matchLabels": {"app": "web"}}}),
            "default",
        )
        synced_after(ctl, n)
        assert hooks(net, ctl) == ["ingress"]  # only the direction some pod is isolated in
        got = answers(net, ALL)
        assert not any(ok for (s, d), ok in got.items() if d == "web"), got
        assert all(ok for (s, d), ok in got.items() if d != "web"), got

        # Allow role=client on the named port only: client (same node) and
        # remote (routed) get in on 8080, not on 9090; stranger stays out.
        n = ctl.syncs
        allow = {
            "podSelector": {"matchLabels": {"app": "web"}},
            "ingress": [
                {"from": [{"podSelector": {"matchLabels": {"role": "client"}}}],
                 "ports": [{"port": "http"}]},
            ],
        }  # fmt: skip
        api.create("NetworkPolicy", netpol("allow-clients", allow), "default")
        synced_after(ctl, n)
        into_web = [(s, "web") for s in ("client", "remote", "stranger")]
        assert answers(net, into_web) == {
            ("client", "web"): True,
            ("remote", "web"): True,
            ("stranger", "web"): False,
        }
        assert not any(answers(net, into_web, port=9090).values())

        # Egress: web may only talk to remote; a new connection to client fails.
        n = ctl.syncs
        egress = {
            "podSelector": {"matchLabels": {"app": "web"}},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": "10.244.0.0/16", "except": ["10.244.1.0/24", "10.244.3.0/24"]}}]}],
        }  # fmt: skip
        api.create("NetworkPolicy", netpol("web-egress", egress), "default")
        synced_after(ctl, n)
        assert answers(net, [("web", "remote"), ("web", "client"), ("web", "stranger")]) == {
            ("web", "remote"): True,
            ("web", "client"): False,
            ("web", "stranger"): False,
        }
        # Replies to web's allowed clients still leave it (established).
        assert net.ask("client", "web") == "web"

        # Deleting the policies opens traffic again, without touching the pods.
        n = ctl.syncs
        for name in ("deny", "allow-clients", "web-egress"):
            api.delete("NetworkPolicy", name, "default")
        synced_after(ctl, n)
        assert all(answers(net, ALL).values())
        assert hooks(net, ctl) == []
    finally:
        ctl.stop()
        ctl.cleanup()


def test_rules_outlive_the_enforcer_until_replaced(api: FakeApiClient, net: Net) -> None:
    api.create(
        "NetworkPolicy", netpol("deny", {"podSelector": {"matchLabels": {"app": "web"}}}), "default"
    )
    first = enforcer(api, net)
    table = first.settings.table
    second: NetworkPolicyController | None = None
    try:
        synced_after(first, 0)
        first.stop()  # the agent stops: the table stays, web stays isolated
        assert net.ask("client", "web") != "web"
        # A connection opened while allowed survives a rule change (conntrack).
        api.delete("NetworkPolicy", "deny", "default")
        api.create(
            "NetworkPolicy",
            netpol("deny-later", {"podSelector": {"matchLabels": {"app": "web"}}}),
            "default",
        )
        second = NetworkPolicyController(
            api, "node-1",
            NetpolSettings(table=table, prepare_bridge=False, min_sync_interval=0.0),
            nft=CommandNft(["ip", "netns", "exec", net.node]),
        )  # fmt: skip
        second.start()
        synced_after(second, 0)
        assert net.ask("client", "web") != "web"
        assert net.ask("web", "client") == "client"
    finally:
        first.stop()
        if second is not None:
            second.stop()
        first.cleanup()
    out = subprocess.run(
        ["ip", "netns", "exec", net.node, "nft", "list", "tables"], capture_output=True, text=True
    )
    assert table not in out.stdout


def test_open_connection_survives_a_policy_that_denies_new_ones(
    api: FakeApiClient, net: Net
) -> None:
    """A connection opened while no policy existed (the table then hooks
    nothing) keeps talking both ways once a policy isolates its server:
    conntrack knew it all along, so it is established, not picked up as new."""
    ctl = enforcer(api, net)
    echo = subprocess.Popen(
        ["ip", "netns", "exec", net.pods["web"], sys.executable, "-c", ECHO, "9191"]
    )
    hold: subprocess.Popen[str] | None = None
    try:
        synced_after(ctl, 0)
        assert hooks(net, ctl) == []

        def held() -> subprocess.Popen[str] | None:
            proc = subprocess.Popen(
                ["ip", "netns", "exec", net.pods["remote"], sys.executable, "-c", HOLD, PODS["web"][0], "9191"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )  # fmt: skip
            assert proc.stdout is not None
            if proc.stdout.readline().strip() == "connected":
                return proc
            proc.kill()
            proc.wait()
            return None

        hold = wait_for(held, timeout=15, message="a connection to the echo server")
        assert hold is not None and hold.stdout is not None and hold.stdin is not None
        n = ctl.syncs
        api.create("NetworkPolicy", netpol("deny", {"podSelector": {}}), "default")
        synced_after(ctl, n)
        assert hooks(net, ctl) == ["ingress"]
        assert net.ask("remote", "web", 9090) != "web"  # new connections: dropped
        hold.stdin.write("\n")
        hold.stdin.flush()
        assert hold.stdout.readline().strip() == "echoed"  # the open one: still both ways
    finally:
        for proc in (hold, echo):
            if proc is not None:
                proc.kill()
                proc.wait()
        ctl.stop()
        ctl.cleanup()
