"""Machine-wide reservations, so that test processes sharing this machine
(xdist workers, other checkouts' runs) never pick the same host-wide thing.

A reservation is an exclusive `flock` on a file named after the thing in
RESERVATIONS (`port-20123`, `cidr-10.250.17.0-24`). The kernel drops the
lock when the process that took it exits, however it exits, so a killed run
leaves nothing reserved. A process keeps what it reserves until it exits
(`reserve`), or until it releases it (`Reservation.release`, the context
manager). Every picker checks the machine as well (a bind, the routes and
addresses), so it also avoids whatever was not taken through here.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import threading
from pathlib import Path

RESERVATIONS = Path("/tmp/skiff-test-reservations")

_lock = threading.Lock()
_held: dict[str, int] = {}  # name -> fd of the lock file, for this process


class Reservation:
    """One reserved name; `release()` (or leaving the `with`) frees it."""

    def __init__(self, name: str) -> None:
        self.name = name

    def release(self) -> None:
        with _lock:
            fd = _held.pop(self.name, None)
        if fd is not None:
            os.close(fd)  # drops the flock

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _file(name: str) -> Path:
    return RESERVATIONS / name.replace("/", "-")


def try_reserve(name: str) -> Reservation | None:
    """Reserve `name` for this process, or None if any process holds it
    (this one included: a name is handed out once until released)."""
    RESERVATIONS.mkdir(mode=0o1777, parents=True, exist_ok=True)
    with _lock:
        if name in _held:
            return None
        fd = os.open(_file(name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        _held[name] = fd
    return Reservation(name)


def held(name: str) -> bool:
    """True if this process holds `name`."""
    with _lock:
        return name in _held


def _network_names(net: ipaddress.IPv4Network) -> list[str]:
    """The lock names of `net`: each /24 it covers for a /19 to /32 (so a
    cluster's /19 and a node's /24 inside it conflict), else each /16."""
    if net.prefixlen >= 19:
        blocks = [net.supernet(new_prefix=24)] if net.prefixlen > 24 else net.subnets(new_prefix=24)
    else:
        blocks = [net.supernet(new_prefix=16)] if net.prefixlen > 16 else net.subnets(new_prefix=16)
    return [f"net-{b.network_address}-{b.prefixlen}" for b in blocks]


def try_reserve_network(net: ipaddress.IPv4Network) -> list[Reservation] | None:
    """Reserve the whole of `net` for this process, or None (nothing kept)
    if any part of it is reserved already."""
    taken: list[Reservation] = []
    for name in _network_names(net):
        reservation = try_reserve(name)
        if reservation is None:
            for r in taken:
                r.release()
            return None
        taken.append(reservation)
    return taken
