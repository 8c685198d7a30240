"""One API error table on both wires (issue 27): every reason the table
knows goes from the server's error over the wire to the same client error in
both clients, with its kind, reason, message and retry advice:

- REST: the API server's metav1.Status (rest/status.error_response), read
  by the REST client (controlplane.client.apirest);
- gRPC: the servicer's status code and trailing metadata (apiserver.rpc),
  and a batch item's fields (Bind), read by the gRPC client (apiclient).

Both servers run in this process on 127.0.0.1 ports of their own. The test
fails when any of the tables the wires are derived from disagrees with
another (the REST client once mapped 422, 410 and 500 to Unavailable and
every 409 to Conflict, and no error carried its reason).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from concurrent import futures
from typing import Any

import grpc
import pytest
from aiohttp import web

from controlplane.apiserver.rest.status import error_response
from controlplane.apiserver.servicer import ObjectsServicer
from controlplane.client import apirest
from controlplane.client.apiclient import Binding, GrpcApiClient
from controlplane.client.config import ClientConfig
from machinery import apierrors
from proto.controlplane.v1 import api_pb2_grpc

# Every reason, without and with retry advice.
CASES = [(row.reason, 0) for row in apierrors.TABLE] + [("Conflict", 1), ("TooManyRequests", 7)]


def server_error(name: str) -> apierrors.ApiError:
    """The error a server raises for the object name `<reason>.<retry after>`."""
    reason, _, retry = name.partition(".")
    row = apierrors.BY_REASON[reason]
    return row.kind(f"refused: {reason} ({name})", reason=reason, retry_after=int(retry) or None)


def check(got: BaseException, name: str) -> None:
    sent = server_error(name)
    assert type(got) is type(sent), (name, got)
    assert isinstance(got, apierrors.ApiError)
    assert got.reason == sent.reason, name
    assert str(got) == str(sent), name
    assert got.retry_after == sent.retry_after, name
    assert apierrors.http_status(got) == apierrors.http_status(sent)


class Registry:
    """What the servicer asks of the registry, answering every object with
    the error its name says."""

    def get(self, kind: str, name: str, namespace: str | None, who: Any) -> Any:
        raise server_error(name)

    def bind_many(self, bindings: Sequence[Any], who: Any) -> list[apierrors.ApiError]:
        return [server_error(b.name) for b in bindings]


@pytest.fixture(scope="module")
def grpc_client() -> Iterator[GrpcApiClient]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    servicer = ObjectsServicer(Registry(), None, None)  # type: ignore[arg-type]
    api_pb2_grpc.add_ObjectsServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    client = GrpcApiClient(ClientConfig(server=f"127.0.0.1:{port}"), timeout=10)
    try:
        yield client
    finally:
        client.close()
        server.stop(None)


@pytest.fixture(scope="module")
def rest_config() -> Iterator[ClientConfig]:
    async def stats(request: web.Request) -> web.Response:
        return error_response(server_error(request.match_info["node"]))

    app = web.Application()
    app.router.add_get("/api/v1/nodes/{node}/stats", stats)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield ClientConfig(server=f"127.0.0.1:{port}")
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@pytest.mark.parametrize(("reason", "retry"), CASES)
def test_rest_round_trip(rest_config: ClientConfig, reason: str, retry: int) -> None:
    name = f"{reason}.{retry}"
    with pytest.raises(apierrors.ApiError) as info:
        apirest.node_stats(rest_config, name)
    check(info.value, name)


@pytest.mark.parametrize(("reason", "retry"), CASES)
def test_grpc_round_trip(grpc_client: GrpcApiClient, reason: str, retry: int) -> None:
    name = f"{reason}.{retry}"
    with pytest.raises(apierrors.ApiError) as info:
        grpc_client.get("ConfigMap", name, "default")
    check(info.value, name)


def test_grpc_batch_items_round_trip(grpc_client: GrpcApiClient) -> None:
    names = [f"{reason}.{retry}" for reason, retry in CASES]
    results = grpc_client.bind([Binding("default", name, "n1") for name in names])
    for name, got in zip(names, results, strict=True):
        assert isinstance(got, BaseException), name
        check(got, name)


def test_both_wires_agree_on_every_reason(
    rest_config: ClientConfig, grpc_client: GrpcApiClient
) -> None:
    """Whatever the two clients make of one server error is the same error."""
    for reason, retry in CASES:
        name = f"{reason}.{retry}"
        with pytest.raises(apierrors.ApiError) as rest:
            apirest.node_stats(rest_config, name)
        with pytest.raises(apierrors.ApiError) as over_grpc:
            grpc_client.get("ConfigMap", name, "default")
        assert (type(rest.value), rest.value.reason, str(rest.value), rest.value.retry_after) == (
            type(over_grpc.value),
            over_grpc.value.reason,
            str(over_grpc.value),
            over_grpc.value.retry_after,
        )
