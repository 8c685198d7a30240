"""Fixtures of the image tests: a store per test, a puller over the session
registry, an auth/counting proxy in front of the registry, overlay mounts."""

from __future__ import annotations

import base64
import collections
import http.client
import http.server
import json
import secrets
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from runtime.image import config as regconfig
from runtime.image.pull import Puller
from runtime.image.registry import PullSettings
from runtime.image.store import ImageStore
from tests.harness.registry import Registry


@dataclass
class Proxy:
    """A registry front on 127.0.0.1 that may demand a Bearer token (from its
    own /token endpoint, which may demand basic credentials) or basic auth,
    counts requests by path, and can rewrite blob bodies."""

    upstream: str
    mode: str = "open"  # "open" | "bearer" | "basic"
    username: str = "alice"
    password: str = "s3cret"
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    mutate: Callable[[str, bytes], bytes] | None = None
    redirect_blobs: bool = False
    stall: str | None = None  # a blob digest: send half of it, then wait for `release`
    release: threading.Event = field(default_factory=threading.Event)
    host: str = ""

    def basic_ok(self, header: str | None) -> bool:
        want = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return header == f"Basic {want}"


def _handler(proxy: Proxy) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            path = self.path
            proxy.counts[path.split("?")[0]] += 1
            auth = self.headers.get("Authorization")
            if path.startswith("/direct/"):
                self._forward(path.removeprefix("/direct"))
                return
            if path.startswith("/token"):
                if proxy.username and not proxy.basic_ok(auth):
                    self._send(401, b'{"details":"bad credentials"}', {})
                    return
                self._send(200, json.dumps({"token": proxy.token}).encode(), {})
                return
            if proxy.mode == "bearer" and auth != f"Bearer {proxy.token}":
                repo = path.removeprefix("/v2/").rsplit("/", 2)[0]
                challenge = (
                    f'Bearer realm="http://{proxy.host}/token",service="skiff-test",'
                    f'scope="repository:{repo}:pull"'
                )
                body = b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}'
                self._send(401, body, {"WWW-Authenticate": challenge})
                return
            if proxy.mode == "basic" and not proxy.basic_ok(auth):
                self._send(401, b"", {"WWW-Authenticate": 'Basic realm="skiff-test"'})
                return
            if proxy.redirect_blobs and "/blobs/" in path:
                self._send(307, b"", {"Location": f"/direct{path}"})
                return
            self._forward(path)

        def _forward(self, path: str) -> None:
            conn = http.client.HTTPConnection(proxy.upstream, timeout=30)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() == "accept"}
                conn.request(self.command, path, headers=headers)
                resp = conn.getresponse()
                body = resp.read()
            finally:
                conn.close()
            if proxy.mutate is not None and "/blobs/" in path:
                body = proxy.mutate(path, body)
            keep = ("content-type", "docker-content-digest", "location")
            headers = {k: v for k, v in resp.getheaders() if k.lower() in keep}
            if proxy.stall is not None and path.endswith(proxy.stall):
                self.send_response(resp.status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                proxy.release.wait(30)
                try:
                    self.wfile.write(body[len(body) // 2 :])
                except OSError:
                    pass
                self.close_connection = True
                return
            self._send(resp.status, body, headers)

    return Handler


@contextmanager
def run_proxy(upstream: str, tls: ssl.SSLContext | None = None, **kw: Any) -> Iterator[Proxy]:
    proxy = Proxy(upstream, **kw)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    proxy.host = f"127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="proxy", daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.release.set()
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def proxy(registry: Registry) -> Iterator[Proxy]:
    with run_proxy(registry.host) as p:
        yield p


@pytest.fixture
def store(state_dir: Path) -> ImageStore:
    return ImageStore(state_dir / "images")


def make_puller(
    store: ImageStore, registries: dict[str, Any] | None = None, timeout: float = 10.0
) -> Puller:
    return Puller(store, regconfig.from_dict(registries or {}), PullSettings(timeout=timeout))


@pytest.fixture
def puller(store: ImageStore) -> Puller:
    return make_puller(store)


@contextmanager
def overlay(lower: list[Path], target: Path) -> Iterator[Path]:
    """Mount `lower` (bottom first) read-only at `target`; unmounted after."""
    target.mkdir(parents=True, exist_ok=True)
    opts = "lowerdir=" + ":".join(str(p) for p in reversed(lower))
    if len(lower) == 1:
        # overlayfs needs two lower layers without an upper; bind instead.
        subprocess.run(["mount", "--bind", "-o", "ro", str(lower[0]), str(target)], check=True)
    else:
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o", opts, str(target)], check=True)
    try:
        yield target
    finally:
        subprocess.run(["umount", str(target)], check=True)


def store_files(store: ImageStore) -> dict[str, list[str]]:
    """What is on disk: blobs, layers, ingest and temporary layer dirs."""
    return {
        "blobs": sorted(p.name for p in store.content.blob_dir.iterdir()),
        "layers": sorted(p.name for p in store.layers.dir.iterdir()),
        "ingest": sorted(p.name for p in store.content.ingest_dir.iterdir()),
    }


def make_ca_and_cert(dest: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for 127.0.0.1 signed by it:
    (ca.pem, server.pem, server.key)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "skiff test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    import ipaddress

    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    dest.mkdir(parents=True, exist_ok=True)
    ca_pem, cert_pem, key_pem = dest / "ca.pem", dest / "server.pem", dest / "server.key"
    ca_pem.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_pem, cert_pem, key_pem
