"""A create of an object decoded from protobuf (`typed`) is not walked for
unknown fields, which such an object cannot hold (test_pruning.py shows
why); any other create still has them dropped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.api import jsoncodec, pruning
from controlplane.apiserver.registry import Registry
from controlplane.storage.sqlite import SqliteStore


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    store = SqliteStore(tmp_path / "state.db")
    reg = Registry(store)
    reg.create("Namespace", {"metadata": {"name": "default"}})
    yield reg
    store.close()


def pod(name: str, **container: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox", **container}]}}  # fmt: skip


def test_only_an_untyped_create_is_walked_for_unknown_fields(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    walked: list[str] = []
    prune = pruning.prune

    def counted(obj: dict[str, Any], stored: dict[str, Any] | None = None) -> list[str]:
        walked.append(obj["metadata"]["name"])
        return prune(obj, stored)

    monkeypatch.setattr(pruning, "prune", counted)
    data, _ = registry.create("Pod", pod("sent-as-json", imagee="typo"), "default")
    assert walked == ["sent-as-json"]
    assert "imagee" not in jsoncodec.loads(data)["spec"]["containers"][0]
    data, _ = registry.create("Pod", pod("sent-as-protobuf"), "default", typed=True)
    assert walked == ["sent-as-json"]
    stored = jsoncodec.loads(data)
    assert stored["spec"]["containers"][0]["image"] == "busybox"
    assert stored["spec"]["restartPolicy"] == "Always"  # defaulted all the same
