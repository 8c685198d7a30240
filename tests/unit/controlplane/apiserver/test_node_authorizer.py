"""Node authorizer and NodeRestriction (issue 16): what a rogue node can no
longer do with its own credential. Each test fails on the old authorizer,
which let a node read everything and rewrite its own Node freely."""

from __future__ import annotations

from typing import Any

from controlplane.api.pod_references import pod_references
from controlplane.apiserver.nodegraph import NodeGraph
from controlplane.apiserver.noderestriction import forbidden_label
from tests.fakes.api_objects import pod


def secret(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"k": "dmFsdWU="}}


def with_secret(name: str, node: str, secret_name: str) -> dict[str, Any]:
    return pod(name, node=node, volumes=[{"name": "s", "secret": {"secretName": secret_name}}])


def test_pod_references_cover_volumes_env_and_service_account() -> None:
    body = pod("p", node="n1", serviceAccountName="sa", imagePullSecrets=[{"name": "pull"}],
               volumes=[{"name": "a", "secret": {"secretName": "vol"}},
                        {"name": "b", "configMap": {"name": "cm"}},
                        {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
                        {"name": "d", "projected": {"sources": [{"secret": {"name": "proj"}}]}}])  # fmt: skip
    body["spec"]["containers"][0]["env"] = [
        {"name": "X", "valueFrom": {"secretKeyRef": {"name": "env", "key": "k"}}}
    ]
    body["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "cm2"}}]
    assert pod_references(body) == {
        ("ServiceAccount", "default", "sa"), ("Secret", "default", "pull"),
        ("Secret", "default", "vol"), ("ConfigMap", "default", "cm"),
        ("PersistentVolumeClaim", "default", "data"), ("Secret", "default", "proj"),
        ("Secret", "default", "env"), ("ConfigMap", "default", "cm2"),
    }  # fmt: skip


def test_graph_forgets_a_reference_when_its_last_pod_goes() -> None:
    graph = NodeGraph()
    graph.load([])
    from controlplane.apiserver.codec import encode
    from controlplane.storage.interface import Event, EventType

    one = with_secret("a", "n1", "s1")
    one["metadata"]["namespace"] = "default"
    key = "/registry/pods/default/a"
    graph.on_event(Event(EventType.CREATE, key, encode(one), 2))
    assert graph.may_read("n1", "Secret", "default", "s1")
    assert not graph.may_read("n2", "Secret", "default", "s1")
    graph.on_event(Event(EventType.DELETE, key, encode(one), 3))
    assert not graph.may_read("n1", "Secret", "default", "s1")
    assert not graph.pod_on("n1", "default", "a")


def test_labels_a_node_may_not_set_on_itself() -> None:
    assert forbidden_label("node-role.kubernetes.io/control-plane")
    assert forbidden_label("node-restriction.kubernetes.io/dedicated")
    assert forbidden_label("kubernetes.io/made-up")
    assert not forbidden_label("kubernetes.io/hostname")
    assert not forbidden_label("topology.kubernetes.io/zone")
    assert not forbidden_label("foo.node.kubernetes.io/x")
    assert not forbidden_label("example.com/disk")
    assert not forbidden_label("app")


def test_graph_keeps_its_counts_across_rewrites_of_a_pod() -> None:
    """A status update (same node, same references) leaves the counts as they
    were; a new reference or node replaces them; one delete forgets it all.
    The object comes from the broadcaster's decoder when it passes one."""
    from controlplane.apiserver.codec import encode
    from controlplane.storage.interface import Event, EventType

    graph = NodeGraph()
    graph.load([])
    one = with_secret("a", "n1", "s1")
    one["metadata"]["namespace"] = "default"
    key = "/registry/pods/default/a"
    decoded: list[int] = []

    def write(obj: dict[str, Any], rev: int) -> None:
        def new() -> dict[str, Any]:
            decoded.append(rev)
            return obj

        graph.on_event(Event(EventType.UPDATE, key, encode(obj), rev), new)

    write(one, 2)
    for rev in (3, 4):  # status updates
        one["status"] = {"phase": "Running", "observedRevision": rev}
        write(one, rev)
    assert decoded == [2, 3, 4]  # the broadcaster's object, not a decode of its own
    assert graph.may_read("n1", "Secret", "default", "s1")
    one["spec"]["volumes"].append({"name": "t", "configMap": {"name": "c1"}})
    write(one, 5)
    assert graph.may_read("n1", "ConfigMap", "default", "c1")
    assert graph.may_read("n1", "Secret", "default", "s1")
    one["spec"]["nodeName"] = "n2"
    write(one, 6)
    assert graph.pod_on("n2", "default", "a") and not graph.pod_on("n1", "default", "a")
    assert not graph.may_read("n1", "Secret", "default", "s1")
    assert graph.may_read("n2", "Secret", "default", "s1")
    graph.on_event(Event(EventType.DELETE, key, encode(one), 7))
    for node in ("n1", "n2"):
        assert not graph.may_read(node, "Secret", "default", "s1")
        assert not graph.may_read(node, "ConfigMap", "default", "c1")
