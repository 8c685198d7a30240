"""An in-process API server (real gRPC and REST, TLS, tokens) over a store,
for the integration tests: `Cluster` is what the `cluster` fixture of
tests/integration/controlplane/apiserver yields."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass

from controlplane.apiserver.server import ApiServer
from controlplane.apiserver.tls import Pki
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import ClientConfig
from controlplane.storage.interface import Store

_roots = itertools.count()


def etcd_root(prefix: str) -> str:
    """A key prefix no other test uses on a shared etcd, also across the
    processes of a parallel run (the pid tells them apart)."""
    return f"/{prefix}-{os.getpid()}-{next(_roots)}"


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
