"""An in-process API server (real gRPC, TLS, tokens) over each store; the
session's etcd is tests/integration/conftest.py's `etcd_server`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.apiserver.server import ApiServer, ApiServerConfig
from controlplane.apiserver.tls import ensure_pki
from controlplane.client.apiclient import GrpcApiClient
from controlplane.storage.etcd import EtcdStore
from controlplane.storage.interface import Store
from controlplane.storage.sqlite import SqliteStore
from tests.harness.apiserver import Cluster, etcd_root
from tests.harness.etcd import EtcdServer


def make_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if kind == "sqlite":
        return SqliteStore(tmp_path / "state.db")
    etcd: EtcdServer = request.getfixturevalue("etcd_server")
    return EtcdStore([etcd.endpoint], root=etcd_root("api"), compact_interval=0)


@pytest.fixture
def watch_queue() -> int:
    """Per-watcher buffer; a test module overrides this fixture to shrink it."""
    return 10_000


@pytest.fixture(params=["sqlite", "etcd"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path, watch_queue: int) -> Iterator[Cluster]:
    store = make_store(request.param, request, tmp_path)
    pki = ensure_pki(tmp_path)
    config = ApiServerConfig(
        listen="127.0.0.1:0", bookmark_interval=0.2, namespace_retry=0.1, watch_queue=watch_queue
    )
    server = ApiServer(store, config, pki)
    port = server.start()
    try:
        yield Cluster(server, store, pki, f"127.0.0.1:{port}")
    finally:
        server.stop(0.5)
        store.close()


@pytest.fixture
def client(cluster: Cluster) -> Iterator[GrpcApiClient]:
    c = cluster.client()
    try:
        yield c
    finally:
        c.close()
