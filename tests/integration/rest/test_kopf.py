"""kopf, an operator framework from PyPI, unchanged against the REST API:
its operator reconciles the objects of a CustomResourceDefinition into
ConfigMaps (kopf_operator.py)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controlplane.api import crd
from tests.harness.wait import wait_for
from tests.integration.rest.conftest import Cluster

pytest.importorskip("kopf")
pytestmark = pytest.mark.slow

OPERATOR = Path(__file__).with_name("kopf_operator.py")
KIND = "Note.kopf.skiff.dev"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "notes.kopf.skiff.dev"},
    "spec": {
        "group": "kopf.skiff.dev",
        "scope": "Namespaced",
        "names": {"plural": "notes", "singular": "note", "kind": "Note"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"text": {"type": "string"}}},
                # kopf records its progress in status and annotations.
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            }}},
        }],
    },
}  # fmt: skip


def test_kopf_operator_reconciles(cluster: Cluster, tmp_path: Path) -> None:
    kopf = shutil.which("kopf", path=str(Path(sys.executable).parent))
    assert kopf is not None
    registry = cluster.running.server.registry
    registry.create("CustomResourceDefinition", CRD)
    log = (tmp_path / "kopf.log").open("wb")
    proc = subprocess.Popen(
        [kopf, "run", str(OPERATOR), "--standalone", "--namespace", "default"],
        stdout=log, stderr=subprocess.STDOUT, env=cluster.env(),
    )  # fmt: skip
    log.close()

    def made_data() -> Any:
        assert proc.poll() is None, (tmp_path / "kopf.log").read_text()[-3000:]
        try:
            return registry.get_object("ConfigMap", "hello-note", "default").get("data")
        except Exception:
            return None

    try:
        registry.create(KIND, {
            "apiVersion": "kopf.skiff.dev/v1", "kind": "Note",
            "metadata": {"name": "hello", "namespace": "default"}, "spec": {"text": "one"},
        })  # fmt: skip
        wait_for(lambda: made_data() == {"text": "one"}, timeout=60,
                 message="kopf to make the ConfigMap")  # fmt: skip
        owner = registry.get_object("ConfigMap", "hello-note", "default")["metadata"]
        assert owner["ownerReferences"][0]["name"] == "hello"
        assert owner["ownerReferences"][0]["kind"] == "Note"
        registry.patch(KIND, "hello", {"spec": {"text": "two"}}, "default")
        wait_for(lambda: made_data() == {"text": "two"}, timeout=60,
                 message="kopf to update it")  # fmt: skip
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        # The served kinds are this process's: leave none to later tests.
        crd.unregister("notes.kopf.skiff.dev")
