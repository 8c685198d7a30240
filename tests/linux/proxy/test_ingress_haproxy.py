"""The ingress data plane for real: HAProxy configured by the agent's
ingress controller, against backends on 127.0.0.1 (no root needed).

Routing by host and path (Exact, Prefix, ImplementationSpecific), 404 for
unknown hosts, TLS with SNI from kubernetes.io/tls Secrets and the default
certificate otherwise, 503 for a missing Service, and an update that does
not cut a request in flight; HAProxy runs only while an Ingress exists.
"""

from __future__ import annotations

import base64
import datetime
import http.client
import http.server
import shutil
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from agent.ingress.controller import IngressController, IngressTiming
from agent.ingress.haproxy import HAProxy, IngressSettings
from agent.ingress.model import CONTROLLER
from tests.fakes.endpointslices import endpoint_slice
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

pytestmark = pytest.mark.skipif(shutil.which("haproxy") is None, reason="needs Debian's haproxy")


class Backend:
    """An HTTP server answering `<name> <path>`; /slow waits for `release`."""

    def __init__(self, name: str) -> None:
        self.release = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                if self.path == "/slow":
                    outer.release.wait(20)
                body = f"{name} {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()


def tls_secret(name: str, host: str) -> dict[str, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": "default"},
        "data": {
            "tls.crt": base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode(),
            "tls.key": base64.b64encode(pem_key).decode(),
        },
    }


def service(name: str, port_name: str = "http") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"ports": [{"name": port_name, "port": 80, "protocol": "TCP"}]},
    }


def endpoints(name: str, port: int, port_name: str = "http") -> dict[str, Any]:
    """The Service's EndpointSlice (what the ingress controller reads)."""
    return endpoint_slice(
        name, ["127.0.0.1"], [{"name": port_name, "port": port, "protocol": "TCP"}]
    )


def backend_ref(name: str, number: int | None = 80, port_name: str = "") -> dict[str, Any]:
    port = {"number": number} if number else {"name": port_name}
    return {"service": {"name": name, "port": port}}


