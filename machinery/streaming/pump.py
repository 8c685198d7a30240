"""Copying between a TCP socket and a stream (SPDY data stream), one way each:
the two halves of a port-forward, on the client (skiffctl) and server
(runtime) side alike. Neither closes anything: the caller knows how each
side ends."""

from __future__ import annotations

import socket
from typing import Protocol

CHUNK = 32768


class Readable(Protocol):
    def read(self) -> bytes: ...


class Writable(Protocol):
    def write(self, data: bytes) -> None: ...


def socket_to_stream(sock: socket.socket, stream: Writable) -> None:
    """Copy until the socket's end of file; an OSError either side ends the copy."""
    try:
        while True:
            chunk = sock.recv(CHUNK)
            if not chunk:
                return
            stream.write(chunk)
    except OSError:
        pass


def stream_to_socket(stream: Readable, sock: socket.socket) -> None:
    """Copy until the stream ends; an OSError (either side) propagates."""
    while True:
        chunk = stream.read()
        if not chunk:
            return
        sock.sendall(chunk)
