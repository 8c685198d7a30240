"""kopf's admission webhooks against a real control plane (issue 30, must
show): kopf from PyPI, unchanged, registers its own webhook configurations
and serves `@kopf.on.validate` and `@kopf.on.mutate` over HTTPS
(kopf_webhooks_operator.py); the API server calls them on every Gate
written: one is refused with kopf's message, the rest are stamped."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controlplane.api import crd
from tests.harness.ports import free_port
from tests.harness.wait import wait_for
from tests.harness.webhook_server import make_certs
from tests.integration.rest.conftest import Cluster

pytest.importorskip("kopf")
pytestmark = pytest.mark.slow

OPERATOR = Path(__file__).with_name("kopf_webhooks_operator.py")
KIND = "Gate.kopf.skiff.dev"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gates.kopf.skiff.dev"},
    "spec": {
        "group": "kopf.skiff.dev",
        "scope": "Namespaced",
        "names": {"plural": "gates", "singular": "gate", "kind": "Gate"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "text": {"type": "string"}, "stamp": {"type": "string"}}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            }}},
        }],
    },
}  # fmt: skip


def gate(name: str, text: str) -> str:
    return (f"apiVersion: kopf.skiff.dev/v1\nkind: Gate\nmetadata:\n  name: {name}\n"
            f"  namespace: default\nspec:\n  text: {text}\n")  # fmt: skip


def test_kopf_validating_and_mutating_webhooks(cluster: Cluster, tmp_path: Path) -> None:
    kopf = shutil.which("kopf", path=str(Path(sys.executable).parent))
    assert kopf is not None
    server = cluster.running.server
    server.registry.create("CustomResourceDefinition", CRD)
    ca, cert, key = make_certs(["localhost"])
    for name, pem in (("ca.pem", ca), ("cert.pem", cert), ("key.pem", key)):
        (tmp_path / name).write_bytes(pem)
    log_path = tmp_path / "kopf.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [kopf, "run", str(OPERATOR), "--standalone", "--namespace", "default"],
        stdout=log, stderr=subprocess.STDOUT,
        env=cluster.env(HOOK_PORT=str(free_port()), HOOK_CERT=str(tmp_path / "cert.pem"),
                        HOOK_KEY=str(tmp_path / "key.pem"), HOOK_CA=str(tmp_path / "ca.pem")),
    )  # fmt: skip
    log.close()

    def registered() -> bool:
        assert proc.poll() is None, log_path.read_text()[-3000:]
        names = {h.name for h in server.webhook_configs.validating()}
        names |= {h.name for h in server.webhook_configs.mutating()}
        return any(n.startswith("refuse-forbidden.") for n in names) and any(
            n.startswith("stamp.") for n in names
        )

    try:
        wait_for(registered, timeout=60, message="kopf to register its webhooks")
        vwc = server.registry.list("ValidatingWebhookConfiguration").items
        assert vwc, "kopf made no ValidatingWebhookConfiguration"

        def create(name: str, text: str) -> subprocess.CompletedProcess[str]:
            return cluster.kubectl("apply", "-f", "-", input=gate(name, text), check=False)

        # kopf's server may take a moment to answer after registering.
        done = wait_for(lambda: (d := create("ok", "fine")).returncode == 0 and d, timeout=30,
                        message="a Gate admitted by kopf's webhooks")  # fmt: skip
        assert done
        stored: Any = server.registry.get_object(KIND, "ok", "default")
        assert stored["spec"] == {"text": "fine", "stamp": "kopf"}  # kopf's mutation
        refused = create("bad", "forbidden")
        assert refused.returncode != 0
        assert "the text 'forbidden' is not allowed" in refused.stderr
        assert 'admission webhook "refuse-forbidden.' in refused.stderr
        with pytest.raises(Exception, match="not found"):
            server.registry.get_object(KIND, "bad", "default")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            for data, _ in server.registry.list(kind).items:
                server.registry.delete(kind, json.loads(data)["metadata"]["name"])
        crd.unregister("gates.kopf.skiff.dev")
