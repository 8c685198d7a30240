"""The request wrapper: authentication and the in-flight bound (429 + Retry-After)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from controlplane.apiserver.auth import TokenAuthority
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.rest.app import make_app
from controlplane.apiserver.rest.context import Server
from controlplane.apiserver.rest.watch import LoopFeed
from controlplane.apiserver.watch import Broadcaster
from controlplane.storage.sqlite import SqliteStore


def run(tmp_path: Path, max_in_flight: int, requests: list[tuple[str, str]]) -> list[Any]:
    store = SqliteStore(tmp_path / "state.db")
    registry = Registry(store)
    registry.create("Namespace", {"metadata": {"name": "default"}})
    authority = TokenAuthority(b"0123456789abcdef0123")
    executor = ThreadPoolExecutor(2)

    async def go() -> list[Any]:
        server = Server(registry, Broadcaster(store), executor)
        app = make_app(server, authority, LoopFeed(asyncio.get_running_loop()), max_in_flight)
        async with TestClient(TestServer(app)) as client:
            answers = []
            for path, token in requests:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                response = await client.get(path, headers=headers)
                answers.append((response.status, response.headers.get("Retry-After"),
                                await response.json()))  # fmt: skip
            return answers

    try:
        return asyncio.run(go())
    finally:
        executor.shutdown()
        store.close()


def test_tokens_are_checked(tmp_path: Path) -> None:
    admin = TokenAuthority(b"0123456789abcdef0123").admin_token()
    answers = run(tmp_path, 10, [("/api/v1/namespaces", ""), ("/api/v1/namespaces", "bad"),
                                 ("/api/v1/namespaces", admin), ("/version", "")])  # fmt: skip
    assert [a[0] for a in answers] == [401, 401, 200, 200]
    assert answers[0][2]["reason"] == "Unauthorized"
    assert answers[2][2]["kind"] == "NamespaceList"


def test_beyond_the_in_flight_bound_is_429_with_retry_after(tmp_path: Path) -> None:
    admin = TokenAuthority(b"0123456789abcdef0123").admin_token()
    ((code, retry, status),) = run(tmp_path, 0, [("/api/v1/namespaces", admin)])
    assert (code, retry, status["reason"]) == (429, "1", "TooManyRequests")
