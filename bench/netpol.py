"""NetworkPolicy enforcement: rule sync time, connection setup and throughput cost.

`sudo .venv/bin/python -m bench.netpol [--policies 1000] [--connects 2000] [--megabytes 256]`

In network namespaces of its own (removed afterwards): a node namespace
with a bridge and two pod namespaces on it (server and client, bridged as
two pods of one node are). It measures

- the agent's sync for N policies: parsing them, planning the node's table
  and applying it with one `nft -f` (the whole table replaced), with N
  policies in 100 namespaces over 2,000 pods cluster-wide;
- TCP connection setup (connect() returning) client -> server, p50/p99 of
  `--connects` connections, and bulk throughput (`--megabytes` sent over
  one connection, best of three), first with bridged traffic bypassing
  netfilter (`bridge-nf-call-iptables` 0: the node before the agent turned
  br_netfilter on), then with it on and no policy, with N policies of which
  one selects the server and allows the client, and with N policies that
  all select the server (one of them allowing the client: the worst case,
  each new connection walks every policy's chain).

A table, then one JSON line of figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

from agent.netpol.nft import CommandNft
from agent.netpol.plan import build
from agent.netpol.policy import namespace_labels, parse_policy, pod_info
from bench.stats import pctl
from tests.harness.netns import temp_netns, unique_name

SERVER = r"""
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8080)); s.listen(1024)
while True:
    c, _ = s.accept(); c.close()
"""

CLIENT = r"""
import socket, sys, time, json
out = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    c = socket.create_connection((sys.argv[1], 8080), timeout=5)
    out.append(time.perf_counter() - t)
    c.close()
print(json.dumps(out))
"""


SINK = r"""
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8081)); s.listen(16)
while True:
    c, _ = s.accept()
    n = 0
    while True:
        b = c.recv(1 << 20)
        if not b:
            break
        n += len(b)
    c.sendall(str(n).encode()); c.close()
"""

BULK = r"""
import socket, sys, time, json
size, best = int(sys.argv[2]) << 20, []
chunk = b"x" * (1 << 20)
for _ in range(3):
    c = socket.create_connection((sys.argv[1], 8081), timeout=30)
    t = time.perf_counter()
    for _ in range(size >> 20):
        c.sendall(chunk)
    c.shutdown(socket.SHUT_WR)
    got = int(c.recv(64))
    best.append(time.perf_counter() - t)
    c.close()
    assert got == size, got
