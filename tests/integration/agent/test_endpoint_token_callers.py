"""Callers of the agent endpoint other than the API server, as the kubelet serves them (issue 16).

A `skiff controlplane` process (SQLite, 127.0.0.1, audit log on), a node
joined as "tc1" with its serving certificate, and the agent endpoint as
`serve_endpoint` starts it (TLS, the gRPC servicer on a unix socket, the
in-memory fake CRI runtime behind it) with the webhook authn/authz of
agent/webhook_auth.py reviewing tokens through the node's own credential.
A user bound to a ClusterRole granting nodes/stats reads /stats/summary with
her token; one without is refused 403 in the kubelet's words; a bad token is
401; a flood of random tokens costs the API server a bounded number of
TokenReviews (counted in its audit log). On the old code every caller
without the API server's certificate was refused before any of this.
"""

from __future__ import annotations

import http.client
import json
import secrets
import shutil
import socket
import ssl
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent import serving_tls
from agent.cri_client import CRIClient
from agent.server import AgentServicer
from agent.stream_proxy import AgentEndpoint, serve_endpoint
from agent.webhook_auth import ApiReviewer, WebhookAuth, WebhookSettings
from controlplane.apiserver.auth import TokenAuthority
from controlplane.apiserver.tls import ensure_pki
from controlplane.client.agents import agent_csr
from controlplane.client.apiclient import connect, join_node
from tests.fakes.fake_runtime import serve_fake_runtime
from tests.harness.controlplane import ControlPlane
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow
RBAC = "rbac.authorization.k8s.io"
BURST = 10  # reviews (token and access) the endpoint may send at once ...
RATE = 1.0  # ... and per second after that


@dataclass
class Endpoint:
    cp: ControlPlane
    port: int
    ca: bytes
    users: TokenAuthority
    audit: Path

    def get(self, path: str, token: str = "") -> tuple[int, str]:
        context = ssl.create_default_context(cadata=self.ca.decode())
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=context, timeout=10)
        try:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()

    def token_reviews(self) -> int:
        lines = self.audit.read_text().splitlines() if self.audit.exists() else []
        return sum(
            1
            for line in lines
            if (json.loads(line).get("objectRef") or {}).get("resource") == "tokenreviews"
        )


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    base = Path(tmp_path_factory.mktemp("tokencallers"))
    audit = base / "audit.log"
    cp = ControlPlane(base / "cp", ["--store", "sqlite", "--audit-log-path", str(audit)]).start()
    sock_dir = Path(tempfile.mkdtemp(prefix="sktc", dir="/tmp"))
    served: AgentEndpoint | None = None
    try:
        with serve_fake_runtime(sock_dir / "cri.sock"):
            token = (cp.data_dir / "join-token").read_text().strip()
            ca = (cp.data_dir / "pki" / "ca.crt").read_bytes()
            csr, key = agent_csr("tc1", ["127.0.0.1"])
            creds, cert = join_node(f"127.0.0.1:{cp.port}", ca, token, "tc1", csr)
            serving_tls.save(base / "agent", cert, key)
            api = connect(creds)
            runtime = CRIClient(f"unix://{sock_dir}/cri.sock", timeout=5)
            callers = WebhookAuth(
                ApiReviewer(api), "tc1", WebhookSettings(burst=BURST, reviews_per_second=RATE)
            )
            tls = serving_tls.server_context(base / "agent", ca, token_callers=True)
            servicer = AgentServicer("tc1", lambda ns, name: None, runtime, base / "logs")
            served = serve_endpoint(servicer, "127.0.0.1:0", lambda ns, name: None, runtime,
                                    tls, str(base / "agent" / "grpc.sock"), callers)  # fmt: skip
            admin = cp.client()
            admin.create("ClusterRole", {
                "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
                "metadata": {"name": "node-stats-reader"},
                "rules": [{"apiGroups": [""], "resources": ["nodes/stats"], "verbs": ["get"]}],
            })  # fmt: skip
            admin.create("ClusterRoleBinding", {
                "apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "alice-stats"},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "node-stats-reader"},
                "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "alice"}],
            })  # fmt: skip
            users = TokenAuthority(ensure_pki(cp.data_dir).token_secret)
            try:
                yield Endpoint(cp, served.port, ca, users, audit)
            finally:
                served.stop()
                runtime.close()
                api.close()
    finally:
        cp.close()
        shutil.rmtree(sock_dir, ignore_errors=True)


def test_a_user_granted_nodes_stats_reads_the_summary(endpoint: Endpoint) -> None:
    code, body = endpoint.get("/stats/summary", endpoint.users.user_token("alice"))
    assert code == 200, body
    summary = json.loads(body)
    assert summary["node"]["nodeName"] == "tc1"
    assert summary["node"]["memory"]["workingSetBytes"] > 0
    assert summary["pods"] == []
    # Her grant is stats only: the node's logs are another subresource.
    code, body = endpoint.get("/logs/", endpoint.users.user_token("alice"))
    assert (code, body.strip()) == (
        403,
        "Forbidden (user=alice, verb=get, resource=nodes, subresource=log)",
    )


def test_a_user_without_a_grant_is_forbidden(endpoint: Endpoint) -> None:
    code, body = endpoint.get("/stats/summary", endpoint.users.user_token("bob", ("dev",)))
    assert (code, body.strip()) == (
        403,
        "Forbidden (user=bob, verb=get, resource=nodes, subresource=stats)",
    )


def test_a_bad_or_missing_token_is_unauthorized(endpoint: Endpoint) -> None:
    assert endpoint.get("/stats/summary", "skiff-user.e30.bad")[0] == 401
    assert endpoint.get("/stats/summary") == (401, "Unauthorized\n")


def test_token_callers_never_reach_the_grpc_service(endpoint: Endpoint) -> None:
    context = ssl.create_default_context(cadata=endpoint.ca.decode())
    context.set_alpn_protocols(["h2"])
    raw = socket.create_connection(("127.0.0.1", endpoint.port), timeout=10)
    with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        assert tls.selected_alpn_protocol() == "h2"
        tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        assert tls.recv(100) == b""  # closed: no relay to the agent's gRPC socket


def test_a_flood_of_random_tokens_costs_a_bounded_number_of_reviews(endpoint: Endpoint) -> None:
    before = endpoint.token_reviews()
    started = time.monotonic()
    codes = [endpoint.get("/stats/summary", secrets.token_urlsafe(24))[0] for _ in range(60)]
    elapsed = time.monotonic() - started
    assert set(codes) <= {401, 429}, codes
    # Every 401 cost one TokenReview (the audit log is written as each is
    # answered), every 429 none: at most the burst and the refill meanwhile.
    wait_for(lambda: endpoint.token_reviews() - before == codes.count(401), timeout=5)
    assert codes.count(401) <= BURST + RATE * elapsed + 1
    assert codes.count(429) >= 60 - (BURST + RATE * elapsed + 1)


def test_plain_text_is_still_refused(endpoint: Endpoint) -> None:
    token = endpoint.users.user_token("alice")
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as raw:
        raw.sendall(
            f"GET /stats/summary HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
        )
        try:
            answer = raw.recv(100)
        except ConnectionResetError:
            answer = b""
    assert not answer.startswith(b"HTTP")  # a TLS alert or nothing: no HTTP is spoken
