"""The client certificates of gRPC connections the front door relays.

gRPC arrives on the API port, where the front door (rest/frontdoor.py)
ends TLS and relays the bytes to the gRPC server's private unix socket;
the gRPC server never sees the TLS session, so a client certificate
(a node's, issued through the CertificateSigningRequest API) would be
lost there. So the front door connects each relayed connection from a
socket bound to a fresh name in the gRPC socket's own private directory
(0700, so only this server can bind there) and records the certificate
TLS verified under that name; the gRPC servicers read their caller's
peer address (`unix:<that name>`) and look it up here. The name is
unlinked once connected (the socket keeps it) and forgotten when the
connection closes. Nothing else is trusted: a peer with no record has
only its bearer token.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from typing import Any

MAX_UNIX_PATH = 107  # sockaddr_un.sun_path less the terminating NUL


class RelayedPeers:
    def __init__(self, grpc_socket: str) -> None:
        self.directory = os.path.dirname(os.path.abspath(grpc_socket))
        self._certs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def bound_socket(self) -> tuple[socket.socket, str] | None:
        """A unix stream socket bound to a fresh name here (its path), or
        None when the directory's paths are too long for a socket address."""
        path = os.path.join(self.directory, f"p{secrets.token_hex(8)}")
        if len(path.encode()) > MAX_UNIX_PATH:
            return None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
        except OSError:
            sock.close()
            return None
        return sock, path

    def register(self, path: str, peercert: dict[str, Any]) -> None:
        with self._lock:
            self._certs[path] = peercert
        try:
            os.unlink(path)  # the connected socket keeps its name
        except OSError:
            pass

    def forget(self, path: str) -> None:
        with self._lock:
            self._certs.pop(path, None)

    def certificate(self, peer: str) -> dict[str, Any] | None:
        """The verified certificate (ssl's getpeercert() dict) of the gRPC
        peer `peer` (grpc's context.peer(): `unix:/dir/pXXXX`), if any."""
        if not peer.startswith("unix:"):
            return None
        with self._lock:
            return self._certs.get(peer[len("unix:") :])
