"""An in-process API server (real gRPC, TLS, tokens) over each store."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from controlplane.apiserver.server import ApiServer, ApiServerConfig
from controlplane.apiserver.tls import Pki, ensure_pki
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import ClientConfig
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


@dataclass
class Cluster:
    server: ApiServer
    store: Store
    pki: Pki
    address: str

    def client(self, token: str | None = None) -> GrpcApiClient:
        assert self.server.authority is not None
        if token is None:
            token = self.server.authority.admin_token()
        return connect(ClientConfig(self.address, self.pki.ca_pem, token), timeout=10)


def make_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if kind == "sqlite":
        return SqliteStore(tmp_path / "state.db")
    etcd: EtcdServer = request.getfixturevalue("etcd_server")
    return EtcdStore([etcd.endpoint], root=f"/api{next(_roots)}", compact_interval=0)


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
