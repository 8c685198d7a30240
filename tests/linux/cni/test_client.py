"""The runtime's CNI client driving real plugin chains: Debian's reference
plugins (bridge + host-local + portmap, loopback) and skiff-cni; and the
reference bridge's result shape met by ours for the same config."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from runtime.network.cni_client import CNIClient, CNIError
from tests.harness.netns import netns_path, unique_name
from tests.linux.cni.helpers import (
    REF_BIN,
    bridge_conf,
    in_netns,
    ip_json,
    links,
    nat_rules,
    run_plugin,
    tcp_get,
    tcp_server,
)

pytestmark = [pytest.mark.root, pytest.mark.netns]


def _conflist(tmp_path: Path, plugin: str, ipam: str, subnet: str) -> dict[str, Any]:
    main = bridge_conf(tmp_path, subnet, plugin=plugin, ipam=ipam)
    name = main.pop("name")
    main.pop("cniVersion")
    return {
        "cniVersion": "1.0.0",
        "name": name,
        "plugins": [main, {"type": "portmap", "capabilities": {"portMappings": True}}],
    }


@pytest.mark.parametrize("flavour", ["reference", "skiff"])
def test_client_runs_a_chain_with_port_mappings(
    flavour: str, cni_bin: Path, node: str, pod_factory: Any, tmp_path: Path
) -> None:
    conf_dir = tmp_path / "net.d"
    conf_dir.mkdir()
    client = CNIClient(conf_dir, [cni_bin, REF_BIN], tmp_path / "cache")
    assert client.status() is not None and "no network config" in str(client.status())
    if flavour == "reference":
        conflist = _conflist(tmp_path, "bridge", "host-local", "10.250.30.0/24")
    else:
        # skiff-cni handles portMappings itself: a chain of one
        conflist = _conflist(tmp_path, "skiff-cni", "skiff-ipam", "10.250.31.0/24")
        conflist["plugins"] = conflist["plugins"][:1]
        conflist["plugins"][0]["capabilities"] = {"portMappings": True}
    (conf_dir / "20-other.conflist").write_text("{broken")
    (conf_dir / "10-pods.conflist").write_text(json.dumps(conflist))
    assert client.status() is None
    pod, other = pod_factory(), pod_factory()
    ports = [{"hostPort": 12000, "containerPort": 80, "protocol": "TCP"}]
    with in_netns(node):
        result = client.setup(
            "sandbox1",
            netns_path(pod),
            pod_name="web",
            pod_namespace="default",
            pod_uid="uid-1",
            port_mappings=ports,
        )
        second = client.setup("sandbox2", netns_path(other), pod_name="client")
    assert result.ips == [result.cidrs[0].split("/")[0]]
    assert result.raw["interfaces"][2]["sandbox"] == netns_path(pod)
    assert "UP" in ip_json("link", "show", "lo", netns=pod)[0]["flags"]  # loopback plugin
    gateway = result.raw["ips"][0]["gateway"]
    cache = tmp_path / "cache" / "results" / f"{conflist['name']}-sandbox1-eth0"
    entry = json.loads(cache.read_text())
    assert entry["capabilityArgs"] == {
        "portMappings": [{"hostPort": 12000, "containerPort": 80, "protocol": "tcp"}]
    }
    assert ["K8S_POD_NAME", "web"] in entry["cniArgs"]
    with tcp_server(pod, 80, "web"):
        assert tcp_get(other, gateway, 12000).startswith("hello from web")
        assert tcp_get(node, "127.0.0.1", 12000).startswith("hello from web")
    if flavour == "skiff":
        with in_netns(node):
            client.check("sandbox1", netns_path(pod))

    # the config directory changes: DEL still uses what ADD used
    (conf_dir / "10-pods.conflist").unlink()
    with in_netns(node):
        for _ in range(2):
            client.teardown("sandbox1", netns_path(pod))
            client.teardown("sandbox2", netns_path(other))
        client.teardown("never-set-up", "/run/netns/gone")
        with pytest.raises(CNIError):
            client.check("sandbox1", netns_path(pod))
    assert not cache.exists()
    assert links(pod) == ["lo"] and links(other) == ["lo"]
    assert [n for n in links(node) if n.startswith("veth")] == []
    ipam_dir = tmp_path / "ipam" / conflist["name"]
    assert [f for f in os.listdir(ipam_dir) if f[0].isdigit()] == []
    assert "10.250.3" not in nat_rules(node)
    assert second.ips


def test_client_undoes_a_failed_chain(
    cni_bin: Path, node: str, pod_factory: Any, tmp_path: Path
) -> None:
    conf_dir = tmp_path / "net.d"
    conf_dir.mkdir()
    conflist = _conflist(tmp_path, "skiff-cni", "skiff-ipam", "10.250.32.0/24")
    conflist["plugins"][1] = {"type": "does-not-exist"}
    (conf_dir / "10-pods.conflist").write_text(json.dumps(conflist))
    client = CNIClient(conf_dir, [cni_bin, REF_BIN], tmp_path / "cache", loopback=False)
    assert "does-not-exist" in str(client.status())
    pod = pod_factory()
    with in_netns(node), pytest.raises(CNIError, match="does-not-exist"):
        client.setup("sb", netns_path(pod))
    assert links(pod) == ["lo"]
    assert [f for f in os.listdir(tmp_path / "ipam" / conflist["name"]) if f[0].isdigit()] == []


def _shape(value: Any) -> Any:
    """Keys and types, not values (names and MACs differ run to run)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


