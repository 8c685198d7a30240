"""The schedulers' and the controller manager's secure port (issue 34), as
kube-scheduler's and kube-controller-manager's: HTTPS, a bearer token named
by a TokenReview or a client certificate of the client CA, then a
SubjectAccessReview for the non-resource URL; /healthz, /readyz and /livez
for anyone. Against a real API server in this process, with each
component's own identity (its ClusterRole must allow the reviews)."""

from __future__ import annotations

import datetime
import functools
import http.client
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from prometheus_client.parser import text_string_to_metric_families

from controlplane.apiserver.rbaccomponents import BATCH_SCHEDULER, CONTROLLER_MANAGER, SCHEDULER
from controlplane.apiserver.server import ApiServer, ApiServerConfig
from controlplane.apiserver.tls import ensure_pki
from controlplane.client import secureserving
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import ClientConfig
from controlplane.client.secureserving import SecureServingOptions, delegation
from controlplane.controllers import manager
from controlplane.controllers.config import ManagerConfig
from controlplane.scheduler import run as scheduler
from controlplane.scheduler.batch import run as batch_scheduler
from controlplane.storage.sqlite import SqliteStore
from tests.harness.ports import free_port
from tests.harness.wait import wait_for


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    tmp = tmp_path_factory.mktemp("secure-port")
    store = SqliteStore(tmp / "state.db")
    server = ApiServer(store, ApiServerConfig(listen="127.0.0.1:0", rest=True), ensure_pki(tmp))
    server.start()
    try:
        yield server
    finally:
        server.stop(0.5)
        store.close()


def client_as(api: ApiServer, user: str, groups: tuple[str, ...] = ()) -> GrpcApiClient:
    assert api.pki is not None and api.authority is not None
    token = api.authority.user_token(user, groups)
    return connect(ClientConfig(f"127.0.0.1:{api.port}", api.pki.ca_pem, token), timeout=10)


def token(api: ApiServer, user: str, groups: tuple[str, ...] = ()) -> str:
    assert api.authority is not None
    return api.authority.user_token(user, groups)


def get(port: int, path: str, bearer: str = "", cert: tuple[Path, Path] | None = None,
        ) -> tuple[int, str]:  # fmt: skip
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # a self-signed serving certificate, as kube-scheduler's
    if cert is not None:
        context.load_cert_chain(*cert)
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {bearer}"} if bearer else {})
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


class Running:
    def __init__(self, start: Any, client: GrpcApiClient) -> None:
        self.stop = threading.Event()
        self.client = client
        self.thread = start(client, self.stop)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.client.close()


COMPONENTS = {
    "scheduler": (SCHEDULER.user, lambda o: scheduler.component(None, "", o),
                  "scheduler_pending_pods"),
    "volcano-scheduler": (BATCH_SCHEDULER.user, lambda o: batch_scheduler.component(None, "", o),
                          "volcano_schedule_attempts"),
    "controllers": (CONTROLLER_MANAGER.user,
                    lambda o: manager.component(ManagerConfig(leader_elect=False),
                                                secure=o),
                    "workqueue_depth"),
}  # fmt: skip


@pytest.fixture(scope="module", params=list(COMPONENTS))
def component(
    request: pytest.FixtureRequest, api: ApiServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, str]]:
    user, build, series = COMPONENTS[request.param]
    assert api.pki is not None
    ca_file = tmp_path_factory.mktemp("client-ca") / "ca.crt"
    ca_file.write_bytes(api.pki.ca_pem)
    port = free_port()
    options = SecureServingOptions(
        secure_port=port, bind_address="127.0.0.1", client_ca_file=str(ca_file)
    )
    running = Running(build(options), client_as(api, user))
    try:
        wait_for(lambda: _answers(port), timeout=20, message=f"{request.param}'s secure port")
        yield port, series
    finally:
        running.close()


def _answers(port: int) -> bool:
    try:
        return get(port, "/healthz")[0] in (200, 503)
    except OSError:
        return False


def test_healthz_needs_no_credentials(component: tuple[int, str]) -> None:
    port, _ = component
    for path in ("/healthz", "/readyz", "/livez"):
        answer = wait_for(lambda p=path: _ok(get(port, p)), timeout=30, message=path)  # type: ignore[misc]
        assert answer == (200, "ok")


