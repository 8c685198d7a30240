"""The Secrets and ConfigMaps the node's pods use, watched one by one (the
kubelet's watch-based managers), and the volume refresh a change starts at
once: before, the agent read each source with a GET every sync period and a
change reached a running pod only at the next one (up to 10 s later)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.object_cache import ObjectCache, pod_objects
from agent.pod_config import NodeSettings
from agent.pod_events import PodEvents
from agent.volume_refresh import VolumeRefresher
from agent.volumes import VolumeSources, setup_volumes, teardown_volumes
from controlplane.client.interface import ListOptions
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.wait import wait_for


def pod(uid: str, *volumes: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": f"p-{uid}", "namespace": "ns", "uid": uid},
        "spec": {"volumes": list(volumes), "containers": [{"name": "c"}], **spec},
    }


def cm_volume(name: str) -> dict[str, Any]:
    return {"name": name, "configMap": {"name": name}}


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}, "data": data}


@pytest.fixture
def api() -> FakeApiClient:
    return FakeApiClient()


@pytest.fixture
def cache(api: FakeApiClient) -> Iterator[tuple[ObjectCache, list[tuple[str, str, str]]]]:
    changes: list[tuple[str, str, str]] = []
    c = ObjectCache(api, api.clock, lambda *key: changes.append(key))
    yield c, changes
    c.stop()


def test_pod_objects_are_every_secret_and_configmap_it_names() -> None:
    p = pod(
        "u", cm_volume("vol-cm"), {"name": "s", "secret": {"secretName": "vol-s"}},
        {"name": "pr", "projected": {"sources": [{"configMap": {"name": "pr-cm"}},
                                                 {"secret": {"name": "pr-s"}},
                                                 {"serviceAccountToken": {"path": "t"}}]}},
        {"name": "e", "emptyDir": {}},
        imagePullSecrets=[{"name": "pull"}],
        ephemeralContainers=[{"name": "dbg", "envFrom": [{"secretRef": {"name": "dbg-s"}}]}],
    )  # fmt: skip
    p["spec"]["containers"][0]["env"] = [
        {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "k"}}},
        {"name": "B", "value": "plain"},
    ]
    assert pod_objects(p) == {
        ("ConfigMap", "ns", "vol-cm"), ("Secret", "ns", "vol-s"), ("ConfigMap", "ns", "pr-cm"),
        ("Secret", "ns", "pr-s"), ("Secret", "ns", "pull"), ("Secret", "ns", "dbg-s"),
        ("ConfigMap", "ns", "env-cm"),
    }  # fmt: skip


def test_each_object_is_watched_by_name_served_from_the_cache_and_changes_told(
    api: FakeApiClient, cache: tuple[ObjectCache, list[tuple[str, str, str]]]
) -> None:
    objects, changes = cache
    api.create("ConfigMap", configmap("cfg", mode="blue"), "ns")
    api.create("ConfigMap", configmap("other", mode="x"), "ns")
    objects.register(pod("u1", cm_volume("cfg")))
    objects.register(pod("u2", cm_volume("cfg"), cm_volume("missing")))
    assert objects.watched() == {("ConfigMap", "ns", "cfg"), ("ConfigMap", "ns", "missing")}
    wait_for(lambda: all(objects.has_synced("ConfigMap", "ns", n) for n in ("cfg", "missing")),
             timeout=5, message="both watches synced")  # fmt: skip
    lists = api.calls_of("list", "ConfigMap")
    assert len(lists) == 2  # one informer per object, shared by both pods
    api.calls.clear()
    # From the watch's cache: no GET; a missing object is None, also cached.
    assert objects.get("ConfigMap", "ns", "cfg")["data"] == {"mode": "blue"}  # type: ignore[index]
    assert objects.get("ConfigMap", "ns", "missing") is None
    assert api.calls_of("get") == []
    changes.clear()
    api.patch("ConfigMap", "cfg", {"data": {"mode": "green"}}, "ns")
    api.patch("ConfigMap", "other", {"data": {"mode": "y"}}, "ns")
    wait_for(lambda: ("ConfigMap", "ns", "cfg") in changes, timeout=5)
    assert ("ConfigMap", "ns", "other") not in changes  # not watched
    assert objects.get("ConfigMap", "ns", "cfg")["data"] == {"mode": "green"}  # type: ignore[index]
    assert objects.users("ConfigMap", "ns", "cfg") == {"u1", "u2"}
    api.delete("ConfigMap", "cfg", "ns")
    wait_for(lambda: objects.get("ConfigMap", "ns", "cfg") is None, timeout=5)
    assert api.calls_of("get") == []
    # The last pod naming an object gone: its watch ends.
    objects.unregister("u1")
    assert ("ConfigMap", "ns", "cfg") in objects.watched()
    objects.unregister("u2")
    assert objects.watched() == set()
    wait_for(lambda: not api.open_watches("ConfigMap"), timeout=5, message="watches closed")
    # Not watched: a GET (a pod's first start does not wait for a watch).
    assert objects.get("ConfigMap", "ns", "other")["data"] == {"mode": "y"}  # type: ignore[index]
    assert len(api.calls_of("get", "ConfigMap")) == 1


def test_a_registered_pod_drops_what_it_no_longer_names(
    api: FakeApiClient, cache: tuple[ObjectCache, list[tuple[str, str, str]]]
) -> None:
    objects, _ = cache
    objects.register(pod("u1", cm_volume("a")))
    objects.register(pod("u1", cm_volume("b")))
    assert objects.watched() == {("ConfigMap", "ns", "b")}
    wait_for(lambda: api.open_watches("ConfigMap") == 1, timeout=5, message="a's watch closed")


SETTINGS = NodeSettings(node_name="n1")


def test_a_change_refreshes_the_pods_using_it_at_once_and_a_deletion_is_an_event(
    tmp_path: Path, api: FakeApiClient
) -> None:
    api.create("ConfigMap", configmap("cfg", mode="blue"), "ns")
    p = api.create("Pod", pod("u1", cm_volume("cfg")), "ns")
    uid = p["metadata"]["uid"]  # the API's
    objects = ObjectCache(api, api.clock, lambda *key: refresher.changed(objects.users(*key)))
    sources = VolumeSources(
        configmaps=lambda ns, n: objects.get("ConfigMap", ns, n),
        secrets=lambda ns, n: objects.get("Secret", ns, n),
        node=SETTINGS,
    )
    synced: list[str] = []
    pods = {uid: p}
    refresher = VolumeRefresher(tmp_path, sources, PodEvents(api, "n1"), pods.get, synced.append)
    worker = threading.Thread(target=refresher.run, daemon=True)
    worker.start()
    try:
        objects.register(p)
        # Not set up yet (its sandbox not made): handed to its pod worker.
        wait_for(lambda: synced == [uid], timeout=5, message="the pod queued for its worker")
        setup_volumes(tmp_path, p, sources)
        file = tmp_path / "pods" / uid / "volumes" / "kubernetes.io~configmap" / "cfg" / "mode"
        assert file.read_text() == "blue"
        api.patch("ConfigMap", "cfg", {"data": {"mode": "green"}}, "ns")
        wait_for(lambda: file.read_text() == "green", timeout=5, message="the edit in the volume")
        api.delete("ConfigMap", "cfg", "ns")

        def failed_mount() -> list[dict[str, Any]]:
            return [e for e in api.list("Event", "ns", ListOptions()).items
                    if e["reason"] == "FailedMount"]  # fmt: skip

        events = wait_for(failed_mount, timeout=5, message="a FailedMount event")
        assert events[0]["message"] == (
            'MountVolume.SetUp failed for volume "cfg" : configmap "cfg" not found'
        )
        assert file.read_text() == "green"  # the last content stays
        # Torn down: a later change never makes the volume again.
        teardown_volumes(tmp_path, uid, keep_pod_dir=True)
        api.create("ConfigMap", configmap("cfg", mode="red"), "ns")
        before = refresher.refreshed
        wait_for(lambda: refresher.refreshed > before or synced.count(uid) > 1, timeout=5)
        assert not file.parent.exists()
    finally:
        refresher.stop()
        objects.stop()
        worker.join(timeout=5)
        teardown_volumes(tmp_path, uid)
