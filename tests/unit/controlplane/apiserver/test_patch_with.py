"""Registry.patch_with: any patch as old -> new inside the write loop, and dryRun."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controlplane.apiserver.registry import Registry
from controlplane.client.errors import Conflict, Invalid, NotFound
from controlplane.client.interface import DeleteOptions
from controlplane.storage.sqlite import SqliteStore


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    reg = Registry(SqliteStore(tmp_path / "state.db"))
    reg.create("Namespace", {"metadata": {"name": "default"}})
    return reg


def cm(name: str = "c", **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "data": data}


def test_a_builder_runs_on_the_stored_object(registry: Registry) -> None:
    _, rev = registry.create("ConfigMap", cm(a="1"))

    def add(old: dict[str, Any]) -> dict[str, Any]:
        # As a client reads it: with its resourceVersion (a JSON patch may test it).
        assert old["metadata"]["resourceVersion"] == str(rev)
        return {**old, "data": {**old["data"], "b": "2"}}

    data, _ = registry.patch_with("ConfigMap", "c", add, "default")
    assert json.loads(data)["data"] == {"a": "1", "b": "2"}


def test_an_invalid_result_is_refused_and_nothing_changes(registry: Registry) -> None:
    _, rev = registry.create("ConfigMap", cm(a="1"))
    with pytest.raises(Invalid):
        registry.patch_with("ConfigMap", "c", lambda old: {**old, "data": {"a": 5}}, "default")
    assert registry.get("ConfigMap", "c", "default")[1] == rev


def test_a_resource_version_in_the_result_is_a_precondition(registry: Registry) -> None:
    registry.create("ConfigMap", cm(a="1"))

    def stale(old: dict[str, Any]) -> dict[str, Any]:
        return {**old, "metadata": {**old["metadata"], "resourceVersion": "1"}}

    with pytest.raises(Conflict):
        registry.patch_with("ConfigMap", "c", stale, "default")


def test_dry_run_stores_nothing(registry: Registry) -> None:
    registry.create("ConfigMap", cm("d", a="1"), dry_run=True)
    with pytest.raises(NotFound):
        registry.get("ConfigMap", "d", "default")
    _, rev = registry.create("ConfigMap", cm(a="1"))
    data, _ = registry.patch("ConfigMap", "c", {"data": {"a": "2"}}, "default", dry_run=True)
    assert json.loads(data)["data"] == {"a": "2"}
    assert registry.get("ConfigMap", "c", "default")[1] == rev
    assert registry.delete("ConfigMap", "c", "default", DeleteOptions(), dry_run=True) is None
    assert registry.get("ConfigMap", "c", "default")[1] == rev
