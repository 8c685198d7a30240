"""Fixtures shared by the integration tests: one real etcd per test process
(its keys split by `tests.harness.apiserver.etcd_root` or a per-test prefix,
so the tests of one process never see each other's objects)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness.etcd import EtcdServer, etcd_available, running_etcd


@pytest.fixture(scope="session")
def etcd_server() -> Iterator[EtcdServer]:
    if not etcd_available():
        pytest.skip("etcd (Debian etcd-server) is not installed")
    with running_etcd() as server:
        yield server
