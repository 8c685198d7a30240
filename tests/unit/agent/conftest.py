"""Secret and projected volumes live on tmpfs (agent/volumes.py): a unit test
that sets volumes up under its tmp_path leaves mounts there, which are
removed after it, even when it fails."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness.mounts import unmount_all


@pytest.fixture(autouse=True)
def _unmount_tmp_path(request: pytest.FixtureRequest) -> Iterator[None]:
    path = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if path is not None:
        unmount_all(path)
