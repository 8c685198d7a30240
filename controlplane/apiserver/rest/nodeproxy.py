"""GET /api/v1/nodes/<name>/proxy/<path>: the API server's node proxy.

As kube-apiserver proxies to the kubelet, the caller is authorized for
`get` on `nodes/proxy` of that node, and the API server then asks the
node's agent for `/<path>` (with the query) over TLS with its own client
certificate, which the agent serves everything: `kubectl get --raw
/api/v1/nodes/<n>/proxy/metrics` reads the agent's /metrics, and a
Prometheus with a ServiceAccount token scrapes /metrics/cadvisor and
/metrics/resource of every node through the API server. The agent's
status, content type and body come back as they are; an answer larger
than MAX_BODY is refused. Only GET (and HEAD) are proxied.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.status import MethodNotAllowed
from controlplane.apiserver.rest.streams import _head, _read_head, _tls
from controlplane.client import errors
from controlplane.client.agents import AgentUnreachable, agent_address, certificate_mismatch

MAX_BODY = 64 << 20  # bytes: a node's metrics are far below this
TIMEOUT = 30.0  # seconds for the whole exchange with the agent
_KEPT = ("content-type", "content-encoding")


def _address(call: Call) -> str:
    t = call.target
    call.registry.authorizer.authorize(call.who, "get", t.info, "", t.name, subresource="proxy")
    node = call.registry.get_object("Node", t.name)
    try:
        return agent_address(node)
    except AgentUnreachable as err:
        raise errors.Unavailable(str(err)) from err


async def proxy(call: Call) -> web.StreamResponse:
    t = call.target
    if call.request.method not in ("GET", "HEAD"):
        raise MethodNotAllowed(f"{call.request.method} is not allowed on nodes/proxy")
    creds = _tls(call.server.agent_tls)
    address = await call.server.run(_address, call)
    host, _, port = address.rpartition(":")
    path = t.proxy_path or "/"
    if call.request.query_string:
        path += f"?{call.request.query_string}"
    try:
        async with asyncio.timeout(TIMEOUT):
            reader, writer = await asyncio.open_connection(
                host.strip("[]"), int(port), ssl=creds.ssl_context(), server_hostname=t.name
            )
            try:
                problem = certificate_mismatch(writer.get_extra_info("peercert"), host)
                if problem is not None:
                    raise errors.Unavailable(f"agent of node {t.name} at {address}: {problem}")
                accept = call.request.headers.get("Accept", "*/*")
                writer.write(_head("GET", path, address, [("Accept", accept),
                                                          ("Connection", "close")]))  # fmt: skip
                status, headers = await _read_head(reader)
                body = await reader.read(MAX_BODY + 1)
                while len(body) <= MAX_BODY and (more := await reader.read(MAX_BODY + 1)):
                    body += more
            finally:
                writer.close()
    except (OSError, TimeoutError, asyncio.IncompleteReadError) as err:
        raise errors.Unavailable(f"agent of node {t.name} at {address}: {err}") from None
    if len(body) > MAX_BODY:
        raise errors.Unavailable(f"agent of node {t.name}: answer over {MAX_BODY} bytes")
    response = web.Response(status=status, body=body if call.request.method == "GET" else None)
    for name, value in headers:
        if name.lower() in _KEPT:
            response.headers[name] = value
    return response
