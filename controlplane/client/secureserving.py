"""A component's secure port, as kube-scheduler (10259) and
kube-controller-manager (10257) serve /metrics and their health checks:
HTTPS, every request checked by delegated authentication and authorization
(delegatedauth.py).

Flags are theirs: --secure-port (0: none), --bind-address, --tls-cert-file
and --tls-private-key-file (followed on disk: a replaced pair is served at
the next handshake), --client-ca-file, --authentication-kubeconfig and
--authorization-kubeconfig (the API server that answers the reviews;
without them, the component's own connection), and
--authorization-always-allow-paths. Without a certificate the port serves
a self-signed one made at start for `localhost`, 127.0.0.1 and the bind
address (in a short-lived child, machinery.inchild: the component's process
never loads `cryptography`), as kube-scheduler does with no --tls-cert-file (scrapers then skip
verification, as Prometheus' kube-scheduler jobs do, or pass a
certificate).

Paths: /metrics (the component's registry), /healthz, /readyz, /livez (ok,
or 503 with the reason when the component says it is not healthy); any
other is 404. Connections are handshaken on their own thread with a
deadline, so a caller that never finishes its handshake holds nothing else,
and at most MAX_CONNECTIONS are open at once.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import json
import logging
import os
import socket
import ssl
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from controlplane.client.delegatedauth import (
    ALWAYS_ALLOW_PATHS,
    DelegatedAuth,
    DelegationSettings,
    Verdict,
)
from machinery import inchild
from machinery.certfollow import ServingCertificate, follow
from machinery.metrics import CONTENT_TYPE
from machinery.serverthread import ServerThread

log = logging.getLogger(__name__)

HEALTH_PATHS = ("/healthz", "/readyz", "/livez")
HANDSHAKE_TIMEOUT = 10.0  # and the longest a connection may sit idle
MAX_CONNECTIONS = 64  # open at once; more are closed at once (scrapers need a few)


@dataclass(frozen=True)
class SecureServingOptions:
    secure_port: int
    bind_address: str = "0.0.0.0"
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    client_ca_file: str = ""
    authentication_kubeconfig: str = ""
    authorization_kubeconfig: str = ""
    always_allow_paths: tuple[str, ...] = ALWAYS_ALLOW_PATHS


def add_flags(parser: argparse.ArgumentParser, default_port: int) -> None:
    """The secure serving and delegation flags, with Kubernetes' names."""
    parser.add_argument("--secure-port", type=int, default=default_port,
                        help="the HTTPS port of /metrics and the health checks (0: none)")  # fmt: skip
    parser.add_argument("--bind-address", default="0.0.0.0",
                        help="the address the secure port listens on")  # fmt: skip
    parser.add_argument("--tls-cert-file", default="",
                        help="its certificate (default: a self-signed one made at start)")  # fmt: skip
    parser.add_argument("--tls-private-key-file", default="", help="the certificate's key")
    parser.add_argument("--client-ca-file", default="",
                        help="client certificates chained to this CA are their CN (O: groups)")  # fmt: skip
    parser.add_argument("--authentication-kubeconfig", default="",
                        help="the API server that answers TokenReviews "
                        "(default: the component's own --kubeconfig)")  # fmt: skip
    parser.add_argument("--authorization-kubeconfig", default="",
                        help="the API server that answers SubjectAccessReviews "
                        "(default: the component's own --kubeconfig)")  # fmt: skip
    parser.add_argument("--authorization-always-allow-paths", default=",".join(ALWAYS_ALLOW_PATHS),
                        help="paths served without authorization (comma-separated)")  # fmt: skip


def options_from_args(args: argparse.Namespace) -> SecureServingOptions:
    """The options the flags give; ValueError naming the flag for a bad one."""
    if not 0 <= args.secure_port <= 65535:
        raise ValueError(f"--secure-port: {args.secure_port} is not a port (0-65535)")
    try:
        ipaddress.ip_address(args.bind_address)
    except ValueError:
        raise ValueError(f"--bind-address: {args.bind_address!r} is not an IP address") from None
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise ValueError("--tls-cert-file and --tls-private-key-file go together")
    paths = tuple(p.strip() for p in args.authorization_always_allow_paths.split(",") if p.strip())
    for p in paths:
        if not p.startswith("/"):
            raise ValueError(f"--authorization-always-allow-paths: {p!r} does not begin with /")
    return SecureServingOptions(
        secure_port=args.secure_port,
        bind_address=args.bind_address,
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
        client_ca_file=args.client_ca_file,
        authentication_kubeconfig=args.authentication_kubeconfig,
        authorization_kubeconfig=args.authorization_kubeconfig,
        always_allow_paths=paths,
    )


def self_signed(bind_address: str) -> tuple[bytes, bytes]:
    """(cert PEM, key PEM): a year's self-signed serving certificate for
    localhost, 127.0.0.1 and `bind_address`, as kube-scheduler makes without
    one; made in a child."""
    cert, key = inchild.call(
        __name__, "self_signed_pems", unless_loaded="cryptography", bind_address=bind_address
    )
    return str(cert).encode(), str(key).encode()


