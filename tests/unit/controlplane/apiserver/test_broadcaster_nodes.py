"""Watchers selecting on a pod's node (`spec.nodeName=NODE`, as each agent
watches; `spec.nodeName!=`, the bound pods, as hollow nodes watch): each
gets the events its selector says, an object entering or leaving the
selection as ADDED or DELETED, and the broadcaster tells them apart by the
pod's last node, without decoding its previous object."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from controlplane.api.kinds.registry import lookup
from controlplane.apiserver import watch as watch_module
from controlplane.apiserver.codec import decode
from controlplane.apiserver.listing import Selectors
from controlplane.apiserver.watch import Broadcaster, Watcher, WatchItem
from controlplane.storage.sqlite import SqliteStore
from tests.harness.wait import wait_for

KEY = "/registry/pods/default/"


def pod(name: str, node: str = "", phase: str = "Pending") -> bytes:
    spec = {"nodeName": node} if node else {}
    return orjson.dumps({"metadata": {"name": name}, "spec": spec, "status": {"phase": phase}})


@pytest.fixture
def broadcaster(tmp_path: Path) -> Iterator[Broadcaster]:
    store = SqliteStore(tmp_path / "state.db")
    b = Broadcaster(store)
    b.start()
    try:
        yield b
    finally:
        b.stop()
        store.close()


def watch(b: Broadcaster, field_selector: str) -> Watcher:
    return b.watch(lookup("Pod"), "", Selectors.parse("", field_selector), None, False)


def taken(w: Watcher, count: int) -> list[tuple[str, str, str]]:
    """(type, name, node) of the `count` events `w` has queued, all it has."""
    items = iter(w)
    got: list[WatchItem] = []
    for _ in range(count):
        assert not w.empty(), f"only {len(got)} events queued"  # next() would wait for more
        got.append(next(items))
    assert w.empty(), "more events than expected"
    out = []
    for item in got:
        obj = decode(item.data)
        out.append((item.type, obj["metadata"]["name"], obj["spec"].get("nodeName", "")))
    return out


def test_node_selections_get_their_events_without_the_previous_object_decoded(
    broadcaster: Broadcaster, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[bytes] = []

    def counting(data: bytes) -> Any:
        decoded.append(data)
        return decode(data)

    monkeypatch.setattr(watch_module, "decode", counting)
    n1, unbound = watch(broadcaster, "spec.nodeName=n1"), watch(broadcaster, "spec.nodeName=")
    bound, not_n1 = watch(broadcaster, "spec.nodeName!="), watch(broadcaster, "spec.nodeName!=n1")
    store = broadcaster.store
    rev = store.create(KEY + "p", pod("p"))
    rev = store.update(KEY + "p", pod("p", "n1"), rev)  # bound to n1
    rev = store.update(KEY + "p", pod("p", "n1", "Running"), rev)
    q = store.create(KEY + "q", pod("q", "n2"))  # created bound
    store.update(KEY + "q", pod("q", "n2", "Running"), q)
    store.delete(KEY + "p", rev)
    last = store.create(KEY + "last", pod("last"))
    wait_for(lambda: broadcaster.last_revision >= last, timeout=10, message="every event")

    assert taken(n1, 3) == [("ADDED", "p", "n1"), ("MODIFIED", "p", "n1"), ("DELETED", "p", "n1")]
    assert taken(unbound, 3) == [("ADDED", "p", ""), ("DELETED", "p", "n1"), ("ADDED", "last", "")]
    assert taken(bound, 5) == [
        ("ADDED", "p", "n1"), ("MODIFIED", "p", "n1"), ("ADDED", "q", "n2"),
        ("MODIFIED", "q", "n2"), ("DELETED", "p", "n1"),
    ]  # fmt: skip
    assert taken(not_n1, 5) == [
        ("ADDED", "p", ""), ("DELETED", "p", "n1"), ("ADDED", "q", "n2"),
        ("MODIFIED", "q", "n2"), ("ADDED", "last", ""),
    ]  # fmt: skip
    # Each event's object decoded once (its node); no previous object.
    assert len(decoded) == 7
    for w in (n1, unbound, bound, not_n1):
        w.stop()
    assert broadcaster.watcher_count() == 0
    assert not broadcaster._by_node and not broadcaster._by_other_node  # no empty groups kept