def ingress(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"ingressClassName": "skiff", **spec},
    }


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[FakeApiClient, IngressController, dict[str, Backend]]]:
    api = FakeApiClient()
    api.create("Node", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    api.create("IngressClass", {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                                "metadata": {"name": "skiff"}, "spec": {"controller": CONTROLLER}})  # fmt: skip
    backends = {n: Backend(n) for n in ("web", "api", "docs")}
    for n, b in backends.items():
        api.create("Service", service(n), "default")
        api.create("EndpointSlice", endpoints(n, b.port), "default")
    settings = IngressSettings(
        state_dir=tmp_path / "ingress", http_port=free_port(), https_port=free_port(),
        bind_address="127.0.0.1",
    )  # fmt: skip
    ctl = IngressController(api, "n1", settings, IngressTiming(min_sync_interval=0.0))
    ctl.start()
    try:
        yield api, ctl, backends
    finally:
        ctl.stop()
        for b in backends.values():
            b.close()


def get(ctl: IngressController, host: str, path: str, tls: bool = False) -> tuple[int, str]:
    s = ctl.settings
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            "127.0.0.1", s.https_port, timeout=10, context=ctx
        )
    else:
        conn = http.client.HTTPConnection("127.0.0.1", s.http_port, timeout=10)
    try:
        if tls:
            conn.connect()
            assert isinstance(conn.sock, ssl.SSLSocket)
        conn.request("GET", path, headers={"Host": host})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def served_cert(ctl: IngressController, sni: str) -> str:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", ctl.settings.https_port), timeout=10)
    with ctx.wrap_socket(raw, server_hostname=sni) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    cert = x509.load_der_x509_certificate(der)
    return str(cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


def synced(ctl: IngressController, *names: str) -> None:
    """Wait until HAProxy runs a configuration serving these Ingresses."""

    def done() -> bool:
        cfg = ctl.last_config
        served = cfg.ingresses if cfg is not None else []
        return ctl.last_error is None and all(f"default/{n}" in served for n in names)

    wait_for(done, timeout=20, message=f"ingresses {names} configured")


def serves(ctl: IngressController, host: str, path: str, want: tuple[int, str]) -> None:
    """Wait until the reloaded HAProxy answers as it should (a reload takes a moment)."""
    wait_for(lambda: get(ctl, host, path) == want, timeout=20, message=f"{host}{path} -> {want}")


def test_routes_by_host_and_path_with_tls_and_404(env) -> None:
    api, ctl, _backends = env
    api.create("Secret", tls_secret("shop-tls", "shop.example.com"), "default")
    api.create("Ingress", ingress("shop", {
        "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}],
        "rules": [
            {"host": "shop.example.com", "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": backend_ref("web")},
                {"path": "/api", "pathType": "Prefix", "backend": backend_ref("api")},
                {"path": "/docs/index", "pathType": "Exact", "backend": backend_ref("docs", None, "http")},
            ]}},
            {"host": "*.example.org", "http": {"paths": [
                {"path": "/", "pathType": "ImplementationSpecific", "backend": backend_ref("api")},
            ]}},
        ],
    }), "default")  # fmt: skip
    synced(ctl, "shop")
    h = "shop.example.com"
    serves(ctl, h, "/", (200, "web /"))
    assert get(ctl, h, "/api") == (200, "api /api")
    assert get(ctl, h, "/api/v1") == (200, "api /api/v1")
    assert get(ctl, h, "/apifoo") == (200, "web /apifoo")  # Prefix is element-wise
    assert get(ctl, h, "/docs/index") == (200, "docs /docs/index")
    assert get(ctl, h, "/docs/index/more") == (200, "web /docs/index/more")  # Exact
    assert get(ctl, "a.example.org", "/x") == (200, "api /x")
    assert get(ctl, "a.b.example.org", "/x")[0] == 404  # a wildcard is one label
    assert get(ctl, "unknown.example.com", "/")[0] == 404
    assert get(ctl, h, "/api", tls=True) == (200, "api /api")
    assert served_cert(ctl, h) == h
    assert served_cert(ctl, "other.example.com") == "skiff ingress default certificate"
    node = api.get("Node", "n1")
    assert node["metadata"]["annotations"]["ingress.skiff.io/ports"].startswith("http=")