def self_signed_pems(bind_address: str) -> list[str]:
    """(In the child.) [cert PEM, key PEM] of `self_signed`."""
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID

    from machinery import certificates

    key = certificates.new_key()
    now = datetime.datetime.now(datetime.UTC)
    name = certificates.common_name(f"localhost@{int(now.timestamp())}")
    alt: list[x509.GeneralName] = [x509.DNSName("localhost"),
                                   x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]  # fmt: skip
    bound = ipaddress.ip_address(bind_address)
    if not bound.is_unspecified and bound != ipaddress.ip_address("127.0.0.1"):
        alt.append(x509.IPAddress(bound))
    extensions: list[certificates.Extension] = [
        (x509.SubjectAlternativeName(alt), False),
        (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False),
        (x509.BasicConstraints(ca=False, path_length=None), True),
    ]
    lifetime = datetime.timedelta(days=365)
    cert = certificates.self_signed(name, key, lifetime, extensions, now)
    return [cert.decode(), certificates.key_pem(key).decode()]


def tls_context(cert_pem: bytes, key_pem: bytes, client_ca_pem: bytes) -> ssl.SSLContext:
    """TLS 1.2 or newer with this pair; client certificates optional, and
    verified against `client_ca_pem` when one is presented."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory(prefix="skiff-tls-") as tmp:  # ssl loads pairs from files
        crt, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key_pem)
        crt.write_bytes(cert_pem)
        context.load_cert_chain(crt, key)
    if client_ca_pem:
        context.load_verify_locations(cadata=client_ca_pem.decode())
        context.verify_mode = ssl.CERT_OPTIONAL
    context.set_alpn_protocols(["http/1.1"])
    return context


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], context: ssl.SSLContext,
                 serving: SecureServer) -> None:  # fmt: skip
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.context = context
        self.serving = serving
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):  # at the cap: refused, nothing held
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(HANDSHAKE_TIMEOUT)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as err:
            log.debug("handshake with %s failed: %s", client_address, err)
            return
        try:
            _Handler(tls, client_address, self)
        except OSError:
            pass
        finally:
            tls.close()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer()

    def do_HEAD(self) -> None:
        self._answer()

    def _answer(self) -> None:
        serving = self.server.serving
        path = self.path.split("?", 1)[0]
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        verdict = serving.auth.check(
            self.command, path, self.headers.get("Authorization", ""), peer or None
        )
        if verdict.code != 200:
            self._status(verdict)
            return
        if path == "/metrics":
            self._send(200, CONTENT_TYPE, serving.metrics())
        elif path in HEALTH_PATHS:
            problem = serving.health()
            body = b"ok" if not problem else problem.encode()
            self._send(503 if problem else 200, "text/plain; charset=utf-8", body)
        else:
            self._send(404, "text/plain; charset=utf-8", b"404 page not found\n")

    def _status(self, verdict: Verdict) -> None:
        reason = {401: "Unauthorized", 403: "Forbidden"}.get(verdict.code, "TooManyRequests")
        status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": verdict.message, "reason": reason, "details": {},
                  "code": verdict.code}  # fmt: skip
        retry = {"Retry-After": "1"} if verdict.code == 429 else {}
        self._send(verdict.code, "application/json", json.dumps(status).encode() + b"\n", retry)

    def _send(
        self, code: int, content_type: str, body: bytes, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class SecureServer(ServerThread):
    """The secure port of one component; `port` once started, stop() closes it."""

    def __init__(
        self,
        options: SecureServingOptions,
        auth: DelegatedAuth,
        metrics: Callable[[], bytes],
        health: Callable[[], str] = lambda: "",
    ) -> None:
        """`health` says what is wrong ("" when healthy)."""
        self.options = options
        self.auth = auth
        self.metrics = metrics
        self.health = health
        client_ca = Path(options.client_ca_file).read_bytes() if options.client_ca_file else b""
        if options.tls_cert_file:
            cert_file = Path(options.tls_cert_file)
            cert, key = cert_file.read_bytes(), Path(options.tls_private_key_file).read_bytes()
            if cert_file.with_suffix(".key") == Path(options.tls_private_key_file):
                # Followed: a replaced pair is served at the next handshake.
                followed = ServingCertificate(str(cert_file.parent), cert, key, cert_file.stem)
                context = follow(followed, lambda c, k: tls_context(c, k, client_ca))
            else:
                context = tls_context(cert, key, client_ca)
        else:
            context = tls_context(*self_signed(options.bind_address), client_ca)
        server = _Server((options.bind_address, options.secure_port), context, self)
        super().__init__(server, "secure-serving", poll_interval=0.2)
        log.info("serving securely on %s:%d", options.bind_address, self.port)


def delegation(
    client: Any, options: SecureServingOptions, connect: Callable[[str], Any] | None = None
) -> DelegatedAuth:
    """The reviews' clients: the kubeconfigs the flags name (opened with
    `connect`), else `client`, the component's own."""
    authn = connect(options.authentication_kubeconfig) if (
        connect and options.authentication_kubeconfig) else client  # fmt: skip
    authz = connect(options.authorization_kubeconfig) if (
        connect and options.authorization_kubeconfig) else client  # fmt: skip
    return DelegatedAuth(authn, authz,
                         DelegationSettings(always_allow_paths=options.always_allow_paths))  # fmt: skip
