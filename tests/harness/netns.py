"""Network namespaces and veth pairs for tests, always removed afterwards.

Names carry a `sk` prefix plus random hex so that parallel or leaked runs
never collide with each other or with the host's own links.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import socket
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

NETNS_DIR = "/run/netns"


def unique_name(prefix: str, length: int = 15) -> str:
    """A random name of at most `length` characters (IFNAMSIZ-1 for links)."""
    return (prefix + secrets.token_hex(8))[:length]


def _ip(
    *args: str, netns: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    cmd = ["ip"] + (["-n", netns] if netns else []) + list(args)
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


@contextmanager
def temp_netns(prefix: str = "sktest-") -> Iterator[str]:
    """Create a named network namespace with `lo` up; delete it on exit."""
    name = unique_name(prefix, 30)
    _ip("netns", "add", name)
    try:
        _ip("link", "set", "lo", "up", netns=name)
        yield name
    finally:
        _ip("netns", "del", name, check=False)


def netns_path(name: str) -> str:
    return os.path.join(NETNS_DIR, name)


@dataclass(frozen=True)
class VethPair:
    host: str
    peer: str
    peer_netns: str | None


@contextmanager
def temp_veth(peer_netns: str | None = None, prefix: str = "skv") -> Iterator[VethPair]:
    """A veth pair: `host` end in this namespace, `peer` end optionally moved
    into `peer_netns`. Deleting one end deletes both."""
    host = unique_name(prefix + "h")
    peer = unique_name(prefix + "p")
    _ip("link", "add", host, "type", "veth", "peer", "name", peer)
    try:
        if peer_netns:
            _ip("link", "set", peer, "netns", peer_netns)
        yield VethPair(host=host, peer=peer, peer_netns=peer_netns)
    finally:
        _ip("link", "del", host, check=False)


_CLONE_NEWNET = 0x40000000


def _enter_netns(name: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(netns_path(name), os.O_RDONLY)
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into network namespace {name}: {os.strerror(err)}")
    finally:
        os.close(fd)


class NetnsSockets:
    """Makes TCP sockets inside the named network namespace `name`: one
    worker thread enters it (setns acts on the calling thread only) and
    creates sockets on request. A socket stays in the namespace it was made
    in, whichever thread then uses it, so the rest of the process never
    leaves its own namespace."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._pool = ThreadPoolExecutor(1, initializer=_enter_netns, initargs=(name,))

    def connect(self, address: tuple[str, int], timeout: float = 10.0) -> socket.socket:
        return self._pool.submit(socket.create_connection, address, timeout).result()

    def listen(self, address: tuple[str, int]) -> socket.socket:
        return self._pool.submit(socket.create_server, address).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