def _ok(answer: tuple[int, str]) -> tuple[int, str] | None:
    return answer if answer[0] == 200 else None


def test_a_token_the_api_server_does_not_know_is_401(component: tuple[int, str]) -> None:
    code, body = get(component[0], "/metrics", bearer="not-a-token")
    status = json.loads(body)
    assert (code, status["reason"], status["kind"]) == (401, "Unauthorized", "Status"), body


def test_no_credentials_is_anonymous_and_forbidden(component: tuple[int, str]) -> None:
    """As kube-scheduler's delegated authentication: anonymous, then authorized (403)."""
    code, body = get(component[0], "/metrics")
    assert code == 403, body
    assert (
        json.loads(body)["message"]
        == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    )


def test_a_user_without_the_permission_is_403(api: ApiServer, component: tuple[int, str]) -> None:
    code, body = get(component[0], "/metrics", bearer=token(api, "eve"))
    assert code == 403, body
    assert json.loads(body)["message"] == 'forbidden: User "eve" cannot get path "/metrics"'


def test_a_member_of_system_monitoring_reads_metrics(
    api: ApiServer, component: tuple[int, str]
) -> None:
    port, series = component
    code, body = get(port, "/metrics", bearer=token(api, "prom", ("system:monitoring",)))
    assert code == 200, body
    names = {f.name for f in text_string_to_metric_families(body)}
    assert {series, "process_cpu_seconds"} <= names, sorted(names)


def test_a_client_certificate_of_the_client_ca_is_its_subject(
    api: ApiServer, component: tuple[int, str], tmp_path: Path
) -> None:
    port, series = component
    allowed = _client_cert(api, tmp_path, "scraper", "system:monitoring")
    code, body = get(port, "/metrics", cert=allowed)
    assert code == 200 and series in body, body[:300]
    refused = _client_cert(api, tmp_path, "mallory", "devs")
    code, body = get(port, "/metrics", cert=refused)
    assert code == 403, body
    assert json.loads(body)["message"] == 'forbidden: User "mallory" cannot get path "/metrics"'


def _client_cert(api: ApiServer, base: Path, cn: str, org: str) -> tuple[Path, Path]:
    assert api.pki is not None
    ca = x509.load_pem_x509_certificate(api.pki.ca_pem)
    ca_key: Any = serialization.load_pem_private_key(api.pki.ca_key_pem, None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
                         x509.NameAttribute(NameOID.COMMON_NAME, cn)])  # fmt: skip
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .sign(ca_key, hashes.SHA256())
    )
    crt, pem = base / f"{cn}.crt", base / f"{cn}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))  # fmt: skip
    return crt, pem


def test_bad_secure_serving_flags_refuse_to_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "scheduler.conf"
    conf.write_text("not read: the flags are refused first")
    assert scheduler.main(["--kubeconfig", str(conf), "--bind-address", "nowhere"]) == 2
    assert "--bind-address: 'nowhere' is not an IP address" in capsys.readouterr().err
    assert manager.main(["--kubeconfig", str(conf), "--tls-cert-file", "x.crt"]) == 2
    assert "--tls-cert-file and --tls-private-key-file go together" in capsys.readouterr().err


def test_connections_past_the_cap_are_closed_at_once(
    api: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Callers that connect and say nothing hold at most MAX_CONNECTIONS
    threads; the next connection is closed at once, and the port serves
    again once they go."""
    monkeypatch.setattr(secureserving, "MAX_CONNECTIONS", 2)
    client = client_as(api, SCHEDULER.user)
    server = secureserving.SecureServer(
        SecureServingOptions(secure_port=0, bind_address="127.0.0.1"),
        delegation(client, SecureServingOptions(secure_port=0)), lambda: b"",
    )  # fmt: skip
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(2)]
    try:
        # Accepted in order: both idle ones hold the slots when this one comes.
        extra = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        with extra:
            assert extra.recv(1) == b""  # closed by the server, no handshake
        for sock in idle:
            sock.close()
        answer = wait_for(functools.partial(_health_of, server.port), timeout=20,
                          message="served again")  # fmt: skip
        assert answer == (200, "ok")
    finally:
        for sock in idle:
            sock.close()
        server.stop()
        client.close()


def _health_of(port: int) -> tuple[int, str] | None:
    try:
        answer = get(port, "/healthz")
    except OSError:
        return None
    return answer if answer[0] == 200 else None
