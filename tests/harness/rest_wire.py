"""The REST app over a real registry (SQLite in a temp dir), driven in-process:
`serve(tmp_path)` yields a `Api` whose `call` sends one request and returns
its status, headers and body."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from controlplane.apiserver.auth import TokenAuthority
from controlplane.apiserver.flowcontrol import FlowControl, Limits
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.rest.app import make_app
from controlplane.apiserver.rest.context import Server
from controlplane.apiserver.rest.watch import LoopFeed
from controlplane.apiserver.watch import Broadcaster
from controlplane.storage.sqlite import SqliteStore

PROTOBUF = "application/vnd.kubernetes.protobuf"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    warnings: list[str] = field(default_factory=list)  # every Warning header, in order

    def json(self) -> Any:
        return json.loads(self.body)


class Api:
    def __init__(self, loop: asyncio.AbstractEventLoop, port: int, token: str,
                 registry: Registry) -> None:  # fmt: skip
        self.loop, self.port, self.token, self.registry = loop, port, token, registry

    def call(self, method: str, path: str, body: bytes | dict[str, Any] | list[Any] | None = None,
             content_type: str = "application/json", accept: str = "",
             headers: dict[str, str] | None = None) -> Answer:  # fmt: skip
        data = json.dumps(body).encode() if isinstance(body, dict | list) else body
        sent = {"Authorization": f"Bearer {self.token}", **(headers or {})}
        if data is not None:
            sent["Content-Type"] = content_type
        if accept:
            sent["Accept"] = accept

        async def go() -> Answer:
            async with aiohttp.ClientSession(auto_decompress=False) as session:
                url = f"http://127.0.0.1:{self.port}{path}"
                async with session.request(method, url, data=data, headers=sent) as response:
                    return Answer(response.status, dict(response.headers), await response.read(),
                                  response.headers.getall("Warning", []))  # fmt: skip

        return asyncio.run_coroutine_threadsafe(go(), self.loop).result(60)


@contextmanager
def serve(tmp_path: Path) -> Iterator[Api]:
    store = SqliteStore(tmp_path / "state.db")
    registry = Registry(store)
    registry.create("Namespace", {"metadata": {"name": "default"}})
    authority = TokenAuthority(b"0123456789abcdef0123")
    executor = ThreadPoolExecutor(2)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    broadcaster = Broadcaster(store, bookmark_interval=0.2)
    broadcaster.start()

    async def start() -> None:
        server = Server(registry, broadcaster, executor, FlowControl(Limits()), None)
        runner = web.AppRunner(make_app(server, authority, LoopFeed(loop)))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        holder["runner"] = runner
        holder["port"] = runner.addresses[0][1]

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30)
    try:
        yield Api(loop, holder["port"], authority.admin_token(), registry)
    finally:
        asyncio.run_coroutine_threadsafe(holder["runner"].cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        broadcaster.stop()
        executor.shutdown()
        store.close()
