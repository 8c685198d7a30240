"""Fixtures for the storage suite: every test runs against SQLite and etcd."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.storage.etcd import EtcdStore
from controlplane.storage.interface import Store
from controlplane.storage.sqlite import SqliteStore
from tests.harness.apiserver import etcd_root
from tests.harness.etcd import EtcdServer


@pytest.fixture(params=["sqlite", "etcd"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        s: Store = SqliteStore(tmp_path / "state.db")
    else:
        server: EtcdServer = request.getfixturevalue("etcd_server")
        s = EtcdStore([server.endpoint], root=etcd_root("store"), compact_interval=0)
    try:
        yield s
    finally:
        s.close()
