"""pods/log, pods/exec, pods/attach, pods/portforward and nodes/stats, proxied to agents.

The user's credential stays here: the API server authorizes the request
(`get_log`, `create_exec`, `create_attach`, `create_portforward` on the
pod, `get` on nodes/stats), finds the node and the agent endpoint that Node
advertises (controlplane.client.agents), and calls the agent over TLS with
its own client certificate (`AgentTLS`), checking that the agent's serving
certificate names that node. No token of any identity goes to an agent, so
a Node whose address points elsewhere collects nothing.

nodes/stats (`GET /api/v1/nodes/<name>/stats`, `?namespace=&pod=` to narrow)
answers the agent's Stats as JSON (proto field names in camelCase): what
`skiffctl top` and the HPA's metrics read.

log streams the agent's ContainerLogs RPC (grpc.aio: no thread per
follower) as text/plain. exec, attach and portforward are upgraded
connections (SPDY/3.1 or WebSocket, whichever the client asked for): the
client's upgrade request is re-sent to the agent's /exec, /attach or
/portforward path with the same upgrade headers, the agent's answer goes
back as it is, and after a 101 the bytes are copied both ways until either
side closes. This module never parses SPDY or WebSocket frames.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, urlencode

import grpc
import grpc.aio
from aiohttp import web
from google.protobuf.json_format import MessageToDict

from controlplane.apiserver.admission_context import CONNECT, Attributes
from controlplane.apiserver.codec import decode
from controlplane.apiserver.rest import queryparams
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.status import BadRequest
from controlplane.client import errors
from controlplane.client.agents import (
    AgentTLS,
    AgentUnreachable,
    agent_address,
    certificate_mismatch,
    node_stats,
)
from proto.agent.v1 import agent_pb2 as pb
from proto.agent.v1 import agent_pb2_grpc as pb_grpc

# Headers of an upgrade request that the agent needs to see as the client sent them.
UPGRADE_HEADERS = (
    "Upgrade",
    "Connection",
    "X-Stream-Protocol-Version",
    "Sec-WebSocket-Key",
    "Sec-WebSocket-Version",
    "Sec-WebSocket-Protocol",
    "Sec-WebSocket-Extensions",
)
GRPC_CODES = {
    grpc.StatusCode.NOT_FOUND: errors.NotFound,
    grpc.StatusCode.INVALID_ARGUMENT: BadRequest,
    grpc.StatusCode.PERMISSION_DENIED: errors.Forbidden,
    grpc.StatusCode.UNAUTHENTICATED: errors.Forbidden,  # the API server's own credential
}
CHUNK = 1 << 16


def _pod_node(call: Call, verb: str) -> tuple[dict[str, Any], str, str]:
    """The pod (authorized for `verb`), its node and its agent's address (on the executor)."""
    t = call.target
    call.registry.authorizer.authorize(call.who, verb, t.info, t.namespace, t.name)
    # the options are read (a malformed one is a 400) before anything is looked up
    options = _connect_options(call) if t.subresource in _CONNECT_OPTIONS else {}
    pod = decode(*call.registry.get("Pod", t.name, t.namespace, call.who))
    webhooks = call.registry.webhooks
    if webhooks is not None and options:  # CONNECT goes to the admission webhooks
        a = Attributes(CONNECT, "Pod", t.namespace, t.name, t.subresource, call.who, options)
        webhooks.mutate(a)
        webhooks.validate(a)
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        raise BadRequest(f"pod {t.name} does not have a host assigned")
    try:
        return pod, node_name, agent_address(call.registry.get_object("Node", node_name))
    except AgentUnreachable as err:
        raise errors.Unavailable(str(err)) from err


_CONNECT_OPTIONS = {"exec": "PodExecOptions", "attach": "PodAttachOptions",
                    "portforward": "PodPortForwardOptions"}  # fmt: skip


