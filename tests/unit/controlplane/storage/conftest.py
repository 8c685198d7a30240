"""Fixtures for the storage suite: every test runs against SQLite and etcd."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.storage.etcd import EtcdStore
from controlplane.storage.interface import Store
from controlplane.storage.sqlite import SqliteStore
from tests.unit.controlplane.storage.etcd_server import EtcdServer, etcd_available, running_etcd

_roots = itertools.count()


@pytest.fixture(scope="session")
def etcd_server() -> Iterator[EtcdServer]:
    if not etcd_available():
        pytest.skip("etcd (Debian etcd-server) is not installed")
    with running_etcd() as server:
        yield server


@pytest.fixture(params=["sqlite", "etcd"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        s: Store = SqliteStore(tmp_path / "state.db")
    else:
        server: EtcdServer = request.getfixturevalue("etcd_server")
        s = EtcdStore([server.endpoint], root=f"/test{next(_roots)}", compact_interval=0)
    try:
        yield s
    finally:
        s.close()
