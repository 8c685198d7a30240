"""managedFields on every write path of the gRPC API, recorded by the
registry: creates, updates, patches, status and scale writes, batched
creates; the manager named by the client's `field-manager` key, else by its
credential (a node is skiff-agent), else by its User-Agent. Unknown fields of
built-in kinds never reach storage."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import ClientConfig
from controlplane.client.errors import Invalid
from tests.harness.apiserver import Cluster

SQLITE = pytest.mark.parametrize("cluster", ["sqlite"], indirect=True)  # one store is enough


def named(cluster: Cluster, manager: str) -> GrpcApiClient:
    assert cluster.server.authority is not None
    token = cluster.server.authority.admin_token()
    config = ClientConfig(cluster.address, cluster.pki.ca_pem, token)
    return connect(config, timeout=10, field_manager=manager)


def deployment(name: str = "web", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox", **extra}]},
            },
        },
    }


def entries(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e.get("subresource", "")): e for e in obj["metadata"]["managedFields"]}


@SQLITE
def test_every_grpc_write_records_its_manager(cluster: Cluster) -> None:
    with named(cluster, "skiffctl-create") as creator, named(cluster, "tuner") as tuner:
        created = creator.create("Deployment", deployment(), "default")
        (first,) = created["metadata"]["managedFields"]
        assert (first["manager"], first["operation"]) == ("skiffctl-create", "Update")
        assert "f:replicas" in first["fieldsV1"]["f:spec"]
        # Defaults the server filled in belong to the creator, as in Kubernetes.
        assert "f:revisionHistoryLimit" in first["fieldsV1"]["f:spec"]

        patched = tuner.patch("Deployment", "web", {"spec": {"replicas": 3}}, "default")
        got = entries(patched)
        assert "f:replicas" in got[("tuner", "")]["fieldsV1"]["f:spec"]
        assert "f:replicas" not in got[("skiffctl-create", "")]["fieldsV1"]["f:spec"]

        patched["spec"]["paused"] = True
        updated = creator.update("Deployment", patched)
        assert "f:paused" in entries(updated)[("skiffctl-create", "")]["fieldsV1"]["f:spec"]


@SQLITE
def test_what_the_server_adds_at_creation_belongs_to_no_one(cluster: Cluster) -> None:
    """As kube-apiserver records a create's managedFields before admission and
    the strategy: a Job's generated selector and template labels are not the
    creator's (kubectl's client-side to server-side migration re-applies the
    creator's fields, and would drop them: spec.template is immutable)."""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
           "spec": {"template": {"metadata": {"labels": {"app": "once"}}, "spec": {
               "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}  # fmt: skip
    with named(cluster, "kubectl-client-side-apply") as creator:
        created = creator.create("Job", job, "default")
    labels = created["spec"]["template"]["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == "once" and created["spec"]["selector"]
    (entry,) = created["metadata"]["managedFields"]
    owned = entry["fieldsV1"]["f:spec"]
    assert set(owned["f:template"]["f:metadata"]["f:labels"]) == {"f:app"}
    assert "f:selector" not in owned
    assert "f:backoffLimit" in owned  # a default: the creator's, as in Kubernetes


@SQLITE
def test_status_and_scale_writes_keep_the_entries_and_add_theirs(cluster: Cluster) -> None:
    with named(cluster, "creator") as creator, named(cluster, "status-writer") as writer:
        created = creator.create("Deployment", deployment(), "default")
        live = dict(created, status={"replicas": 1, "observedGeneration": 1})
        with_status = writer.update_status("Deployment", live)
        got = entries(with_status)
        assert got[("creator", "")] == entries(created)[("creator", "")]
        status = got[("status-writer", "status")]
        assert status["operation"] == "Update"
        assert status["fieldsV1"] == {"f:status": {"f:observedGeneration": {}, "f:replicas": {}}}

        writer.update_scale("Deployment", "web", "default", 4)
        scaled = entries(creator.get("Deployment", "web", "default"))
        assert scaled[("status-writer", "scale")]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
        assert scaled[("status-writer", "status")] == status
        assert "f:replicas" not in scaled[("creator", "")]["fieldsV1"]["f:spec"]


@SQLITE
def test_a_write_that_changes_nothing_is_not_stored(cluster: Cluster) -> None:
    with named(cluster, "a") as a, named(cluster, "b") as b:
        created = a.create("ConfigMap", {"metadata": {"name": "c"}, "data": {"k": "v"}}, "default")
        again = b.update("ConfigMap", created)
        assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        assert again["metadata"]["managedFields"] == created["metadata"]["managedFields"]


@SQLITE
def test_batched_creates_record_the_caller(cluster: Cluster) -> None:
    with named(cluster, "batcher") as batcher:
        made = batcher.create_many(
            [("ConfigMap", {"metadata": {"name": f"m{i}"}, "data": {"i": str(i)}}, "default")
             for i in range(3)]
        )  # fmt: skip
    for obj in made:
        assert not isinstance(obj, Exception)
        assert [e["manager"] for e in obj["metadata"]["managedFields"]] == ["batcher"]


@SQLITE
def test_without_a_name_the_credential_or_the_user_agent_names_the_manager(
    cluster: Cluster, client: GrpcApiClient
) -> None:
    made = client.create("ConfigMap", {"metadata": {"name": "anon"}, "data": {"a": "1"}}, "default")
    # The admin is no component: its gRPC library's User-Agent names it, as
    # kube-apiserver names a client that sends no fieldManager.
    assert made["metadata"]["managedFields"][0]["manager"] == "grpc-python"
    assert cluster.server.authority is not None
    node_token = cluster.server.node_token("n1")
    with cluster.client(node_token) as node:
        registered = node.create("Node", {"metadata": {"name": "n1", "labels": {"zone": "a"}}})
    assert registered["metadata"]["managedFields"][0]["manager"] == "skiff-agent"


@SQLITE
def test_a_manager_name_past_128_characters_is_refused(cluster: Cluster) -> None:
    with named(cluster, "x" * 129) as long, pytest.raises(Invalid, match="field-manager"):
        long.create("ConfigMap", {"metadata": {"name": "long"}}, "default")


@SQLITE
def test_unknown_fields_of_built_in_kinds_are_dropped_on_every_write(
    cluster: Cluster, client: GrpcApiClient
) -> None:
    obj = deployment(imagee="typo")
    obj["spec"]["foo"] = 1
    obj["bar"] = 2
    created = client.create("Deployment", obj, "default")
    assert "foo" not in created["spec"] and "bar" not in created
    assert "imagee" not in created["spec"]["template"]["spec"]["containers"][0]
    assert "f:foo" not in created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
    created["spec"]["later"] = True
    updated = client.update("Deployment", created)
    assert "later" not in updated["spec"]
    patched = client.patch("Deployment", "web", {"spec": {"nested": {"x": 1}}}, "default")
    assert "nested" not in patched["spec"]
    stored = client.get("Deployment", "web", "default")
    assert "foo" not in stored["spec"] and "later" not in stored["spec"]
