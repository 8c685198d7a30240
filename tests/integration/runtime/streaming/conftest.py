"""Fixtures for the streaming server tests: a host-process backend and a
server on an ephemeral 127.0.0.1 port, both torn down after each test."""

from __future__ import annotations

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
