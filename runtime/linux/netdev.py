"""Bringing the loopback link up in the current network namespace with one
ioctl (SIOCSIFFLAGS), so the sandbox monitor does not need pyroute2.

Must be called only in a single-threaded process that already is in the
target network namespace.
"""

from __future__ import annotations

import fcntl
import socket
import struct

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


def link_up(name: str = "lo") -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sh", name.encode(), 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, req))[1]
        req = struct.pack("16sh", name.encode(), flags | IFF_UP)
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, req)