def test_missing_service_or_secret_break_nothing_else(env) -> None:
    api, ctl, _backends = env
    api.create("Ingress", ingress("good", {"rules": [{"host": "good.test", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": backend_ref("web")}]}}]}), "default")  # fmt: skip
    api.create("Ingress", ingress("bad", {
        "tls": [{"hosts": ["bad.test"], "secretName": "nope"}],
        "rules": [{"host": "bad.test", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": backend_ref("missing")}]}}],
    }), "default")  # fmt: skip
    synced(ctl, "good", "bad")
    serves(ctl, "good.test", "/", (200, "web /"))
    assert get(ctl, "bad.test", "/")[0] == 503
    assert served_cert(ctl, "bad.test") == "skiff ingress default certificate"
    assert ctl.last_config is not None
    reasons = {(ing, reason) for ing, reason, _ in ctl.last_config.problems}
    assert reasons == {("default/bad", "ServiceNotFound"), ("default/bad", "SecretNotFound")}
    # A default backend answers what no rule matches.
    api.create("Ingress", ingress("fallback", {"defaultBackend": backend_ref("docs")}), "default")
    synced(ctl, "fallback")
    serves(ctl, "anything.test", "/z", (200, "docs /z"))


def test_update_keeps_requests_in_flight(env) -> None:
    api, ctl, backends = env
    api.create("Ingress", ingress("a", {"rules": [{"host": "a.test", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": backend_ref("web")}]}}]}), "default")  # fmt: skip
    synced(ctl, "a")
    serves(ctl, "a.test", "/", (200, "web /"))
    result: list[tuple[int, str]] = []
    slow = threading.Thread(target=lambda: result.append(get(ctl, "a.test", "/slow")))
    slow.start()
    time.sleep(0.3)  # the request is at the backend (no condition to wait on from here)
    api.create("Ingress", ingress("b", {"rules": [{"host": "b.test", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": backend_ref("api")}]}}]}), "default")  # fmt: skip
    synced(ctl, "b")
    wait_for(lambda: get(ctl, "b.test", "/")[0] == 200, timeout=10, message="b served")
    backends["web"].release.set()
    slow.join(20)
    assert result == [(200, "web /slow")]


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def annotated(api: FakeApiClient) -> bool:
    node = api.get("Node", "n1")
    return "ingress.skiff.io/ports" in (node["metadata"].get("annotations") or {})


def test_haproxy_only_while_an_ingress_exists(env) -> None:
    """No HAProxy (nothing listening, no annotation) until the first Ingress;
    the last one's deletion stops it softly: new connections are refused at
    once, a request in flight finishes, then HAProxy is gone."""
    api, ctl, backends = env
    wait_for(lambda: ctl.syncs > 0 and ctl.last_error is None, message="first sync")
    assert ctl.haproxy.master_pid() == 0 and not annotated(api)
    assert refused(ctl.settings.http_port) and refused(ctl.settings.https_port)

    api.create("Ingress", ingress("only", {"rules": [{"host": "a.test", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": backend_ref("web")}]}}]}), "default")  # fmt: skip
    synced(ctl, "only")
    assert ctl.haproxy.master_pid() and annotated(api)
    serves(ctl, "a.test", "/", (200, "web /"))

    result: list[tuple[int, str]] = []
    slow = threading.Thread(target=lambda: result.append(get(ctl, "a.test", "/slow")))
    slow.start()
    time.sleep(0.3)  # the request is at the backend (no condition to wait on from here)
    api.delete("Ingress", "only", "default")
    wait_for(lambda: refused(ctl.settings.http_port), timeout=10, message="listeners closed")
    assert not annotated(api)
    assert ctl.haproxy.master_pid()  # still finishing the request in flight
    backends["web"].release.set()
    slow.join(20)
    assert result == [(200, "web /slow")]
    wait_for(lambda: not ctl.haproxy.master_pid(), timeout=10, message="HAProxy gone")
    wait_for(lambda: not ctl.serving, timeout=10, message="controller idle")


def test_reloads_in_quick_succession_all_take_effect(tmp_path: Path) -> None:
    """HAProxy's master loses a SIGUSR2 that arrives while it reloads and dies
    of one that arrives while it re-executes itself: each `apply()` returns
    once its own configuration serves, and the master lives on."""
    settings = IngressSettings(state_dir=tmp_path, http_port=free_port(), bind_address="127.0.0.1")
    proxy = HAProxy(settings)

    def write(version: int) -> None:
        settings.config_path.write_text(
            "global\n"
            f"    stats socket {settings.socket_path} mode 600 level admin expose-fd listeners\n"
            "defaults\n    mode http\n    timeout connect 5s\n"
            "    timeout client 5s\n    timeout server 5s\n"
            f"frontend f\n    bind 127.0.0.1:{settings.http_port}\n"
            f'    http-request return status 200 content-type text/plain string "v{version}"\n'
        )

    def answer() -> str:
        conn = http.client.HTTPConnection("127.0.0.1", settings.http_port, timeout=5)
        try:
            conn.request("GET", "/")
            return conn.getresponse().read().decode()
        finally:
            conn.close()

    write(0)
    proxy.apply()
    master = proxy.master_pid()
    try:
        for version in range(1, 9):
            write(version)
            proxy.apply()
            wait_for(lambda v=version: answer() == f"v{v}", timeout=5,  # type: ignore[misc]
                     message=f"configuration v{version} served")  # fmt: skip
        assert proxy.master_pid() == master
    finally:
        proxy.stop()
