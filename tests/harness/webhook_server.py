"""A webhook server for tests: HTTPS on 127.0.0.1 (port 0), a throwaway CA
and a serving certificate for the names asked (and 127.0.0.1), each POST
answered by a function of the request's JSON.

    with WebhookServer(lambda review: allow(review)) as hook:
        hook.url("/validate"), hook.ca_bundle  # for a clientConfig

The answer function returns the response JSON (a dict), or a `Raw(status,
body, delay)` for garbage, errors and slow answers. `hook.requests` keeps
every request body received (decoded JSON, or the raw bytes).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

Object = dict[str, Any]


@dataclass
class Raw:
    status: int = 200
    body: bytes = b""
    delay: float = 0.0


Answer = Callable[[Any], "Object | Raw"]


def make_certs(names: list[str]) -> tuple[bytes, bytes, bytes]:
    """(CA cert PEM, server cert PEM, server key PEM) for `names` and 127.0.0.1."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook-test-ca")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in names]
    sans.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0] if names else "webhook")]))
        .issuer_name(ca_name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())  # fmt: skip
    return ca.public_bytes(pem), cert.public_bytes(pem), key_pem


class WebhookServer:
    def __init__(self, answer: Answer, names: list[str] | None = None) -> None:
        self.answer = answer
        self.requests: list[Any] = []
        self.paths: list[str] = []
        self.stopping = threading.Event()
        ca, cert, key = make_certs(names or ["localhost"])
        self.ca_pem = ca
        self.ca_bundle = base64.b64encode(ca).decode()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw
                outer.requests.append(body)
                outer.paths.append(self.path)
                result = outer.answer(body)
                if isinstance(result, Raw):
                    if result.delay:  # a slow webhook, on purpose (cut short at exit)
                        outer.stopping.wait(result.delay)
                    status, data = result.status, result.body
                else:
                    status, data = 200, json.dumps(result).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "c.pem").write_bytes(cert)
            Path(tmp, "k.pem").write_bytes(key)
            context.load_cert_chain(Path(tmp, "c.pem"), Path(tmp, "k.pem"))
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.port}{path}"

    def client_config(self, path: str = "/") -> Object:
        return {"url": self.url(path), "caBundle": self.ca_bundle}

    def __enter__(self) -> WebhookServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=10)


def review_response(review: Object, allowed: bool = True, **fields: Any) -> Object:
    """An AdmissionReview v1 answer to `review` (same uid)."""
    response: Object = {"uid": review["request"]["uid"], "allowed": allowed, **fields}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def json_patch(ops: list[Object]) -> Object:
    """The response fields of a JSONPatch mutation."""
    return {"patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(ops).encode()).decode()}  # fmt: skip
