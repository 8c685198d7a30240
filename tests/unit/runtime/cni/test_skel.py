"""The CNI skeleton, JSON helper, netlink encoding and NAT rule text,
without root; plus the executable's error paths that fail before any
namespace is touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from runtime.cni import fastjson, iptables, netlink, skel
from runtime.cni.routes import vtep_mac

ENV = {
    "CNI_COMMAND": "ADD",
    "CNI_CONTAINERID": "c1",
    "CNI_NETNS": "/run/netns/x",
    "CNI_IFNAME": "eth0",
    "CNI_PATH": "/opt/cni/bin",
}
CONF = b'{"cniVersion": "1.0.0", "name": "n", "type": "skiff-cni"}'


def test_parse_reads_env_and_config() -> None:
    args = skel.parse(dict(ENV, CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAME=web"), CONF)
    assert (args.command, args.container_id, args.netns, args.ifname) == (
        "ADD",
        "c1",
        "/run/netns/x",
        "eth0",
    )
    assert args.args == {"IgnoreUnknown": "1", "K8S_POD_NAME": "web"}
    assert args.path == ["/opt/cni/bin"] and args.name == "n" and args.version == "1.0.0"


@pytest.mark.parametrize(
    ("env", "stdin", "code"),
    [
        ({"CNI_COMMAND": ""}, CONF, 4),
        ({"CNI_COMMAND": "FROB"}, CONF, 4),
        ({"CNI_NETNS": ""}, CONF, 4),
        ({"CNI_ARGS": "novalue"}, CONF, 4),
        ({"CNI_IFNAME": "a-very-long-interface-name"}, CONF, 4),
        ({}, b"{oops", 6),
        ({}, b"[1]", 6),
        ({}, b'{"cniVersion": "0.2.0", "name": "n"}', 1),
        ({}, b'{"name": "n"}', 1),
        ({}, b'{"cniVersion": "1.0.0"}', 7),
        ({"CNI_COMMAND": "GC"}, CONF, 1),  # GC needs 1.1.0
        ({"CNI_COMMAND": "CHECK"}, b'{"cniVersion": "0.3.1", "name": "n"}', 1),
    ],
)
def test_parse_errors_have_spec_codes(env: dict[str, str], stdin: bytes, code: int) -> None:
    with pytest.raises(skel.CNIError) as exc:
        skel.parse(dict(ENV, **env), stdin)
    assert exc.value.code == code


def test_del_needs_no_netns_and_old_results_carry_ip_version() -> None:
    assert skel.parse(dict(ENV, CNI_COMMAND="DEL", CNI_NETNS=""), CONF).netns == ""
    result = {"ips": [{"address": "10.0.0.2/24"}, {"address": "fd00::2/64", "version": "6"}]}
    assert skel.convert_result(result, "0.4.0")["ips"] == [
        {"address": "10.0.0.2/24", "version": "4"},
        {"address": "fd00::2/64", "version": "6"},
    ]
    assert skel.convert_result(result, "1.0.0")["ips"][1] == {"address": "fd00::2/64"}


def _run(module: str, env: dict[str, str], stdin: bytes) -> tuple[int, dict[str, Any]]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CNI_")}
    full.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", module], input=stdin, env=full, capture_output=True, timeout=30
    )
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize("module", ["runtime.cni.main", "runtime.cni.ipam_main"])
def test_executables_version_and_errors(module: str) -> None:
    rc, out = _run(module, {"CNI_COMMAND": "VERSION"}, b'{"cniVersion": "0.4.0"}')
    assert rc == 0 and out["cniVersion"] == "0.4.0" and "1.1.0" in out["supportedVersions"]
    rc, out = _run(module, ENV, b"not json")
    assert rc == 1 and out["code"] == 6 and out["msg"].startswith("failed to decode")
    rc, out = _run(module, ENV, b'{"cniVersion": "7.0.0", "name": "n"}')
    assert rc == 1 and out == {
        "cniVersion": "1.1.0",
        "code": 1,
        "msg": "incompatible CNI versions",
        "details": "config is '7.0.0', plugin supports ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0']",
    }


def test_plugin_imports_stay_cheap() -> None:
    """The hot path must not pull in heavy modules (see runtime/cni/__init__)."""
    code = (
        "import sys; import runtime.cni.main, runtime.cni.ipam_main; "
        "print(' '.join(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", f"import sys; sys.path.insert(0, {os.getcwd()!r}); {code}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for heavy in (
        "os",
        "json",
        "re",
        "subprocess",
        "pyroute2",
        "ipaddress",
        "dataclasses",
        "typing",
        "ctypes",
        "hashlib",
        "select",
        "socket",
    ):
        assert heavy not in out, heavy


def test_fastjson_round_trip_and_errors() -> None:
    value = {"a": [1, 2.5, True, None, "é\n"], "b": {}}
    assert fastjson.loads(fastjson.dumps(value)) == value
    assert json.loads(fastjson.dumps(value)) == value
    for bad in (b"", b"{", b'{"a": 1} trailing', b"\xff"):
        with pytest.raises(ValueError):
            fastjson.loads(bad)


def test_netlink_attributes_round_trip() -> None:
    data = netlink.attr(3, netlink.cstr("eth0")) + netlink.nested(18, netlink.attr(1, b"veth"))
    parsed = netlink.parse_attrs(data)
    assert parsed[3] == b"eth0\0"
    assert netlink.parse_attrs(parsed[18]) == {1: b"veth"}
    assert len(netlink.attr(1, b"abcde")) == 12  # padded to 4
    assert netlink.mac_to_str(netlink.mac_from_str("0a:58:0a:fa:09:01")) == "0a:58:0a:fa:09:01"
    assert vtep_mac("10.250.9.1") == "0a:58:0a:fa:09:01"


def test_nat_rules_are_named_per_attachment() -> None:
    cid = iptables.chain_id("net", "c1", "eth0")
    assert len(cid) == 16 and cid != iptables.chain_id("net", "c1", "eth1")
    note = iptables.comment('ne"t', "c1")
    assert note == '"skiff net c1"'
    lines = iptables.hostport_lines(
        cid, note, "10.0.0.2", [{"hostPort": 8080, "containerPort": 80, "protocol": "UDP"}]
    )
    assert (
        f"-A SKIFF-DN-{cid} -p udp -m udp --dport 8080 -m comment --comment {note} -j DNAT --to-destination 10.0.0.2:80"
        in lines
    )
    assert any("-s 127.0.0.0/8 -d 10.0.0.2/32" in ln for ln in lines)
    assert (
        f"-A OUTPUT -m addrtype --dst-type LOCAL -m comment --comment {note} -j SKIFF-DN-{cid}"
        in lines
    )
    deletes = iptables.delete_lines(cid, note, "10.0.0.2", masq=True, ports=True)
    assert (
        deletes[0] == f"-D POSTROUTING -s 10.0.0.2/32 -m comment --comment {note} -j SKIFF-MQ-{cid}"
    )
    assert f"-X SKIFF-SN-{cid}" in deletes
    with pytest.raises(skel.CNIError):
        iptables.hostport_lines(cid, note, "10.0.0.2", [{"hostPort": "x"}])
