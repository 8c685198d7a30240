"""The API server's REST port for what skiffctl and the HPA read as streams.

Pod logs (`pods/log`), exec/attach/portforward upgrades and node stats
(`nodes/<name>/stats`) are served by the API server, which authorizes the
caller and alone talks to agents. This module opens the connection (TLS
pinned to the cluster CA, name skiff-apiserver, ALPN http/1.1 so the shared
port answers REST), sends GETs with the caller's bearer token, and turns a
refusal into the ApiError its metav1.Status stands for (its reason, else its
HTTP status, through the one error table: machinery.apierrors.from_http),
with the server's message and retry advice.
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
from machinery import apierrors
from proto.agent.v1 import agent_pb2 as pb


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


def failure(status: int, body: bytes, retry_after_header: str | None = None) -> errors.ApiError:
    """The ApiError of a refused request: the reason, message and retry
    advice of its metav1.Status body (a body that is none: its text)."""
    reason, message, retry_after = "", "", 0
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        reason = str(doc.get("reason") or "")
        message = str(doc.get("message") or "")
        details = doc.get("details")
        if isinstance(details, dict):
            retry_after = _seconds(details.get("retryAfterSeconds"))
    else:
        message = body.decode(errors="replace").strip()
    retry_after = retry_after or _seconds(retry_after_header)
    return apierrors.from_http(status, reason, message, retry_after)


def _seconds(value: object) -> int:
    try:
        return max(0, int(str(value)))
    except ValueError:
        return 0


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
        raise failure(response.status, body, response.getheader("Retry-After"))
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
