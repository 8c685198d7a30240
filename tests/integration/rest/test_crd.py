"""CustomResourceDefinitions end to end: kubectl applies a CRD and then one of
its objects, lists it with the CRD's printer columns, scales it and is
refused a strategic merge patch; the official Python client's
CustomObjectsApi creates, lists, patches, watches and deletes custom
objects (defaulted and pruned by the CRD's schema)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.api import crd as crd_module
from tests.integration.rest.conftest import Cluster

kubernetes = pytest.importorskip("kubernetes")
client: Any = kubernetes.client
config: Any = kubernetes.config
watch: Any = kubernetes.watch

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]

GROUP, VERSION, PLURAL = "rest-test.skiff.dev", "v1", "widgets"
CRD = f"""apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {PLURAL}.{GROUP}}}
spec:
  group: {GROUP}
  scope: Namespaced
  names: {{plural: {PLURAL}, singular: widget, kind: Widget, shortNames: [wg]}}
  versions:
  - name: {VERSION}
    served: true
    storage: true
    subresources:
      status: {{}}
      scale: {{specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}}
    additionalPrinterColumns:
    - {{name: Colour, type: string, jsonPath: .spec.colour}}
    - {{name: Replicas, type: integer, jsonPath: .spec.replicas}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              colour: {{type: string, default: blue}}
              replicas: {{type: integer, minimum: 0}}
          status:
            type: object
            properties:
              replicas: {{type: integer}}
"""


@pytest.fixture(scope="module")
def crd(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    path = tmp_path_factory.mktemp("crd") / "crd.yaml"
    path.write_text(CRD)
    assert "created" in cluster.kubectl("apply", "-f", str(path)).stdout
    try:
        yield
    finally:
        cluster.kubectl("delete", "-f", str(path), check=False)
        # The served kinds are this process's: leave none to later tests.
        crd_module.unregister(f"{PLURAL}.{GROUP}")


def test_kubectl_apply_get_scale(cluster: Cluster, crd: None, tmp_path: Path) -> None:
    assert f"{PLURAL}.{GROUP}" in cluster.kubectl("api-resources", "-o", "name").stdout.split()
    path = tmp_path / "w.yaml"
    path.write_text(f"apiVersion: {GROUP}/{VERSION}\nkind: Widget\n"
                    "metadata: {name: w1}\nspec: {colour: red, replicas: 1}\n")  # fmt: skip
    cluster.kubectl("apply", "-f", str(path))
    path.write_text(path.read_text().replace("replicas: 1", "replicas: 2"))
    assert "configured" in cluster.kubectl("apply", "-f", str(path)).stdout
    # By its full name: other tests on this cluster serve "widgets" in other
    # groups (kubectl, as against Kubernetes, picks one group for a bare name).
    out = cluster.kubectl("get", f"{PLURAL}.{GROUP}").stdout.split("\n")
    assert out[0].split() == ["NAME", "COLOUR", "REPLICAS"], out
    assert out[1].split() == ["w1", "red", "2"], out
    cluster.kubectl("scale", f"{PLURAL}.{GROUP}/w1", "--replicas=4")
    assert cluster.kubectl("get", "wg", "w1", "-o", "jsonpath={.spec.replicas}").stdout == "4"
    refused = cluster.kubectl("patch", f"{PLURAL}.{GROUP}", "w1", "--type=strategic",
                              "-p", '{"spec":{"colour":"green"}}', check=False)  # fmt: skip
    assert refused.returncode != 0 and "not supported" in refused.stderr, refused.stderr
    bad = path.read_text().replace("colour: red", "colour: red, shape: round")
    refused = cluster.kubectl("apply", "-f", "-", input=bad, check=False)
    assert refused.returncode != 0 and "shape" in refused.stderr, refused.stderr


def test_custom_objects_api(cluster: Cluster, crd: None) -> None:
    api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    custom = client.CustomObjectsApi(api)
    events = []
    stream = watch.Watch()
    rv = custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)["metadata"][
        "resourceVersion"
    ]
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget",
            "metadata": {"name": "py"}, "spec": {"replicas": 1, "extra": "dropped"}}  # fmt: skip
    made = custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    assert made["spec"] == {"colour": "blue", "replicas": 1}  # defaulted, pruned
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert "py" in [i["metadata"]["name"] for i in listed["items"]]
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "py", {"spec": {"colour": "green"}}
    )
    got = custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "py")
    assert got["spec"]["colour"] == "green"
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", PLURAL, "py", {"status": {"replicas": 1}}
    )
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "py")
    for event in stream.stream(
        custom.list_namespaced_custom_object, GROUP, VERSION, "default", PLURAL,
        resource_version=rv, timeout_seconds=10,
    ):  # fmt: skip
        if event["object"]["metadata"]["name"] == "py":
            events.append(event["type"])
        if event["type"] == "DELETED":
            stream.stop()
    assert events == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"], json.dumps(events)


def test_lower_case_kind(cluster: Cluster, tmp_path: Path) -> None:
    """Kubernetes checks a CRD's kind lower-cased as a DNS-1035 label, so a
    kind may start lower-case (lightkube's e2e suite makes `xyzCronTab`); an
    underscore is still refused, with Kubernetes' message."""
    group, name = "lower.skiff.dev", "xyzcrontabs.lower.skiff.dev"
    path = tmp_path / "crd.yaml"
    path.write_text(CRD.replace(f"{PLURAL}.{GROUP}", name).replace(GROUP, group)
                    .replace("kind: Widget, shortNames: [wg]", "kind: xyzCronTab")
                    .replace(f"plural: {PLURAL}", "plural: xyzcrontabs"))  # fmt: skip
    try:
        cluster.kubectl("apply", "-f", str(path))
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}")
        obj = f"apiVersion: {group}/v1\nkind: xyzCronTab\nmetadata: {{name: c1}}\nspec: {{}}\n"
        cluster.kubectl("apply", "-f", "-", input=obj)
        got = json.loads(cluster.kubectl("get", "xyzcrontabs", "c1", "-o", "json").stdout)
        assert got["kind"] == "xyzCronTab" and got["spec"] == {"colour": "blue"}
        bad = path.read_text().replace("kind: xyzCronTab", "kind: xyz_CronTab")
        refused = cluster.kubectl("apply", "-f", "-", input=bad, check=False)
        assert refused.returncode != 0
        assert (
            'spec.names.kind: Invalid value: "xyz_CronTab": may have mixed case' in refused.stderr
        )
    finally:
        cluster.kubectl("delete", "-f", str(path), check=False)
        crd_module.unregister(name)
