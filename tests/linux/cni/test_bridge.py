"""skiff-cni through the real executable, in namespaces the tests make:
ADD/CHECK/DEL, connectivity on one node, concurrency, host ports, bad
input, and nothing left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from runtime.cni.iptables import chain_id
from tests.harness.netns import netns_path, unique_name
from tests.linux.cni.helpers import (
    REF_BIN,
    bridge_conf,
    in_netns,
    ip_json,
    links,
    nat_rules,
    ping,
    run_plugin,
    tcp_get,
    tcp_server,
    udp_get,
    udp_server,
)

pytestmark = [pytest.mark.root, pytest.mark.netns]


def _path(cni_bin: Path) -> str:
    return f"{cni_bin}:{REF_BIN}"


def _ipam_files(tmp_path: Path, conf: dict[str, Any]) -> list[str]:
    d = tmp_path / "ipam" / conf["name"]
    files = os.listdir(d) if d.is_dir() else []
    return sorted(f for f in files if f != "lock" and not f.startswith("last_reserved_ip"))


def _assert_nothing_left(node: str, tmp_path: Path, conf: dict[str, Any], pods: list[str]) -> None:
    assert [n for n in links(node) if n.startswith("veth")] == []
    for pod in pods:
        assert links(pod) == ["lo"]
    assert _ipam_files(tmp_path, conf) == []
    assert "SKIFF" not in nat_rules(node)


def test_add_check_del_through_the_executable(cni_bin, node, pod_factory, tmp_path) -> None:
    pod = pod_factory()
    conf = bridge_conf(tmp_path, "10.250.1.0/24", mtu=1400, hairpinMode=True)
    binary = cni_bin / "skiff-cni"
    rc, result = run_plugin(binary, "ADD", conf, "c1", netns_path(pod), node, _path(cni_bin))
    assert rc == 0, result
    assert result is not None
    assert result["cniVersion"] == "1.0.0"
    assert result["interfaces"][0]["name"] == conf["bridge"]
    assert result["interfaces"][2] == {
        "name": "eth0",
        "mac": result["interfaces"][2]["mac"],
        "sandbox": netns_path(pod),
    }
    assert result["ips"] == [{"address": "10.250.1.2/24", "gateway": "10.250.1.1", "interface": 2}]
    eth0 = ip_json("addr", "show", "eth0", netns=pod)[0]
    assert eth0["mtu"] == 1400 and "UP" in eth0["flags"]
    assert {(a["local"], a["prefixlen"]) for a in eth0["addr_info"] if a["family"] == "inet"} == {
        ("10.250.1.2", 24)
    }
    default = ip_json("route", "show", "default", netns=pod)
    assert default[0]["gateway"] == "10.250.1.1"
    br = ip_json("addr", "show", conf["bridge"], netns=node)[0]
    assert any(a["local"] == "10.250.1.1" for a in br["addr_info"])
    veth = result["interfaces"][1]["name"]
    port = ip_json("-d", "link", "show", veth, netns=node)[0]
    assert port["master"] == conf["bridge"]
    assert port["linkinfo"]["info_slave_data"]["hairpin"] is True
    assert "SKIFF-MQ" in nat_rules(node)

    check_conf = dict(conf, prevResult=result)
    rc, out = run_plugin(binary, "CHECK", check_conf, "c1", netns_path(pod), node, _path(cni_bin))
    assert rc == 0, out
    with in_netns(node):  # CHECK notices a lost masquerade chain
        chain = f"SKIFF-MQ-{chain_id(conf['name'], 'c1', 'eth0')}"
        for args in (["-F", "POSTROUTING"], ["-F", chain], ["-X", chain]):
            subprocess.run(["iptables", "-t", "nat", *args], check=True)
    rc, out = run_plugin(binary, "CHECK", check_conf, "c1", netns_path(pod), node, _path(cni_bin))
    assert rc == 1 and out is not None and "NAT chains missing" in out["msg"]

    for _ in range(2):  # DEL is idempotent
        rc, out = run_plugin(binary, "DEL", check_conf, "c1", netns_path(pod), node, _path(cni_bin))
        assert rc == 0, out
    _assert_nothing_left(node, tmp_path, conf, [pod])
    # and CHECK now notices that the attachment is gone
    rc, out = run_plugin(binary, "CHECK", check_conf, "c1", netns_path(pod), node, _path(cni_bin))
    assert rc == 1 and out is not None and out["code"] == 999


def test_module_entry_point_and_version(node) -> None:
    rc, out = run_plugin(
        [sys.executable, "-m", "runtime.cni.main"],
        "VERSION",
        {"cniVersion": "1.0.0"},
        "",
        "",
        node,
        "",
    )
    assert rc == 0
    assert out == {
        "cniVersion": "1.0.0",
        "supportedVersions": ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"],
    }


def test_two_pods_reach_each_other_and_the_gateway(cni_bin, node, pod_factory, tmp_path) -> None:
    conf = bridge_conf(tmp_path, "10.250.2.0/24")
    pods = [pod_factory(), pod_factory()]
    ips = []
    for i, pod in enumerate(pods):
        rc, result = run_plugin(
            cni_bin / "skiff-cni", "ADD", conf, f"c{i}", netns_path(pod), node, _path(cni_bin)
        )
        assert rc == 0, result
        assert result is not None
        ips.append(result["ips"][0]["address"].split("/")[0])
    assert ips == ["10.250.2.2", "10.250.2.3"]
    # the bridge keeps its own MAC whatever ports come and go
    bridge_mac = ip_json("link", "show", conf["bridge"], netns=node)[0]["address"]
    assert bridge_mac not in {ip_json("link", "show", "eth0", netns=p)[0]["address"] for p in pods}
    assert ping(pods[0], ips[1]) and ping(pods[1], ips[0])
    assert ping(pods[0], "10.250.2.1")
    with tcp_server(pods[1], 8080, "pod1"):
        assert tcp_get(pods[0], ips[1], 8080) == f"hello from pod1 to {ips[0]}"
        # the node reaches the pod (critest dials pod IPs from the host)
        assert tcp_get(node, ips[1], 8080) == "hello from pod1 to 10.250.2.1"
    for i, pod in enumerate(pods):
        rc, out = run_plugin(
            cni_bin / "skiff-cni", "DEL", conf, f"c{i}", netns_path(pod), node, _path(cni_bin)
        )
        assert rc == 0, out
    assert ip_json("link", "show", conf["bridge"], netns=node)[0]["address"] == bridge_mac
    _assert_nothing_left(node, tmp_path, conf, pods)


def test_50_concurrent_adds_get_distinct_addresses(cni_bin, node, pod_factory, tmp_path) -> None:
    conf = bridge_conf(tmp_path, "10.250.3.0/24")  # with ipMasq: 50 concurrent NAT updates
    pods = [pod_factory() for _ in range(50)]

    def add(i: int) -> tuple[int, dict[str, Any] | None]:
        return run_plugin(
            cni_bin / "skiff-cni", "ADD", conf, f"c{i}", netns_path(pods[i]), node, _path(cni_bin)
        )

    # Threads only wait on subprocesses; each switches namespace for its own
    # thread (setns is per thread), so they do not disturb each other.
    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(add, range(50)))
    assert all(rc == 0 for rc, _ in results), [r for r in results if r[0] != 0][:3]
    addresses = {r["ips"][0]["address"] for _, r in results if r}
    assert len(addresses) == 50
    assert len(_ipam_files(tmp_path, conf)) == 50

    def delete(i: int) -> int:
        return run_plugin(
            cni_bin / "skiff-cni", "DEL", conf, f"c{i}", netns_path(pods[i]), node, _path(cni_bin)
        )[0]

    with ThreadPoolExecutor(max_workers=50) as pool:
        assert set(pool.map(delete, range(50))) == {0}
    _assert_nothing_left(node, tmp_path, conf, pods[:3])


def test_host_port_reaches_the_pod(cni_bin, node, pod_factory, tmp_path) -> None:
    pod, other = pod_factory(), pod_factory()
    conf = bridge_conf(
        tmp_path,
        "10.250.4.0/24",
        hairpinMode=True,
        runtimeConfig={
            "portMappings": [
                {"hostPort": 12000, "containerPort": 80, "protocol": "tcp"},
                {"hostPort": 12002, "containerPort": 53, "protocol": "udp"},
            ]
        },
    )
    rc, result = run_plugin(
        cni_bin / "skiff-cni", "ADD", conf, "web", netns_path(pod), node, _path(cni_bin)
    )
    assert rc == 0, result
    plain = dict(conf)
    del plain["runtimeConfig"]
    rc, client = run_plugin(
        cni_bin / "skiff-cni", "ADD", plain, "client", netns_path(other), node, _path(cni_bin)
    )
    assert rc == 0, client
    with tcp_server(pod, 80, "web"):
        # from another namespace, through the node's address
        assert tcp_get(other, "10.250.4.1", 12000).startswith("hello from web")
        # from the node itself at 127.0.0.1 (OUTPUT DNAT, route_localnet, masquerade)
        assert tcp_get(node, "127.0.0.1", 12000) == "hello from web to 10.250.4.1"
        # hairpin: the pod reaches itself through its own host port
        assert tcp_get(pod, "10.250.4.1", 12000) == "hello from web to 10.250.4.1"
    with udp_server(pod, 53):
        assert udp_get(other, "10.250.4.1", 12002) == "udp ping"
    assert "SKIFF-DN" in nat_rules(node)
    for cid, ns, c in (("web", pod, conf), ("client", other, plain)):
        for _ in range(2):
            rc, out = run_plugin(
                cni_bin / "skiff-cni",
                "DEL",
                dict(c, prevResult=result),
                cid,
                netns_path(ns),
                node,
                _path(cni_bin),
            )
            assert rc == 0, out
    _assert_nothing_left(node, tmp_path, conf, [pod, other])


def _bad(cni_bin, node, conf, netns, env=None, raw: bytes | None = None):
    envs = {k: v for k, v in os.environ.items() if not k.startswith("CNI_")}
    envs.update(
        CNI_COMMAND="ADD",
        CNI_CONTAINERID="bad",
        CNI_NETNS=netns,
        CNI_IFNAME="eth0",
        CNI_PATH=_path(cni_bin),
    )
    envs.update(env or {})
    envs = {k: v for k, v in envs.items() if v is not None}
    import json

    with in_netns(node):
        proc = subprocess.run(
            [str(cni_bin / "skiff-cni")],
            input=raw if raw is not None else json.dumps(conf).encode(),
            env=envs,
            capture_output=True,
        )
    return proc.returncode, json.loads(proc.stdout)


def test_bad_input_gives_spec_errors_and_leaves_nothing(cni_bin, node, pod_factory, tmp_path):
    pod = pod_factory()
    conf = bridge_conf(tmp_path, "10.250.5.0/30")  # one usable address: .2
    rc, err = _bad(cni_bin, node, conf, netns_path(pod), raw=b"{not json")
    assert rc == 1 and err["code"] == 6 and "decode" in err["msg"]
    rc, err = _bad(cni_bin, node, dict(conf, cniVersion="9.9.9"), netns_path(pod))
    assert rc == 1 and err["code"] == 1 and "9.9.9" in err["details"]
    rc, err = _bad(cni_bin, node, conf, netns_path(pod), env={"CNI_NETNS": None})
    assert rc == 1 and err["code"] == 4 and "CNI_NETNS" in err["msg"]
    rc, err = _bad(cni_bin, node, conf, "/run/netns/does-not-exist-" + unique_name("x"))
    assert rc == 1 and err["code"] == 3 and "does-not-exist" in err["msg"]
    rc, err = _bad(cni_bin, node, dict(conf, ipam={"type": "skiff-ipam"}), netns_path(pod))
    assert rc == 1 and err["code"] == 7 and "subnet" in err["msg"]

    rc, ok = run_plugin(
        cni_bin / "skiff-cni", "ADD", conf, "first", netns_path(pod), node, _path(cni_bin)
    )
    assert rc == 0 and ok is not None, ok
    second = pod_factory()
    rc, err = _bad(cni_bin, node, conf, netns_path(second))
    assert rc == 1 and err["code"] == 11 and "no IP addresses available" in err["msg"]
    assert links(second) == ["lo"]
    assert [n for n in links(node) if n.startswith("veth")] == [ok["interfaces"][1]["name"]]
    assert _ipam_files(tmp_path, conf) == ["10.250.5.2"]
    # only the first attachment's masquerade chain: the failed ADD undid its own
    assert [ln for ln in nat_rules(node).splitlines() if ln.startswith(":SKIFF")] == [
        f":SKIFF-MQ-{chain_id(conf['name'], 'first', 'eth0')} - [0:0]"
    ]
    rc, _ = run_plugin(
        cni_bin / "skiff-cni", "DEL", conf, "first", netns_path(pod), node, _path(cni_bin)
    )
    assert rc == 0
    # DEL of a namespace that is gone, and of a container never added
    rc, _ = run_plugin(
        cni_bin / "skiff-cni", "DEL", conf, "never", "/run/netns/gone", node, _path(cni_bin)
    )
    assert rc == 0
    _assert_nothing_left(node, tmp_path, conf, [pod, second])


def test_gc_and_status_for_cni_1_1(cni_bin, node, pod_factory, tmp_path) -> None:
    conf = bridge_conf(tmp_path, "10.250.6.0/24", cniVersion="1.1.0")
    binary, path = cni_bin / "skiff-cni", _path(cni_bin)
    pods = {cid: pod_factory() for cid in ("keep", "lost")}
    results: dict[str, dict[str, Any] | None] = {}
    for cid, pod in pods.items():
        c = dict(conf)
        if cid == "lost":
            c["runtimeConfig"] = {"portMappings": [{"hostPort": 12001, "containerPort": 80}]}
        rc, results[cid] = run_plugin(binary, "ADD", c, cid, netns_path(pod), node, path)
        assert rc == 0, results[cid]
    rc, out = run_plugin(binary, "STATUS", conf, "", "", node, path)
    assert (rc, out) == (0, None)
    gc_conf = dict(
        conf, **{"cni.dev/valid-attachments": [{"containerID": "keep", "ifname": "eth0"}]}
    )
    rc, out = run_plugin(binary, "GC", gc_conf, "", "", node, path)
    assert rc == 0, out
    assert _ipam_files(tmp_path, conf) == ["10.250.6.2"]
    veths = [n for n in links(node) if n.startswith("veth")]
    kept = results["keep"]
    assert kept is not None and veths == [kept["interfaces"][1]["name"]]
    rules = nat_rules(node)
    assert chain_id(conf["name"], "keep", "eth0") in rules
    assert chain_id(conf["name"], "lost", "eth0") not in rules and "12001" not in rules
    assert ping(pods["keep"], "10.250.6.1")
    rc, out = run_plugin(
        binary, "STATUS", dict(conf, ipam={"type": "skiff-ipam"}), "", "", node, path
    )
    assert rc == 1 and out is not None and out["code"] == 7


def test_dual_stack_add_and_del(cni_bin, node, pod_factory, tmp_path) -> None:
    pods = [pod_factory(), pod_factory()]
    conf = bridge_conf(
        tmp_path,
        "unused",
        runtimeConfig={"portMappings": [{"hostPort": 12003, "containerPort": 80}]},
    )
    conf["ipam"]["ranges"] = [[{"subnet": "10.250.7.0/24"}], [{"subnet": "fd00:250:7::/64"}]]
    conf["ipam"]["routes"] = [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]
    del conf["ipam"]["subnet"]
    binary, path = cni_bin / "skiff-cni", _path(cni_bin)
    results = []
    for i, pod in enumerate(pods):
        rc, result = run_plugin(binary, "ADD", conf, f"ds{i}", netns_path(pod), node, path)
        assert rc == 0 and result is not None, result
        results.append(result)
    assert [ip["address"] for ip in results[1]["ips"]] == ["10.250.7.3/24", "fd00:250:7::3/64"]
    assert ping(pods[0], "fd00:250:7::3") and ping(pods[0], "fd00:250:7::1")
    with in_netns(node):
        v6_rules = subprocess.run(
            ["ip6tables-save", "-t", "nat"], capture_output=True, text=True, check=True
        ).stdout
    assert "SKIFF-MQ" in v6_rules and "--to-destination [fd00:250:7::2]:80" in v6_rules
    for i, pod in enumerate(pods):
        rc, out = run_plugin(
            binary, "DEL", dict(conf, prevResult=results[i]), f"ds{i}", netns_path(pod), node, path
        )
        assert rc == 0, out
    with in_netns(node):
        v6_rules = subprocess.run(
            ["ip6tables-save", "-t", "nat"], capture_output=True, text=True, check=True
        ).stdout
    assert "SKIFF" not in v6_rules
    _assert_nothing_left(node, tmp_path, conf, pods)
