"""TCP ports on 127.0.0.1 for daemons that tests and benchmarks start.

A daemon that can report the port it bound (`--listen 127.0.0.1:0`, then the
address it writes out) should be started on port 0. Where the port must be
known before the daemon starts (etcd's URLs, a restart on the same port, a
kubeconfig written beforehand), `free_port()` gives one that nothing can take
in between: it comes from below the kernel's ephemeral range (so no
`connect()` or bind to port 0 on this machine is handed it), it is reserved
for this process (tests/harness/reserve.py: no other test process on the
machine gets it until this one exits), and nothing listens on it now.
"""

from __future__ import annotations

import secrets
import socket
from pathlib import Path

from tests.harness.reserve import try_reserve

# Never NodePorts (30000-32767, skiff's and Kubernetes' default range) and
# never the ephemeral range; this one is 10,000 ports.
LOW, HIGH = 20000, 30000
_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _range() -> tuple[int, int]:
    try:
        first = int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first = 32768
    return LOW, min(HIGH, first)


def _bindable(port: int) -> bool:
    for family, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                s.bind((host, port))
        except OSError as err:
            if family == socket.AF_INET6 and err.errno == 97:  # no IPv6 here
                continue
            return False
    return True


def free_port() -> int:
    """A port no daemon on this machine holds and no other test process can
    take before this process exits."""
    low, high = _range()
    for _ in range(2000):
        port = low + secrets.randbelow(high - low)
        reservation = try_reserve(f"port-{port}")
        if reservation is None:
            continue
        if _bindable(port):
            return port  # kept until this process exits
        reservation.release()
    raise RuntimeError(f"no free TCP port in {low}-{high - 1}")
