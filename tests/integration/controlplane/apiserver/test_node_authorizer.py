"""Node authorizer and NodeRestriction (issue 16): what a rogue node can no
longer do with its own credential. Each test fails on the old authorizer,
which let a node read everything and rewrite its own Node freely."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agent import csinode
from agent.node_status import NodeConfig, NodeStatusReporter
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.errors import Forbidden, Invalid
from controlplane.client.interface import DeleteOptions, ListOptions
from tests.fakes.api_objects import mirror, pod
from tests.harness.apiserver import Cluster
from tests.harness.wait import wait_for


@pytest.fixture
def admin(cluster: Cluster) -> Iterator[GrpcApiClient]:
    with cluster.client() as c:
        yield c


def node_client(cluster: Cluster, name: str) -> GrpcApiClient:
    assert cluster.server.authority is not None
    return cluster.client(cluster.server.node_token(name))


def secret(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"k": "dmFsdWU="}}


def with_secret(name: str, node: str, secret_name: str) -> dict[str, Any]:
    return pod(name, node=node, volumes=[{"name": "s", "secret": {"secretName": secret_name}}])


def test_a_node_reads_only_the_secrets_its_pods_reference(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    for name in ("mine", "theirs", "unused"):
        admin.create("Secret", secret(name), "default")
    admin.create("Pod", with_secret("p1", "n1", "mine"), "default")
    admin.create("Pod", with_secret("p2", "n2", "theirs"), "default")
    with node_client(cluster, "n1") as n1:
        assert n1.get("Secret", "mine", "default")["data"] == {"k": "dmFsdWU="}
        for name in ("theirs", "unused"):
            with pytest.raises(Forbidden, match='node "n1" may not get secrets'):
                n1.get("Secret", name, "default")
        with pytest.raises(Forbidden):
            n1.list("Secret", "default")
        with pytest.raises(Forbidden):
            n1.watch("Secret", "default")
        # A new pod bound to n1 opens its secret at once (the graph is fed
        # before any watcher sees the pod); deleting the pod closes it again.
        admin.create("Pod", with_secret("p3", "n1", "unused"), "default")
        assert n1.get("Secret", "unused", "default")
        admin.delete("Pod", "p3", "default", options=DeleteOptions(grace_period_seconds=0))
        wait_for(lambda: not cluster.server.graph.pod_on("n1", "default", "p3"), timeout=10)
        with pytest.raises(Forbidden):
            n1.get("Secret", "unused", "default")


def test_a_node_watches_one_referenced_secret_or_configmap_by_name(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    """As Kubernetes' node authorizer: list and watch of a Secret or
    ConfigMap its pods reference, one at a time (metadata.name=), so the
    agent sees a change as it happens, not at its next periodic read."""
    for name in ("mine", "theirs"):
        admin.create("Secret", secret(name), "default")
    admin.create("ConfigMap", {"metadata": {"name": "cfg"}, "data": {"a": "1"}}, "default")
    body = with_secret("p1", "n1", "mine")
    body["spec"]["volumes"].append({"name": "c", "configMap": {"name": "cfg"}})
    admin.create("Pod", body, "default")
    with node_client(cluster, "n1") as n1:
        one = ListOptions(field_selector="metadata.name=mine")
        assert [s["metadata"]["name"] for s in n1.list("Secret", "default", one).items] == ["mine"]
        for kind, name in (("Secret", "mine"), ("ConfigMap", "cfg")):
            w = n1.watch(kind, "default", ListOptions(field_selector=f"metadata.name={name}"))
            admin.patch(kind, name, {"metadata": {"labels": {"seen": "yes"}}}, "default")
            admin.patch("Secret", "theirs", {"metadata": {"labels": {"seen": "no"}}}, "default")
            event = next(e for e in w if e.type != "BOOKMARK")
            w.stop()
            assert (event.type, event.object["metadata"]["name"]) == ("MODIFIED", name)
        with pytest.raises(Forbidden, match="may not watch secrets 'theirs'"):
            n1.watch("Secret", "default", ListOptions(field_selector="metadata.name=theirs"))
        with pytest.raises(Forbidden, match="only one at a time"):
            n1.list("ConfigMap", "default")
        with pytest.raises(Forbidden, match="only one at a time"):
            n1.watch("Secret", None, ListOptions(field_selector="metadata.name=mine"))


def test_a_node_sees_only_its_own_pods(cluster: Cluster, admin: GrpcApiClient) -> None:
    admin.create("Pod", pod("a", node="n1"), "default")
    admin.create("Pod", pod("b", node="n2"), "default")
    with node_client(cluster, "n1") as n1:
        # Every pod's address and labels are the NetworkPolicy enforcer's input:
        # RBAC grants list and watch (never get) to system:nodes, as k3s does
        # its agents; without that binding the node authorizer alone decides.
        assert {p["metadata"]["name"] for p in n1.list("Pod").items} == {"a", "b"}
        admin.delete("ClusterRoleBinding", "system:skiff-network")
        with pytest.raises(Forbidden, match=r"spec.nodeName=n1"):
            n1.list("Pod")
        with pytest.raises(Forbidden):
            n1.watch("Pod", options=ListOptions(field_selector="spec.nodeName=n2"))
        w = n1.watch("Pod", options=ListOptions(field_selector="spec.nodeName=n1"))
        w.stop()
        with pytest.raises(Forbidden, match="not bound to it"):
            n1.get("Pod", "b", "default")


def test_a_node_cannot_change_its_pod_cidr_taints_or_role_labels(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    with node_client(cluster, "n1") as n1:
        with pytest.raises(Forbidden, match=r"spec.podCIDR"):
            n1.create("Node", {"metadata": {"name": "n1"}, "spec": {"podCIDR": "0.0.0.0/0"}})
        with pytest.raises(Forbidden, match=r"node-role.kubernetes.io/control-plane"):
            n1.create("Node", {"metadata": {"name": "n1", "labels": {
                "node-role.kubernetes.io/control-plane": ""}}})  # fmt: skip
        n1.create("Node", {"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
                           "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}})  # fmt: skip
        with pytest.raises(Forbidden, match=r"may not change its spec.podCIDR"):
            n1.patch("Node", "n1", {"spec": {"podCIDR": "0.0.0.0/0"}})
        # As the node lifecycle controller does once the node is Ready: the
        # not-ready taint the Node got at creation goes.
        admin.patch("Node", "n1", {"spec": {"podCIDR": "10.42.1.0/24",
                                            "taints": [{"key": "k", "effect": "NoSchedule"}]}})  # fmt: skip
        # Once set, nobody changes it (Kubernetes' Node update validation).
        with pytest.raises(Invalid, match=r"node updates may not change podCIDR"):
            n1.patch("Node", "n1", {"spec": {"podCIDR": "0.0.0.0/0"}})
        with pytest.raises(Forbidden, match="may not modify its taints"):
            n1.patch("Node", "n1", {"spec": {"taints": []}})
        for label in ("node-role.kubernetes.io/control-plane",
                      "node-restriction.kubernetes.io/gpu"):  # fmt: skip
            with pytest.raises(Forbidden, match="may not modify the labels"):
                n1.patch("Node", "n1", {"metadata": {"labels": {label: "true"}}})
        # What the agent does at re-registration stays allowed.
        n1.patch("Node", "n1", {"metadata": {"labels": {"example.com/disk": "ssd"}},
                                "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}})  # fmt: skip
        n1.patch("Node", "n1", {"status": {"capacity": {"cpu": "2"}}}, subresource="status")
        admin.create("Node", {"metadata": {"name": "n2"}})
        with pytest.raises(Forbidden, match='may not patch node "n2"'):
            n1.patch("Node", "n2", {"metadata": {"labels": {"a": "b"}}})
        node = admin.get("Node", "n1")
        assert node["spec"]["podCIDR"] == "10.42.1.0/24"
        assert "node-role.kubernetes.io/control-plane" not in node["metadata"]["labels"]


def test_an_agent_re_registering_leaves_the_lifecycle_controllers_taints(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    """As the kubelet: configured taints are set when the Node is created;
    a restarted agent finding its Node keeps the taints it has (here the
    not-ready taint the Node got at creation), which NodeRestriction would
    refuse it to change."""
    cfg = NodeConfig(name="n1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
                     labels={"example.com/disk": "ssd"})  # fmt: skip
    status = {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}
    with node_client(cluster, "n1") as n1:
        NodeStatusReporter(n1, cfg).register(status)
        taints = admin.get("Node", "n1")["spec"]["taints"]
        assert {(t["key"], t["effect"]) for t in taints} == {
            ("k", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoSchedule")}  # fmt: skip
        restarted = NodeConfig(name="n1", taints=cfg.taints, labels={"example.com/disk": "nvme"})
        NodeStatusReporter(n1, restarted).register(status)
    node = admin.get("Node", "n1")
    assert node["spec"]["taints"] == taints
    assert node["metadata"]["labels"]["example.com/disk"] == "nvme"


def test_a_node_cannot_modify_another_nodes_pods(cluster: Cluster, admin: GrpcApiClient) -> None:
    admin.create("Pod", pod("x", node="n1"), "default")
    with node_client(cluster, "n2") as n2, pytest.raises(Forbidden) as refused:
        n2.patch("Pod", "x", {"status": {"phase": "Failed"}}, "default", "status")
    assert str(refused.value) == 'node "n2" may not modify pod default/x bound to "n1"'


def test_a_mirror_pod_cannot_join_a_service_or_claim_other_owners(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    admin.create("Service", {"metadata": {"name": "web"},
                             "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
                 "default")  # fmt: skip
    with node_client(cluster, "n1") as n1:
        uid = n1.create("Node", {"metadata": {"name": "n1"}})["metadata"]["uid"]
        sneaky = mirror("sneaky", "n1", uid)
        sneaky["metadata"]["labels"] = {"app": "web"}
        with pytest.raises(Forbidden, match="match Service default/web"):
            n1.create("Pod", sneaky, "default")
        owned = mirror("owned", "n1", uid)
        owned["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u"}
        ]
        with pytest.raises(Forbidden, match="owner reference set to itself"):
            n1.create("Pod", owned, "default")
        leaky = mirror("leaky", "n1", uid)
        leaky["spec"]["volumes"] = [{"name": "s", "secret": {"secretName": "admin-token"}}]
        with pytest.raises(Forbidden, match="may not reference Secret"):
            n1.create("Pod", leaky, "default")
        fine = mirror("fine", "n1", uid)
        fine["metadata"]["labels"] = {"app": "static"}
        n1.create("Pod", fine, "default")
    assert not admin.list("Pod", "default", ListOptions(label_selector="app=web")).items


def test_a_node_writes_only_events_about_its_own_objects(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    def event(name: str, kind: str, target: str) -> dict[str, Any]:
        return {"metadata": {"name": name}, "reason": "R", "message": "m",
                "involvedObject": {"kind": kind, "name": target, "namespace": "default"}}  # fmt: skip

    admin.create("Pod", pod("mine", node="n1"), "default")
    admin.create("Event", event("theirs", "Pod", "other"), "default")
    with node_client(cluster, "n1") as n1:
        n1.create("Event", event("e1", "Node", "n1"), "default")
        n1.create("Event", event("e2", "Pod", "mine"), "default")
        with pytest.raises(Forbidden, match="not about its objects"):
            n1.create("Event", event("e3", "Node", "n2"), "default")
        with pytest.raises(Forbidden, match="not about its objects"):
            n1.patch("Event", "theirs", {"message": "rewritten"}, "default")
        with pytest.raises(Forbidden):
            n1.patch("Event", "e1", {"involvedObject": {"name": "n2"}}, "default")
    assert admin.get("Event", "theirs", "default")["message"] == "m"


def test_a_node_writes_its_own_csinode_only_and_repairs_its_owner(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    """As the kubelet at registration: the CSINode named after the Node,
    owned by it; the node authorizer lets a node write its own CSINode and
    no other; a CSINode owned by an earlier Node of the name (another uid)
    gets this Node as its owner."""
    status = {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}
    with node_client(cluster, "n1") as n1:
        node = NodeStatusReporter(n1, NodeConfig(name="n1")).register(status)
        made = csinode.ensure(n1, node)
        assert made["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": node["metadata"]["uid"]}
        ]
        assert made["spec"]["drivers"] == []
        again = csinode.ensure(n1, node)  # nothing to change: no write
        assert again["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
        with pytest.raises(Forbidden, match='node "n1" may not create csinode'):
            n1.create("CSINode", csinode.desired({"metadata": {"name": "n2", "uid": "x"}}))
        admin.create("CSINode", csinode.desired({"metadata": {"name": "n2", "uid": "x"}}))
        with pytest.raises(Forbidden):
            n1.get("CSINode", "n2")
        # Left from an earlier Node of that name (deleted, registered again).
        stale = admin.get("CSINode", "n1")
        stale["metadata"]["ownerReferences"][0]["uid"] = "0f0e0d0c-old-node"
        admin.update("CSINode", stale)
        repaired = csinode.ensure(n1, node)
    assert [o["uid"] for o in repaired["metadata"]["ownerReferences"]] == [node["metadata"]["uid"]]
    assert admin.get("CSINode", "n1")["spec"]["drivers"] == []
