"""Pods on different nodes reach each other, routed host-gw or over VXLAN.

Three "node" namespaces are joined by veth pairs to a bridge inside a
fourth, "switch" namespace (so nothing touches the root namespace). Each
node has its own pod bridge and pod subnet; skiff-cni on each node gets the
same peer list.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from runtime.cni.routes import vtep_mac
from tests.harness.netns import netns_path, temp_netns, unique_name
from tests.linux.cni.helpers import (
    REF_BIN,
    bridge_conf,
    in_netns,
    ip_json,
    ping,
    run_plugin,
    tcp_get,
    tcp_server,
)

pytestmark = [pytest.mark.root, pytest.mark.netns]

NODE_NET = "10.250.{x}.{n}"  # nodes' own addresses on the test switch


def _ip(*args: str, netns: str) -> None:
    subprocess.run(["ip", "-n", netns, *args], check=True, capture_output=True)


@pytest.fixture
def cluster() -> Iterator[tuple[str, list[str]]]:
    """(switch netns, three node netns) on 10.250.9.0/24."""
    with ExitStack() as stack:
        switch = stack.enter_context(temp_netns("skcni-sw-"))
        _ip("link", "add", "sw0", "type", "bridge", netns=switch)
        _ip("link", "set", "sw0", "up", netns=switch)
        nodes = []
        for n in range(1, 4):
            node = stack.enter_context(temp_netns(f"skcni-n{n}-"))
            port = unique_name("swp", 12)
            _ip(
                "link",
                "add",
                port,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                node,
                netns=switch,
            )
            _ip("link", "set", port, "master", "sw0", "up", netns=switch)
            _ip("addr", "add", f"10.250.9.{n}/24", "dev", "eth0", netns=node)
            _ip("link", "set", "eth0", "up", netns=node)
            nodes.append(node)
        yield switch, nodes


@pytest.mark.parametrize("mode", ["host-gw", "vxlan"])
def test_pods_on_different_nodes_talk(
    mode: str, cluster: tuple[str, list[str]], cni_bin: Path, tmp_path: Path
) -> None:
    _, nodes = cluster
    x = 10 if mode == "host-gw" else 20
    peers = [{"nodeIP": f"10.250.9.{n}", "podCIDR": f"10.251.{x + n}.0/24"} for n in range(1, 4)]
    backend: dict[str, Any] = {"type": mode, "peers": peers}
    if mode == "vxlan":
        backend.update(vni=42, port=4789)
    pods: list[str] = []
    ips: list[str] = []
    confs: list[dict[str, Any]] = []
    path = f"{cni_bin}:{REF_BIN}"
    with ExitStack() as stack:
        for n, node in enumerate(nodes, start=1):
            pod = stack.enter_context(temp_netns(f"skcni-p{n}-"))
            conf = bridge_conf(
                tmp_path / f"n{n}",
                f"10.251.{x + n}.0/24",
                backend=backend,
                mtu=1500,  # what the agent writes for either backend
            )
            conf["name"] = "cluster"
            if n == 2:
                conf["runtimeConfig"] = {
                    "portMappings": [{"hostPort": 12000, "containerPort": 8080, "protocol": "tcp"}]
                }
            rc, result = run_plugin(
                cni_bin / "skiff-cni", "ADD", conf, f"pod{n}", netns_path(pod), node, path
            )
            assert rc == 0, result
            assert result is not None
            pods.append(pod)
            confs.append(conf)
            ips.append(result["ips"][0]["address"].split("/")[0])
        assert ips == [f"10.251.{x + n}.2" for n in range(1, 4)]

        routes = {r["dst"]: r for r in ip_json("route", netns=nodes[0])}
        if mode == "host-gw":
            assert routes[f"10.251.{x + 2}.0/24"]["gateway"] == "10.250.9.2"
            assert routes[f"10.251.{x + 3}.0/24"]["gateway"] == "10.250.9.3"
        else:
            dev = ip_json("-d", "link", "show", "skiff.42", netns=nodes[0])[0]
            assert dev["linkinfo"]["info_data"]["id"] == 42
            assert dev["address"] == vtep_mac("10.250.9.1")
            assert routes[f"10.251.{x + 2}.0/24"]["dev"] == "skiff.42"
            fdb = subprocess.run(
                ["bridge", "-n", nodes[0], "fdb", "show", "dev", "skiff.42"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            assert f"{vtep_mac('10.250.9.2')} dst 10.250.9.2" in fdb
            neigh = ip_json("neigh", "show", "dev", "skiff.42", netns=nodes[0])
            assert {(e["dst"], e["lladdr"]) for e in neigh} == {
                (f"10.251.{x + 2}.0", vtep_mac("10.250.9.2")),
                (f"10.251.{x + 3}.0", vtep_mac("10.250.9.3")),
            }

        # With vxlan the pods' links and the bridge carry the underlay's MTU
        # less the encapsulation (1500 - 50), whatever the config says.
        want_mtu = 1450 if mode == "vxlan" else 1500
        assert ip_json("link", "show", "eth0", netns=pods[0])[0]["mtu"] == want_mtu
        assert ip_json("link", "show", confs[0]["bridge"], netns=nodes[0])[0]["mtu"] == want_mtu
        for i, j in ((0, 1), (1, 2), (2, 0)):
            assert ping(pods[i], ips[j]), f"pod{i + 1} -> pod{j + 1}"
        with tcp_server(pods[1], 8080, "pod2"):
            # pod-to-pod traffic keeps its source address (no masquerade to peers)
            assert tcp_get(pods[0], ips[1], 8080) == f"hello from pod2 to {ips[0]}"
            assert tcp_get(pods[2], ips[1], 8080) == f"hello from pod2 to {ips[2]}"
            # a host port is reachable from another node (masqueraded to node 1's IP)
            assert tcp_get(pods[0], "10.250.9.2", 12000) == "hello from pod2 to 10.250.9.1"
            assert tcp_get(nodes[2], "10.250.9.2", 12000) == "hello from pod2 to 10.250.9.3"

        # the peer list shrinks: node 1 drops node 3 on its next ADD
        extra = stack.enter_context(temp_netns("skcni-px-"))
        conf = dict(confs[0], backend=dict(backend, peers=peers[:2]))
        rc, _ = run_plugin(
            cni_bin / "skiff-cni", "ADD", conf, "podx", netns_path(extra), nodes[0], path
        )
        assert rc == 0
        left = {r["dst"] for r in ip_json("route", netns=nodes[0])}
        assert f"10.251.{x + 2}.0/24" in left and f"10.251.{x + 3}.0/24" not in left
        # ... and gets it back from `skiff-cni reconcile` on the agent's rewritten config
        conflist = tmp_path / "10-cluster.conflist"
        entry = {k: v for k, v in confs[0].items() if k not in ("name", "cniVersion")}
        conflist.write_text(
            json.dumps({"cniVersion": "1.0.0", "name": "cluster", "plugins": [entry]})
        )
        with in_netns(nodes[0]):
            proc = subprocess.run(
                [str(cni_bin / "skiff-cni"), "reconcile", str(conflist)], capture_output=True
            )
        assert proc.returncode == 0, proc.stdout
        left = {r["dst"] for r in ip_json("route", netns=nodes[0])}
        assert f"10.251.{x + 3}.0/24" in left
        assert ping(pods[0], ips[2])

        for n, (node, pod) in enumerate(zip(nodes, pods, strict=True), start=1):
            rc, out = run_plugin(
                cni_bin / "skiff-cni", "DEL", confs[n - 1], f"pod{n}", netns_path(pod), node, path
            )
            assert rc == 0, out
        rc, _ = run_plugin(
            cni_bin / "skiff-cni", "DEL", conf, "podx", netns_path(extra), nodes[0], path
        )
        assert rc == 0
