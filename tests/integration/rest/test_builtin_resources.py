"""The resources Kubernetes 1.32 serves by default, as `kubectl api-resources`
(1.33, by path) lists them on skiff; and the CSI kinds of storage.k8s.io/v1
(CSIDriver, CSINode, VolumeAttachment, CSIStorageCapacity) served with
validation and printer columns, through kubectl and the Python client
against a real control plane."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness.kubectl import NEWEST
from tests.integration.rest.conftest import Cluster

KUBECTL = NEWEST

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl 1.33 is not installed"),
]

# `kubectl api-resources -o name` on a kube-apiserver 1.32 with its default
# API groups: 58 resources.
KUBERNETES_1_32 = frozenset({
    "bindings", "componentstatuses", "configmaps", "endpoints", "events", "limitranges",
    "namespaces", "nodes", "persistentvolumeclaims", "persistentvolumes", "pods",
    "podtemplates", "replicationcontrollers", "resourcequotas", "secrets", "serviceaccounts",
    "services",
    "mutatingwebhookconfigurations.admissionregistration.k8s.io",
    "validatingadmissionpolicies.admissionregistration.k8s.io",
    "validatingadmissionpolicybindings.admissionregistration.k8s.io",
    "validatingwebhookconfigurations.admissionregistration.k8s.io",
    "customresourcedefinitions.apiextensions.k8s.io",
    "apiservices.apiregistration.k8s.io",
    "controllerrevisions.apps", "daemonsets.apps", "deployments.apps", "replicasets.apps",
    "statefulsets.apps",
    "selfsubjectreviews.authentication.k8s.io", "tokenreviews.authentication.k8s.io",
    "localsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectrulesreviews.authorization.k8s.io",
    "subjectaccessreviews.authorization.k8s.io",
    "horizontalpodautoscalers.autoscaling",
    "cronjobs.batch", "jobs.batch",
    "certificatesigningrequests.certificates.k8s.io",
    "leases.coordination.k8s.io",
    "endpointslices.discovery.k8s.io",
    "events.events.k8s.io",
    "flowschemas.flowcontrol.apiserver.k8s.io",
    "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
    "ingressclasses.networking.k8s.io", "ingresses.networking.k8s.io",
    "networkpolicies.networking.k8s.io",
    "runtimeclasses.node.k8s.io",
    "poddisruptionbudgets.policy",
    "clusterrolebindings.rbac.authorization.k8s.io", "clusterroles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io", "roles.rbac.authorization.k8s.io",
    "priorityclasses.scheduling.k8s.io",
    "csidrivers.storage.k8s.io", "csinodes.storage.k8s.io",
    "csistoragecapacities.storage.k8s.io", "storageclasses.storage.k8s.io",
    "volumeattachments.storage.k8s.io",
})  # fmt: skip

# Not served yet, each with who builds it (issue 29 and the extension-points
# issue). When one lands, this test fails until its line is removed here.
EXPECTED_MISSING: dict[str, str] = {}


def kubectl(cluster: Cluster, *args: str, stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    done = subprocess.run([str(KUBECTL), *args], input=stdin, capture_output=True, text=True,
                          timeout=60, env=cluster.env())  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done


def test_api_resources_lists_every_resource_of_kubernetes_1_32(cluster: Cluster) -> None:
    assert len(KUBERNETES_1_32) == 58
    listed = set(kubectl(cluster, "api-resources", "-o", "name").stdout.split())
    missing = KUBERNETES_1_32 - listed
    landed = set(EXPECTED_MISSING) - missing
    assert not landed, f"now served: remove from EXPECTED_MISSING: {sorted(landed)}"
    assert missing == set(EXPECTED_MISSING), (
        f"not served: {sorted(missing - set(EXPECTED_MISSING))}"
    )


@pytest.fixture
def api(cluster: Cluster) -> Iterator[Any]:
    kubernetes = pytest.importorskip("kubernetes")
    client = kubernetes.config.new_client_from_config(str(cluster.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def create(cluster: Cluster, obj: dict[str, Any]) -> str:
    return kubectl(cluster, "create", "-f", "-", stdin=json.dumps(obj)).stdout.strip()


def refused(cluster: Cluster, obj: dict[str, Any]) -> str:
    done = kubectl(cluster, "create", "-f", "-", stdin=json.dumps(obj), check=False)
    assert done.returncode != 0
    return done.stderr


def table(cluster: Cluster, *what: str) -> list[list[str]]:
    return [line.split() for line in kubectl(cluster, "get", *what).stdout.splitlines()]


def test_csi_driver_and_node(cluster: Cluster, api: Any) -> None:
    driver = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
              "metadata": {"name": "hostpath.csi.k8s.io"},
              "spec": {"podInfoOnMount": True, "volumeLifecycleModes": ["Persistent", "Ephemeral"],
                       "tokenRequests": [{"audience": "vault"}]}}  # fmt: skip
    assert create(cluster, driver) == "csidriver.storage.k8s.io/hostpath.csi.k8s.io created"
    try:
        rows = table(cluster, "csidrivers")
        assert rows[0] == ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY",
                           "TOKENREQUESTS", "REQUIRESREPUBLISH", "MODES", "AGE"]  # fmt: skip
        assert rows[1][:7] == ["hostpath.csi.k8s.io", "true", "true", "false", "vault", "false",
                               "Persistent,Ephemeral"]  # fmt: skip
        got = json.loads(kubectl(cluster, "get", "csidriver", "hostpath.csi.k8s.io",
                                 "-o", "json").stdout)  # fmt: skip
        assert got["spec"]["fsGroupPolicy"] == "ReadWriteOnceWithFSType"  # defaulted
        changed = kubectl(cluster, "patch", "csidriver", "hostpath.csi.k8s.io", "--type=merge",
                          "-p", '{"spec": {"attachRequired": false}}', check=False)  # fmt: skip
        assert "spec.attachRequired: Invalid value: false: field is immutable" in changed.stderr
        bad = {**driver, "metadata": {"name": "bad.csi"},
               "spec": {"fsGroupPolicy": "Sometimes"}}  # fmt: skip
        assert ('spec.fsGroupPolicy: Unsupported value: "Sometimes": supported values: "File", '
                '"None", "ReadWriteOnceWithFSType"') in refused(cluster, bad)  # fmt: skip
    finally:
        kubectl(cluster, "delete", "csidriver", "hostpath.csi.k8s.io", check=False)

    node = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n1"},
            "spec": {"drivers": [{"name": "hostpath.csi.k8s.io", "nodeID": "n1",
                                  "topologyKeys": ["topology.kubernetes.io/zone"],
                                  "allocatable": {"count": 8}}]}}  # fmt: skip
    assert create(cluster, node) == "csinode.storage.k8s.io/n1 created"
    try:
        assert table(cluster, "csinodes")[0] == ["NAME", "DRIVERS", "AGE"]
        assert table(cluster, "csinode", "n1")[1][:2] == ["n1", "1"]
        kubernetes = pytest.importorskip("kubernetes")
        storage = kubernetes.client.StorageV1Api(api)
        read = storage.read_csi_node("n1")
        assert read.spec.drivers[0].allocatable.count == 8
        dup = {**node, "metadata": {"name": "n2"}, "spec": {"drivers": [
            {"name": "a.csi", "nodeID": "x"}, {"name": "a.csi", "nodeID": ""}]}}  # fmt: skip
        stderr = refused(cluster, dup)
        assert 'spec.drivers[1].name: Duplicate value: "a.csi"' in stderr
        assert "spec.drivers[1].nodeID: Required value" in stderr
    finally:
        kubectl(cluster, "delete", "csinode", "n1", check=False)


def test_volume_attachment_and_storage_capacity(cluster: Cluster, api: Any) -> None:
    va: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
          "metadata": {"name": "va-1"},
          "spec": {"attacher": "hostpath.csi.k8s.io", "nodeName": "n1",
                   "source": {"persistentVolumeName": "pv-1"}}}  # fmt: skip
    assert create(cluster, va) == "volumeattachment.storage.k8s.io/va-1 created"
    try:
        kubernetes = pytest.importorskip("kubernetes")
        storage = kubernetes.client.StorageV1Api(api)
        storage.patch_volume_attachment_status("va-1", {"status": {"attached": True}})
        rows = table(cluster, "volumeattachments")
        assert rows[0] == ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"]
        assert rows[1][:5] == ["va-1", "hostpath.csi.k8s.io", "pv-1", "n1", "true"]
        moved = kubectl(cluster, "patch", "volumeattachment", "va-1", "--type=merge", "-p",
                        '{"spec": {"nodeName": "n2"}}', check=False)  # fmt: skip
        assert "field is immutable" in moved.stderr
        neither = {**va, "metadata": {"name": "va-2"}, "spec": {**va["spec"], "source": {}}}
        assert ("spec.source: Required value: must specify exactly one of persistentVolumeName "
                "and inlineVolumeSpec") in refused(cluster, neither)  # fmt: skip
    finally:
        kubectl(cluster, "delete", "volumeattachment", "va-1", check=False)

    cap = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
           "metadata": {"name": "cap-1", "namespace": "default"},
           "storageClassName": "fast", "capacity": "100Gi",
           "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "zone-a"}}}  # fmt: skip
    assert create(cluster, cap) == "csistoragecapacity.storage.k8s.io/cap-1 created"
    try:
        rows = table(cluster, "csistoragecapacities", "-n", "default")
        assert rows[0] == ["NAME", "STORAGECLASSNAME", "CAPACITY", "AGE"]
        assert rows[1][:3] == ["cap-1", "fast", "100Gi"]
        bad = {**cap, "metadata": {"name": "cap-2", "namespace": "default"},
               "storageClassName": "Fast_Class", "capacity": "-1Gi"}  # fmt: skip
        stderr = refused(cluster, bad)
        assert 'storageClassName: Invalid value: "Fast_Class"' in stderr
        assert "capacity:" in stderr
    finally:
        kubectl(cluster, "delete", "csistoragecapacity", "cap-1", "-n", "default", check=False)
