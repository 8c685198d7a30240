"""A REST watch's slot is freed when its client goes away (issue 32): it was
held until the watch's timeout, so an identity that closed every watch
stayed locked out at its cap for as long as half an hour."""

from __future__ import annotations

import socket
import ssl

import pytest

from tests.harness.wait import wait_for
from tests.integration.rest.conftest import Cluster

pytestmark = pytest.mark.slow
RBAC = "rbac.authorization.k8s.io/v1"


def open_watch(cluster: Cluster, token: str) -> tuple[ssl.SSLSocket, int]:
    """A watch of configmaps as `token`: the socket (left open) and the status code."""
    context = ssl.create_default_context(cadata=cluster.running.admin.ca_pem.decode())
    context.check_hostname = False
    raw = socket.create_connection(("127.0.0.1", cluster.port), timeout=10)
    sock = context.wrap_socket(raw, server_hostname="skiff-apiserver")
    sock.sendall(
        b"GET /api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1800 HTTP/1.1\r\n"
        b"Host: skiff\r\nAuthorization: Bearer " + token.encode() + b"\r\n\r\n"
    )
    status = int(sock.recv(64).split(b" ", 2)[1])
    return sock, status


def test_closing_watches_frees_their_slots(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=f"""\
apiVersion: {RBAC}
kind: ClusterRole
metadata: {{name: cm-watcher}}
rules: [{{apiGroups: [""], resources: [configmaps], verbs: [list, watch]}}]
---
apiVersion: {RBAC}
kind: ClusterRoleBinding
metadata: {{name: cm-watcher}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cm-watcher}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: watcher}}]
""")  # fmt: skip
    authority = cluster.running.server.authority
    assert authority is not None
    token = authority.user_token("watcher")
    flow = cluster.running.server.flow
    cap = flow.limits.watches_per_identity
    opened = []
    try:
        for _ in range(cap):
            sock, status = open_watch(cluster, token)
            opened.append(sock)
            assert status == 200
        extra, status = open_watch(cluster, token)
        extra.close()
        assert status == 429  # at the cap
    finally:
        for sock in opened:
            sock.close()
    # Every client went away: the slots come back (old code: at the timeout, 30 minutes on).
    wait_for(lambda: flow.watch_count("watcher") == 0, timeout=15, message="the slots freed")
    sock, status = open_watch(cluster, token)
    sock.close()
    assert status == 200
