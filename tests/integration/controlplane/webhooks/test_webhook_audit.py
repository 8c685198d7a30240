"""A webhook's auditAnnotations land in the request's audit event, each
key prefixed by the webhook's name (as kube-apiserver records them), and
its warnings reach the client's Warning header."""

from __future__ import annotations

import http.client
import json
import ssl
from pathlib import Path

from controlplane.apiserver.server import ApiServer, ApiServerConfig
from controlplane.apiserver.tls import ensure_pki
from controlplane.storage.sqlite import SqliteStore
from tests.harness.wait import wait_for
from tests.harness.webhook_server import WebhookServer, review_response


def test_audit_annotations_and_warnings(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    store = SqliteStore(tmp_path / "state.db")
    config = ApiServerConfig(listen="127.0.0.1:0", rest=True, audit_log_path=str(log))
    api = ApiServer(store, config, ensure_pki(tmp_path))
    api.start()
    answer = {"auditAnnotations": {"decision": "allowed by policy 7"},
              "warnings": ["this namespace is watched"]}  # fmt: skip
    try:
        with WebhookServer(lambda r: review_response(r, True, **answer)) as hook:
            api.registry.create("ValidatingWebhookConfiguration", {
                "metadata": {"name": "audited"}, "webhooks": [{
                    "name": "audit.example.com", "clientConfig": hook.client_config("/"),
                    "rules": [{"operations": ["CREATE"], "apiGroups": [""],
                               "apiVersions": ["v1"], "resources": ["configmaps"]}],
                    "sideEffects": "None", "admissionReviewVersions": ["v1"]}]})  # fmt: skip
            wait_for(lambda: api.webhook_configs.validating(), 10, message="the webhook in force")
            assert api.pki is not None and api.authority is not None
            context = ssl.create_default_context(cadata=api.pki.ca_pem.decode())
            context.check_hostname = False
            conn = http.client.HTTPSConnection("127.0.0.1", api.port, context=context, timeout=30)
            body = json.dumps({"metadata": {"name": "watched"}, "data": {"k": "v"}})
            conn.request("POST", "/api/v1/namespaces/default/configmaps", body, {
                "Authorization": f"Bearer {api.authority.admin_token()}",
                "Content-Type": "application/json"})  # fmt: skip
            response = conn.getresponse()
            response.read()
            assert response.status == 201
            assert "this namespace is watched" in (response.getheader("Warning") or "")
            conn.close()

            def created() -> dict[str, object]:
                for line in log.read_text().splitlines():
                    event = json.loads(line)
                    if event["verb"] == "create" and event["objectRef"]["resource"] == "configmaps":
                        return event  # type: ignore[no-any-return]
                return {}

            event = wait_for(created, 10, message="the create's audit event")
            assert event["annotations"] == {"audit.example.com/decision": "allowed by policy 7"}
    finally:
        api.stop(0.5)
        store.close()
