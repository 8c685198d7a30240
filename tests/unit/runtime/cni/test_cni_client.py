"""The CNI client against fake plugins that record what they were given:
config choice, chain order, prevResult, capabilities, CNI_ARGS, the cache,
error JSON, status reasons. No root: the fakes touch no network."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from runtime.network.cni_client import CNIClient, CNIError, load_config_dir

FAKE = """#!{python}
import json, os, sys
conf = json.load(sys.stdin)
name = os.path.basename(sys.argv[0])
with open({log!r}, "a") as f:
    f.write(json.dumps({{"plugin": name, "env": {{k: v for k, v in os.environ.items() if k.startswith("CNI_")}}, "conf": conf}}) + "\\n")
if conf.get("fail") == os.environ["CNI_COMMAND"]:
    print(json.dumps({{"cniVersion": conf["cniVersion"], "code": 11, "msg": "fake failure", "details": name}}))
    sys.exit(1)
if os.environ["CNI_COMMAND"] == "ADD":
    prev = conf.get("prevResult") or {{"cniVersion": conf["cniVersion"], "ips": [{{"address": "10.0.0.5/24"}}]}}
    prev = dict(prev, interfaces=prev.get("interfaces", []) + [{{"name": name}}])
    print(json.dumps(prev))
"""


@pytest.fixture
def env(tmp_path: Path) -> tuple[CNIClient, Path, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.jsonl"
    for name in ("first", "second"):
        p = bin_dir / name
        p.write_text(FAKE.format(python=sys.executable, log=str(log)))
        p.chmod(0o755)
    conf_dir = tmp_path / "net.d"
    conf_dir.mkdir()
    return CNIClient(conf_dir, [tmp_path / "missing", bin_dir], tmp_path / "cache"), conf_dir, log


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def write(conf_dir: Path, name: str, plugins: list[dict[str, Any]], version: str = "1.0.0") -> None:
    (conf_dir / name).write_text(
        json.dumps({"cniVersion": version, "name": "podnet", "plugins": plugins})
    )


def test_status_reasons_and_config_choice(env: tuple[CNIClient, Path, Path]) -> None:
    client, conf_dir, _ = env
    assert "no network config found" in str(client.status())
    write(conf_dir, "20-b.conflist", [{"type": "second"}])
    (conf_dir / "10-a.conf").write_text(
        json.dumps({"cniVersion": "0.4.0", "name": "single", "type": "first"})
    )
    (conf_dir / "05-notes.txt").write_text("ignored")
    conf = load_config_dir(conf_dir)
    assert (conf.name, [p["type"] for p in conf.plugins]) == ("single", ["first"])
    assert client.status() is None
    (conf_dir / "10-a.conf").write_text(
        json.dumps({"cniVersion": "0.4.0", "name": "x", "type": "nope"})
    )
    assert "'nope' not found" in str(client.status())


def test_chain_add_check_del(env: tuple[CNIClient, Path, Path]) -> None:
    client, conf_dir, log = env
    write(
        conf_dir,
        "10.conflist",
        [{"type": "first", "capabilities": {"portMappings": True}}, {"type": "second"}],
    )
    ports = [{"hostPort": 80, "containerPort": 8080, "protocol": "TCP", "hostIP": ""}]
    result = client.setup("sb1", "/run/netns/x", "eth0", "web", "default", "uid1", ports)
    assert result.ips == ["10.0.0.5"] and result.cidrs == ["10.0.0.5/24"]
    assert [i["name"] for i in result.interfaces] == ["first", "second"]
    add1, add2 = calls(log)
    assert add1["plugin"] == "first" and add2["plugin"] == "second"
    assert add1["env"]["CNI_ARGS"] == (
        "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;"
        "K8S_POD_INFRA_CONTAINER_ID=sb1;K8S_POD_UID=uid1"
    )
    assert add1["conf"]["name"] == "podnet" and add1["conf"]["cniVersion"] == "1.0.0"
    assert add1["conf"]["runtimeConfig"] == {
        "portMappings": [{"hostPort": 80, "containerPort": 8080, "protocol": "tcp"}]
    }
    assert "prevResult" not in add1["conf"] and "runtimeConfig" not in add2["conf"]
    assert add2["conf"]["prevResult"]["interfaces"] == [{"name": "first"}]

    client.check("sb1", "/run/netns/x")
    # DEL uses the cached config even after the directory changed
    write(conf_dir, "10.conflist", [{"type": "second"}])
    client.teardown("sb1", "/run/netns/gone")
    del_calls = [c for c in calls(log) if c["env"]["CNI_COMMAND"] == "DEL"]
    assert [c["plugin"] for c in del_calls] == ["second", "first"]
    assert all(c["conf"]["prevResult"] == result.raw for c in del_calls)
    assert del_calls[0]["env"]["CNI_NETNS"] == ""  # gone netns is not passed
    assert del_calls[1]["conf"]["runtimeConfig"]["portMappings"][0]["hostPort"] == 80
    check_calls = [c for c in calls(log) if c["env"]["CNI_COMMAND"] == "CHECK"]
    assert [c["plugin"] for c in check_calls] == ["first", "second"]
    with pytest.raises(CNIError):
        client.check("sb1", "/run/netns/x")


def test_failed_add_is_torn_down_and_reports_the_plugin_error(
    env: tuple[CNIClient, Path, Path],
) -> None:
    client, conf_dir, log = env
    write(conf_dir, "10.conflist", [{"type": "first"}, {"type": "second", "fail": "ADD"}])
    with pytest.raises(CNIError) as exc:
        client.setup("sb1", "/run/netns/x")
    assert (exc.value.code, exc.value.msg, exc.value.plugin) == (11, "fake failure", "second")
    assert [(c["plugin"], c["env"]["CNI_COMMAND"]) for c in calls(log)] == [
        ("first", "ADD"),
        ("second", "ADD"),
        ("second", "DEL"),
        ("first", "DEL"),
    ]
    assert not (client.cache_dir / "results" / "podnet-sb1-eth0").exists()


def test_teardown_without_config_or_cache_succeeds(env: tuple[CNIClient, Path, Path]) -> None:
    client, _, log = env
    client.teardown("never", "")
    assert calls(log) == []


def test_gc_passes_valid_attachments_for_1_1(env: tuple[CNIClient, Path, Path]) -> None:
    client, conf_dir, log = env
    write(conf_dir, "10.conflist", [{"type": "first"}], version="1.1.0")
    client.setup("keep", "/run/netns/a")
    client.setup("drop", "/run/netns/b")
    client.gc([("keep", "eth0")])
    gc = [c for c in calls(log) if c["env"]["CNI_COMMAND"] == "GC"]
    assert gc[0]["conf"]["cni.dev/valid-attachments"] == [{"containerID": "keep", "ifname": "eth0"}]
    assert sorted(p.name for p in (client.cache_dir / "results").iterdir()) == ["podnet-keep-eth0"]


def test_port_mappings_accept_cri_shapes() -> None:
    caps = CNIClient._capability_args(
        [
            {"host_port": 8080, "container_port": 80, "protocol": 1, "host_ip": "127.0.0.1"},
            {"hostPort": 0, "containerPort": 81},
            {"hostPort": 9090, "containerPort": 90, "protocol": "SCTP"},
        ]
    )
    assert caps == {
        "portMappings": [
            {"hostPort": 8080, "containerPort": 80, "protocol": "udp", "hostIP": "127.0.0.1"},
            {"hostPort": 9090, "containerPort": 90, "protocol": "sctp"},
        ]
    }
    assert CNIClient._capability_args([{"containerPort": 80}]) == {}