def _connect_options(call: Call) -> dict[str, Any]:
    """The options object a CONNECT's webhooks see (PodExecOptions, ...)."""
    t, q = call.target, call.request.query
    options: dict[str, Any] = {"kind": _CONNECT_OPTIONS[t.subresource], "apiVersion": "v1"}
    if t.subresource == "portforward":
        ports = _ports(call)
        if ports:
            options["ports"] = ports  # omitempty
        return options
    options.update({k: _true(call, k) for k in ("stdin", "stdout", "stderr", "tty")})
    if q.get("container"):
        options["container"] = q["container"]
    if t.subresource == "exec":
        options["command"] = list(q.getall("command", []))
    return options


def _ports(call: Call) -> list[int]:
    """The ports of a pods/portforward: PodPortForwardOptions' `ports`, and
    skiff's own `port` (what skiffctl sends) read the same way."""
    q = call.request.query
    return queryparams.ports([*q.getall("ports", []), *q.getall("port", [])])


def _container(pod: dict[str, Any], requested: str) -> str:
    spec = pod.get("spec") or {}
    names = [c.get("name", "") for c in spec.get("containers") or []]
    # Init and ephemeral containers too (kubectl attach/logs to kubectl debug's).
    others = ("initContainers", "ephemeralContainers")
    every = names + [c.get("name", "") for key in others for c in spec.get(key) or []]
    if requested:
        if requested not in every:
            name = (pod.get("metadata") or {}).get("name")
            raise BadRequest(f"container {requested} is not valid for pod {name}")
        return requested
    if len(names) == 1:
        return str(names[0])
    name = (pod.get("metadata") or {}).get("name")
    raise BadRequest(f"a container name must be specified for pod {name}, choose one of: {names}")


def _int(call: Call, name: str) -> int:
    text = call.query(name)
    if not text:
        return 0
    try:
        return int(text)
    except ValueError:
        raise BadRequest(f"{name}: {text!r} is not an integer") from None


def _true(call: Call, name: str) -> bool:
    return queryparams.flag(call.request.query, name)


def _tls(tls: AgentTLS | None) -> AgentTLS:
    if tls is None:
        raise errors.Unavailable("this API server has no credential towards agents (no PKI)")
    return tls


async def log(call: Call, tls: AgentTLS | None) -> web.StreamResponse:
    t = call.target
    creds = _tls(tls)
    pod, node, address = await call.server.run(_pod_node, call, "get_log")
    tail = _int(call, "tailLines") if call.query("tailLines") else 0
    request = pb.LogsRequest(
        namespace=t.namespace, pod=t.name, container=_container(pod, call.query("container")),
        follow=_true(call, "follow"),
        tail_lines=-1 if call.query("tailLines") and tail == 0 else tail,  # agent: -1 is none
        since_seconds=_int(call, "sinceSeconds"), previous=_true(call, "previous"),
        timestamps=_true(call, "timestamps"), limit_bytes=_int(call, "limitBytes"),
    )  # fmt: skip
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    async with creds.aio_channel(address, node) as channel:
        stream = pb_grpc.AgentStub(channel).ContainerLogs(request)
        try:
            async for chunk in stream:
                if not response.prepared:
                    await response.prepare(call.request)
                await response.write(chunk.data)
        except grpc.aio.AioRpcError as err:
            if response.prepared:
                return response
            cls = GRPC_CODES.get(err.code(), errors.Unavailable)
            raise cls(
                f"agent of node {node} at {address}: {err.details() or err.code().name}"
            ) from None
        finally:
            stream.cancel()
    if not response.prepared:
        await response.prepare(call.request)
    await response.write_eof()
    return response


def _agent_path(call: Call, pod: dict[str, Any]) -> str:
    t = call.target
    q = call.request.query
    if t.subresource == "portforward":
        # one `port` per port, as Kubernetes' PortForwardLocation writes them
        ports = [("port", str(p)) for p in _ports(call)]
        tail = f"?{urlencode(ports)}" if ports else ""
        return f"/portforward/{quote(t.namespace)}/{quote(t.name)}{tail}"
    container = _container(pod, q.get("container", ""))
    query: list[tuple[str, str]] = [("command", c) for c in q.getall("command", [])]
    query.append(("container", container))
    query += [(k, "true") for k in ("stdin", "stdout", "stderr", "tty") if _true(call, k)]
    return f"/{t.subresource}/{quote(t.namespace)}/{quote(t.name)}/{quote(container)}?" + (
        urlencode(query)
    )


