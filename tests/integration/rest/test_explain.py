"""`kubectl explain` answers at every depth of the built-in kinds (issue 28):
the OpenAPI documents describe every nested type to its leaves, with
Kubernetes' definition names and formats. kubectl 1.27 reads the v3
documents as 1.33 does (`explain` fell back to v2 before 1.27); each is
called by its versioned path."""

from __future__ import annotations

import subprocess

import pytest

from tests.harness.kubectl import versioned
from tests.integration.rest.conftest import Cluster

pytestmark = pytest.mark.slow

MINORS = [
    pytest.param(minor, id=f"1.{minor}", marks=pytest.mark.skipif(
        not versioned(minor).exists(), reason=f"{versioned(minor)} is not installed"))
    for minor in (27, 33)
]  # fmt: skip

# (resource path, the field line kubectl prints, a phrase of its description)
CASES = [
    ("deploy.spec.strategy.rollingUpdate.maxSurge", "maxSurge", "above the desired count"),
    ("pod.status.conditions.type", "type", "PodScheduled"),
    ("pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
     "requiredDuringSchedulingIgnoredDuringExecution", "any one of which"),
    ("pod.spec.tolerations.tolerationSeconds", "tolerationSeconds", "NoExecute"),
    ("pod.spec.volumes.hostPath.type", "type", "DirectoryOrCreate"),
    ("pod.spec.containers.livenessProbe.httpGet.port", "port", "container port"),
    ("node.spec.taints.effect", "effect", "NoSchedule"),
    ("svc.status.loadBalancer.ingress.ip", "ip", "IP address"),
    ("sts.spec.updateStrategy.rollingUpdate.partition", "partition", "artition"),
    ("cronjob.spec.jobTemplate.spec.template.spec.securityContext.runAsUser", "runAsUser",
     "processes run as"),
]  # fmt: skip


def explain(cluster: Cluster, minor: int, path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(versioned(minor)), "explain", path], capture_output=True,
                          text=True, timeout=60, env=cluster.env())  # fmt: skip


@pytest.mark.parametrize("minor", MINORS)
def test_explain_at_depth(cluster: Cluster, minor: int) -> None:
    for path, field, phrase in CASES:
        done = explain(cluster, minor, path)
        assert done.returncode == 0, (path, done.stderr)
        assert f"FIELD: {field} <" in done.stdout or f"FIELD:    {field} <" in done.stdout, (
            path, done.stdout)  # fmt: skip
        assert phrase in done.stdout, (path, done.stdout)


@pytest.mark.parametrize("minor", MINORS)
def test_explain_types_and_unknown_fields(cluster: Cluster, minor: int) -> None:
    strategy = explain(cluster, minor, "deploy.spec.strategy")
    assert "rollingUpdate\t<RollingUpdateDeployment>" in strategy.stdout, strategy.stdout
    surge = explain(cluster, minor, "deploy.spec.strategy.rollingUpdate.maxSurge")
    assert "FIELD: maxSurge <IntOrString>" in surge.stdout, surge.stdout
    missing = explain(cluster, minor, "deploy.spec.strategy.rollingUpdate.bogus")
    assert missing.returncode != 0
    assert 'field "bogus" does not exist' in missing.stderr, missing.stderr


@pytest.mark.parametrize("minor", MINORS)
def test_explain_from_the_v2_document(cluster: Cluster, minor: int) -> None:
    """`--output=plaintext-openapiv2` reads /openapi/v2 (as protobuf) instead."""
    path = "deploy.spec.strategy.rollingUpdate.maxUnavailable"
    done = subprocess.run([str(versioned(minor)), "explain", path,
                           "--output=plaintext-openapiv2"], capture_output=True, text=True,
                          timeout=60, env=cluster.env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "maxUnavailable" in done.stdout and "below the desired count" in done.stdout, (
        done.stdout)  # fmt: skip
    conditions = subprocess.run([str(versioned(minor)), "explain", "pod.status.conditions",
                                 "--output=plaintext-openapiv2"], capture_output=True,
                                text=True, timeout=60, env=cluster.env())  # fmt: skip
    assert "lastTransitionTime" in conditions.stdout, conditions.stdout


@pytest.mark.skipif(not versioned(33).exists(), reason=f"{versioned(33)} is not installed")
def test_strict_validation_reaches_nested_fields(cluster: Cluster) -> None:
    """kubectl 1.33's `--validate=strict` (the server's fieldValidation=Strict)
    names an unknown field at any depth, as kube-apiserver does."""
    manifest = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: strict-nested}
spec:
  selector: {matchLabels: {app: strict-nested}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, bogus: 1}}
  template:
    metadata: {labels: {app: strict-nested}}
    spec: {containers: [{name: c, image: busybox}]}
"""
    done = subprocess.run([str(versioned(33)), "create", "--validate=strict", "-f", "-"],
                          input=manifest, capture_output=True, text=True, timeout=60,
                          env=cluster.env())  # fmt: skip
    assert done.returncode != 0
    assert 'unknown field "spec.strategy.rollingUpdate.bogus"' in done.stderr, done.stderr
    absent = subprocess.run([str(versioned(33)), "get", "deploy", "strict-nested"],
                            capture_output=True, text=True, timeout=60, env=cluster.env())  # fmt: skip
    assert absent.returncode != 0 and "NotFound" in absent.stderr, absent.stdout
