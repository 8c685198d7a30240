"""Status merge patches build their result around the stored object's parts
(merge_patch_shared) instead of a copy of it: the result is merge_patch's,
nothing stored or sent is changed, and a write that races them is never lost."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.merge_patch import merge_patch, merge_patch_shared
from controlplane.apiserver.codec import decode
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.subresources import PodBinding
from controlplane.client.errors import Conflict
from controlplane.storage.sqlite import SqliteStore

KEY = "/registry/pods/default/p"


class RacingStore(SqliteStore):
    """A store that runs `race` (another writer) once, just before the next
    update: between the registry's read and its write."""

    race: Callable[[], object] | None = None

    def update(self, key: str, value: bytes, expected_rev: int) -> int:
        race, self.race = self.race, None
        if race is not None:
            race()
        return super().update(key, value, expected_rev)


@pytest.fixture
def store(tmp_path: Path) -> RacingStore:
    return RacingStore(tmp_path / "state.db")


@pytest.fixture
def registry(store: RacingStore) -> Registry:
    reg = Registry(store)
    reg.create("Namespace", {"metadata": {"name": "default"}})
    reg.create("Pod", {
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    })  # fmt: skip
    return reg


def stored(store: SqliteStore) -> tuple[dict[str, Any], int]:
    kv = store.get(KEY)
    return decode(kv.value), kv.mod_rev


def status_patch(registry: Registry, status: dict[str, Any]) -> int:
    return registry.patch("Pod", "p", {"status": status}, "default", "status")[1]


def test_a_write_between_read_and_write_is_never_lost(
    registry: Registry, store: RacingStore
) -> None:
    status_patch(registry, {"phase": "Running"})
    store.race = lambda: status_patch(registry, {"podIP": "10.0.0.7"})
    rev = status_patch(registry, {"conditions": [{"type": "Ready", "status": "True"}]})
    obj, current = stored(store)
    assert current == rev
    assert obj["status"]["phase"] == "Running"
    assert obj["status"]["podIP"] == "10.0.0.7"  # the racing write, kept
    assert obj["status"]["conditions"] == [{"type": "Ready", "status": "True"}]


def test_a_conflicting_precondition_is_refused_not_retried(registry: Registry) -> None:
    rev = status_patch(registry, {"phase": "Running"})
    status_patch(registry, {"podIP": "10.0.0.7"})
    with pytest.raises(Conflict):
        registry.patch("Pod", "p", {"metadata": {"resourceVersion": str(rev)},
                                    "status": {"phase": "Failed"}}, "default", "status")  # fmt: skip


def test_a_status_patch_changes_only_the_status(registry: Registry, store: RacingStore) -> None:
    (bound,) = registry.bind_many([PodBinding("default", "p", "node-1")])
    assert not isinstance(bound, Exception)
    before, _ = stored(store)
    patch = {"status": {"phase": "Running", "conditions": [{"type": "Ready"}]}}
    sent = copy.deepcopy(patch)
    status_patch(registry, patch["status"])
    after, _ = stored(store)
    assert patch == sent
    assert after["status"] == {**(before.get("status") or {}), **sent["status"]}
    for part in ("spec", "apiVersion", "kind"):
        assert after[part] == before[part]
    meta = {k: v for k, v in after["metadata"].items() if k != "managedFields"}
    assert meta == {k: v for k, v in before["metadata"].items() if k != "managedFields"}
    # A status write through a shared result may still set preconditions.
    with pytest.raises(Conflict):
        registry.patch("Pod", "p", {"metadata": {"uid": "someone-else"},
                                    "status": {"phase": "Failed"}}, "default", "status")  # fmt: skip


@pytest.mark.parametrize(
    "target, patch",
    [
        ({"a": {"b": 1, "c": [1, 2]}, "d": "x"}, {"a": {"b": 2}}),
        ({"a": {"b": 1}}, {"a": None, "e": {"f": None, "g": [3]}}),
        ({"a": 1}, {"a": {"b": {"c": 1}}}),
        ({"a": [1]}, ["whole"]),
        ({}, {"s": {"phase": "Running", "conditions": [{"type": "Ready"}]}}),
    ],
)
def test_shared_merge_patch_is_merge_patch(target: dict[str, Any], patch: Any) -> None:
    target_before, patch_before = copy.deepcopy(target), copy.deepcopy(patch)
    assert merge_patch_shared(target, patch) == merge_patch(target, patch)
    assert target == target_before and patch == patch_before