@pytest.mark.parametrize("version", ["0.4.0", "1.0.0"])
def test_same_result_shape_as_the_reference_bridge(
    version: str, cni_bin: Path, node: str, pod_factory: Any, tmp_path: Path
) -> None:
    results = {}
    for i, (plugin, ipam) in enumerate((("bridge", "host-local"), ("skiff-cni", "skiff-ipam"))):
        conf = bridge_conf(
            tmp_path / plugin,
            f"10.250.{40 + i}.0/24",
            plugin=plugin,
            ipam=ipam,
            cniVersion=version,
            bridge=unique_name("skbs", 12),
        )
        pod = pod_factory()
        rc, result = run_plugin(
            (cni_bin if plugin == "skiff-cni" else REF_BIN) / plugin,
            "ADD",
            conf,
            "shape",
            netns_path(pod),
            node,
            f"{cni_bin}:{REF_BIN}",
        )
        assert rc == 0, result
        assert result is not None
        results[plugin] = result
        rc, out = run_plugin(
            (cni_bin if plugin == "skiff-cni" else REF_BIN) / plugin,
            "DEL",
            dict(conf, prevResult=result),
            "shape",
            netns_path(pod),
            node,
            f"{cni_bin}:{REF_BIN}",
        )
        assert rc == 0, out
    ref, ours = results["bridge"], results["skiff-cni"]
    assert _shape(ours) == _shape(ref)
    assert ours["cniVersion"] == ref["cniVersion"] == version
    assert [i.get("sandbox") is None for i in ours["interfaces"]] == [True, True, False]
    assert ours["ips"][0]["address"].endswith(".2/24") and ref["ips"][0]["address"].endswith(
        ".2/24"
    )
    assert ours["routes"] == ref["routes"] and ours["dns"] == ref["dns"]


def test_reference_bridge_delegates_to_skiff_ipam(
    cni_bin: Path, node: str, pod_factory: Any, tmp_path: Path
) -> None:
    """skiff-ipam as an executable, under the reference bridge plugin."""
    conf = bridge_conf(tmp_path, "10.250.50.0/24", plugin="bridge", ipam="skiff-ipam")
    path = f"{cni_bin}:{REF_BIN}"
    pods = [pod_factory(), pod_factory()]
    results = []
    for i, pod in enumerate(pods):
        rc, result = run_plugin(
            REF_BIN / "bridge", "ADD", conf, f"r{i}", netns_path(pod), node, path
        )
        assert rc == 0 and result is not None, result
        results.append(result)
    assert [r["ips"][0]["address"] for r in results] == ["10.250.50.2/24", "10.250.50.3/24"]
    ipam_dir = tmp_path / "ipam" / conf["name"]
    assert (ipam_dir / "10.250.50.2").read_bytes() == b"r0\r\neth0"
    for i, pod in enumerate(pods):
        rc, out = run_plugin(
            REF_BIN / "bridge",
            "DEL",
            dict(conf, prevResult=results[i]),
            f"r{i}",
            netns_path(pod),
            node,
            path,
        )
        assert rc == 0, out
    assert [f for f in os.listdir(ipam_dir) if f[0].isdigit()] == []
