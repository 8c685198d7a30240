"""PodTemplate (v1): served, validated, defaulted and printed as Kubernetes
does, from its one module (controlplane/api/kinds/core/podtemplate.py)."""

from __future__ import annotations

from typing import Any

from controlplane.api import columns, kinds, openapi, strategic_merge
from controlplane.api.defaults import apply_defaults
from controlplane.api.validation import validate
from controlplane.apiserver.rest import discovery
from controlplane.apiserver.tables import table


def template(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "web", "namespace": "default"},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}], **spec},
        },
    }


def test_served_as_kubernetes_serves_it() -> None:
    info = kinds.lookup("podtemplates")
    assert (info.kind, info.api_version, info.namespaced, info.short_names) == (
        "PodTemplate", "v1", True, ())  # fmt: skip
    assert not info.has_status
    core = discovery.resource_list("v1")
    assert core is not None
    entry = next(r for r in core["resources"] if r["name"] == "podtemplates")
    assert entry["kind"] == "PodTemplate" and "shortNames" not in entry
    assert "podtemplates/status" not in {r["name"] for r in core["resources"]}
    assert ("", "v1", "PodTemplate") in {
        (g["group"], g["version"], g["kind"])
        for d in openapi.v2()["definitions"].values()
        for g in d.get("x-kubernetes-group-version-kind", [])
    }


def test_template_validated_and_defaulted_as_a_pod_spec() -> None:
    obj = template()
    apply_defaults("PodTemplate", obj)
    spec = obj["template"]["spec"]
    assert spec["restartPolicy"] == "Always" and spec["dnsPolicy"] == "ClusterFirst"
    assert spec["containers"][0]["terminationMessagePath"] == "/dev/termination-log"
    assert validate("PodTemplate", obj) == []
    assert validate("PodTemplate", template(restartPolicy="Never")) == []  # any policy
    bad = template(restartPolicy="Sometimes")
    bad["template"]["metadata"]["labels"] = {"app": "bad value!"}
    bad["template"]["spec"]["containers"].append({"name": "nginx"})
    assert validate("PodTemplate", bad) == [
        "template.metadata.labels.app: invalid label value 'bad value!' "
        "(<= 63 alphanumerics, '-', '_', '.')",
        "template.spec.containers[1].name: duplicate container name 'nginx'",
        "template.spec.containers[1].image: required",
        "template.spec.restartPolicy: unsupported value 'Sometimes': supported values: "
        "Always, OnFailure, Never",
    ]
    missing = template()
    del missing["template"]
    assert validate("PodTemplate", missing) == ["template: required"]


def test_columns_are_kubernetes_printers() -> None:
    obj = template()
    obj["template"]["spec"]["containers"].append({"name": "log", "image": "busybox"})
    assert columns.headers_for("PodTemplate", wide=True) == [
        "NAME", "CONTAINERS", "IMAGES", "POD LABELS"]  # fmt: skip
    assert columns.row_for("PodTemplate", obj, 0.0, False) == [
        "web", "nginx,log", "nginx:1.25,busybox", "app=web"]  # fmt: skip
    doc = table("PodTemplate", [obj], include_object="None", now=0.0)
    assert [(c["name"], c["description"]) for c in doc["columnDefinitions"][1:]] == [
        ("CONTAINERS", "Names of each container in the template."),
        ("IMAGES", "Images referenced by each container in the template."),
        ("POD LABELS", "The labels for the pod template."),
    ]


def test_strategic_merge_patches_the_template_containers_by_name() -> None:
    patched = strategic_merge.apply(
        template(),
        {"template": {"spec": {"containers": [{"name": "log", "image": "busybox"}]}}},
        "PodTemplate",
    )
    assert [c["name"] for c in patched["template"]["spec"]["containers"]] == ["nginx", "log"]
