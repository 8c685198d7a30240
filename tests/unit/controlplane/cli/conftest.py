"""Fixtures for skiffctl unit tests: skiffctl in-process against the fake API
client and a fake clock (tests/fakes/skiffctl.py)."""

from __future__ import annotations

import pytest

from tests.fakes.skiffctl import Ctl


@pytest.fixture
def ctl() -> Ctl:
    return Ctl()
