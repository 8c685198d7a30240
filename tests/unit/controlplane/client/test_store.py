"""The thread-safe indexed store."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.client.selectors import parse_label_selector
from controlplane.client.store import (
    Store,
    UnknownIndex,
    object_key,
    pod_node_index,
    split_key,
)


def pod(name: str, ns: str = "default", node: str = "", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"nodeName": node} if node else {},
    }


def test_keys() -> None:
    assert object_key(pod("a", "ns")) == "ns/a"
    assert object_key({"metadata": {"name": "n1"}}) == "n1"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("n1") == (None, "n1")


def test_namespace_and_custom_index_follow_updates() -> None:
    store = Store({"node": pod_node_index})
    store.add(pod("a", "x", node="n1"))
    store.add(pod("b", "x", node="n2"))
    store.add(pod("c", "y", node="n1"))
    assert [o["metadata"]["name"] for o in store.by_index("node", "n1")] == ["a", "c"]
    assert [o["metadata"]["name"] for o in store.list("x")] == ["a", "b"]
    store.update(pod("a", "x", node="n2"))
    assert store.index_keys("node", "n1") == ["y/c"]
    assert store.index_keys("node", "n2") == ["x/a", "x/b"]
    store.delete(pod("c", "y"))
    assert store.index_values("node") == ["n2"]
    assert store.list("y") == []
    assert store.get("a", "x") is not None and len(store) == 2
    with pytest.raises(UnknownIndex):
        store.by_index("nope", "v")


def test_replace_and_late_indexer_and_selector() -> None:
    store = Store()
    store.add(pod("old"))
    old = store.replace([pod("a", app="web"), pod("b", app="db")])
    assert list(old) == ["default/old"]
    assert store.keys() == ["default/a", "default/b"]
    store.add_indexers({"app": lambda o: [o["metadata"]["labels"].get("app", "")]})
    assert store.index_keys("app", "web") == ["default/a"]
    with pytest.raises(ValueError):
        store.add_indexers({"app": lambda o: []})
    assert [o["metadata"]["name"] for o in store.list(selector=parse_label_selector("app=db"))] == [
        "b"
    ]
