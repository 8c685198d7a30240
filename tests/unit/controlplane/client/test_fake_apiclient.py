"""The in-memory ApiClient behaves like the API server where callers can see it."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.client import errors
from controlplane.client.interface import DeleteOptions, ListOptions
from machinery.clock import FakeClock
from tests.fakes.fake_apiclient import FakeApiClient


def pod(name: str, ns: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


@pytest.fixture
def client() -> FakeApiClient:
    return FakeApiClient(clock=FakeClock())


def test_create_get_and_metadata(client: FakeApiClient) -> None:
    created = client.create("Pod", pod("a"))
    meta = created["metadata"]
    assert meta["uid"] and meta["resourceVersion"] and meta["generation"] == 1
    assert meta["creationTimestamp"].endswith("Z")
    assert client.get("Pod", "a", "default") == created
    with pytest.raises(errors.AlreadyExists):
        client.create("Pod", pod("a"))
    with pytest.raises(errors.NotFound, match='pods "b" not found'):
        client.get("Pod", "b", "default")
    gen = client.create("Pod", {"metadata": {"generateName": "web-"}}, "default")
    assert gen["metadata"]["name"].startswith("web-")
    node = client.create("Node", {"metadata": {"name": "n1"}})
    assert "namespace" not in node["metadata"]


def test_update_conflict_generation_and_status(client: FakeApiClient) -> None:
    a = client.create("Deployment", {"metadata": {"name": "d"}, "spec": {"replicas": 1}}, "default")
    a2 = dict(a, spec={"replicas": 2}, status={"replicas": 9})
    b = client.update("Deployment", a2)
    assert b["metadata"]["generation"] == 2
    assert "status" not in b  # status only through the subresource
    with pytest.raises(errors.Conflict):
        client.update("Deployment", a2)  # stale resourceVersion
    c = client.update_status("Deployment", dict(b, status={"replicas": 2}))
    assert c["status"] == {"replicas": 2} and c["metadata"]["generation"] == 2
    d = client.patch("Deployment", "d", {"metadata": {"labels": {"x": "y"}}}, "default")
    assert d["metadata"]["labels"] == {"x": "y"} and d["metadata"]["generation"] == 2
    e = client.patch(
        "Deployment", "d", {"status": {"readyReplicas": 1}}, "default", subresource="status"
    )
    assert e["status"] == {"replicas": 2, "readyReplicas": 1}


def test_list_selectors_and_pages(client: FakeApiClient) -> None:
    for i in range(5):
        client.create("Pod", pod(f"p{i}", app="web" if i % 2 == 0 else "db"))
    client.create("Pod", pod("other", ns="kube-system", app="web"))
    names = lambda lst: [o["metadata"]["name"] for o in lst.items]  # noqa: E731
    assert names(client.list("Pod", "default", ListOptions(label_selector="app=web"))) == [
        "p0",
        "p2",
        "p4",
    ]
    assert len(client.list("Pod").items) == 6
    assert names(
        client.list("Pod", None, ListOptions(field_selector="metadata.namespace=kube-system"))
    ) == ["other"]
    page = client.list("Pod", "default", ListOptions(limit=2))
    assert names(page) == ["p0", "p1"] and page.continue_token
    page2 = client.list("Pod", "default", ListOptions(limit=2, continue_token=page.continue_token))
    assert names(page2) == ["p2", "p3"]


def test_delete_with_finalizers_and_preconditions(client: FakeApiClient) -> None:
    client.create("Pod", {**pod("f"), "metadata": {**pod("f")["metadata"], "finalizers": ["x"]}})
    still = client.delete("Pod", "f", "default")
    assert still is not None and still["metadata"]["deletionTimestamp"]
    client.patch("Pod", "f", {"metadata": {"finalizers": None}}, "default")
    with pytest.raises(errors.NotFound):
        client.get("Pod", "f", "default")
    client.create("Pod", pod("g"))
    with pytest.raises(errors.Conflict):
        client.delete("Pod", "g", "default", DeleteOptions(precondition_uid="nope"))
    assert client.delete("Pod", "g", "default") is None
    with pytest.raises(errors.NotFound):
        client.delete("Pod", "g", "default")


def test_watch_from_resource_version_and_gone(client: FakeApiClient) -> None:
    rv0 = client.resource_version
    client.create("Pod", pod("a"))
    client.create("Node", {"metadata": {"name": "n"}})
    client.patch("Pod", "a", {"metadata": {"labels": {"v": "2"}}}, "default")
    client.delete("Pod", "a", "default")
    w = client.watch("Pod", "default", ListOptions(resource_version=rv0))
    client.end_watches()
    events = [(e.type, e.object["metadata"]["name"]) for e in w]
    assert events == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    client.compact()
    with pytest.raises(errors.Gone):
        client.watch("Pod", "default", ListOptions(resource_version=rv0))


def test_watch_live_events_selector_and_bookmark(client: FakeApiClient) -> None:
    w = client.watch("Pod", "default", ListOptions(label_selector="app=web"))
    client.create("Pod", pod("a", app="web"))
    client.create("Pod", pod("b", app="db"))
    client.bookmark("Pod")
    w.stop()
    events = list(w)
    assert [e.type for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1].object["metadata"]["resourceVersion"] == client.resource_version
    assert client.open_watches() == 0


def test_error_injection_and_recorded_calls(client: FakeApiClient) -> None:
    client.fail("create", errors.Unavailable("down"), kind="Pod", times=2)
    for _ in range(2):
        with pytest.raises(errors.Unavailable):
            client.create("Pod", pod("a"))
    client.create("Pod", pod("a"))
    assert [c.verb for c in client.calls] == ["create"] * 3
    assert client.calls_of("create", "Pod")[0].name == "a"


def test_scale_subresource(client: FakeApiClient) -> None:
    client.create(
        "Deployment",
        {
            "metadata": {"name": "d"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}},
        },
        "default",
    )
    scale = client.update_scale("Deployment", "d", "default", 4)
    assert scale["spec"]["replicas"] == 4 and scale["status"]["selector"] == "app=d"
    assert client.get("Deployment", "d", "default")["spec"]["replicas"] == 4
    with pytest.raises(errors.NotFound):
        client.get_scale("Pod", "x", "default")


def test_watch_selector_transitions_like_the_server(client: FakeApiClient) -> None:
    rv0 = client.resource_version
    live = client.watch("Pod", "default", ListOptions(label_selector="app=web"))
    client.create("Pod", pod("a", app="db"))
    client.patch("Pod", "a", {"metadata": {"labels": {"app": "web"}}}, "default")  # joins
    client.patch("Pod", "a", {"metadata": {"labels": {"x": "1"}}}, "default")  # stays
    client.patch("Pod", "a", {"metadata": {"labels": {"app": "db"}}}, "default")  # leaves
    client.patch("Pod", "a", {"metadata": {"labels": {"y": "1"}}}, "default")  # still out
    replay = client.watch(
        "Pod", "default", ListOptions(label_selector="app=web", resource_version=rv0)
    )
    client.end_watches()
    want = ["ADDED", "MODIFIED", "DELETED"]
    assert [e.type for e in live] == want
    assert [e.type for e in replay] == want


def test_errors_match_the_api_server(client: FakeApiClient) -> None:
    with pytest.raises(errors.Invalid, match="selector"):
        client.list("Pod", "default", ListOptions(label_selector="a b"))
    with pytest.raises(errors.Invalid, match="unknown kind"):
        client.get("Gizmo", "x", "default")
    with pytest.raises(errors.Invalid):
        client.create("ConfigMap", {"metadata": {}}, "default")


def test_strict_namespaces_and_graceful_pod_delete() -> None:
    client = FakeApiClient(clock=FakeClock(), graceful_pod_delete=True, strict_namespaces=True)
    assert [n["metadata"]["name"] for n in client.objects("Namespace")] == [
        "default",
        "kube-node-lease",
        "kube-public",
        "kube-system",
    ]
    assert client.calls == []
    with pytest.raises(errors.NotFound, match='namespaces "nope"'):
        client.create("Pod", pod("a", ns="nope"))
    bound = pod("b")
    bound["spec"]["nodeName"] = "n1"
    client.create("Pod", bound)
    left = client.delete("Pod", "b", "default")
    assert left is not None and left["metadata"]["deletionGracePeriodSeconds"] == 30
    assert client.delete("Pod", "b", "default", DeleteOptions(grace_period_seconds=0)) is None
