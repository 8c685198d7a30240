"""Two API servers on one etcd behave as one cluster (the HA layout)."""

from __future__ import annotations

import itertools
from pathlib import Path

from controlplane.apiserver.server import ApiServer, ApiServerConfig
from controlplane.apiserver.tls import ensure_pki
from controlplane.client.apiclient import connect
from controlplane.client.config import ClientConfig
from controlplane.client.errors import AlreadyExists, Conflict
from controlplane.client.interface import ListOptions
from controlplane.storage.etcd import EtcdStore
from tests.harness.etcd import EtcdServer
from tests.harness.watch_collector import Collector

_roots = itertools.count()


def test_two_api_servers_share_one_etcd(etcd_server: EtcdServer, tmp_path: Path) -> None:
    root = f"/ha{next(_roots)}"
    pki = ensure_pki(tmp_path)  # both hosts share the PKI and token secret
    servers, stores, clients = [], [], []
    try:
        for _ in range(2):
            store = EtcdStore([etcd_server.endpoint], root=root, compact_interval=0)
            server = ApiServer(store, ApiServerConfig(bookmark_interval=0.2), pki)
            port = server.start()
            assert server.authority is not None
            stores.append(store)
            servers.append(server)
            clients.append(connect(ClientConfig(f"127.0.0.1:{port}", pki.ca_pem,
                                                server.authority.admin_token())))  # fmt: skip
        a, b = clients
        start = b.list("ConfigMap", "default").resource_version
        watch = b.watch("ConfigMap", "default", ListOptions(resource_version=start))
        got = Collector(iter(watch))
        created = a.create("ConfigMap", {"metadata": {"name": "shared"}}, "default")
        assert b.get("ConfigMap", "shared", "default") == created
        try:
            b.create("ConfigMap", {"metadata": {"name": "shared"}}, "default")
            raise AssertionError("expected AlreadyExists")
        except AlreadyExists:
            pass
        b.patch("ConfigMap", "shared", {"data": {"k": "v"}}, "default")
        stale = dict(created)
        stale["data"] = {"k": "other"}
        try:
            a.update("ConfigMap", stale)
            raise AssertionError("expected Conflict")
        except Conflict:
            pass
        events = got.wait(2)
        assert [e.type for e in events] == ["ADDED", "MODIFIED"]
        watch.stop()
    finally:
        for c in clients:
            c.close()
        for s in servers:
            s.stop(0.5)
        for st in stores:
            st.close()
