"""PodTemplate (v1) through kubectl 1.33 against a real control plane: the
kind added as one module (controlplane/api/kinds/core/podtemplate.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.rest.conftest import Cluster

KUBECTL = Path("/usr/lib/google-cloud-sdk/bin/kubectl.1.33")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl 1.33 is not installed"),
]

TEMPLATE = """
apiVersion: v1
kind: PodTemplate
metadata:
  name: web
template:
  metadata:
    labels: {app: web, tier: front}
  spec:
    containers:
    - name: nginx
      image: nginx:1.25
    - name: sidecar
      image: busybox
"""


def kubectl(cluster: Cluster, *args: str, stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    done = subprocess.run(
        [str(KUBECTL), *args], input=stdin, capture_output=True, text=True, timeout=60,
        env=cluster.env(),
    )  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done


def test_create_get_list_delete(cluster: Cluster) -> None:
    created = kubectl(cluster, "create", "-f", "-", stdin=TEMPLATE)
    assert created.stdout.strip() == "podtemplate/web created"
    try:
        table = kubectl(cluster, "get", "podtemplates").stdout.splitlines()
        assert table[0].split() == ["NAME", "CONTAINERS", "IMAGES", "POD", "LABELS"]
        assert table[1].split() == ["web", "nginx,sidecar", "nginx:1.25,busybox",
                                    "app=web,tier=front"]  # fmt: skip
        obj = json.loads(kubectl(cluster, "get", "podtemplate", "web", "-o", "json").stdout)
        spec = obj["template"]["spec"]
        assert spec["restartPolicy"] == "Always"  # defaulted as a pod spec is
        assert spec["containers"][1]["imagePullPolicy"] == "Always"
        assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
        listed = kubectl(cluster, "get", "podtemplates", "-o", "name").stdout.split()
        assert listed == ["podtemplate/web"]
        resources = kubectl(cluster, "api-resources", "--api-group=").stdout
        line = next(x for x in resources.splitlines() if x.startswith("podtemplates "))
        assert line.split() == ["podtemplates", "v1", "true", "PodTemplate"]  # no short name
    finally:
        deleted = kubectl(cluster, "delete", "podtemplate", "web")
    assert deleted.stdout.strip() == 'podtemplate "web" deleted'
    gone = kubectl(cluster, "get", "podtemplate", "web", check=False)
    assert gone.returncode != 0
    assert 'podtemplates "web" not found' in gone.stderr


def test_template_validated_as_kubernetes_does(cluster: Cluster) -> None:
    bad = TEMPLATE.replace("name: nginx\n", "name: Nginx\n").replace("image: busybox", "")
    refused = kubectl(cluster, "create", "-f", "-", stdin=bad, check=False)
    assert refused.returncode != 0
    assert "template.spec.containers[0].name" in refused.stderr
    assert "template.spec.containers[1].image: required" in refused.stderr
    assert kubectl(cluster, "get", "podtemplates", "-o", "name").stdout.strip() == ""
