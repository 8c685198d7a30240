"""The API server's REST port for what skiffctl and the HPA read as streams.

Pod logs (`pods/log`), exec/attach/portforward upgrades and node stats
(`nodes/<name>/stats`) are served by the API server, which authorizes the
caller and alone talks to agents. This module opens the connection (TLS
pinned to the cluster CA, name skiff-apiserver, ALPN http/1.1 so the shared
port answers REST), sends GETs with the caller's bearer token, and turns a
refusal into the ApiError of its HTTP status with the server's message.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from urllib.parse import quote, urlencode

from google.protobuf.json_format import ParseDict

from controlplane.client import errors
from controlplane.client.apiclient import SERVER_NAME
from controlplane.client.config import ClientConfig
from proto.agent.v1 import agent_pb2 as pb

BY_STATUS: dict[int, type[errors.ApiError]] = {
    400: errors.Invalid,
    401: errors.Unauthenticated,
    403: errors.Forbidden,
    404: errors.NotFound,
    409: errors.Conflict,
    429: errors.TooManyRequests,
}


def split_server(server: str) -> tuple[str, int]:
    host, _, port = server.removeprefix("https://").rstrip("/").rpartition(":")
    return host.strip("[]"), int(port)


def open_socket(config: ClientConfig, timeout: float) -> socket.socket:
    """A connection to the API server: TLS when the config pins a CA."""
    host, port = split_server(config.server)
    try:
        raw = socket.create_connection((host, port), timeout=timeout)
    except OSError as err:
        raise errors.Unavailable(f"cannot reach the API server at {config.server}: {err}") from None
    if not config.ca_pem:
        return raw
    context = ssl.create_default_context(cadata=config.ca_pem.decode())
    context.set_alpn_protocols(["http/1.1"])
    try:
        return context.wrap_socket(raw, server_hostname=SERVER_NAME)
    except (OSError, ssl.SSLError) as err:
        raw.close()
        raise errors.Unavailable(f"TLS to the API server at {config.server}: {err}") from None


def auth_headers(config: ClientConfig) -> dict[str, str]:
    return {"Authorization": f"Bearer {config.token}"} if config.token else {}


def failure(status: int, body: bytes) -> errors.ApiError:
    """The ApiError of a refused request, with the server's Status message."""
    try:
        message = str(json.loads(body).get("message") or "")
    except (ValueError, AttributeError):
        message = body.decode(errors="replace").strip()
    return BY_STATUS.get(status, errors.Unavailable)(message or f"HTTP {status}")


def get(
    config: ClientConfig, path: str, timeout: float = 30.0, body_timeout: float | None = 30.0
) -> http.client.HTTPResponse:
    """GET `path`; the open response (read or stream it, then close it).
    `timeout` bounds connecting and the answer's head, `body_timeout` each
    read of the body (None: a followed stream may wait forever)."""
    host, port = split_server(config.server)
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    sock = conn.sock = open_socket(config, timeout)
    try:
        conn.request("GET", path, headers=auth_headers(config))
        response = conn.getresponse()
        sock.settimeout(body_timeout)
    except OSError as err:
        conn.close()
        raise errors.Unavailable(f"API server at {config.server}: {err}") from None
    if response.status >= 400:
        body = response.read()
        conn.close()
        raise failure(response.status, body)
    return response


def pod_path(namespace: str, pod: str, subresource: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}/{subresource}"


def node_stats(
    config: ClientConfig, node: str, namespace: str = "", timeout: float = 10.0, pod: str = ""
) -> pb.StatsResponse:
    """The Stats of node `node`'s agent, through the API server (nodes/stats)."""
    params = {k: v for k, v in (("namespace", namespace), ("pod", pod)) if v}
    query = f"?{urlencode(params)}" if params else ""
    response = get(config, f"/api/v1/nodes/{quote(node)}/stats{query}", timeout)
    try:
        data = json.loads(response.read())
    finally:
        response.close()
    return ParseDict(data, pb.StatsResponse(), ignore_unknown_fields=True)
