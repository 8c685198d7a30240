"""Authorization comes first (issue: an unauthorized user deleting namespace
`default` heard "may not be deleted"): a caller without the right hears 403
naming itself and the verb, over gRPC and REST, before any admission rule,
existence check or precondition says anything about the object."""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Iterator

import pytest

from controlplane.apiserver.server import ApiServer, ApiServerConfig
from controlplane.apiserver.tls import ensure_pki
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import ClientConfig
from controlplane.storage.sqlite import SqliteStore


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    tmp = tmp_path_factory.mktemp("authz-order")
    store = SqliteStore(tmp / "state.db")
    api = ApiServer(store, ApiServerConfig(listen="127.0.0.1:0", rest=True), ensure_pki(tmp))
    api.start()
    try:
        with client(api, api.authority.admin_token()) as admin:  # type: ignore[union-attr]
            admin.create("ConfigMap", {"metadata": {"name": "cm"}, "data": {"k": "v"}}, "default")
        yield api
    finally:
        api.stop(0.5)
        store.close()


def client(api: ApiServer, token: str) -> GrpcApiClient:
    assert api.pki is not None
    return connect(ClientConfig(f"127.0.0.1:{api.port}", api.pki.ca_pem, token), timeout=10)


def eve_token(api: ApiServer) -> str:
    assert api.authority is not None
    return api.authority.user_token("eve")


STALE = {"metadata": {"resourceVersion": "1"}, "data": {"k": "w"}}


REST = {
    "delete namespace default": ("DELETE", "/api/v1/namespaces/default", None),
    "delete a missing object": ("DELETE", "/api/v1/namespaces/default/configmaps/missing", None),
    "update a missing object": (
        "PUT", "/api/v1/namespaces/default/configmaps/missing",
        {"metadata": {"name": "missing", "namespace": "default"}},
    ),
    "patch at a stale version": ("PATCH", "/api/v1/namespaces/default/configmaps/cm", STALE),
}  # fmt: skip


@pytest.mark.parametrize("case", list(REST))
def test_rest_refuses_before_anything_else(server: ApiServer, case: str) -> None:
    assert server.pki is not None
    method, path, body = REST[case]
    tls = ssl.create_default_context(cadata=server.pki.ca_pem.decode())
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=tls, timeout=10)
    headers = {"Authorization": f"Bearer {eve_token(server)}"}
    if method == "PATCH":
        headers["Content-Type"] = "application/merge-patch+json"
    elif body is not None:
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = conn.getresponse()
        status = json.loads(response.read())
    finally:
        conn.close()
    assert (response.status, status["reason"]) == (403, "Forbidden"), status
    assert 'user "eve" cannot' in status["message"].lower()
