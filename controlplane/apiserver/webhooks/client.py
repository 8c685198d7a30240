"""The HTTPS client the API server calls webhooks with: admission webhooks
(Validating/MutatingWebhookConfiguration) and CRD conversion webhooks share
it, as kube-apiserver's webhook.ClientManager is shared.

A `clientConfig` (admissionregistration/v1 WebhookClientConfig, the same
shape as apiextensions' conversion.webhook.clientConfig) is either

- `url`: `https://host[:port]/path`, called as written (https only); or
- `service`: {namespace, name, path, port (443)}: the API server resolves
  the Service's endpoints itself (`Resolve`, resolve.py) and connects to
  one of them, so a webhook works on a control-plane host that runs no
  agent (no kube-proxy rules needed); the TLS server name is
  `<name>.<namespace>.svc`, as Kubernetes has it.

`caBundle` (base64 of PEM certificates) verifies the webhook's serving
certificate; when empty, the system's roots do. The host name (or the
service's DNS name) must match the certificate.

`post()` sends one JSON body and returns the JSON answer. It blocks the
calling thread only (the API server's registry runs on its executor, never
on the event loop, and holds no store lock across a call) and costs at most
`timeout` seconds: a watchdog shuts the connection at the deadline, however
slowly the webhook trickles its answer. As kube-apiserver does, the path
gets `?timeout=<n>s`. Connections are kept alive and reused per (address,
server name, CA). Every failure is a `CallError` whose text reads like
Kubernetes' (`Post "https://...": context deadline exceeded`), for callers
to prefix with `failed calling webhook "<name>": `.
"""

from __future__ import annotations

import base64
import binascii
import http.client
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

MAX_RESPONSE = 3 * 1024 * 1024  # an answer larger than this is refused
IDLE_PER_TARGET = 8  # kept-alive connections per target

Object = dict[str, Any]
# (namespace, service name, service port) -> (address, port) of one ready endpoint;
# raises CallError when the Service or its endpoints are missing.
Resolve = Callable[[str, str, int], tuple[str, int]]


class CallError(Exception):
    """A webhook could not be called, or answered unusably (the text says which)."""


@dataclass(frozen=True)
class Target:
    """Where one call goes: the address connected to, the name the certificate
    must carry (and SNI), the path, and the CA bundle (PEM; "" = system roots)."""

    address: str
    port: int
    server_name: str
    path: str
    ca: str
    url: str  # as shown in errors: https://<server_name>:<port><path>


def _ca_pem(raw: Any) -> str:
    if not raw:
        return ""
    try:
        pem = base64.b64decode(str(raw), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError) as err:
        raise CallError(f"caBundle: not base64 of PEM certificates: {err}") from err
    return pem


def target_of(client_config: Object, resolve: Resolve | None) -> Target:
    """Where `client_config` says to call (a Service resolved to an endpoint now)."""
    ca = _ca_pem(client_config.get("caBundle"))
    url = client_config.get("url")
    if url:
        parts = urlsplit(str(url))
        if parts.scheme != "https" or not parts.hostname:
            raise CallError(f"{url!r}: 'https' is the only allowed URL scheme")
        port = parts.port or 443
        path = parts.path or "/"
        shown = f"https://{parts.netloc}{path}"
        return Target(parts.hostname, port, parts.hostname, path, ca, shown)
    service = client_config.get("service")
    if not isinstance(service, dict):
        raise CallError("clientConfig: neither url nor service is set")
    ns, name = str(service.get("namespace") or ""), str(service.get("name") or "")
    port = int(service.get("port") or 443)
    path = str(service.get("path") or "/")
    server_name = f"{name}.{ns}.svc"
    shown = f"https://{server_name}:{port}{path}"
    if resolve is None:
        raise CallError(f'Post "{shown}": service resolution is not available')
    try:
        address, target_port = resolve(ns, name, port)
    except CallError as err:
        raise CallError(f'Post "{shown}": {err}') from err
    return Target(address, target_port, server_name, path, ca, shown)


