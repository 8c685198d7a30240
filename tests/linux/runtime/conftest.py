"""Fixtures for runtime tests: a session busybox rootfs and one fresh
`skiff runtime` per test (see harness.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.linux.runtime.harness import Runtime, build_busybox_rootfs, running_runtime


@pytest.fixture(scope="session")
def busybox_rootfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_busybox_rootfs(tmp_path_factory.mktemp("images") / "busybox")


@pytest.fixture
def runtime(tmp_path: Path, busybox_rootfs: Path) -> Iterator[Runtime]:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    with running_runtime(tmp_path / "rt", busybox_rootfs) as r:
        yield r
