"""Image GC on the node (issue 20): a filled image filesystem is brought down
to the low threshold, least recently used first, never removing an image a
container uses; a stub runtime stands for CRI and the filesystem."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from agent.eviction import signals
from agent.eviction.signals import Observation
from agent.image_gc import ImageGCPolicy
from agent.node_resources import NodeResources, ResourceSettings

GB = 1 << 30


class StubRuntime:
    def __init__(self) -> None:
        self.capacity = 100 * GB
        self.images = {
            "sha256:used": 30 * GB,
            "sha256:old": 4 * GB,
            "sha256:older": 3 * GB,
            "sha256:recent": 5 * GB,
        }
        self.used = 90 * GB  # 90%: above the high threshold (85%)
        self.removed: list[str] = []
        self.in_use = ["sha256:used"]
        self.tags: dict[str, list[str]] = {}

    def image_fs_info(self) -> list[Any]:
        return [SimpleNamespace(fs_id=SimpleNamespace(mountpoint="/imagefs"))]

    def list_containers(self) -> list[Any]:
        return [SimpleNamespace(image_ref=i, image=SimpleNamespace(image=i)) for i in self.in_use]

    def list_images(self) -> list[Any]:
        return [
            SimpleNamespace(
                id=i, size=s, pinned=False, repo_tags=self.tags.get(i, []), repo_digests=[]
            )
            for i, s in self.images.items()
        ]

    def remove_image(self, image_id: str) -> None:
        self.used -= self.images.pop(image_id)
        self.removed.append(image_id)


class NoPods:
    def admitted_pods(self) -> list[Any]:
        return []


def test_a_filled_imagefs_is_collected_down_to_the_low_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rt = StubRuntime()
    monkeypatch.setattr(
        signals,
        "filesystem",
        lambda path: (Observation(rt.capacity - rt.used, rt.capacity), Observation(1000, 1000)),
    )
    clock = [0.0]
    res = NodeResources(
        ResourceSettings(image_gc=ImageGCPolicy(minimum_age=60.0)),
        rt,  # type: ignore[arg-type]
        NoPods(),  # type: ignore[arg-type]
        "/", "/none", "/none", lambda: 0, now=lambda: clock[0],
    )  # fmt: skip
    assert res.image_gc() == 0  # first seen now: younger than --image-minimum-gc-age
    clock[0] = 30.0
    rt.in_use = ["sha256:used", "sha256:old"]  # a container of "old" ran at 30 s
    assert res.image_gc() == 0  # "recent" and "older" still too young
    rt.in_use = ["sha256:used"]
    clock[0] = 120.0
    freed = res.image_gc()
    # 90% -> at most 80%: 10 GB to free, least recently used first ("old"
    # was used at 30 s, the others last at 0 s), never the image in use.
    assert "sha256:used" not in rt.removed
    assert freed >= 10 * GB and rt.used <= 80 * GB
    assert rt.removed == ["sha256:older", "sha256:recent", "sha256:old"]
    assert res.image_gc() == 0  # below the high threshold now


class OnePod:
    """A pod whose container is being created: no container lists it yet."""

    def admitted_pods(self) -> list[Any]:
        return [{"metadata": {"uid": "u1"},
                 "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}]  # fmt: skip


def test_an_image_a_pod_names_is_kept_before_its_container_exists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race the containerd e2e case lost: GC listed the containers, then
    the pod's container was created from an image GC had seen unused."""
    rt = StubRuntime()
    rt.in_use = []
    rt.tags = {"sha256:old": ["docker.io/library/busybox:1.36"]}
    monkeypatch.setattr(
        signals, "filesystem",
        lambda path: (Observation(rt.capacity - rt.used, rt.capacity), Observation(1000, 1000)),
    )  # fmt: skip
    res = NodeResources(
        ResourceSettings(image_gc=ImageGCPolicy(minimum_age=0.0, high_threshold=1, low_threshold=0)),
        rt,  # type: ignore[arg-type]
        OnePod(),  # type: ignore[arg-type]
        "/", "/none", "/none", lambda: 0, now=lambda: 100.0,
    )  # fmt: skip
    res.image_gc()
    assert "sha256:old" not in rt.removed  # named by the pod as busybox:1.36
    assert {"sha256:used", "sha256:older", "sha256:recent"} <= set(rt.removed)