class WebhookClient:
    """One per API server: TLS contexts per CA bundle, idle connections per target."""

    def __init__(self, resolve: Resolve | None = None) -> None:
        self.resolve = resolve
        self._lock = threading.Lock()
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._idle: dict[tuple[str, int, str, str], list[http.client.HTTPSConnection]] = {}

    def post(self, client_config: Object, body: bytes, timeout: float) -> bytes:
        """POST `body` (JSON) to the webhook `client_config` names; its answer's body.
        At most `timeout` seconds in all."""
        deadline = time.monotonic() + timeout
        target = target_of(client_config, self.resolve)
        path = f"{target.path}?timeout={int(timeout)}s"
        shown = f'Post "{target.url}?timeout={int(timeout)}s"'
        context = self._context(target.ca, shown)
        key = (target.address, target.port, target.server_name, target.ca)
        conn, reused = self._take(key), True
        if conn is None:
            conn, reused = self._connection(target, context, timeout), False
        try:
            status, data = self._exchange(conn, path, body, deadline, shown)
        except CallError:
            conn.close()
            if not reused or time.monotonic() >= deadline:
                raise
            # A kept-alive connection the webhook had closed: once more, fresh.
            conn = self._connection(target, context, deadline - time.monotonic())
            try:
                status, data = self._exchange(conn, path, body, deadline, shown)
            except CallError:
                conn.close()
                raise
        except BaseException:
            conn.close()
            raise
        if not 200 <= status < 300:
            conn.close()
            snippet = data[:200].decode(errors="replace")
            raise CallError(f"{shown}: the server responded with the status code {status}"
                            + (f": {snippet}" if snippet else ""))  # fmt: skip
        self._give(key, conn)
        return data

    def _exchange(
        self,
        conn: http.client.HTTPSConnection,
        path: str,
        body: bytes,
        deadline: float,
        shown: str,
    ) -> tuple[int, bytes]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise CallError(f"{shown}: context deadline exceeded")
        expired = threading.Event()

        def expire() -> None:  # the deadline: unblock whatever the call waits for
            expired.set()
            sock = conn.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        watchdog = threading.Timer(remaining, expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            conn.timeout = remaining
            if conn.sock is not None:
                conn.sock.settimeout(remaining)
            conn.request("POST", path, body, {"Content-Type": "application/json",
                                              "Accept": "application/json"})  # fmt: skip
            response = conn.getresponse()
            data = response.read(MAX_RESPONSE + 1)
            if len(data) > MAX_RESPONSE:
                raise CallError(f"{shown}: the response is larger than {MAX_RESPONSE} bytes")
            if not response.will_close and response.length not in (None, 0):
                raise CallError(f"{shown}: the response was not read to its end")
            return response.status, data
        except ssl.SSLCertVerificationError as err:
            raise CallError(f"{shown}: tls: failed to verify certificate: "
                            f"{err.verify_message or err}") from err  # fmt: skip
        except (OSError, http.client.HTTPException, ValueError) as err:
            if expired.is_set() or isinstance(err, TimeoutError):
                raise CallError(f"{shown}: context deadline exceeded") from err
            raise CallError(f"{shown}: {_describe(err)}") from err
        finally:
            watchdog.cancel()

    def _connection(
        self, target: Target, context: ssl.SSLContext, timeout: float
    ) -> http.client.HTTPSConnection:
        conn = _Connection(target.address, target.port, timeout=timeout, context=context)
        conn.server_name = target.server_name
        return conn

    def _context(self, ca: str, shown: str) -> ssl.SSLContext:
        with self._lock:
            context = self._contexts.get(ca)
        if context is not None:
            return context
        try:
            context = ssl.create_default_context(cadata=ca) if ca else ssl.create_default_context()
        except (ssl.SSLError, ValueError) as err:
            raise CallError(f"{shown}: caBundle: no valid certificate in it: {err}") from err
        with self._lock:
            if len(self._contexts) > 256:
                self._contexts.clear()
            self._contexts[ca] = context
        return context

    def _take(self, key: tuple[str, int, str, str]) -> http.client.HTTPSConnection | None:
        with self._lock:
            idle = self._idle.get(key)
            return idle.pop() if idle else None

    def _give(self, key: tuple[str, int, str, str], conn: http.client.HTTPSConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < IDLE_PER_TARGET:
                idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()


class _Connection(http.client.HTTPSConnection):
    """An HTTPS connection to an address whose certificate carries another
    name (a Service's endpoint, verified as `<svc>.<ns>.svc`)."""

    server_name = ""

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
                sock, server_hostname=self.server_name or self.host
            )
        except BaseException:
            sock.close()
            raise


def _describe(err: BaseException) -> str:
    if isinstance(err, ConnectionRefusedError):
        return "connect: connection refused"
    if isinstance(err, socket.gaierror):
        return f"dial tcp: lookup: {err.strerror or err}"
    if isinstance(err, http.client.RemoteDisconnected):
        return "EOF"
    if isinstance(err, ssl.SSLError):
        return f"tls: {err.reason or err}"
    return str(err) or type(err).__name__
