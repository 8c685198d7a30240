"""/livez, /readyz and /healthz with named checks, as kube-apiserver prints them.

Each endpoint runs its checks in order: `ping` (the server answers), `etcd`
(the store answers a revision read; the name kube-apiserver and k3s use
whatever the backend) and, for /readyz, `informer-sync` (the watch cache is
serving). Without `?verbose` a pass is the plain `ok`; with it, and on any
failure (500), one line per check (`[+]etcd ok`, `[-]etcd failed: reason
withheld`) and `livez check passed|failed`. `?exclude=NAME` (repeatable)
skips a check (`[+]NAME excluded: ok`) and names those it could not find
(`warn: some health checks cannot be excluded: no matches for "x"`).
`/livez/NAME` runs one check. The reason of a failure goes to the log only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from controlplane.apiserver.rest.context import Server

log = logging.getLogger(__name__)

Check = Callable[[Server], Awaitable[None]]
TIMEOUT = 5.0
ENDPOINTS = ("livez", "readyz", "healthz")


async def _ping(server: Server) -> None:
    return None


async def _etcd(server: Server) -> None:
    await asyncio.wait_for(server.run(server.registry.store.current_revision), TIMEOUT)


async def _informer_sync(server: Server) -> None:
    if not server.broadcaster.ready:
        raise RuntimeError("the watch cache is not serving")


CHECKS: dict[str, tuple[tuple[str, Check], ...]] = {
    "livez": (("ping", _ping), ("etcd", _etcd)),
    "readyz": (("ping", _ping), ("etcd", _etcd), ("informer-sync", _informer_sync)),
    "healthz": (("ping", _ping), ("etcd", _etcd)),
}


def _text(body: str, status: int = 200) -> web.Response:
    response = web.Response(status=status, text=body, content_type="text/plain", charset="utf-8")
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


async def _run(name: str, check: Check, server: Server) -> str | None:
    """None when the check passes, else why it failed (for the log)."""
    try:
        await check(server)
    except Exception as err:
        return str(err) or type(err).__name__
    return None


async def answer(request: web.Request, server: Server, segments: list[str]) -> web.Response | None:
    """The answer of a health path, None when the path is none."""
    if not segments or segments[0] not in ENDPOINTS or len(segments) > 2:
        return None
    endpoint = segments[0]
    checks = CHECKS[endpoint]
    if len(segments) == 2:  # one check
        found = dict(checks).get(segments[1])
        if found is None:
            return None
        problem = await _run(segments[1], found, server)
        if problem is not None:
            log.warning("%s check %s failed: %s", endpoint, segments[1], problem)
            return _text(f"internal server error: {problem}\n", 500)
        return _text("ok")
    excluded = [name for value in request.query.getall("exclude", []) for name in value.split(",")]
    pending = set(excluded)
    lines: list[str] = []
    failed: list[str] = []
    for name, check in checks:
        if name in pending:
            pending.discard(name)
            lines.append(f"[+]{name} excluded: ok")
            continue
        problem = await _run(name, check, server)
        if problem is None:
            lines.append(f"[+]{name} ok")
        else:
            lines.append(f"[-]{name} failed: reason withheld")
            log.warning("%s check %s failed: %s", endpoint, name, problem)
            failed.append(name)
    if pending:
        quoted = ",".join(f'"{name}"' for name in sorted(pending))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
    report = "".join(line + "\n" for line in lines)
    if failed:
        return _text(f"{report}{endpoint} check failed\n", 500)
    if "verbose" not in request.query:
        return _text("ok")
    return _text(f"{report}{endpoint} check passed\n")
