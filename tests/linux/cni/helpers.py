"""Helpers for the CNI tests: run plugins inside a "node" namespace (as a
runtime would run them), probe connectivity, read links and NAT rules.

Everything a test makes lives inside namespaces the test made, so deleting
them removes bridges, veths, routes and iptables rules; the root namespace
is never touched. Servers started in pods are stopped by their pid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from runtime.cni import oslib
from tests.harness.netns import netns_path, unique_name
from tests.harness.wait import WaitTimeout, wait_for

REF_BIN = Path("/usr/lib/cni")


@contextmanager
def in_netns(name: str) -> Iterator[None]:
    """Run this thread (and what it spawns) in namespace `name`."""
    ns = oslib.NetNS(netns_path(name))
    try:
        with ns:
            yield
    finally:
        ns.close()


def run_plugin(
    binary: Path | list[str],
    command: str,
    conf: dict[str, Any],
    container_id: str,
    netns: str,
    node: str,
    path: str,
    ifname: str = "eth0",
    extra_env: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any] | None]:
    """Run one plugin command inside `node`; (exit status, parsed stdout)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CNI_")}
    env.update(
        CNI_COMMAND=command,
        CNI_CONTAINERID=container_id,
        CNI_NETNS=netns,
        CNI_IFNAME=ifname,
        CNI_PATH=path,
    )
    env.update(extra_env or {})
    argv = [str(binary)] if isinstance(binary, Path) else binary
    with in_netns(node):
        proc = subprocess.run(
            argv, input=json.dumps(conf).encode(), env=env, capture_output=True, timeout=60
        )
    out = proc.stdout.strip()
    return proc.returncode, (json.loads(out) if out else None)


def ip_json(*args: str, netns: str | None = None) -> Any:
    cmd = ["ip", "-j"] + (["-n", netns] if netns else []) + list(args)
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def links(netns: str) -> list[str]:
    return [link["ifname"] for link in ip_json("link", netns=netns)]


def nat_rules(node: str) -> str:
    with in_netns(node):
        return subprocess.run(
            ["iptables-save", "-t", "nat"], check=True, capture_output=True, text=True
        ).stdout


def ping(src_netns: str, dst: str, timeout: float = 10.0) -> bool:
    """One echo reply from `dst` within `timeout` (retried: a loaded machine
    can lose the first try to ARP resolution or scheduling)."""

    def once() -> bool:
        proc = subprocess.run(
            ["ip", "netns", "exec", src_netns, "busybox", "ping", "-c", "1", "-W", "2", dst],
            capture_output=True,
        )
        return proc.returncode == 0

    try:
        return bool(wait_for(once, timeout=timeout, message=f"ping {dst} from {src_netns}"))
    except WaitTimeout:
        return False


_SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(16)
print("ready", flush=True)
while True:
    c, addr = s.accept()
    c.sendall(("hello from " + sys.argv[2] + " to " + addr[0]).encode()); c.close()
"""

_CLIENT = """
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
print(c.recv(200).decode())
"""


@contextmanager
def tcp_server(netns: str, port: int, label: str) -> Iterator[subprocess.Popen[bytes]]:
    """A TCP server in `netns` that greets each client; stopped afterwards."""
    proc = subprocess.Popen(
        ["ip", "netns", "exec", netns, sys.executable, "-c", _SERVER, str(port), label],
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def tcp_get(src_netns: str, host: str, port: int, timeout: float = 15.0) -> str:
    """What the server says to a client in `src_netns` ("" if it never
    answers within `timeout`; retried like `ping`)."""

    def once() -> str:
        proc = subprocess.run(
            ["ip", "netns", "exec", src_netns, sys.executable, "-c", _CLIENT, host, str(port)],
            capture_output=True,
            text=True,
            timeout=20,
        )
        return proc.stdout.strip() if proc.returncode == 0 else ""

    try:
        return str(wait_for(once, timeout=timeout, message=f"TCP {host}:{port} from {src_netns}"))
    except WaitTimeout:
        return ""


def bridge_conf(
    tmp_path: Path,
    subnet: str,
    plugin: str = "skiff-cni",
    ipam: str = "skiff-ipam",
    bridge: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "cniVersion": "1.0.0",
        "name": unique_name("net-", 12),
        "type": plugin,
        "bridge": bridge or unique_name("skb", 12),
        "isGateway": True,
        "ipMasq": True,
        "ipam": {
            "type": ipam,
            "subnet": subnet,
            "dataDir": str(tmp_path / "ipam"),
            "routes": [{"dst": "0.0.0.0/0"}],
        },
    }
    conf.update(extra)
    return conf


_UDP_SERVER = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
print("ready", flush=True)
while True:
    data, addr = s.recvfrom(200)
    s.sendto(b"udp " + data, addr)
"""

_UDP_CLIENT = """
import socket, sys
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); c.settimeout(1)
for _ in range(5):
    c.sendto(b"ping", (sys.argv[1], int(sys.argv[2])))
    try:
        print(c.recvfrom(200)[0].decode()); break
    except socket.timeout:
        pass
"""


@contextmanager
def udp_server(netns: str, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """A UDP echo server in `netns`; stopped afterwards."""
    proc = subprocess.Popen(
        ["ip", "netns", "exec", netns, sys.executable, "-c", _UDP_SERVER, str(port)],
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def udp_get(src_netns: str, host: str, port: int) -> str:
    proc = subprocess.run(
        ["ip", "netns", "exec", src_netns, sys.executable, "-c", _UDP_CLIENT, host, str(port)],
        capture_output=True,
        text=True,
        timeout=20,
    )
    return proc.stdout.strip()
