"""The audit log (issue 16): who did what to which object, with what result
and how long it took, as JSON lines, by policy, rotated by size; off unless
asked for. On the old code nothing recorded who did anything."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.apiserver.server import ApiServer, ApiServerConfig
from controlplane.apiserver.tls import ensure_pki
from controlplane.client.apiclient import connect
from controlplane.client.config import ClientConfig
from controlplane.client.errors import Forbidden
from controlplane.storage.sqlite import SqliteStore


@pytest.fixture
def audited(tmp_path: Path) -> Iterator[tuple[ApiServer, str, Path]]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n"
        "- level: None\n  resources: [{group: coordination.k8s.io, resources: [leases]}]\n"
        "- level: Request\n  resources: [{group: '', resources: [configmaps]}]\n"
        "- level: Metadata\n"
    )
    log = tmp_path / "audit" / "audit.log"
    pki = ensure_pki(tmp_path)
    server = ApiServer(SqliteStore(tmp_path / "state.db"),
                       ApiServerConfig(audit_log_path=str(log), audit_policy_file=str(policy)),
                       pki)  # fmt: skip
    port = server.start()
    try:
        yield server, f"127.0.0.1:{port}", log
    finally:
        server.stop(0.5)
        server.store.close()


def lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_requests_are_audited_by_policy(audited: tuple[ApiServer, str, Path]) -> None:
    server, address, log = audited
    assert server.authority is not None and server.pki is not None
    ca = server.pki.ca_pem
    with connect(ClientConfig(address, ca, server.authority.admin_token())) as admin:
        admin.create("ConfigMap", {"metadata": {"name": "cm"}, "data": {"k": "v"}}, "default")
        admin.create("Lease", {"metadata": {"name": "l"}}, "default")
        admin.get("ConfigMap", "cm", "default")
    eve = connect(ClientConfig(address, ca, server.authority.user_token("eve")))
    with eve, pytest.raises(Forbidden):
        eve.delete("ConfigMap", "cm", "default")
    events = lines(log)
    assert [(e["verb"], e["objectRef"]["resource"]) for e in events] == [
        ("create", "configmaps"), ("get", "configmaps"), ("delete", "configmaps")]  # fmt: skip
    create, get, denied = events
    assert create["user"]["username"] == "admin" and create["level"] == "Request"
    assert create["requestObject"]["data"] == {"k": "v"}
    assert create["responseStatus"]["code"] == 200 and create["latencyMs"] >= 0
    assert get["objectRef"] == {"resource": "configmaps", "namespace": "default", "name": "cm"}
    assert denied["user"]["username"] == "eve" and denied["responseStatus"]["code"] == 403


def test_create_many_logs_each_object(audited: tuple[ApiServer, str, Path]) -> None:
    """A batched create is audited as Kubernetes logs creates: one line per
    object, naming its resource, namespace and name, with its own result."""
    server, address, log = audited
    assert server.authority is not None and server.pki is not None
    with connect(ClientConfig(address, server.pki.ca_pem, server.authority.admin_token())) as admin:
        admin.create("Namespace", {"metadata": {"name": "other"}})
        results = admin.create_many([
            ("ConfigMap", {"metadata": {"name": "a"}}, "default"),
            ("Secret", {"metadata": {"name": "b"}}, "other"),
            ("ConfigMap", {"metadata": {"name": "a"}}, "default"),
        ])  # fmt: skip
    assert not isinstance(results[0], Exception) and isinstance(results[2], Exception)
    batch = [e for e in lines(log) if e["objectRef"].get("resource") != "namespaces"]
    assert [(e["verb"], e["objectRef"], e["responseStatus"]["code"]) for e in batch] == [
        ("create", {"resource": "configmaps", "namespace": "default", "name": "a"}, 200),
        ("create", {"resource": "secrets", "namespace": "other", "name": "b"}, 200),
        ("create", {"resource": "configmaps", "namespace": "default", "name": "a"}, 409),
    ]
    assert batch[0]["requestObject"]["metadata"]["name"] == "a"  # level Request for configmaps
