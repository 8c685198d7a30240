"""Fixtures for skiffctl unit tests: a fake API client, a fake clock and a runner."""

from __future__ import annotations

import io
from dataclasses import dataclass

import pytest

from controlplane.cli.main import main
from machinery.clock import FakeClock
from tests.fakes.fake_apiclient import FakeApiClient


@dataclass
class Result:
    code: int
    out: str
    err: str


class Ctl:
    """Runs `skiffctl` in-process against the fake client."""

    def __init__(self) -> None:
        self.clock = FakeClock(start=1_700_000_000.0)
        self.client = FakeApiClient(clock=self.clock)
        self.factory_calls = 0

    def factory(self, args: object) -> FakeApiClient:
        self.factory_calls += 1
        return self.client

    def __call__(self, *argv: str, stdin: str = "") -> Result:
        out, err = io.StringIO(), io.StringIO()
        code = main(
            list(argv),
            client_factory=self.factory,
            stdout=out,
            stderr=err,
            stdin=io.StringIO(stdin),
            clock=self.clock,
        )
        return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def ctl() -> Ctl:
    return Ctl()