print(json.dumps(size / min(best) / 1e6))
"""


def pod(name: str, ns: str, ip: str, node: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"nodeName": node},
        "status": {"phase": "Running", "podIP": ip},
    }


def world(n_policies: int, all_select_server: bool) -> tuple[list[Any], list[Any], dict[str, Any]]:
    pods = [pod("server", "default", "10.244.1.2", "node-1", {"app": "server"}),
            pod("client", "default", "10.244.1.3", "node-1", {"app": "client"})]  # fmt: skip
    for i in range(2000):
        pods.append(pod(f"p{i}", f"ns{i % 100}", f"10.244.{2 + i // 250}.{2 + i % 250}",
                        f"node-{2 + i % 50}", {"app": f"a{i % 20}", "tier": f"t{i % 7}"}))  # fmt: skip
    policies = []
    for i in range(n_policies - 1):
        ns = "default" if all_select_server else f"ns{i % 100}"
        sel = {"app": "server"} if all_select_server else {"app": f"a{i % 20}"}
        policies.append({"metadata": {"name": f"pol{i}", "namespace": ns}, "spec": {
            "podSelector": {"matchLabels": sel},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"tier": f"t{i % 7}"}}},
                                  {"namespaceSelector": {"matchLabels": {"team": f"x{i % 9}"}}}],
                         "ports": [{"port": 8080 + i % 3}]}],
        }})  # fmt: skip
    if n_policies:
        policies.append({"metadata": {"name": "allow-client", "namespace": "default"}, "spec": {
            "podSelector": {"matchLabels": {"app": "server"}},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "client"}}}]}],
        }})  # fmt: skip
    spaces = namespace_labels(
        [{"metadata": {"name": f"ns{i}", "labels": {"team": f"x{i % 9}"}}} for i in range(100)]
    )
    return policies, pods, spaces


def sync_once(nft: CommandNft, table: str, n: int, all_select: bool) -> dict[str, float]:
    policies, pods, spaces = world(n, all_select)
    t0 = time.perf_counter()
    parsed = [parse_policy(p) for p in policies]
    infos = [i for i in (pod_info(p) for p in pods) if i is not None]
    plan = build(parsed, infos, spaces, "node-1", table)
    text = plan.text()
    t1 = time.perf_counter()
    nft.apply(text)
    t2 = time.perf_counter()
    return {"plan_s": t1 - t0, "apply_s": t2 - t1, "total_s": t2 - t0, "lines": text.count("\n")}


def connects(client_ns: str, count: int) -> list[float]:
    out = subprocess.run(
        ["ip", "netns", "exec", client_ns, sys.executable, "-c", CLIENT, "10.244.1.2", str(count)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    result: list[float] = json.loads(out.stdout)
    return result


def throughput(client_ns: str, megabytes: int) -> float:
    """MB/s client -> server over one connection, best of three."""
    out = subprocess.run(
        ["ip", "netns", "exec", client_ns, sys.executable, "-c", BULK, "10.244.1.2", str(megabytes)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return float(json.loads(out.stdout))


def bridge_netfilter(node_ns: str, on: bool) -> None:
    """br_netfilter's per-namespace switch for bridged IPv4 (what the agent turns on)."""
    subprocess.run(
        ["ip", "netns", "exec", node_ns, "sysctl", "-qw",
         f"net.bridge.bridge-nf-call-iptables={int(on)}"],
        check=True, capture_output=True,
    )  # fmt: skip


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.netpol")
    p.add_argument("--policies", type=int, default=1000)
    p.add_argument("--connects", type=int, default=2000)
    p.add_argument("--megabytes", type=int, default=256)
    args = p.parse_args(argv)
    figures: dict[str, float] = {}
    with (
        temp_netns("sknpb-node-") as node,
        temp_netns("sknpb-srv-") as srv,
        temp_netns("sknpb-cli-") as cli,
    ):
        br = unique_name("sknpbbr")
        ip("-n", node, "link", "add", br, "type", "bridge")
        ip("-n", node, "link", "set", br, "up")
        for ns, addr in ((srv, "10.244.1.2"), (cli, "10.244.1.3")):
            h, q = unique_name("sknpbh"), unique_name("sknpbp")
            ip("-n", node, "link", "add", h, "type", "veth", "peer", "name", q, "netns", ns)
            ip("-n", node, "link", "set", h, "master", br, "up")
            ip("-n", ns, "addr", "add", f"{addr}/24", "dev", q)
            ip("-n", ns, "link", "set", q, "up")
        servers = [
            subprocess.Popen(["ip", "netns", "exec", srv, sys.executable, "-c", code])
            for code in (SERVER, SINK)
        ]
        try:
            nft = CommandNft(["ip", "netns", "exec", node])
            table = unique_name("sknpb")
            bridge_netfilter(node, False)
            connects(cli, 50)  # warm up (ARP, bytecode)
            lat = connects(cli, args.connects)
            off = (pctl(lat, 0.5) * 1e3, pctl(lat, 0.99) * 1e3, throughput(cli, args.megabytes))
            bridge_netfilter(node, True)
            rows = []
            for label, n, worst in (
                ("no policy", 0, False),
                (f"{args.policies} policies, 1 selects the server", args.policies, False),
                (f"{args.policies} policies, all select the server", args.policies, True),
            ):
                sync = sync_once(nft, table, n, worst)
                lat = connects(cli, args.connects)
                mbps = throughput(cli, args.megabytes)
                rows.append((label, sync, pctl(lat, 0.5) * 1e3, pctl(lat, 0.99) * 1e3, mbps))
            resync = sync_once(nft, table, args.policies, False)  # replacing a full table
        finally:
            for server in servers:
                server.kill()
                server.wait()
    print(f"{'case':<42} {'plan s':>8} {'nft -f s':>9} {'lines':>7} {'connect p50 ms':>15}"
          f" {'p99 ms':>8} {'MB/s':>7}")  # fmt: skip
    print(f"{'br_netfilter off, no table':<42} {'':>8} {'':>9} {'':>7} {off[0]:>15.3f}"
          f" {off[1]:>8.3f} {off[2]:>7.0f}")  # fmt: skip
    for label, sync, p50, p99, mbps in rows:
        print(f"{label:<42} {sync['plan_s']:>8.3f} {sync['apply_s']:>9.3f} {int(sync['lines']):>7}"
              f" {p50:>15.3f} {p99:>8.3f} {mbps:>7.0f}")  # fmt: skip
    print(f"replacing the {args.policies}-policy table: {resync['total_s']:.3f} s")
    figures = {
        "connect_p50_ms_bridge_nf_off": round(off[0], 4),
        "connect_p99_ms_bridge_nf_off": round(off[1], 4),
        "mbps_bridge_nf_off": round(off[2], 1),
        "mbps_0": round(rows[0][4], 1),
        "mbps_1000_all_select": round(rows[2][4], 1),
        "sync_s_1000": round(rows[1][1]["total_s"], 4),
        "sync_worst_s_1000": round(rows[2][1]["total_s"], 4),
        "resync_s_1000": round(resync["total_s"], 4),
        "connect_p50_ms_0": round(rows[0][2], 4),
        "connect_p99_ms_0": round(rows[0][3], 4),
        "connect_p99_ms_1000": round(rows[1][3], 4),
        "connect_p99_ms_1000_all_select": round(rows[2][3], 4),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
