"""API semantics over real gRPC, against SQLite and etcd: create, get, list, update,
status, patch, delete, scale, namespaces, admission."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
)
from controlplane.client.interface import DeleteOptions, ListOptions
from tests.fakes.api_objects import pod
from tests.harness.wait import wait_for


def deployment(name: str, replicas: int = 2, app: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app}},
            "template": {
                "metadata": {"labels": {"app": app}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
            },
        },
    }


def names(items: list[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in items)


# -- create / get ----------------------------------------------------------------


def test_create_sets_metadata_and_defaults(client: GrpcApiClient) -> None:
    created = client.create("Pod", pod("web-1"), "default")
    meta = created["metadata"]
    assert meta["namespace"] == "default"
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0
    spec = created["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert created["status"]["phase"] == "Pending"
    assert created["status"]["qosClass"] == "BestEffort"
    assert client.get("Pod", "web-1", "default") == created


def test_create_conflicts_and_generate_name(client: GrpcApiClient) -> None:
    client.create("Pod", pod("web-1"), "default")
    with pytest.raises(AlreadyExists):
        client.create("Pod", pod("web-1"), "default")
    body = pod("")
    body["metadata"] = {"generateName": "web-"}
    a = client.create("Pod", body, "default")
    b = client.create("Pod", body, "default")
    assert a["metadata"]["name"].startswith("web-") and len(a["metadata"]["name"]) == 9
    assert a["metadata"]["name"] != b["metadata"]["name"]


def test_namespace_rules(client: GrpcApiClient) -> None:
    with pytest.raises(NotFound, match='namespaces "nope" not found'):
        client.create("Pod", pod("p"), "nope")
    with pytest.raises(Invalid, match="cluster-scoped"):
        client.create("Node", {"metadata": {"name": "n1", "namespace": "default"}})
    with pytest.raises(Invalid, match="does not match the namespace"):
        body = pod("p")
        body["metadata"]["namespace"] = "kube-system"
        client.create("Pod", body, "default")
    client.create("Node", {"metadata": {"name": "n1"}})
    assert client.get("Node", "n1")["metadata"].get("namespace") is None
    with pytest.raises(NotFound):
        client.get("Pod", "missing", "default")


def test_invalid_objects_name_the_field_and_store_nothing(client: GrpcApiClient) -> None:
    bad = deployment("web", replicas=-1)
    with pytest.raises(
        Invalid, match=r"spec\.replicas: Invalid value: -1: must be greater than or equal to 0"
    ):
        client.create("Deployment", bad, "default")
    with pytest.raises(NotFound):
        client.get("Deployment", "web", "default")
    no_image = pod("p")
    del no_image["spec"]["containers"][0]["image"]
    with pytest.raises(Invalid, match=r"spec\.containers\[0\]\.image: Required value"):
        client.create("Pod", no_image, "default")
    mismatch = deployment("web")
    mismatch["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    with pytest.raises(Invalid, match=r"selector` does not match template `labels"):
        client.create("Deployment", mismatch, "default")
    with pytest.raises(Invalid, match=r"metadata\.name"):
        client.create("Pod", pod("Bad_Name"), "default")
    assert client.list("Pod", "default").items == []


def test_unknown_kind_lists_supported_kinds(client: GrpcApiClient) -> None:
    with pytest.raises(Invalid, match=r"supported kinds: .*Deployment"):
        client.create("Gizmo", {"metadata": {"name": "x"}}, "default")


def test_every_kind_accepts_a_plain_manifest(client: GrpcApiClient) -> None:
    manifests: list[tuple[str, dict[str, Any], str | None]] = [
        ("Namespace", {"metadata": {"name": "team-a"}}, None),
        ("Node", {"metadata": {"name": "node-1"}, "spec": {"podCIDR": "10.42.1.0/24"}}, None),
        ("Pod", pod("p1"), "team-a"),
        ("ReplicaSet", {**deployment("rs"), "kind": "ReplicaSet"}, "team-a"),
        ("Deployment", deployment("d"), "team-a"),
        ("StatefulSet", {**deployment("s"), "kind": "StatefulSet"}, "team-a"),
        ("DaemonSet", {"metadata": {"name": "ds"}, "spec": {
            k: v for k, v in deployment("x")["spec"].items() if k != "replicas"}}, "team-a"),
        ("Job", {"metadata": {"name": "j"}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}},
         "team-a"),
        ("CronJob", {"metadata": {"name": "cj"}, "spec": {"schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
            "containers": [{"name": "c", "image": "busybox"}]}}}}}}, "team-a"),
        ("Service", {"metadata": {"name": "svc"}, "spec": {"selector": {"app": "web"},
            "ports": [{"port": 80}]}}, "team-a"),
        ("Endpoints", {"metadata": {"name": "svc"}, "subsets": [{"addresses": [
            {"ip": "10.42.0.5"}], "ports": [{"port": 80}]}]}, "team-a"),
        ("HorizontalPodAutoscaler", {"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {
            "apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 5}},
         "team-a"),
        ("Lease", {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me",
            "leaseDurationSeconds": 15}}, "team-a"),
        ("Event", {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p1"},
            "reason": "Started", "message": "hi"}, "team-a"),
        ("ConfigMap", {"metadata": {"name": "cm"}, "data": {"a.txt": "x"}}, "team-a"),
        ("Secret", {"metadata": {"name": "s"}, "stringData": {"pw": "hunter2"}}, "team-a"),
        ("PriorityClass", {"metadata": {"name": "high"}, "value": 1000}, None),
        ("PodGroup", {"apiVersion": "scheduling.skiff.dev/v1alpha1", "metadata": {"name": "g"},
            "spec": {"minMember": 3}}, "team-a"),
    ]  # fmt: skip
    for kind, body, ns in manifests:
        created = client.create(kind, body, ns)
        assert created["kind"] == kind
        assert client.get(kind, created["metadata"]["name"], ns)["metadata"]["uid"]
    assert client.get("Secret", "s", "team-a")["data"] == {"pw": "aHVudGVyMg=="}
    assert client.get("HorizontalPodAutoscaler", "h", "team-a")["spec"]["minReplicas"] == 1
    job = client.get("Job", "j", "team-a")
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"]["matchLabels"] == {"batch.kubernetes.io/controller-uid": uid}
    assert job["spec"]["template"]["metadata"]["labels"]["job-name"] == "j"


# -- list ----------------------------------------------------------------------------


def test_label_and_field_selectors(client: GrpcApiClient) -> None:
    client.create("Namespace", {"metadata": {"name": "other"}})
    client.create("Pod", pod("a", {"app": "web", "tier": "fe"}, node="n1"), "default")
    client.create("Pod", pod("b", {"app": "web", "tier": "be"}), "default")
    client.create("Pod", pod("c", {"app": "db"}, node="n2"), "default")
    client.create("Pod", pod("d", {"app": "web"}, node="n1"), "other")

    def sel(label: str = "", field: str = "", ns: str | None = None) -> list[str]:
        return names(client.list("Pod", ns, ListOptions(label, field)).items)

    assert sel() == ["a", "b", "c", "d"]
    assert sel(ns="default") == ["a", "b", "c"]
    assert sel("app=web") == ["a", "b", "d"]
    assert sel("app==web,tier!=fe") == ["b", "d"]
    assert sel("tier in (fe, be)") == ["a", "b"]
    assert sel("app notin (web)") == ["c"]
    assert sel("tier") == ["a", "b"]
    assert sel("!tier") == ["c", "d"]
    assert sel(field="spec.nodeName=n1") == ["a", "d"]
    assert sel(field="spec.nodeName=") == ["b"]
    assert sel(field="metadata.namespace=other") == ["d"]
    assert sel(field="metadata.name=c") == ["c"]
    assert sel(field="status.phase=Pending") == ["a", "b", "c", "d"]
    assert sel("app=web", "spec.nodeName!=n1") == ["b"]
    with pytest.raises(Invalid):
        sel("app in (web")


def test_list_pagination_with_limit_and_continue(client: GrpcApiClient) -> None:
    for i in range(7):
        client.create("ConfigMap", {"metadata": {"name": f"cm-{i}"}}, "default")
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = client.list("ConfigMap", "default", ListOptions(limit=3, continue_token=token))
        pages += 1
        assert len(page.items) <= 3
        seen += [o["metadata"]["name"] for o in page.items]
        token = page.continue_token
        if not token:
            break
    assert pages == 3
    assert seen == [f"cm-{i}" for i in range(7)]
    with pytest.raises(Invalid):
        client.list("ConfigMap", "default", ListOptions(continue_token="garbage!"))


# -- update / status / patch ----------------------------------------------------------


def test_update_optimistic_concurrency(client: GrpcApiClient) -> None:
    d = client.create("Deployment", deployment("web"), "default")
    d["spec"]["replicas"] = 3
    updated = client.update("Deployment", d)
    assert updated["metadata"]["generation"] == 2
    stale = dict(d)
    stale["spec"] = {**d["spec"], "replicas": 9}
    with pytest.raises(
        Conflict, match=f"current resourceVersion {updated['metadata']['resourceVersion']}"
    ):
        client.update("Deployment", stale)
    assert client.get("Deployment", "web", "default")["spec"]["replicas"] == 3
    # Without a resourceVersion the update is unconditional.
    del stale["metadata"]["resourceVersion"]
    assert client.update("Deployment", stale)["spec"]["replicas"] == 9
    # A no-op update writes nothing.
    current = client.get("Deployment", "web", "default")
    again = client.update("Deployment", current)
    assert again["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]
    with pytest.raises(NotFound):
        client.update(
            "Deployment",
            {**deployment("nope"), "metadata": {"name": "nope", "namespace": "default"}},
        )


def test_status_subresource_and_generation(client: GrpcApiClient) -> None:
    d = client.create("Deployment", deployment("web"), "default")
    d["status"] = {"replicas": 2, "readyReplicas": 1}
    after_status = client.update_status("Deployment", d)
    assert after_status["status"] == {"replicas": 2, "readyReplicas": 1}
    assert after_status["metadata"]["generation"] == 1
    # The main resource ignores status; status ignores spec.
    after_status["status"] = {"replicas": 99}
    after_status["metadata"]["labels"] = {"x": "y"}
    after_main = client.update("Deployment", after_status)
    assert after_main["status"] == {"replicas": 2, "readyReplicas": 1}
    assert after_main["metadata"]["generation"] == 1  # metadata-only change
    after_main["spec"]["replicas"] = 7
    after_main["status"] = {"replicas": 3}
    status_only = client.update_status("Deployment", after_main)
    assert status_only["spec"]["replicas"] == 2
    assert status_only["status"] == {"replicas": 3}
    assert status_only["metadata"]["generation"] == 1


def test_merge_patch(client: GrpcApiClient) -> None:
    client.create("Deployment", deployment("web"), "default")
    patched = client.patch(
        "Deployment", "web", {"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 4}},
        "default",
    )  # fmt: skip
    assert patched["spec"]["replicas"] == 4 and patched["metadata"]["labels"] == {"a": "1"}
    assert patched["metadata"]["generation"] == 2
    patched = client.patch("Deployment", "web", {"metadata": {"labels": {"a": None}}}, "default")
    assert patched["metadata"].get("labels") == {}
    status = client.patch("Deployment", "web", {"status": {"replicas": 4}}, "default", "status")
    assert status["status"]["replicas"] == 4 and status["metadata"]["generation"] == 2
    with pytest.raises(Conflict):
        client.patch("Deployment", "web", {"metadata": {"resourceVersion": "1"}}, "default")
    with pytest.raises(Invalid, match=r"spec\.replicas"):
        client.patch("Deployment", "web", {"spec": {"replicas": -2}}, "default")
    with pytest.raises(NotFound):
        client.patch("Deployment", "nope", {"spec": {}}, "default")


# -- delete ------------------------------------------------------------------------------


def test_delete_unbound_pod_is_immediate(client: GrpcApiClient) -> None:
    client.create("Pod", pod("p"), "default")
    assert client.delete("Pod", "p", "default") is None
    with pytest.raises(NotFound):
        client.get("Pod", "p", "default")
    with pytest.raises(NotFound):
        client.delete("Pod", "p", "default")


def test_delete_bound_pod_is_graceful(client: GrpcApiClient) -> None:
    client.create("Pod", pod("p", node="n1", terminationGracePeriodSeconds=20), "default")
    left = client.delete("Pod", "p", "default")
    assert left is not None
    assert left["metadata"]["deletionTimestamp"]
    assert left["metadata"]["deletionGracePeriodSeconds"] == 20
    # The node agent confirms with grace 0 once the containers are stopped.
    assert client.delete("Pod", "p", "default", DeleteOptions(grace_period_seconds=0)) is None
    with pytest.raises(NotFound):
        client.get("Pod", "p", "default")


def test_finalizers_hold_deletion_until_removed(client: GrpcApiClient) -> None:
    body = {"metadata": {"name": "cm", "finalizers": ["example.com/hold"]}}
    client.create("ConfigMap", body, "default")
    held = client.delete("ConfigMap", "cm", "default")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    with pytest.raises(Forbidden):
        client.patch("ConfigMap", "cm", {"metadata": {"finalizers": ["a/b", "example.com/hold"]}},
                     "default")  # fmt: skip
    client.patch("ConfigMap", "cm", {"metadata": {"finalizers": None}}, "default")
    with pytest.raises(NotFound):
        client.get("ConfigMap", "cm", "default")


def test_delete_preconditions_and_propagation(client: GrpcApiClient) -> None:
    d = client.create("Deployment", deployment("web"), "default")
    with pytest.raises(Conflict, match="UID"):
        client.delete("Deployment", "web", "default", DeleteOptions(precondition_uid="nope"))
    with pytest.raises(Conflict, match="ResourceVersion"):
        client.delete("Deployment", "web", "default",
                      DeleteOptions(precondition_resource_version="1"))  # fmt: skip
    orphan = client.delete("Deployment", "web", "default", DeleteOptions(
        propagation_policy="Orphan", precondition_uid=d["metadata"]["uid"]))  # fmt: skip
    assert orphan is not None and orphan["metadata"]["finalizers"] == ["orphan"]
    client.create("ReplicaSet", {**deployment("rs"), "kind": "ReplicaSet"}, "default")
    fg = client.delete("ReplicaSet", "rs", "default",
                       DeleteOptions(propagation_policy="Foreground"))  # fmt: skip
    assert fg is not None and fg["metadata"]["finalizers"] == ["foregroundDeletion"]
    with pytest.raises(Invalid):
        client.delete("ReplicaSet", "rs", "default", DeleteOptions(propagation_policy="Sideways"))


def test_deleting_a_namespace_deletes_its_contents(client: GrpcApiClient) -> None:
    client.create("Namespace", {"metadata": {"name": "doomed"}})
    client.create("Pod", pod("p"), "doomed")
    client.create("ConfigMap", {"metadata": {"name": "cm"}}, "doomed")
    client.create("Deployment", deployment("d"), "doomed")
    client.create("ConfigMap", {"metadata": {"name": "keep"}}, "default")
    ns = client.delete("Namespace", "doomed")
    assert ns is not None and ns["status"]["phase"] == "Terminating"
    with pytest.raises((Forbidden, NotFound)):
        client.create("ConfigMap", {"metadata": {"name": "late"}}, "doomed")

    def gone() -> bool:
        try:
            client.get("Namespace", "doomed")
        except NotFound:
            return True
        return False

    wait_for(gone, timeout=15, message="namespace doomed to be removed")
    for kind in ("Pod", "ConfigMap", "Deployment"):
        assert client.list(kind, "doomed").items == []
    assert client.get("ConfigMap", "keep", "default")
    with pytest.raises(Forbidden, match="may not be deleted"):
        client.delete("Namespace", "default")


# -- scale -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet"])
def test_scale_subresource(client: GrpcApiClient, kind: str) -> None:
    client.create(kind, {**deployment("web", replicas=2), "kind": kind}, "default")
    scale = client.get_scale(kind, "web", "default")
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 2
    assert scale["status"]["selector"] == "app=web"
    scaled = client.update_scale(kind, "web", "default", 5)
    assert scaled["spec"]["replicas"] == 5
    assert client.get(kind, "web", "default")["spec"]["replicas"] == 5
    with pytest.raises(Invalid):
        client.update_scale(kind, "web", "default", -1)


def test_scale_only_for_scalable_kinds(client: GrpcApiClient) -> None:
    client.create("Pod", pod("p"), "default")
    with pytest.raises(NotFound):
        client.get_scale("Pod", "p", "default")


# -- admission -----------------------------------------------------------------------------


def test_service_cluster_ips_and_node_ports_are_unique(client: GrpcApiClient) -> None:
    ips = set()
    for i in range(3):
        svc = client.create("Service", {"metadata": {"name": f"s{i}"}, "spec": {
            "type": "NodePort", "ports": [{"port": 80}]}}, "default")  # fmt: skip
        ips.add(svc["spec"]["clusterIP"])
        assert svc["spec"]["ports"][0]["targetPort"] == 80
        assert 30000 <= svc["spec"]["ports"][0]["nodePort"] <= 32767
    assert len(ips) == 3
    taken = next(iter(ips))
    with pytest.raises(Invalid, match="already allocated"):
        client.create("Service", {"metadata": {"name": "dup"}, "spec": {
            "clusterIP": taken, "ports": [{"port": 80}]}}, "default")  # fmt: skip


def test_pod_priority_from_priority_class(client: GrpcApiClient) -> None:
    client.create("PriorityClass", {"metadata": {"name": "high"}, "value": 1000})
    p = client.create("Pod", pod("p", priorityClassName="high"), "default")
    assert p["spec"]["priority"] == 1000
    crit = client.create("Pod", pod("c", priorityClassName="system-node-critical"), "default")
    assert crit["spec"]["priority"] == 2000001000
    with pytest.raises(Forbidden, match="no PriorityClass"):
        client.create("Pod", pod("x", priorityClassName="missing"), "default")
    assert client.create("Pod", pod("plain"), "default")["spec"]["priority"] == 0


def test_bound_pod_node_name_is_immutable(client: GrpcApiClient) -> None:
    client.create("Pod", pod("p"), "default")
    bound = client.patch("Pod", "p", {"spec": {"nodeName": "n1"}}, "default")
    assert bound["spec"]["nodeName"] == "n1"
    with pytest.raises(Invalid, match=r"spec\.nodeName"):
        client.patch("Pod", "p", {"spec": {"nodeName": "n2"}}, "default")
