"""Fixtures for the streaming server tests: a host-process backend, a
server on an ephemeral 127.0.0.1 port and a TCP echo server for
port-forwards, all torn down after each test."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from runtime.streaming import StreamingConfig, StreamingServer
from tests.fakes.streaming_backend import HostProcessBackend


@pytest.fixture
def backend() -> Iterator[HostProcessBackend]:
    b = HostProcessBackend(env={"PATH": "/usr/bin:/bin", "LANG": "C"})
    b.add_container("c1")
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def server(backend: HostProcessBackend) -> Iterator[StreamingServer]:
    config = StreamingConfig(port=0, stream_creation_timeout=5.0, drain_timeout=1.0, linger=2.0)
    with StreamingServer(backend, config) as s:
        yield s


@pytest.fixture
def echo_port() -> Iterator[int]:
    """A TCP echo server on 127.0.0.1: echoes until the peer half-closes, then closes."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def serve_one(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=serve_one, args=(conn,), daemon=True)
            thread.start()
            threads.append(thread)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        acceptor.join()
        for thread in threads:
            thread.join()
