"""CRDs may not claim Kubernetes' own API groups without its approval
annotation (issue 32), through kubectl 1.33, as kube-apiserver refuses them."""

from __future__ import annotations

import subprocess

import pytest

from tests.harness.kubectl import NEWEST
from tests.integration.rest.conftest import Cluster

pytestmark = pytest.mark.slow
KUBECTL = str(NEWEST)

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.samplecontroller.k8s.io
  {annotations}
spec:
  group: samplecontroller.k8s.io
  scope: Namespaced
  names: {{plural: foos, singular: foo, kind: Foo}}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
"""


def apply(cluster: Cluster, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, "apply", "-f", "-"], input=text, capture_output=True,
                          text=True, timeout=60, env=cluster.env())  # fmt: skip


def test_a_crd_in_a_kubernetes_group_needs_the_approval_annotation(cluster: Cluster) -> None:
    done = apply(cluster, CRD.format(annotations=""))
    assert done.returncode != 0
    assert (
        'The CustomResourceDefinition "foos.samplecontroller.k8s.io" is invalid: '
        "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups "
        'must have approval annotation "api-approved.kubernetes.io", see '
        "https://github.com/kubernetes/enhancements/pull/1111"
    ) in done.stderr, done.stderr
    done = apply(
        cluster, CRD.format(annotations="annotations: {api-approved.kubernetes.io: 'looks fine'}")
    )
    assert done.returncode != 0 and "with either a URL or a reason starting with" in done.stderr
    approved = "annotations: {api-approved.kubernetes.io: 'https://github.com/kubernetes/kubernetes/pull/78458'}"
    done = apply(cluster, CRD.format(annotations=approved))
    assert done.returncode == 0, done.stderr
    unapproved = "annotations: {api-approved.kubernetes.io: 'unapproved, experimental'}"
    done = apply(cluster, CRD.format(annotations=unapproved).replace("foos", "bars").replace(
        "Foo", "Bar").replace("foo", "bar"))  # fmt: skip
    assert done.returncode == 0, done.stderr
