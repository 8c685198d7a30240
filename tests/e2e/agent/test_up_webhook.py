"""An admission webhook served by a pod behind a Service on `skiff up`
(issue 30, must show): Debian's python3 image (tests/harness/debian_images.py;
busybox has no TLS server) runs a small HTTPS webhook as nobody with a
certificate for `hook.default.svc` from a Secret; the
ValidatingWebhookConfiguration names the Service (port 443 -> the pod's
8443) with the CA as caBundle. The API server resolves the Service's
endpoints itself and calls the pod: a ConfigMap asking to be refused is
refused with the pod's message, the others are admitted.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.client.errors import NotFound
from tests.e2e.agent.kubelet_up import Cluster, skiff_up
from tests.harness import debian_images as deb
from tests.harness.images import TestImages
from tests.harness.wait import wait_for
from tests.harness.webhook_server import make_certs

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow, pytest.mark.debian_images]

HOOK = """
import http.server, json, socket, ssl

class Hook(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        data = (request.get("object") or {}).get("data") or {}
        response = {"uid": request["uid"], "allowed": data.get("verdict") != "deny"}
        if not response["allowed"]:
            response["status"] = {"code": 403, "message": "refused by pod " + socket.gethostname()}
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": response}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("/tls/tls.crt", "/tls/tls.key")
server = http.server.ThreadingHTTPServer(("0.0.0.0", 8443), Hook)
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"""


@pytest.fixture(scope="module")
def cluster(images: TestImages) -> Iterator[Cluster]:
    why = deb.available()
    if why is not None:
        pytest.skip(why)
    built = deb.debian_images()
    with skiff_up(images, archives=(built.archive,)) as c:
        yield c


def objects(ca: bytes, cert: bytes, key: bytes) -> list[tuple[str, dict[str, Any]]]:
    python = next(a.ref for a in deb.APPS if a.name == "python")
    b64 = lambda data: base64.b64encode(data).decode()  # noqa: E731
    return [
        ("Secret", {"metadata": {"name": "hook-tls"}, "type": "kubernetes.io/tls",
                    "data": {"tls.crt": b64(cert), "tls.key": b64(key)}}),
        ("ConfigMap", {"metadata": {"name": "hook-code"}, "data": {"hook.py": HOOK}}),
        ("Pod", {"metadata": {"name": "hook", "labels": {"app": "hook"}}, "spec": {
            "containers": [{"name": "hook", "image": python, "imagePullPolicy": "Never",
                            "command": ["python3", "/code/hook.py"],
                            "ports": [{"containerPort": 8443}],
                            "readinessProbe": {"tcpSocket": {"port": 8443}, "periodSeconds": 1},
                            "volumeMounts": [{"name": "tls", "mountPath": "/tls"},
                                             {"name": "code", "mountPath": "/code"}]}],
            "volumes": [{"name": "tls", "secret": {"secretName": "hook-tls"}},
                        {"name": "code", "configMap": {"name": "hook-code"}}]}}),
        ("Service", {"metadata": {"name": "hook"}, "spec": {
            "selector": {"app": "hook"}, "ports": [{"port": 443, "targetPort": 8443}]}}),
    ]  # fmt: skip


def test_a_webhook_served_by_a_pod_behind_a_service(cluster: Cluster) -> None:
    ca, cert, key = make_certs(["hook.default.svc"])
    made = objects(ca, cert, key)
    for kind, obj in made:
        cluster.api.create(kind, obj, "default")
    config = {"metadata": {"name": "pod-hook"}, "webhooks": [{
        "name": "pod.hook.skiff.dev",
        "clientConfig": {"service": {"namespace": "default", "name": "hook",
                                     "path": "/validate"},
                         "caBundle": base64.b64encode(ca).decode()},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "objectSelector": {"matchLabels": {"webhook-test": "yes"}},
        "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 5,
    }]}  # fmt: skip
    cluster.api.create("ValidatingWebhookConfiguration", config)
    try:
        cluster.wait_ready("hook", timeout=120)

        def configmap(name: str, verdict: str) -> str:
            return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
                    f"  labels:\n    webhook-test: 'yes'\ndata:\n  verdict: {verdict}\n")  # fmt: skip

        def refused() -> str:
            done = cluster.kubectl("apply", "-f", "-", input=configmap("bad", "deny"), check=False)
            return done.stderr if "denied the request" in done.stderr else ""

        # Until the endpoint is ready and the configuration in force, the
        # create fails another way (no endpoints) or passes (not yet seen).
        stderr = wait_for(refused, timeout=60, interval=0.5, message="the pod's webhook to refuse")
        assert (
            'admission webhook "pod.hook.skiff.dev" denied the request: refused by pod hook'
            in stderr
        )
        cluster.kubectl("apply", "-f", "-", input=configmap("good", "allow"))
        assert cluster.api.get("ConfigMap", "good", "default")["data"] == {"verdict": "allow"}
    finally:
        cluster.api.delete("ValidatingWebhookConfiguration", "pod-hook")
        for kind, obj in [*reversed(made), ("ConfigMap", {"metadata": {"name": "good"}}),
                          ("ConfigMap", {"metadata": {"name": "bad"}})]:  # fmt: skip
            try:
                cluster.api.delete(kind, obj["metadata"]["name"], "default")
            except NotFound:
                pass