def _head(method: str, path: str, address: str, headers: Iterable[tuple[str, str]]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {address}", "Content-Length: 0"]
    lines += [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, list[tuple[str, str]]]:
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    words = lines[0].split()
    status = int(words[1]) if len(words) > 1 and words[1].isdigit() else 502
    headers = []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers.append((name.strip(), value.strip()))
    return status, headers


class _ToAgent:
    """aiohttp's payload parser for the upgraded connection: every byte the
    client sends goes to the agent."""

    def __init__(self, writer: asyncio.StreamWriter, done: asyncio.Event) -> None:
        self.writer = writer
        self.done = done

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        if not self.writer.is_closing():
            self.writer.write(data)
        return False, b""

    def feed_eof(self) -> None:
        self.done.set()


async def upgrade(call: Call, tls: AgentTLS | None) -> web.StreamResponse:
    t = call.target
    request = call.request
    if "upgrade" not in request.headers.get("Connection", "").lower():
        raise BadRequest(f"{t.subresource} needs an upgraded connection (SPDY/3.1 or WebSocket)")
    creds = _tls(tls)
    pod, node, address = await call.server.run(_pod_node, call, f"create_{t.subresource}")
    path = _agent_path(call, pod)
    host, _, port = address.rpartition(":")
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(
                host.strip("[]"), int(port), ssl=creds.ssl_context(), server_hostname=node
            ),
            timeout=30.0,
        )
    except (OSError, TimeoutError) as err:
        raise errors.Unavailable(f"agent of node {node} at {address}: {err}") from None
    problem = certificate_mismatch(writer.get_extra_info("peercert"), host)
    if problem is not None:
        writer.close()
        raise errors.Unavailable(f"agent of node {node} at {address}: {problem}")
    try:
        forwarded = [(k, v) for k in UPGRADE_HEADERS for v in request.headers.getall(k, [])]
        writer.write(_head(request.method, path, address, forwarded))
        status, headers = await _read_head(reader)
        if status != 101:
            length = int(next((v for k, v in headers if k.lower() == "content-length"), "0"))
            body = await reader.readexactly(length) if length else b""
            kind = next((v for k, v in headers if k.lower() == "content-type"), "text/plain")
            return web.Response(status=status, body=body, content_type=kind.split(";")[0])
        response = web.StreamResponse(status=101)
        for k, v in headers:
            if k.lower() not in ("content-length", "date", "server", "transfer-encoding"):
                response.headers.add(k, v)
        response.force_close()
        await response.prepare(request)
        await _relay(request, reader, writer)
        return response
    finally:
        writer.close()


async def _relay(
    request: web.Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    transport = request.transport
    assert transport is not None
    client_done = asyncio.Event()
    protocol: Any = request.protocol
    protocol.set_parser(_ToAgent(writer, client_done))

    async def from_agent() -> None:
        while True:
            data = await reader.read(CHUNK)
            if not data or transport.is_closing():
                return
            transport.write(data)

    agent_side = asyncio.ensure_future(from_agent())
    client_side = asyncio.ensure_future(client_done.wait())
    try:
        await asyncio.wait({agent_side, client_side}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        agent_side.cancel()
        client_side.cancel()


def _stats(call: Call, tls: AgentTLS) -> dict[str, Any]:
    t = call.target
    call.registry.authorizer.authorize(call.who, "get", t.info, "", t.name, subresource="stats")
    node = call.registry.get_object("Node", t.name)
    try:
        request = pb.StatsRequest(namespace=call.query("namespace"), pod=call.query("pod"))
        resp = node_stats(agent_address(node), t.name, tls, request)
    except AgentUnreachable as err:
        raise errors.Unavailable(str(err)) from err
    return MessageToDict(resp)


async def stats(call: Call, tls: AgentTLS | None) -> web.StreamResponse:
    """GET nodes/<name>/stats: the agent's Stats, as JSON."""
    return web.json_response(await call.server.run(_stats, call, _tls(tls)))
