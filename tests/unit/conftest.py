"""The unit layer starts no servers: a unit test that listens on a socket (TCP,
UDP-served DNS over TCP, unix) or builds a gRPC server fails here, naming the
layer it belongs to. Such a test goes to tests/integration (same sub-path),
with its fakes in tests/fakes and its harness in tests/harness (README.md,
"Tests and benchmarks")."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

_MOVE = "unit tests start no servers: move this test to tests/integration"


class ServerInUnitTest(AssertionError):
    """A unit test started a server."""


@pytest.fixture(autouse=True)
def _no_servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def listen(self: socket.socket, *args: Any) -> None:
        raise ServerInUnitTest(f"{_MOVE} (it listens on {self.family.name} {self.getsockname()!r})")

    def server(*args: Any, **kwargs: Any) -> Any:
        raise ServerInUnitTest(f"{_MOVE} (it builds a gRPC server)")

    monkeypatch.setattr(socket.socket, "listen", listen)
    monkeypatch.setattr(grpc, "server", server)
    yield
