"""GET componentstatuses[/NAME]: the health of the control plane's parts,
computed on each read as kube-apiserver does (never stored, no watch).

`etcd-0` is the store answering a revision read (the name Kubernetes gives
its first etcd server, whatever the backend, as k3s does); `scheduler` and
`controller-manager` are the components the control plane runs, whose
probes `skiff controlplane` registers (Server.components): one not running
(disabled, or its process gone) is Unhealthy with the reason as its error.
Answers carry Kubernetes' deprecation warning.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from controlplane.api.kinds.core.componentstatus import DEPRECATION
from controlplane.apiserver.rest import lists
from controlplane.apiserver.rest.context import Call, Server
from controlplane.apiserver.rest.respond import document_response, json_response
from controlplane.client.errors import NotFound

COMPONENTS = ("scheduler", "controller-manager")
TIMEOUT = 5.0


def _status(name: str, problem: str) -> dict[str, Any]:
    condition: dict[str, Any] = {"type": "Healthy", "status": "True", "message": "ok"}
    if problem:
        condition = {"type": "Healthy", "status": "False", "error": problem}
    return {"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name},
            "conditions": [condition]}  # fmt: skip


async def _etcd(server: Server) -> str:
    try:
        await asyncio.wait_for(server.run(server.registry.store.current_revision), TIMEOUT)
    except Exception as err:  # any failure of the store is its health
        return f"the store does not answer: {err}"
    return ""


async def statuses(server: Server) -> list[dict[str, Any]]:
    """Every component's status, in Kubernetes' order."""
    found = []
    for name in COMPONENTS:
        probe = server.components.get(name)
        found.append(_status(name, probe() if probe is not None else "not running"))
    found.append(_status("etcd-0", await _etcd(server)))
    return found


async def serve(call: Call) -> web.StreamResponse:
    t = call.target
    verb = "get" if t.name else "list"
    await call.server.run(call.registry.authorizer.authorize, call.who, verb, t.info, "", t.name)
    items = await statuses(call.server)
    if t.name:
        items = [s for s in items if s["metadata"]["name"] == t.name]
        if not items:
            raise NotFound(f'{t.info.resource} "{t.name}" not found')
    if lists.wants_table(call.request):
        response = json_response(lists.table_of(call, items, lists.include_object(call), {}))
    elif t.name:
        response = document_response(call, items[0])
    else:
        response = document_response(call, {"kind": "ComponentStatusList", "apiVersion": "v1",
                                             "metadata": {}, "items": items})  # fmt: skip
    response.headers.add("Warning", f'299 - "{DEPRECATION}"')
    return response
