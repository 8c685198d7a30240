"""The one ControllerRefManager: adopt orphans only for a live owner and only
the version that was looked at; release what stopped matching."""

from __future__ import annotations

from typing import Any

from controlplane.controllers import podutil
from controlplane.controllers.refmanager import ControllerRefManager
from tests.fakes.fake_apiclient import FakeApiClient


def _rs(client: FakeApiClient, name: str = "web") -> dict[str, Any]:
    return client.create(
        "ReplicaSet",
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
                },
            },
        },
        "default",
    )


def _pod(client: FakeApiClient, name: str, labels: dict[str, str]) -> dict[str, Any]:
    return client.create(
        "Pod",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
        },
        "default",
    )


def _matches(pod: dict[str, Any]) -> bool:
    return podutil.labels_of(pod).get("app") == "web"


def test_adopts_matching_orphans_and_releases_the_rest() -> None:
    client = FakeApiClient()
    rs = _rs(client)
    refs = ControllerRefManager(client, "ReplicaSet", "Pod")
    orphan = _pod(client, "orphan", {"app": "web"})
    owned = refs.claim(rs, [], [orphan], _matches)
    assert [podutil.name_of(p) for p in owned] == ["orphan"]
    assert podutil.is_controlled_by(client.get("Pod", "orphan", "default"), rs)
    moved = client.patch("Pod", "orphan", {"metadata": {"labels": {"app": "db"}}}, "default")
    assert refs.claim(rs, [moved], [], _matches) == []
    assert podutil.controller_ref(client.get("Pod", "orphan", "default")) is None


def test_no_adoption_for_an_owner_gone_from_the_api() -> None:
    client = FakeApiClient()
    rs = _rs(client)
    client.delete("ReplicaSet", "web", "default")  # a cache would still show it
    orphan = _pod(client, "orphan", {"app": "web"})
    refs = ControllerRefManager(client, "ReplicaSet", "Pod")
    assert refs.claim(rs, [], [orphan], _matches) == []
    assert podutil.controller_ref(client.get("Pod", "orphan", "default")) is None


def test_no_adoption_of_a_version_it_did_not_look_at() -> None:
    client = FakeApiClient()
    rs = _rs(client)
    stale = _pod(client, "orphan", {"app": "web"})
    other = _rs(client, "other")
    # Another controller adopted it meanwhile: the stale copy must not win.
    client.patch(
        "Pod", "orphan", {"metadata": {"ownerReferences": [podutil.owner_ref(other)]}}, "default"
    )
    refs = ControllerRefManager(client, "ReplicaSet", "Pod")
    assert refs.claim(rs, [], [stale], _matches) == []
    assert podutil.is_controlled_by(client.get("Pod", "orphan", "default"), other)
