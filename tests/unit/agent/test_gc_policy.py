"""Image and container garbage collection policies (issue 20)."""

from __future__ import annotations

import pytest

from agent.container_gc import ContainerGCPolicy, DeadContainer, containers_to_remove
from agent.image_gc import (
    FsUsage,
    ImageGCPolicy,
    ImageRecord,
    ImageTracker,
    bytes_to_free,
    images_to_free,
)

GB = 1 << 30
POLICY = ImageGCPolicy()


@pytest.mark.parametrize(
    ("used_percent", "want_gb"),
    [(84, 0), (85, 5), (90, 10), (100, 20)],
)
def test_image_gc_frees_down_to_the_low_threshold(used_percent: int, want_gb: int) -> None:
    fs = FsUsage(capacity=100 * GB, available=(100 - used_percent) * GB)
    assert bytes_to_free(fs, POLICY) == want_gb * GB


def test_images_least_recently_used_first_never_in_use_or_young() -> None:
    now = 10_000.0
    images = [
        ImageRecord("old", 3 * GB, first_seen=0, last_used=100),
        ImageRecord("older", 1 * GB, first_seen=0, last_used=50),
        ImageRecord("used", 9 * GB, first_seen=0, last_used=0),
        ImageRecord("young", 9 * GB, first_seen=now - 60, last_used=now - 60),
        ImageRecord("pinned", 9 * GB, first_seen=0, last_used=0, pinned=True),
        ImageRecord("recent", 2 * GB, first_seen=0, last_used=5000),
    ]
    got = images_to_free(images, {"used"}, 4 * GB, now, POLICY)
    assert [i.id for i in got] == ["older", "old"]
    everything = images_to_free(images, {"used"}, 100 * GB, now, POLICY)
    assert [i.id for i in everything] == ["older", "old", "recent"]


def test_bad_image_gc_thresholds() -> None:
    with pytest.raises(ValueError, match="--image-gc-low-threshold 90 must not exceed"):
        ImageGCPolicy(high_threshold=85, low_threshold=90)
    with pytest.raises(ValueError, match="--image-gc-high-threshold 101"):
        ImageGCPolicy(high_threshold=101)


def test_image_tracker_last_used() -> None:
    tr = ImageTracker()
    first = tr.observe([("a", 1, False), ("b", 1, False)], {"a"}, 10.0)
    assert {i.id: (i.first_seen, i.last_used) for i in first} == {"a": (10, 10), "b": (10, 10)}
    later = tr.observe([("a", 1, False), ("b", 1, False)], {"a"}, 20.0)
    assert {i.id: (i.first_seen, i.last_used) for i in later} == {"a": (10, 20), "b": (10, 10)}


def test_container_gc_keeps_the_newest_dead_per_container() -> None:
    dead = [DeadContainer(f"c{i}", "pod1", "app", created_at=float(i)) for i in range(5)]
    dead += [DeadContainer("s0", "pod1", "sidecar", created_at=1.0)]
    dead += [
        DeadContainer("o0", "pod2", "app", created_at=2.0),
        DeadContainer("o1", "pod2", "app", created_at=3.0),
    ]
    got = containers_to_remove(dead, now=100.0, policy=ContainerGCPolicy())
    assert [c.id for c in got] == ["c0", "c1", "c2", "o0", "c3"]


def test_container_gc_min_age_and_node_cap() -> None:
    dead = [DeadContainer(f"c{i}", "pod1", "app", created_at=float(i * 10)) for i in range(4)]
    young = containers_to_remove(dead, now=35.0, policy=ContainerGCPolicy(min_age=10.0))
    assert [c.id for c in young] == ["c0", "c1"]  # c3 (5 s old) is not a candidate; c2 kept
    others = [DeadContainer(f"p{i}", f"pod{i}", "app", created_at=float(i)) for i in range(2, 6)]
    capped = containers_to_remove(others, now=100.0, policy=ContainerGCPolicy(max_containers=2))
    assert [c.id for c in capped] == ["p2", "p3"]
