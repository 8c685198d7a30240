"""The HTTPS webhook client (controlplane/apiserver/webhooks/client.py)
against a real TLS server: caBundle verification, service resolution and
the server name, timeouts that cost at most the timeout, and errors that
say what failed."""

from __future__ import annotations

import base64
import json
import time

import pytest

from controlplane.apiserver.webhooks.client import CallError, WebhookClient
from controlplane.apiserver.webhooks.resolve import ServiceResolver
from tests.harness.webhook_server import Raw, WebhookServer, make_certs


def echo(body: object) -> dict[str, object]:
    return {"echo": body}


def test_url_with_ca_bundle_is_called_and_connections_are_reused() -> None:
    client = WebhookClient()
    with WebhookServer(echo) as hook:
        for i in range(3):
            answer = client.post(hook.client_config("/check"), json.dumps({"n": i}).encode(), 10)
            assert json.loads(answer) == {"echo": {"n": i}}
        assert hook.paths == ["/check?timeout=10s"] * 3
    client.close()


def test_a_certificate_from_another_ca_is_refused() -> None:
    other_ca, _, _ = make_certs(["localhost"])
    client = WebhookClient()
    with WebhookServer(echo) as hook:
        config = {"url": hook.url("/"), "caBundle": base64.b64encode(other_ca).decode()}
        with pytest.raises(CallError, match="tls: failed to verify certificate"):
            client.post(config, b"{}", 5)
        # no caBundle: the system's roots, which do not know the test CA either
        with pytest.raises(CallError, match="certificate"):
            client.post({"url": hook.url("/")}, b"{}", 5)
        assert hook.requests == []


def test_a_service_is_resolved_to_its_ready_endpoint_and_verified_by_its_dns_name() -> None:
    objects = {
        ("Service", "hooks", "guard"): {"spec": {"ports": [{"name": "https", "port": 443}]}},
    }
    with WebhookServer(echo, names=["guard.hooks.svc"]) as hook:
        slices = [{"metadata": {"labels": {"kubernetes.io/service-name": "guard"}},
                   "ports": [{"name": "https", "port": hook.port}],
                   "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}},
                                 {"addresses": ["127.0.0.2"],
                                  "conditions": {"ready": False}}]}]  # fmt: skip
        resolver = ServiceResolver(
            lambda kind, ns, name: objects.get((kind, ns, name)),
            lambda kind, ns: slices if (kind, ns) == ("EndpointSlice", "hooks") else [],
        )
        client = WebhookClient(resolver)
        service = {"namespace": "hooks", "name": "guard", "path": "/v", "port": 443}
        config = {"service": service, "caBundle": hook.ca_bundle}
        for _ in range(4):  # the not-ready endpoint is never picked
            assert json.loads(client.post(config, b"[1]", 10)) == {"echo": [1]}
        assert hook.paths[0] == "/v?timeout=10s"
        missing = {**config, "service": {**service, "name": "gone"}}
        with pytest.raises(CallError, match='service "gone" not found'):
            client.post(missing, b"{}", 5)
        slices[0]["endpoints"] = []
        with pytest.raises(CallError, match='no endpoints available for service "guard"'):
            client.post(config, b"{}", 5)
        client.close()


def test_a_slow_webhook_costs_at_most_the_timeout() -> None:
    client = WebhookClient()
    with WebhookServer(lambda _: Raw(200, b"{}", delay=30)) as hook:
        start = time.monotonic()
        with pytest.raises(CallError, match="context deadline exceeded"):
            client.post(hook.client_config("/"), b"{}", 1)
        assert time.monotonic() - start < 5  # the deadline, not the webhook's 30 s


def test_errors_name_the_url_and_what_failed() -> None:
    client = WebhookClient()
    with WebhookServer(lambda _: Raw(500, b"boom")) as hook:
        with pytest.raises(CallError, match=r"status code 500: boom") as err:
            client.post(hook.client_config("/x"), b"{}", 5)
        assert f'Post "https://127.0.0.1:{hook.port}/x?timeout=5s"' in str(err.value)
        port = hook.port
    with pytest.raises(CallError, match="connection refused"):
        client.post({"url": f"https://127.0.0.1:{port}/"}, b"{}", 5)
    with pytest.raises(CallError, match="caBundle"):
        client.post({"url": f"https://127.0.0.1:{port}/", "caBundle": "%%%"}, b"{}", 5)
