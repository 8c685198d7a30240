"""What every REST handler is given: the registry, the broadcaster, the
executor that runs blocking registry calls, and the caller's identity."""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web

from controlplane.apiserver.audit import AuditLog
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.flowcontrol import FlowControl
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.rest.paths import Target
from controlplane.apiserver.rest.status import BadRequest
from controlplane.apiserver.watch import Broadcaster
from controlplane.client.agents import AgentTLS

T = TypeVar("T")


@dataclass
class Server:
    """The parts shared by every request."""

    registry: Registry
    broadcaster: Broadcaster
    executor: ThreadPoolExecutor
    flow: FlowControl
    audit: AuditLog | None = None
    min_watch_timeout: float = 1800.0
    agent_tls: AgentTLS | None = None  # the API server's own credential towards agents

    async def run(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """func(*args, **kwargs) on the executor: registry calls block. It runs
        in a copy of this task's context, so admission plugins reach the
        request's warnings and audit annotations (admission_context)."""
        loop = asyncio.get_running_loop()
        call = functools.partial(contextvars.copy_context().run, func, *args, **kwargs)
        return await loop.run_in_executor(self.executor, call)


@dataclass
class Call:
    """One resource request."""

    server: Server
    request: web.Request
    target: Target
    who: Identity

    @property
    def registry(self) -> Registry:
        return self.server.registry

    def query(self, name: str, default: str = "") -> str:
        return self.request.query.get(name, default)

    @property
    def namespace(self) -> str | None:
        return self.target.namespace or None

    def dry_run(self) -> bool:
        values = self.request.query.getall("dryRun", [])
        for value in values:
            if value != "All":
                raise BadRequest(f"dryRun: unsupported value {value!r}: supported values: All")
        return bool(values)
