"""A small extension API server for aggregation tests: HTTPS on 127.0.0.1.

It serves one group/version (`widgets` in ext.example.com/v1 by default)
as an extension API server behind an APIService does: it requires a client
certificate signed by the request-header CA the API server publishes in
kube-system/extension-apiserver-authentication, accepts only the names
listed there, and takes the caller from X-Remote-User, X-Remote-Group and
X-Remote-Extra-*. Every request is recorded (path, identity, the client
certificate's CN); a list answers the identity it was asked by.
`ExtensionServer.start()` returns its port; `stop()` ends it.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass
class Seen:
    method: str
    path: str
    user: str
    groups: list[str]
    extra: dict[str, list[str]]
    client_cn: str


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def serving_pair(dns: str) -> tuple[bytes, bytes, bytes]:
    """(CA PEM, certificate PEM, key PEM): a throwaway CA and a serving
    certificate for `dns` and 127.0.0.1."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder().subject_name(_name("ext-ca")).issuer_name(_name("ext-ca"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName(dns), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder().subject_name(_name(dns)).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())  # fmt: skip
    return ca.public_bytes(pem), cert.public_bytes(pem), key_pem


@dataclass
class ExtensionServer:
    request_header_ca: str  # PEM, from the ConfigMap
    allowed_names: list[str]
    server_name: str  # the DNS name its certificate is for: <svc>.<ns>.svc
    group: str = "ext.example.com"
    version: str = "v1"
    seen: list[Seen] = field(default_factory=list)
    # path -> the document to answer, or None for the default widgets (a
    # metrics adapter's answers: custom.metrics.k8s.io, external.metrics.k8s.io).
    answer: Callable[[str], dict[str, Any] | None] | None = None
    resources: list[dict[str, Any]] | None = None
    ca_pem: bytes = b""
    _server: ThreadingHTTPServer | None = None

    def resource_list(self) -> dict[str, Any]:
        return {
            "kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{self.group}/{self.version}",
            "resources": self.resources if self.resources is not None else [
                {"name": "widgets", "singularName": "widget", "namespaced": True,
                 "kind": "Widget", "verbs": ["get", "list"], "shortNames": ["wg"]}],
        }  # fmt: skip

    def openapi(self) -> dict[str, Any]:
        name = f"com.example.{self.version}.Widget"
        return {"openapi": "3.0.0", "info": {"title": "ext", "version": self.version},
                "paths": {f"/apis/{self.group}/{self.version}/namespaces/{{namespace}}/widgets": {}},
                "components": {"schemas": {name: {
                    "type": "object", "description": "A widget.",
                    "x-kubernetes-group-version-kind": [
                        {"group": self.group, "version": self.version, "kind": "Widget"}]}}}}  # fmt: skip

    def swagger(self) -> dict[str, Any]:
        name = f"com.example.{self.version}.Widget"
        path = f"/apis/{self.group}/{self.version}/namespaces/{{namespace}}/widgets"
        return {"swagger": "2.0", "info": {"title": "ext", "version": self.version},
                "paths": {path: {"get": {"operationId": "listWidgets",
                                         "responses": {"200": {"description": "OK"}}}}},
                "definitions": {name: {"type": "object", "description": "A widget.",
                                       "properties": {"spec": {"type": "object"}}}}}  # fmt: skip

    def start(self) -> int:
        ca_pem, cert_pem, key_pem = serving_pair(self.server_name)
        self.ca_pem = ca_pem
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "c").write_bytes(cert_pem)
            (Path(tmp) / "k").write_bytes(key_pem)
            context.load_cert_chain(Path(tmp) / "c", Path(tmp) / "k")
        context.load_verify_locations(cadata=self.request_header_ca)
        context.verify_mode = ssl.CERT_REQUIRED  # only the front proxy gets in
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                peer = self.connection.getpeercert() or {}
                cn = next((v for rdn in peer.get("subject", ()) for k, v in rdn
                           if k == "commonName"), "")  # fmt: skip
                if cn not in owner.allowed_names:
                    self._send(401, {"kind": "Status", "status": "Failure", "code": 401})
                    return
                extra: dict[str, list[str]] = {}
                for key, value in self.headers.items():
                    if key.lower().startswith("x-remote-extra-"):
                        extra.setdefault(unquote(key[len("x-remote-extra-") :]).lower(), []).append(
                            value
                        )
                seen = Seen("GET", self.path, self.headers.get("X-Remote-User", ""),
                            self.headers.get_all("X-Remote-Group") or [], extra, cn)  # fmt: skip
                owner.seen.append(seen)
                base = f"/apis/{owner.group}/{owner.version}"
                answered = owner.answer(self.path) if owner.answer is not None else None
                if answered is not None:
                    self._send(200, answered)
                elif self.path.split("?")[0] == f"/openapi/v3{base}":
                    self._send(200, owner.openapi())
                elif self.path.split("?")[0] == "/openapi/v2":
                    self._send(200, owner.swagger())
                elif self.path.rstrip("/") == base:
                    self._send(200, owner.resource_list())
                elif self.path.startswith(base) and "/widgets" in self.path:
                    item = {"apiVersion": f"{owner.group}/{owner.version}", "kind": "Widget",
                            "metadata": {"name": "w1", "namespace": "default"},
                            "spec": {"askedBy": seen.user, "groups": seen.groups}}  # fmt: skip
                    self._send(200, {"apiVersion": f"{owner.group}/{owner.version}",
                                     "kind": "WidgetList", "metadata": {}, "items": [item]})  # fmt: skip
                else:
                    self._send(404, {"kind": "Status", "status": "Failure", "code": 404})

            def _send(self, code: int, doc: dict[str, Any]) -> None:
                body = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.socket = context.wrap_socket(server.socket, server_side=True)
        self._server = server
        threading.Thread(target=server.serve_forever, name="ext-apiserver", daemon=True).start()
        return int(server.server_address[1])

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
