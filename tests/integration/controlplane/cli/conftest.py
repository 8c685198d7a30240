"""Fixtures of skiffctl's integration tests that run it in-process against the
fake API client with real endpoints behind it: an agent endpoint (FakeAgent),
the API server's pods/log and nodes/stats (FakeRest), and the streaming stack
(runtime streaming server, agent proxy, pods/exec stand-in)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controlplane.client.config import ClientConfig
from tests.fakes.fake_agent import FakeAgent
from tests.fakes.fake_rest import FakeRest
from tests.fakes.skiffctl import Ctl
from tests.fakes.stream_stack import Stack, stream_stack


@pytest.fixture
def ctl() -> Ctl:
    return Ctl()


@pytest.fixture
def agent() -> Iterator[FakeAgent]:
    a = FakeAgent().start()
    try:
        yield a
    finally:
        a.stop()


@pytest.fixture
def rest(ctl: Ctl) -> Iterator[FakeRest]:
    """pods/log and nodes/stats as the API server serves them; skiffctl's
    credential points at it, as the real GrpcApiClient's does."""
    fake = FakeRest(ctl.client)
    ctl.client.config = ClientConfig(server=f"127.0.0.1:{fake.port}")  # type: ignore[attr-defined]
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def stack() -> Iterator[Stack]:
    with stream_stack() as s:
        yield s
